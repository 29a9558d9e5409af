"""``verify --engine induction`` with the step classes as jobs of their own: each class
checked alone, put together in class order, gives what the sequential proof gives."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve

from replay_contract.model.contracts import ORDERED, SEQNUM
from replay_contract.spec import induction
from replay_contract.spec.bound import parse
from replay_contract.spec.induction import ClassOutcome
from replay_contract.spec.properties import PROPERTIES
from replay_contract.spec.verify import Result, verify_contract
from replay_contract.spec.workers import Workers

TINY = parse("inputs=2,channels=2,keys=1,crashes=1")


def _alone(contract: Any, agent: str, props: list[str]) -> list[ClassOutcome]:
    classes = induction.step_classes(contract, TINY)
    return [induction.check_step_class(contract, agent, TINY, t, props) for t in classes]


@pytest.mark.parametrize(
    ("contract", "props"),
    [
        (ORDERED, induction.inductive(ORDERED, "chain", induction.PROPERTIES)),
        # complete-reuse has no facts for seqnum: its flag fails, at the first class
        # that may set it, even though each later class is asked about it again
        (SEQNUM, [*induction.INDUCTIVE, "complete-reuse"]),
    ],
)
def test_each_class_alone_gives_what_prove_gives(contract: Any, props: list[str]) -> None:
    outcome = induction.prove(contract, "chain", TINY, props)
    alone = _alone(contract, "chain", props)
    for together in (
        induction.combine(props, alone),
        induction.settle(props, induction.step_classes(contract, TINY), {o.t: o for o in alone}),
    ):
        assert isinstance(together, induction.Outcome)
        assert (together.proved, together.failed) == (outcome.proved, outcome.failed)
    if contract is SEQNUM:
        assert outcome.failed.keys() == {"complete-reuse"}
        assert sum("complete-reuse" in o.failed for o in alone) > 1  # asked again


def test_a_micro_step_that_stands_for_no_class_is_refused() -> None:
    with pytest.raises(ValueError, match="micro-step 2 stands for no step class"):
        induction.check_step_class(SEQNUM, "stateful", TINY, 2, ["no-lost-input"])


def _class(t: int, broken: str = "", failed: dict[str, str] | None = None) -> ClassOutcome:
    return ClassOutcome(t, failed or {}, broken, (), 1, 1.0)


def test_the_first_class_that_breaks_the_invariant_gives_the_reason() -> None:
    props, classes = ["key-isolation", "no-lost-input"], [0, 1, 7, 8]
    done = {8: _class(8, "broken at 8")}  # the last class finished first
    assert induction.settle(props, classes, done) == [(0, ()), (1, ()), (7, ())]
    done[7] = _class(7, "broken at 7")
    assert induction.settle(props, classes, done) == [(0, ()), (1, ())]
    done[0], done[1] = _class(0), _class(1)
    outcome = induction.settle(props, classes, done)
    assert isinstance(outcome, induction.Outcome)
    assert outcome.proved == [] and outcome.failed == dict.fromkeys(props, "broken at 7")
    assert outcome.seconds == 3.0  # class 8 does not count


def test_a_broken_class_asked_about_a_flag_failed_before_is_checked_again() -> None:
    # prove leaves out the flag class 1 failed; the reason must be that of such a check
    props, classes = ["key-isolation", "no-lost-input"], [0, 1, 7, 8]
    done = {
        0: _class(0),
        1: _class(1, failed={"no-lost-input": "flag at 1"}),
        7: _class(7, "broken at 7"),
    }
    assert induction.settle(props, classes, done) == [(7, ("no-lost-input",))]
    done[7] = ClassOutcome(7, {}, "broken at 7, again", ("no-lost-input",), 1, 1.0)
    outcome = induction.settle(props, classes, done)
    assert isinstance(outcome, induction.Outcome)
    assert outcome.failed == dict.fromkeys(props, "broken at 7, again")


def _by_property(results: list[Result]) -> dict[str, tuple[Any, ...]]:
    return {r.property: (r.verdict, r.reason, r.engines, r.reachable) for r in results}


@pytest.mark.parametrize("contract", [ORDERED, SEQNUM], ids=["ordered", "seqnum"])
def test_the_class_pool_gives_the_verdicts_of_the_sequential_path(contract: Any) -> None:
    alone = verify_contract(contract, TINY, engine="induction", workers=1)
    pooled = verify_contract(contract, TINY, engine="induction", workers=2)
    assert _by_property(pooled) == _by_property(alone)
    assert all(r.seconds > 0 for r in pooled)


def test_one_agents_classes_run_in_several_processes(tmp_path: Path) -> None:
    log = tmp_path / "progress"

    def progress(message: str) -> None:
        with log.open("a") as f:  # from each forked worker
            f.write(f"{os.getpid()} {message}\n")

    bound = parse("inputs=2,channels=2,keys=1,crashes=1,agents=chain")
    results = verify_contract(
        ORDERED, bound, engine="induction", reachability=False, progress=progress, workers=2
    )
    assert {r.engines["chain"] for r in results} == {"induction"}
    lines = [line.split(" ", 1) for line in log.read_text().splitlines()]
    classes = [(pid, text) for pid, text in lines if "/ induction / chain: micro-step" in text]
    assert len(classes) == len(induction.step_classes(ORDERED, bound))
    assert len({pid for pid, _ in classes}) > 1
    # the later classes first: the last class is among the first two to start, and the
    # first class (the quickest) is not the first to finish
    assert "micro-step 0 " not in classes[0][1]


def test_a_broken_later_class_gives_the_sequential_reason_and_the_retry(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # a fact of complete-reuse that the restore of epoch 1 breaks (from epoch 1 on it is
    # assumed, so the step after the restore keeps it): the invariant breaks at the
    # third class of four, the fourth (checked first) holds
    def reuse_facts(m: Any, ghosts: Any, epoch: int, add: Any) -> None:
        if epoch >= 1:
            add("bad", False)

    monkeypatch.setattr(induction, "_reuse_facts", reuse_facts)
    bound = parse("inputs=2,channels=2,keys=1,crashes=1,agents=stateful")
    said: dict[int, list[str]] = {}
    for workers in (1, 2):
        log = tmp_path / f"progress{workers}"

        def progress(message: str, log: Path = log) -> None:
            with log.open("a") as f:
                f.write(message + "\n")

        results = verify_contract(
            ORDERED, bound, engine="induction", progress=progress, workers=workers
        )
        said[workers] = log.read_text().splitlines()
        by = {r.property: r for r in results}
        assert all(r.verdict == "proved" for r in results)
        assert by["complete-reuse"].engines == {"stateful": "unrolling"}
        assert by["no-lost-input"].engines == {"stateful": "induction"}
    restore = induction.step_classes(ORDERED, bound)[2]
    why = f"micro-step {restore}, which may break the fact 'bad'"
    for lines in said.values():
        again = [line for line in lines if "again without the facts of 1 family (bad)" in line]
        assert len(again) == 1 and why in again[0]
    assert _verdicts(said[2]) == _verdicts(said[1])


def _verdicts(lines: list[str]) -> list[str]:
    """The lines of what induction proved and did not, without their seconds."""
    return sorted(
        line.rsplit(" (", 1)[0] if line.endswith(" s)") else line
        for line in lines
        if "by induction" in line
    )


def test_the_stop_when_one_agent_refutes_everything() -> None:
    # complete-reuse is not tried by induction for seqnum: the unrolling finds its
    # counterexample; once one agent has it, the other agent's job is stopped
    results = verify_contract(
        SEQNUM, TINY, ["complete-reuse"], engine="induction", reachability=False, workers=2
    )
    assert [r.verdict for r in results] == ["counterexample"]
    assert len(results[0].engines) == 1


def _slow() -> str:
    time.sleep(60)
    return "slow"


def _fails() -> None:
    raise KeyError("no such thing")


def test_workers_run_the_highest_priority_first_and_drop_what_runs() -> None:
    pool = Workers(1)
    for name, priority in (("low", (1, 0)), ("high", (3, 0)), ("middle", (2, 1)), ("mid", (2, 0))):
        pool.add((name,), priority, str, name)
    assert [pool.next()[1] for _ in range(4)] == ["high", "middle", "mid", "low"]
    pool = Workers(2)
    pool.add(("slow",), (2,), _slow)
    pool.add(("fast",), (1,), str, "fast")
    started = time.monotonic()
    assert pool.next() == (("fast",), "fast")
    assert ("slow",) in pool
    pool.drop(lambda key: key == ("slow",))
    assert len(pool) == 0 and time.monotonic() - started < 30
    pool.add(("fails",), (1,), _fails)
    with pytest.raises(KeyError, match="no such thing"):
        pool.next()
    pool.close()


#: What the search test asks: what the search proves, and one property it leaves to the
#: unrolling (complete-reuse's unrolling at two crashes would take most of the test).
ASKED = [
    "no-stale-reuse",
    "key-isolation",
    "no-lost-input",
    "equivalent-outcome",
    "divergence-safeguard",
]


def test_the_search_for_an_invariant_gives_the_same_on_several_processes(tmp_path: Path) -> None:
    # a contract outside the families: searched at two inputs and one crash, then at
    # the bound asked, round after round; the jobs of the rounds and the bounds follow
    # one another as induction.prove's do
    on_miss = evolve(ORDERED, name="ordered-on-miss-invalidates", on_miss="invalidate")
    bound = parse("inputs=2,channels=1,keys=1,crashes=2,agents=stateful")
    assert induction.search_bounds(on_miss, bound, PROPERTIES)
    said: dict[int, list[str]] = {}
    engines: dict[int, dict[str, dict[str, str]]] = {}
    for workers in (1, 2):
        log = tmp_path / f"progress{workers}"

        def progress(message: str, log: Path = log) -> None:
            with log.open("a") as f:
                f.write(message + "\n")

        results = verify_contract(
            on_miss,
            bound,
            ASKED,
            engine="induction",
            reachability=False,
            progress=progress,
            workers=workers,
        )
        said[workers] = log.read_text().splitlines()
        engines[workers] = {r.property: r.engines for r in results}
    assert engines[1] == engines[2]
    assert engines[1]["no-stale-reuse"] == {"stateful": "induction"}
    assert engines[1]["divergence-safeguard"] == {"stateful": "unrolling"}
    assert _verdicts(said[2]) == _verdicts(said[1])
    for lines in said.values():
        assert any("at inputs=2,channels=1,keys=1,crashes=1" in x and "again" in x for x in lines)
