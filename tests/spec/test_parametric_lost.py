"""The experimental parametric induction step of ``ordered`` / ``no-lost-input``, and
of the first guard of complete-reuse's store half (no input is accepted twice)
(:mod:`.parametric_lost`): its invariant is kept whatever the bound, each fact is
needed, the broken variants are refuted, and the machine's micro-steps are steps of the
model on concrete runs (:mod:`.parametric_lost_refine`)."""

from __future__ import annotations

import pytest

from replay_contract.spec import parametric_lost as pl
from replay_contract.spec import parametric_lost_refine as refine
from replay_contract.spec.bound import parse
from replay_contract.spec.parametric import Rows

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


def test_bad_input_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        pl.main(["--drop", "no such fact"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "no fact named 'no such fact'" in err and "\n" not in err
    with pytest.raises(SystemExit) as e:
        refine.main(["--bound", "inputs=0"])
    assert e.value.code == 2
    assert "\n" not in capsys.readouterr().err.strip()


def test_the_command_line_reports_the_step(capsys: pytest.CaptureFixture[str]) -> None:
    assert pl.main(["--initial", "--quiet", "--keys", "2", "--n", "4,none"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4
    assert all("23/23" in line for line in out if line.startswith("step"))
