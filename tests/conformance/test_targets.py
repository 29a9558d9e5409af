"""The suite against the model, against a second implementation over the process
protocol, and against every mutant of the ``ordered`` contract."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_contract.model import catalogue
from replay_contract.model.contracts import CONTRACTS
from replay_contract.model.mutants import MUTANTS
from replay_contract.model.scenario import load

from .conftest import ORDERLY, by_name, conform


def test_model_passes_everything(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, doc = conform(
        capsys, "--target", "model", "--seed", "0", "--examples", "300", "--out", str(tmp_path)
    )
    assert status == 0
    assert doc["failed"] == 0 and doc["skipped"] == 0
    names = {r["name"] for r in doc["results"]}
    assert set(catalogue.names()) <= names
    assert sum(n.startswith("generated-") for n in names) == 300
    assert any(".crash-" in n for n in names)  # the crash sweeps ran
    assert doc["passed"] == len(doc["results"])
    assert not list(tmp_path.rglob("*.json"))  # nothing failed, nothing written


@pytest.mark.parametrize("contract", sorted(CONTRACTS))
def test_model_agrees_with_itself_under_every_contract(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, contract: str
) -> None:
    status, doc = conform(
        capsys,
        "--target",
        "model",
        "--contract",
        contract,
        "--seed",
        "7",
        "--examples",
        "40",
        "--out",
        str(tmp_path),
    )
    assert (status, doc["failed"], doc["skipped"]) == (0, 0, 0)


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_every_mutant_fails_with_a_reason(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, mutant: str
) -> None:
    status, doc = conform(
        capsys,
        "--target",
        f"mutant:{mutant}",
        "--seed",
        "0",
        "--examples",
        "100",
        "--out",
        str(tmp_path),
    )
    assert status == 1 and doc["failed"] > 0
    assert doc["contract"] == "ordered"
    for result in doc["results"]:
        if result["verdict"] != "failed":
            continue
        # a specific reason: the broken property, or the first difference with the model
        assert result["property"] in (None, *_properties())
        assert result["property"] or result["difference"].startswith("step ")
        # the scenario file replays the failure through the model's own checks
        assert load(result["scenario_file"]).name == result["name"]
        assert Path(result["scenario_file"]).with_suffix(".txt").exists()


def _properties() -> tuple[str, ...]:
    from replay_contract.spec.properties import PROPERTIES

    return PROPERTIES


@pytest.mark.parametrize(
    ("mutant", "scenario", "reason"),
    [
        ("ordered-no-wait", "reversed-interleaving", "no-stale-reuse"),
        ("ordered-identity-only", "stateful-chain", "no-stale-reuse"),
        ("ordered-invalidate-every-key", "divergence-beside-other-key", "key-isolation"),
        ("ordered-volatile-invalidation", "divergence-then-crash", "no-stale-reuse"),
        ("ordered-impatient", "reversed-interleaving", "complete-reuse"),
        ("ordered-ignores-timeout", "lost-last-of-split-timeout", "bounded-waiting"),
    ],
)
def test_mutant_fails_on_the_scenario_that_targets_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, mutant: str, scenario: str, reason: str
) -> None:
    if mutant not in MUTANTS:
        pytest.skip(f"no mutant {mutant} any more")
    status, doc = conform(
        capsys,
        "--target",
        f"mutant:{mutant}",
        "--scenario",
        scenario,
        "--examples",
        "0",
        "--no-sweep",
        "--out",
        str(tmp_path),
    )
    (result,) = doc["results"]
    assert status == 1 and result["verdict"] == "failed"
    assert result["property"] == reason


@pytest.mark.parametrize("contract", ["ordered", "seqnum"])
def test_second_implementation_over_the_process_protocol_passes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, contract: str
) -> None:
    status, doc = conform(
        capsys,
        "--target",
        ORDERLY,
        "--contract",
        contract,
        "--seed",
        "0",
        "--examples",
        "120",
        "--out",
        str(tmp_path),
    )
    assert (status, doc["failed"], doc["skipped"]) == (0, 0, 0)
    assert doc["passed"] > 120


def test_process_target_refuses_a_contract_it_does_not_claim(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from replay_contract.cli import main

    argv = ["conform", "--target", ORDERLY, "--contract", "read-set", "--examples", "3"]
    status = main([*argv, "--out", str(tmp_path), "--json"])
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.rstrip().endswith(
        "implements ordered, seqnum, not read-set; choose one it implements with --contract"
    )


def test_a_broken_build_over_the_process_protocol_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, doc = conform(
        capsys,
        "--target",
        f"{ORDERLY} --bug no-wait",
        "--scenario",
        "reversed-interleaving",
        "--examples",
        "0",
        "--no-sweep",
        "--out",
        str(tmp_path),
    )
    result = by_name(doc)["reversed-interleaving"]
    assert status == 1
    assert result["property"] == "no-stale-reuse"
    assert "B waits for A" in result["difference"]


def test_the_timeout_scenario_passes_on_the_model_and_is_skipped_without_the_capability() -> None:
    from attrs import evolve

    from replay_contract.conformance.judge import judge
    from replay_contract.conformance.model_target import ModelImplementation
    from replay_contract.model.catalogue import builtin
    from replay_contract.model.contracts import ORDERED

    scenario = builtin("lost-last-of-split-timeout")
    assert judge(ModelImplementation(), scenario, ORDERED).verdict == "passed"
    without = ModelImplementation()
    without.capabilities = evolve(without.capabilities, timeout=False)
    result = judge(without, scenario, ORDERED)
    assert result.verdict == "skipped"
    assert "needs a timeout step" in result.reason
