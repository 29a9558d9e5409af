"""The experimental parametric induction step of ``ordered`` / ``no-stale-reuse``
(:mod:`.parametric_ordered`): its invariant is kept, the broken variants are refuted, and
it is a step of the real machine on concrete runs (:mod:`.parametric_ordered_refine`)."""

from __future__ import annotations

import pytest
import z3
from attrs import evolve

from replay_contract.model.contracts import ORDERED
from replay_contract.spec.agentterms import output_term, write_term
from replay_contract.spec.bound import parse
from replay_contract.spec.everybound import parametric_ordered as po
from replay_contract.spec.everybound import parametric_ordered_refine as refine
from replay_contract.spec.everybound.parametric import Rows
from replay_contract.spec.everybound.parametric_lost_refine import ordered_runs
from replay_contract.spec.logic import NONE

TIMEOUT_MS = 60_000

#: the facts of ordered's invariant for no-stale-reuse
FACTS = {
    "valid ahead is order op",
    "valid ahead is order sv",
    "before end",
    "written behind",
    "slot basics",
    "history is order op",
    "history is order sv",
    "next nonneg",
    "orders agree below next",
    "checkpoint behind",
    "end after next",
    "recorded without gap",
    "expected is order",
    "expected to end",
    "expected before end",
    "pending divergence",
    "divergence before end",
    "saved recovering appears",
    "markers equal",
    "marker below now",
    "counters",
    "no stale reuse",
}

#: per broken variant, a fact its step does not keep (a counterexample to induction)
BROKEN = {
    "any-position": "no stale reuse",
    "no-wait": "valid ahead is order op",
    "no-scan": "expected to end",
    "no-order-record": "recorded without gap",
    "forget-saved-order": "orders agree below next",
}


def not_kept(rows: Rows) -> dict[str, str]:
    return {name: res for name, res, _ in rows if res != "unsat"}


def test_the_invariant_of_ordered_is_inductive() -> None:
    rows = po.check_step(po.Options(), TIMEOUT_MS)
    assert {name for name, _, _ in rows} == FACTS
    assert not_kept(rows) == {}


def test_the_initial_state_satisfies_the_invariant() -> None:
    assert not_kept(po.check_initial(po.Options(), TIMEOUT_MS)) == {}


def test_divergence_safeguard_facts_are_kept() -> None:
    facts = ("recorded", "no later divergence", "divergences in the past", "divergence safeguard")
    rows = po.check_step(po.Options(safeguard=True, only=facts), TIMEOUT_MS)
    assert {name for name, _, _ in rows} == set(facts)
    assert not_kept(rows) == {}


#: the facts of key-isolation and equivalent-outcome (``--isolation --outcome``)
NEW_FACTS = (
    "key isolation",
    "valid ahead reads ghost op",
    "valid ahead reads ghost sv",
    "ghost memory op",
    "ghost memory sv",
    "ghost memory chain op",
    "ghost memory chain sv",
    "ghost memories agree",
    "saved outcome",
    "equivalent outcome",
)

#: per broken variant of key-isolation or equivalent-outcome, a fact its step does not keep
NEW_BROKEN = {
    "every-key": "key isolation",
    "forget-memory": "equivalent outcome",
    "other-reads": "valid ahead reads ghost sv",
}


def test_key_isolation_and_equivalent_outcome_facts_are_kept() -> None:
    o = po.Options(isolation=True, outcome=True, only=NEW_FACTS)
    rows = po.check_step(o, TIMEOUT_MS)
    assert {name for name, _, _ in rows} == set(NEW_FACTS)
    assert not_kept(rows) == {}


@pytest.mark.parametrize("variant", sorted(NEW_BROKEN))
def test_broken_isolation_or_outcome_gets_a_counterexample(variant: str) -> None:
    fact = NEW_BROKEN[variant]
    isolation = variant == "every-key"
    o = po.Options(isolation=isolation, outcome=not isolation, variant=variant, only=(fact,))
    assert not_kept(po.check_step(o, TIMEOUT_MS)) == {fact: "sat"}


def test_without_the_live_ghost_memory_chain_the_saved_one_fails() -> None:
    o = po.Options(outcome=True, drop=("ghost memory chain op",), only=("ghost memory chain sv",))
    assert not_kept(po.check_step(o, TIMEOUT_MS)) == {"ghost memory chain sv": "sat"}


@pytest.mark.parametrize("variant", sorted(BROKEN))
def test_broken_variants_get_a_counterexample_to_induction(variant: str) -> None:
    fact = BROKEN[variant]
    rows = po.check_step(po.Options(variant=variant, only=(fact,)), TIMEOUT_MS)
    assert not_kept(rows) == {fact: "sat"}


def test_a_main_fact_dropped_makes_another_fail() -> None:
    o = po.Options(drop=("recorded without gap",), only=("expected to end",))
    assert not_kept(po.check_step(o, TIMEOUT_MS)) == {"expected to end": "sat"}


