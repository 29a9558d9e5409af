"""The experimental parametric induction step of ``ordered`` / ``no-lost-input``, of
the first guard of complete-reuse's store half (no input is accepted twice) and, with
``excuse``, of its second (a divergence finds its key excused, and the excuse lasts)
(:mod:`.parametric_lost`): its invariant is kept whatever the bound, each fact is
needed, the broken variants are refuted, and the machine's micro-steps are steps of the
model on concrete runs (:mod:`.parametric_lost_refine`)."""

from __future__ import annotations

import pytest
from attrs import evolve

from replay_contract.model.contracts import ORDERED
from replay_contract.spec.bound import parse
from replay_contract.spec.everybound import parametric_lost as pl
from replay_contract.spec.everybound import parametric_lost_refine as refine
from replay_contract.spec.everybound.parametric import Rows

TIMEOUT_MS = 60_000

FACTS = [
    "accepted delivered op",
    "waiting delivered op",
    "unaccepted waits op",
    "waiting key inserted op",
    "recovering key inserted op",
    "accepted below offset op",
    "waiting below offset op",
    "waiting not accepted op",
    "accepted delivered sv",
    "waiting delivered sv",
    "unaccepted waits sv",
    "waiting key inserted sv",
    "recovering key inserted sv",
    "accepted below offset sv",
    "waiting below offset sv",
    "waiting not accepted sv",
    "loop up",
    "places",
    "inserted key placed",
    "end key",
    "waiting key ahead",
    "no lost input",
    "accepted once",
]

#: per broken variant, the facts its step does not keep (counterexamples to induction)
BROKEN = {
    "end-skips-key": {"inserted key placed", "waiting key ahead", "no lost input"},
    "finish-while-waiting": {"waiting key ahead", "no lost input"},
    "no-end-divergence": {"end key"},
    "wait-anyway": {"waiting key inserted op", "recovering key inserted op"},
    "forget-waiting": {"unaccepted waits op"},
    "redeliver": {
        "accepted below offset op",
        "waiting below offset op",
        "waiting not accepted op",
        "accepted once",
    },
}


#: the facts ``excuse`` adds
EXCUSE_FACTS = [
    "outstanding not accepted op",
    "delivered is a record op",
    "delivered below high op",
    "passed over is lost op",
    "outstanding not accepted sv",
    "delivered is a record sv",
    "delivered below high sv",
    "passed over is lost sv",
    "accepted below high",
    "outstanding below high",
    "outstanding waiting",
    "delivered at checkpoint",
    "accepted at checkpoint",
    "end after every delivery",
    "positions from zero",
    "end after checkpoint",
    "end after position",
    "expected before end",
    "expected to end",
    "divergence excused",
    "excuse witnessed",
    "waiting head in a loop",
    "recovering key placed",
    "restore's key",
    "restore's places",
    "recorded key",
    "recorded once",
    "recorded outstanding",
    "recorded outstanding or accepted",
    "history accepted",
    "history accepted at checkpoint",
]

#: per broken variant of the excuse, the facts its step does not keep
BROKEN_EXCUSE = {
    "give-up-anywhere": {"excuse witnessed"},
    "forget-outstanding": {
        "excuse witnessed",
        "recorded outstanding",
        "recorded outstanding or accepted",
    },
    "deliver-lost": {"excuse witnessed"},
}


def not_kept(rows: Rows) -> set[str]:
    return {name for name, res, _ in rows if res != "unsat"}


@pytest.mark.parametrize("mode", ["manual", "quant"])
def test_the_invariant_of_no_lost_input_is_inductive(mode: str) -> None:
    rows = pl.check_step(pl.Options(mode=mode), TIMEOUT_MS)
    assert [name for name, _, _ in rows] == FACTS
    assert not_kept(rows) == set()


@pytest.mark.parametrize("n,keys", [(3, 2), (8, 2), (6, 3)])
def test_the_step_is_the_same_at_a_bound(n: int, keys: int) -> None:
    assert not_kept(pl.check_step(pl.Options(n=n, keys=keys), TIMEOUT_MS)) == set()


