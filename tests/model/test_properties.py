"""Each property returns a witness that points at the events that show its violation."""

from __future__ import annotations

import attrs
import pytest

from replay_contract.model import trace as t
from replay_contract.model.catalogue import builtin
from replay_contract.model.contracts import CONTRACTS, ORDERED
from replay_contract.model.mutants import MUTANTS
from replay_contract.model.run import simulate
from replay_contract.spec import properties as p


def trace_of(scenario: str, contract: str) -> t.Trace:
    c = CONTRACTS.get(contract) or MUTANTS[contract]
    return simulate(builtin(scenario), c).trace


def kinds(trace: t.Trace, verdict: p.Verdict) -> list[type]:
    return [type(trace.events[i]) for i in verdict.witness]


@pytest.mark.parametrize(
    ("prop", "scenario", "contract", "witness_kinds"),
    [
        (p.NO_STALE_REUSE, "reversed-interleaving", "stable-id", [t.Save, t.Reuse]),
        (p.EQUIVALENT_OUTCOME, "reversed-interleaving", "stable-id", [t.End]),
        (p.DIVERGENCE_SAFEGUARD, "genuine-divergence", "no-divergence-check", [t.Accept, t.Reuse]),
        (p.COMPLETE_REUSE, "reversed-interleaving", "seqnum", [t.Save, t.Tool]),
        (
            p.KEY_ISOLATION,
            "divergence-beside-other-key",
            "ordered-invalidate-every-key",
            [t.Invalidate],
        ),
        (
            p.BOUNDED_WAITING,
            "lost-last-of-split-timeout",
            "ordered-ignores-timeout",
            [t.Wait, t.Timeout],
        ),
    ],
)
def test_violation_has_a_witness(
    prop: str, scenario: str, contract: str, witness_kinds: list[type]
) -> None:
    trace = trace_of(scenario, contract)
    verdict = p.check(prop, trace)
    assert not verdict.holds
    assert kinds(trace, verdict) == witness_kinds
    assert verdict.explanation


def test_every_property_holds_on_a_failure_free_run() -> None:
    scenario = builtin("reversed-interleaving")
    plain = scenario.with_schedule(tuple(s for s in scenario.schedule[:4]))
    trace = simulate(plain, ORDERED).trace
    assert all(v.holds for v in p.check_all(trace))


def without(trace: t.Trace, index: int) -> t.Trace:
    return attrs.evolve(trace, events=trace.events[:index] + trace.events[index + 1 :])


def test_no_lost_input_catches_a_dropped_and_a_doubled_input() -> None:
    trace = trace_of("reversed-interleaving", "ordered")
    last_accept = max(i for i, e in enumerate(trace.events) if isinstance(e, t.Accept))
    dropped = p.no_lost_input(without(trace, last_accept))
    assert not dropped.holds and "never accepted" in dropped.explanation
    accept = trace.events[last_accept]
    assert isinstance(accept, t.Accept)
    doubled_events = (
        *trace.events[: last_accept + 1],
        attrs.evolve(accept, position=accept.position + 1),
        *trace.events[last_accept + 1 :],
    )
    doubled = p.no_lost_input(attrs.evolve(trace, events=doubled_events))
    assert not doubled.holds and "accepted 2 times" in doubled.explanation


def test_key_isolation_catches_a_shared_position_counter() -> None:
    trace = trace_of("two-keys-interleaved", "ordered")
    first = next(i for i, e in enumerate(trace.events) if isinstance(e, t.Accept) and e.key == "J")
    event = trace.events[first]
    assert isinstance(event, t.Accept)
    shifted = attrs.evolve(
        trace,
        events=(*trace.events[:first], attrs.evolve(event, position=1), *trace.events[first + 1 :]),
    )
    verdict = p.key_isolation(shifted)
    assert not verdict.holds and verdict.witness == (first,)


def test_read_set_basis_judges_reads_not_history() -> None:
    trace = trace_of("stateful-chain", "read-set")
    assert p.no_stale_reuse(trace).holds
    as_history = attrs.evolve(trace, basis="history")
    assert not p.no_stale_reuse(as_history).holds


