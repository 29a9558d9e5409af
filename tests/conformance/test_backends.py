"""The project's Kafka and Fluss implementations against the real servers: the catalogue,
its crash sweeps and 200 generated scenarios under ``ordered``; and agreement with the
model's ``seqnum``, including where ``complete-reuse`` breaks."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_contract.model import catalogue

from .conftest import conform

BACKENDS = [
    pytest.param("kafka", marks=pytest.mark.kafka),
    pytest.param("fluss", marks=pytest.mark.fluss),
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_passes_the_catalogue_and_200_generated_scenarios(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str], tmp_path: Path, backend: str
) -> None:
    request.getfixturevalue(f"{backend}_bootstrap")
    status, doc = conform(
        capsys,
        "--target",
        backend,
        "--contract",
        "ordered",
        "--seed",
        "0",
        "--examples",
        "200",
        "--out",
        str(tmp_path),
    )
    failures = [(r["name"], r.get("reason")) for r in doc["results"] if r["verdict"] != "passed"]
    assert status == 0 and not failures, failures[:3]
    names = {r["name"] for r in doc["results"]}
    assert set(catalogue.names()) <= names
    assert sum(n.startswith("generated-") for n in names) == 200
    assert doc["skipped"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_agrees_with_the_model_under_seqnum(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str], tmp_path: Path, backend: str
) -> None:
    request.getfixturevalue(f"{backend}_bootstrap")
    status, doc = conform(
        capsys,
        "--target",
        backend,
        "--contract",
        "seqnum",
        "--seed",
        "1",
        "--examples",
        "40",
        "--out",
        str(tmp_path),
    )
    assert status == 0 and doc["failed"] == 0 and doc["skipped"] == 0
    reversed_run = next(r for r in doc["results"] if r["name"] == "reversed-interleaving")
    assert reversed_run["verdict"] == "passed"
    assert reversed_run["repeated_tool_calls"] == {"expected": 4, "actual": 4}
    assert reversed_run["complete_reuse"].startswith("step 6 (deliver B)")