def test_micro_steps_of_the_machine_are_steps_of_the_model() -> None:
    # seed 26: the three runs reach every behaviour counted (about 4 s)
    done = refine.check_runs(parse("inputs=2,channels=2,keys=1,crashes=1"), sample=3, seed=26)
    assert done.runs == 3 and done.failures == []
    assert all(n > 0 for n in done.reached.values()), done.reached


def test_a_model_without_the_scan_is_caught_by_the_refinement_check() -> None:
    bound = parse("inputs=3,channels=2,keys=2,crashes=2,agents=stateful")
    done = refine.check_runs(bound, sample=3, variant="no-scan", stop_after=1)
    assert done.failures


@pytest.mark.parametrize("agent", ["stateful", "chain"])
def test_the_refinement_binds_key_isolation_and_equivalent_outcome(agent: str) -> None:
    bound = parse(f"inputs=2,channels=2,keys=1,crashes=1,agents={agent}")
    done = refine.check_runs(bound, sample=2, seed=3, isolation=True, outcome=True)
    assert done.runs == 2 and done.failures == []


def test_a_model_that_forgets_the_memory_is_caught_by_the_refinement_check() -> None:
    bound = parse("inputs=2,channels=2,keys=1,crashes=1,agents=stateful")
    done = refine.check_runs(
        bound, sample=4, variant="forget-memory", stop_after=1, isolation=True, outcome=True
    )
    assert done.failures


#: the facts of complete-reuse's store half (``--complete``)
COMPLETE_FACTS = (
    "history accepted op",
    "history accepted sv",
    "recorded once",
    "saved once still there op",
    "saved once still there sv",
    "repeated excused",
)


def test_the_store_half_of_complete_reuse_is_kept() -> None:
    rows = po.check_step(po.Options(complete=True), TIMEOUT_MS)
    assert set(COMPLETE_FACTS) <= {name for name, _, _ in rows}
    assert not_kept(rows) == {}
    assert not_kept(po.check_initial(po.Options(complete=True), TIMEOUT_MS)) == {}


@pytest.mark.parametrize(
    ("variant", "fact"),
    [
        # a divergence without an excuse voids a completion saved once
        ("unexcused-divergence", "saved once still there op"),
        # an input accepted twice calls its tool again for an unexcused key
        ("accept-again", "repeated excused"),
    ],
)
def test_the_guards_of_complete_reuse_are_needed(variant: str, fact: str) -> None:
    o = po.Options(complete=True, variant=variant, only=(fact,))
    assert not_kept(po.check_step(o, TIMEOUT_MS)) == {fact: "sat"}


def test_the_refinement_binds_complete_reuse_and_its_excuse() -> None:
    # runs that leave an input waiting; seed 1: one of them diverges (a kept
    # invalidation), so the guard that a divergence finds its key excused is exercised
    bound = parse("inputs=3,channels=2,keys=2,crashes=2,agents=stateful")
    done = refine.check_runs(bound, waiting=2, seed=1, complete=True)
    assert done.runs == 2 and done.failures == []
    assert done.reached["invalidation"] >= 1 and done.reached["wait"] == 2


def test_concrete_agent_terms_are_distinct_model_values() -> None:
    plan = po.plan_of(po.Options())
    entry = plan.entries[0]
    first = write_term(entry, 0, 0, 0, (NONE,))
    again = write_term(entry, 0, 0, 0, (NONE,))
    other = [
        NONE,
        write_term(entry, 0, 0, 1, (NONE,)),
        write_term(entry, 0, 1, 0, (first,)),
        output_term(entry, 0, 0, (NONE,)),
    ]
    x = refine.encode(plan, first)
    assert z3.is_true(z3.simplify(x == refine.encode(plan, again)))
    for term in other:
        eq = x == refine.encode(plan, term)
        solver = z3.Solver()
        solver.add(eq, *refine.free_algebra(plan, [eq]))
        assert solver.check() == z3.unsat, term


# -- record_order before-first-tool-call (docs/examples/earlier-order.json) -------------


def test_the_invariant_is_kept_with_the_order_written_before_the_first_tool_call() -> None:
    o = po.Options(early=True)
    assert not_kept(po.check_initial(o, TIMEOUT_MS)) == {}
    assert not_kept(po.check_step(o, TIMEOUT_MS)) == {}


def test_the_early_order_model_is_a_step_of_the_machine_under_that_rule() -> None:
    early = evolve(ORDERED, name="ordered-early", record_order="before-first-tool-call")
    bound = parse("inputs=2,channels=2,keys=1,crashes=1")
    done = refine.check_runs(bound, sample=3, seed=26, contract=early)
    assert done.runs == 3 and done.failures == []
    # and the model of the other rule is not: the refinement check tells them apart
    runs = ordered_runs(bound, 2, 0, 26, early)
    for shape, node in runs:
        o = po.Options(entries=refine.entries(shape.agent), safeguard=True)
        assert refine.check_run(early, bound, shape, node, o, TIMEOUT_MS, {})