def test_a_stale_reuse_after_a_changed_input_says_which_came_back_changed() -> None:
    # the same identities in the same order: only A's payload differs after the restore
    path = ("answer",)
    trace = t.Trace(
        builtin("reversed-interleaving").agent,
        "history",
        (
            t.Checkpoint(0),
            t.Accept("K", 0, "A", "a"),
            t.Accept("K", 1, "B", "b"),
            t.Save("K", 1, "B", "b", path, 0, ()),
            t.Crash(),
            t.Restore(0),
            t.Accept("K", 0, "A", "a2"),
            t.Accept("K", 1, "B", "b"),
            t.Reuse("K", 1, "B", "b", path, 0, ()),
        ),
    )
    verdict = p.no_stale_reuse(trace)
    assert not verdict.holds
    assert verdict.witness == (3, 8)
    assert verdict.explanation.endswith(
        "computed after [A] but follows [A] now (A came back with another payload)"
    )


# -- bounded-waiting ----------------------------------------------------------------------


def _events(*events: t.Event) -> t.Trace:
    return t.Trace(builtin("lost-last-of-split-timeout").agent, "history", events)


B = t.Deliver("B", "K", "upstream-2", 0, "b", "b")
WAIT_B = t.Wait("K", "B", "A")
ACCEPT_B = t.Accept("K", 0, "B", "b")


def test_bounded_waiting_holds_where_the_timeout_releases_the_key() -> None:
    trace = trace_of("lost-last-of-split-timeout", "ordered")
    assert p.bounded_waiting(trace).holds
    timeout = next(i for i, e in enumerate(trace.events) if isinstance(e, t.Timeout))
    wait = next(i for i, e in enumerate(trace.events) if isinstance(e, t.Wait))
    between = trace.events[wait:timeout]
    assert [type(e) for e in between if isinstance(e, t.GiveUp | t.Accept)] == [t.GiveUp, t.Accept]


def test_bounded_waiting_catches_a_timeout_that_releases_nothing() -> None:
    trace = trace_of("lost-last-of-split-timeout", "ordered")
    wait = next(i for i, e in enumerate(trace.events) if isinstance(e, t.Wait))
    timeout = next(i for i, e in enumerate(trace.events) if isinstance(e, t.Timeout))
    released_later = (
        *trace.events[: wait + 1],
        trace.events[timeout],
        *trace.events[wait + 1 : timeout],
        *trace.events[timeout + 1 :],
    )
    verdict = p.bounded_waiting(attrs.evolve(trace, events=released_later))
    assert not verdict.holds
    assert verdict.witness == (wait, wait + 1)
    assert "B of key K still waits for A" in verdict.explanation


def test_bounded_waiting_judges_the_waiting_a_restore_brings_back() -> None:
    """What waits is keyed state: a checkpoint taken while B waits brings B back as
    waiting after a restore, and the bound holds for it too; B delivered after the
    checkpoint is rolled back (it comes again), so a timeout owes it nothing."""
    kept = _events(B, WAIT_B, t.Checkpoint(1), t.Crash(), t.Restore(1), t.Timeout(), t.End(()))
    verdict = p.bounded_waiting(kept)
    assert not verdict.holds and verdict.witness == (1, 5)
    rolled_back = _events(t.Checkpoint(1), B, WAIT_B, t.Crash(), t.Restore(1), t.Timeout())
    assert p.bounded_waiting(rolled_back).holds
    released = _events(B, WAIT_B, t.GiveUp("K", 0, "A", "x"), ACCEPT_B, t.Timeout(), t.End(()))
    assert p.bounded_waiting(released).holds


def test_bounded_waiting_asks_nothing_without_a_timeout() -> None:
    assert p.bounded_waiting(_events(B, WAIT_B, t.Checkpoint(1), t.End(()))).holds


@pytest.mark.parametrize("contract", sorted(CONTRACTS))
def test_no_published_contract_waits_past_a_timeout_in_the_catalogue(contract: str) -> None:
    from replay_contract.model.catalogue import all_builtin

    for scenario in all_builtin():
        assert p.bounded_waiting(simulate(scenario, CONTRACTS[contract]).trace).holds
