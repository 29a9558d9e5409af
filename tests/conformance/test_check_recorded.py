"""Traces recorded by ``conform --record-traces`` are judged by ``check`` exactly as the
conformance suite judged the same runs: broken targets (the model's mutants), and the
project's Kafka and Fluss runtimes on the real servers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from replay_contract.conformance.check import FAIL, PASS, check
from replay_contract.conformance.tracefile import read
from replay_contract.model.files import slug

from .conftest import conform

FEW = ["reversed-interleaving", "crash-before-save", "two-keys-interleaved", "changed-input"]


def judged_alike(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str, contract: str, *more: str
) -> list[dict[str, Any]]:
    """Run ``conform`` recording traces, then check every trace; both must agree."""
    traces = tmp_path / "traces"
    _, doc = conform(
        capsys,
        "--target",
        target,
        "--contract",
        contract,
        "--out",
        str(tmp_path / "out"),
        "--record-traces",
        str(traces),
        "--no-shrink",
        *more,
    )
    results = [r for r in doc["results"] if r["verdict"] != "skipped"]
    assert results
    for r in results:
        path = traces / slug(target) / slug(contract) / f"{slug(r['name'])}.ndjson"
        j = check(read(path))
        assert j.verdict == (PASS if r["verdict"] == "passed" else FAIL), r["name"]
        assert j.property == r.get("property"), r["name"]
        assert j.difference == r.get("difference"), r["name"]
    return results


@pytest.mark.parametrize(
    "mutant", ["ordered-no-wait", "ordered-identity-only", "ordered-impatient"]
)
def test_a_broken_target_is_judged_alike(
    mutant: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    results = judged_alike(
        capsys, tmp_path, f"mutant:{mutant}", "ordered", "--examples", "3", "--seed", "5"
    )
    assert any(r["verdict"] == "failed" for r in results)


BACKENDS = [
    pytest.param("kafka", marks=pytest.mark.kafka),
    pytest.param("fluss", marks=pytest.mark.fluss),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("contract", ["ordered", "seqnum"])
def test_a_runtime_is_judged_alike(
    backend: str,
    contract: str,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    request.getfixturevalue(f"{backend}_bootstrap")
    scenarios = [arg for name in FEW for arg in ("--scenario", name)]
    results = judged_alike(
        capsys,
        tmp_path,
        backend,
        contract,
        *scenarios,
        "--examples",
        "2",
        "--seed",
        "7",
        "--no-sweep",
    )
    assert len(results) == len(FEW) + 2
    assert all(r["verdict"] == "passed" for r in results)
