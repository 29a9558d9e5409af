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