def test_the_initial_state_satisfies_the_invariant() -> None:
    assert not_kept(pl.check_initial(pl.Options(), TIMEOUT_MS)) == set()


@pytest.mark.parametrize("variant", sorted(BROKEN))
def test_a_broken_model_is_not_kept(variant: str) -> None:
    rows = pl.check_step(pl.Options(variant=variant), TIMEOUT_MS)
    assert not_kept(rows) == BROKEN[variant]


@pytest.mark.parametrize("fact", [f for f in FACTS if f not in ("no lost input", "accepted once")])
def test_each_fact_is_needed(fact: str) -> None:
    rows = pl.check_step(pl.Options(drop=(fact,)), TIMEOUT_MS)
    assert fact not in {name for name, _, _ in rows}
    assert not_kept(rows), f"the invariant without {fact!r} is still kept"


def test_the_machine_takes_only_model_steps() -> None:
    done = refine.check_runs(parse("inputs=3,channels=2,keys=2,crashes=2"), waiting=8, seed=3)
    assert done.runs == 8
    assert done.failures == []
    # the runs reach what the model is about: inputs that wait, and the end
    assert done.reached["wait"] == 8
    assert done.reached["end"] >= 1


def test_a_model_that_forgets_waiting_inputs_is_caught() -> None:
    bound = parse("inputs=3,channels=2,keys=2,crashes=2")
    done = refine.check_runs(bound, variant="forget-waiting", waiting=12, seed=5, stop_after=1)
    assert len(done.failures) == 1
    assert "(unsat)" in done.failures[0][1][0]


def test_the_excuse_of_complete_reuse_is_inductive() -> None:
    rows = pl.check_step(pl.Options(excuse=True), TIMEOUT_MS)
    assert [name for name, _, _ in rows] == FACTS + EXCUSE_FACTS
    assert not_kept(rows) == set()
    assert not_kept(pl.check_initial(pl.Options(excuse=True), TIMEOUT_MS)) == set()


def test_the_excuse_is_the_same_at_a_bound() -> None:
    assert not_kept(pl.check_step(pl.Options(n=4, keys=2, excuse=True), TIMEOUT_MS)) == set()


@pytest.mark.parametrize("variant", sorted(BROKEN_EXCUSE))
def test_a_broken_excuse_is_not_kept(variant: str) -> None:
    rows = pl.check_step(pl.Options(variant=variant, excuse=True), TIMEOUT_MS)
    assert not_kept(rows) == BROKEN_EXCUSE[variant]


@pytest.mark.parametrize(
    "fact",
    # a sample of the excuse's facts: of the waiting inputs, the lost ones, the end and the
    # recovering keys (the whole list: spec/notes/parametric.md)
    [
        "outstanding waiting",
        "passed over is lost op",
        "expected to end",
        "recovering key placed",
    ],
)
def test_each_fact_of_the_excuse_is_needed(fact: str) -> None:
    rows = pl.check_step(pl.Options(drop=(fact,), excuse=True), TIMEOUT_MS)
    assert fact not in {name for name, _, _ in rows}
    assert not_kept(rows), f"the invariant without {fact!r} is still kept"


def test_the_machine_takes_only_model_steps_of_the_excuse() -> None:
    bound = parse("inputs=3,channels=2,keys=2,crashes=2")
    done = refine.check_runs(bound, waiting=10, seed=2, excuse=True)
    assert done.runs == 10
    assert done.failures == []
    # some run diverges, and the machine's state excuses the key there and after
    assert done.reached["excused"] >= 1


def test_the_model_of_the_waiting_inputs_is_a_step_of_the_machine_with_the_early_order() -> None:
    # record_order before-first-tool-call (docs/examples/earlier-order.json) changes when
    # the position is written, which this model leaves out: its steps are the same
    early = evolve(ORDERED, name="ordered-early", record_order="before-first-tool-call")
    bound = parse("inputs=3,channels=2,keys=2,crashes=2,agents=stateful")
    done = refine.check_runs(bound, waiting=3, seed=3, excuse=True, contract=early)
    assert done.runs == 3 and done.failures == []
    assert done.reached["wait"] == 3
