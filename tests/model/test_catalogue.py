"""What the reference model must show on the built-in scenarios."""

from __future__ import annotations

import pytest

from replay_contract.model.catalogue import all_builtin, builtin, names
from replay_contract.model.contracts import CONTRACTS, ORDERED, SEQNUM
from replay_contract.model.mutants import MUTANTS
from replay_contract.model.run import simulate
from replay_contract.spec.explore import explore
from replay_contract.spec.summary import summary as figures


def summary(scenario: str, contract: str) -> dict:
    return figures(simulate(builtin(scenario), CONTRACTS[contract]))


def test_reversed_interleaving_under_seqnum_repeats_all_four_tool_calls() -> None:
    s = summary("reversed-interleaving", "seqnum")
    assert s["repeated_tool_calls"] == 4
    assert s["tool_calls"] == 8
    assert s["reused"] == 0
    assert s["violations"] == ["complete-reuse"]


def test_reversed_interleaving_under_ordered_repeats_nothing() -> None:
    s = summary("reversed-interleaving", "ordered")
    assert s["repeated_tool_calls"] == 0
    assert s["tool_calls"] == 4
    assert s["reused"] == 4
    assert s["waited"] == 1
    assert s["violations"] == []


def test_reversed_interleaving_under_stable_id_reuses_stale_results() -> None:
    s = summary("reversed-interleaving", "stable-id")
    assert s["repeated_tool_calls"] == 0
    assert {"no-stale-reuse", "equivalent-outcome"} <= set(s["violations"])
    assert "complete-reuse" not in s["violations"]


def test_no_divergence_check_masks_a_genuine_divergence() -> None:
    assert (
        "divergence-safeguard" in summary("genuine-divergence", "no-divergence-check")["violations"]
    )
    assert summary("genuine-divergence", "seqnum")["violations"] == []


def test_single_upstream_key_keeps_full_reuse_under_seqnum() -> None:
    s = summary("single-upstream", "seqnum")
    assert s["repeated_tool_calls"] == 0
    assert s["reused"] == 4
    assert s["violations"] == []


def test_interleaving_of_different_keys_keeps_full_reuse_under_seqnum() -> None:
    s = summary("two-keys-interleaved", "seqnum")
    assert s["repeated_tool_calls"] == 0
    assert s["violations"] == []


def test_stateful_chain_under_stable_id_changes_the_outcome() -> None:
    ordered = summary("stateful-chain", "ordered")
    stable = summary("stateful-chain", "stable-id")
    assert ordered["violations"] == []
    assert "equivalent-outcome" in stable["violations"]


def test_ordered_restores_the_accepted_history_before_dependent_memory_updates() -> None:
    from replay_contract.model import trace as t

    run = simulate(builtin("stateful-chain"), ORDERED)
    restore = next(i for i, e in enumerate(run.world.events) if isinstance(e, t.Restore))
    after = [e for e in run.world.events[restore:] if isinstance(e, (t.Accept, t.Reuse))]
    accepted = [(e.position, e.identity) for e in after if isinstance(e, t.Accept)]
    assert accepted == [(0, "A"), (1, "B"), (2, "C")]  # B arrived first, but waited
    assert all(isinstance(e, t.Reuse) for e in after if not isinstance(e, t.Accept))


@pytest.mark.parametrize("name", names())
def test_ordered_breaks_no_property_on_any_builtin_scenario(name: str) -> None:
    assert summary(name, "ordered")["violations"] == []


@pytest.mark.parametrize("name", names())
def test_seqnum_breaks_at_most_complete_reuse(name: str) -> None:
    assert set(summary(name, "seqnum")["violations"]) <= {"complete-reuse"}


@pytest.mark.parametrize("name", names())
def test_ordered_holds_over_every_redelivery_and_crash_point(name: str) -> None:
    e = explore(builtin(name), ORDERED, crash_points=True)
    assert e.complete and e.runs > 1
    assert e.findings == (), [(f.property, f.explanation) for f in e.findings]


def test_seqnum_loses_complete_reuse_in_the_explored_space() -> None:
    e = explore(builtin("reversed-interleaving"), SEQNUM, crash_points=True)
    assert e.broken() == ["complete-reuse"]


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_every_mutant_of_ordered_is_caught_by_the_catalogue(mutant: str) -> None:
    """A mutant breaks a property on a built-in scenario, or (one that is only slower
    to give up, like ``ordered-no-give-up-bound``) decides otherwise than ``ordered``
    on one: the conformance suite compares the traces step by step."""
    broken = {p for s in all_builtin() for p in figures(simulate(s, MUTANTS[mutant]))["violations"]}
    differs = [
        s.name
        for s in all_builtin()
        if simulate(s, MUTANTS[mutant]).world.events != simulate(s, ORDERED).world.events
    ]
    assert broken or differs, f"{mutant} breaks no property and differs on no built-in scenario"
    if mutant == "ordered-no-give-up-bound":
        assert differs == ["give-up-after-bound"]


def test_a_timeout_releases_a_key_whose_lost_record_was_the_last_of_its_split() -> None:
    s = summary("lost-last-of-split-timeout", "ordered")
    assert s["violations"] == []
    assert s["waited"] == 1  # B waits for A; C, after the timeout, does not
    ignoring = figures(
        simulate(builtin("lost-last-of-split-timeout"), MUTANTS["ordered-ignores-timeout"])
    )
    assert ignoring["violations"] == ["bounded-waiting"]
    assert ignoring["waited"] == 2


def test_the_explorer_catches_a_contract_that_ignores_timeouts() -> None:
    e = explore(builtin("lost-input-at-end"), MUTANTS["ordered-ignores-timeout"], crash_points=True)
    assert e.broken() == ["bounded-waiting"]
    assert explore(builtin("lost-input-at-end"), ORDERED, crash_points=True).findings == ()


def test_explorer_findings_replay_as_scenario_files(tmp_path) -> None:
    from replay_contract.model.scenario import load

    e = explore(builtin("reversed-interleaving"), CONTRACTS["stable-id"])
    assert e.findings
    for f in e.findings:
        path = f.scenario.write(tmp_path / f"{f.scenario.name}.json")
        replayed = figures(simulate(load(path), CONTRACTS["stable-id"]))
        assert f.property in replayed["violations"]
