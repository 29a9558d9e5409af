"""Witnesses of the reachability checks: random runs of the model pinned onto the
encoding, and the free search when a witness does not hold."""

from __future__ import annotations

import pytest
import z3

from replay_contract.model.contracts import ORDERED, SEQNUM
from replay_contract.spec import logic as lg
from replay_contract.spec import witness
from replay_contract.spec.bound import parse
from replay_contract.spec.verify import BEHAVIOURS, build, verify_contract

SMALL = parse("inputs=3,channels=2,keys=2,crashes=2")


@pytest.mark.parametrize("agent", ["stateful", "chain"])
def test_each_witness_of_ordered_is_a_run_of_the_encoding(agent: str) -> None:
    problem = build(ORDERED, agent, SMALL)
    hints = witness.find(ORDERED, agent, SMALL, problem.machine, BEHAVIOURS)
    assert set(hints) == set(BEHAVIOURS)
    for behaviour, pins in hints.items():
        flag = lg.lift_bool(problem.machine.reach[behaviour])
        assert problem.solver.check(flag, *pins) == z3.sat, behaviour
        # the pins fix the run: the behaviour cannot be missed under them
        assert problem.solver.check(z3.Not(flag), *pins) == z3.unsat, behaviour


def test_a_contract_that_does_not_wait_has_no_witness_of_a_wait() -> None:
    problem = build(SEQNUM, "stateful", SMALL)
    hints = witness.find(SEQNUM, "stateful", SMALL, problem.machine, BEHAVIOURS)
    assert "wait" not in hints
    assert {"crash", "restore", "reuse"} <= set(hints)


def test_the_same_bound_gets_the_same_witnesses() -> None:
    one = build(ORDERED, "stateful", SMALL)
    two = build(ORDERED, "stateful", SMALL)
    first = witness.find(ORDERED, "stateful", SMALL, one.machine, ["wait"])
    second = witness.find(ORDERED, "stateful", SMALL, two.machine, ["wait"])
    assert [str(p) for p in first["wait"]] == [str(p) for p in second["wait"]]


def test_a_witness_that_does_not_hold_leaves_the_free_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # pins no run satisfies: the check under them fails, and the free search answers
    def wrong(*args: object, **kwargs: object) -> dict[str, list[z3.BoolRef]]:
        return {b: [z3.BoolVal(False)] for b in BEHAVIOURS}

    monkeypatch.setattr(witness, "find", wrong)
    said: list[str] = []
    bound = parse("inputs=2,channels=2,keys=1,crashes=1")
    (r,) = verify_contract(ORDERED, bound, ["no-stale-reuse"], progress=said.append, workers=1)
    assert r.verdict == "proved"
    assert r.reachable == dict.fromkeys(BEHAVIOURS, "reached")
