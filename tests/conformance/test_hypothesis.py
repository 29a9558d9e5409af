"""The suite's generator as a Hypothesis strategy: the model passes whatever it draws, a
broken contract is found and shrunk, and the shrunk case replays from its scenario file."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, find, given, settings

from replay_contract.conformance.generate import scenarios
from replay_contract.conformance.judge import FAILED, PASSED, SKIPPED, judge
from replay_contract.conformance.model_target import ModelImplementation
from replay_contract.model.contracts import ORDERED
from replay_contract.model.mutants import MUTANTS
from replay_contract.model.scenario import Scenario, load


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_the_model_passes_every_drawn_scenario(scenario: Scenario) -> None:
    assert judge(ModelImplementation(), scenario, ORDERED).verdict in (PASSED, SKIPPED)


def test_hypothesis_finds_and_shrinks_a_failure_that_replays(tmp_path: Path) -> None:
    mutant = ModelImplementation(MUTANTS["ordered-no-wait"])
    found = find(
        scenarios(),
        lambda s: judge(mutant, s, ORDERED).verdict == FAILED,
        settings=settings(max_examples=500, deadline=None, database=None),
    )
    # shrunk: one key's record, crashed after, restored and delivered again is enough
    # for the suite to see the mutant write an order entry the contract does not write
    records = [r for c in found.topology.channels for r in c.records]
    assert len(records) == 1 and len(found.schedule) <= 4, found.to_json()
    again = load(found.write(tmp_path / "shrunk.json"))
    verdict = judge(mutant, again, ORDERED)
    assert verdict.verdict == FAILED
    assert verdict.reason == judge(mutant, found, ORDERED).reason
    assert judge(ModelImplementation(), again, ORDERED).verdict == PASSED
