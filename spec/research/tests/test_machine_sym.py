"""The machine of ``spec/encoding.py`` run over a symbolic number of records
(:mod:`spec.research.machine_sym`): at each concrete size it leaves the state the
bounded machine leaves (its store too), its steps keep the invariant of the waiting
inputs, the kept counts and the induction's facts about records for every number of
records, and a broken piece is caught."""

from __future__ import annotations

import subprocess
import sys

import pytest
import z3

from spec.research import machine_sym as ms

KINDS = ["arrive", "take", "finish"]


def _alone(call: str) -> str:
    """What ``ms.<call>`` answers in a fresh interpreter. E-matching depends on the
    symbols' names, which count up in a process: a check measured alone can run to
    its time limit after other checks (``spec/notes/deepen-bench.md``)."""
    code = f"from spec.research import machine_sym as ms; print(repr(ms.{call}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_the_symbolic_machine_agrees_with_the_bounded_one(kind: str, split: bool) -> None:
    for size in range(1, 5):
        assert ms.agree(kind, size, split) == z3.unsat, (kind, split, size)


@pytest.mark.parametrize(
    ("kind", "fault"), [("arrive", "first"), ("arrive", "offset"), ("take", "first")]
)
def test_a_broken_symbolic_machine_does_not_agree(kind: str, fault: str) -> None:
    assert ms.agree(kind, 2, split=True, broken=fault) == z3.sat


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_the_machine_keeps_the_waiting_invariant_for_every_number_of_records(
    kind: str, split: bool
) -> None:
    assert ms.waiting_step(kind, split, premises=True) == z3.sat
    assert ms.waiting_step(kind, split) == z3.unsat


@pytest.mark.parametrize(
    ("kind", "fault"), [("arrive", "offset"), ("take", "first"), ("take", "keep")]
)
def test_a_broken_step_is_not_proved(kind: str, fault: str) -> None:
    # E-matching gives ``sat`` or runs out of time (``unknown``): never ``unsat``
    assert ms.waiting_step(kind, True, fault, timeout_ms=3_000) != z3.unsat


def test_a_count_of_each_state_says_nothing_across_a_step() -> None:
    # each state's count is exact, but relating two of them needs the kept count
    assert ms.count_across_take(timeout_ms=2_000) != z3.unsat


def test_an_unknown_step_or_fault_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown step 'restore'"):
        ms.waiting_step("restore")
    with pytest.raises(ValueError, match="unknown fault 'late'"):
        ms.waiting_step("take", broken="late")


def test_the_symbolic_store_agrees_with_the_bounded_one() -> None:
    # a save, an invalidation, a lookup, the keys' ranks and the recorded order; with
    # three records E-matching gives no answer within a minute
    for size in (1, 2):
        assert _alone(f"store_agree({size}, timeout_ms=120_000)") == "unsat", size


@pytest.mark.parametrize("fault", ["latest", "first"])
def test_a_broken_symbolic_store_does_not_agree(fault: str) -> None:
    # ``sat`` alone (4 to 30 s), or ``unknown`` when E-matching finds no model in time
    # (how long depends on what ran before): never ``unsat``
    assert ms.store_agree(1, fault, timeout_ms=15_000) != z3.unsat


def test_the_restore_scan_agrees_with_the_bounded_one() -> None:
    # searches with searches in their bodies: the scan's end (the first position
    # without a recorded input) and its write to every position of a key's row
    for size in (1, 2, 3):
        assert ms.scan_agree(size, timeout_ms=120_000) == z3.unsat, size


def test_a_search_in_a_body_needs_a_witness_for_every_index() -> None:
    # with one witness for every position (its facts naming the bound index as a free
    # constant), the scan's end is that of one position: ``sat``
    assert ms.scan_agree(1, "nested", timeout_ms=30_000) == z3.sat


def test_an_unknown_scan_fault_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown fault 'each'"):
        ms.scan_agree(1, "each")
    with pytest.raises(ValueError, match="unknown fault 'late'"):
        ms.scan_step("late")


def test_the_restore_scan_keeps_its_invariant_for_every_number_of_records() -> None:
    assert ms.scan_step(timeout_ms=60_000) == z3.unsat


@pytest.mark.parametrize("fault", ["end", "unshared"])
def test_a_broken_scan_or_an_unshared_search_is_not_proved(fault: str) -> None:
    # ``unshared``: the end's search and the row's, made apart, are two witnesses of
    # one search, which E-matching does not relate (``unknown``)
    assert ms.scan_step(fault, timeout_ms=10_000) != z3.unsat


def test_the_monitors_restore_agrees_with_the_bounded_one() -> None:
    for size in (1, 2, 4, 8):
        assert ms.monitors_agree(size) == z3.unsat, size


def test_monitors_that_miss_the_restore_do_not_agree() -> None:
    assert ms.monitors_agree(2, "unwritten") == z3.sat
    with pytest.raises(ValueError, match="unknown fault 'late'"):
        ms.monitors_agree(1, "late")


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_the_steps_keep_the_induction_facts_for_every_number_of_records(
    kind: str, split: bool
) -> None:
    # the facts of ``spec/induction.py`` about records (and the advance loop), each one
    # universal; with model-based instantiation (E-matching alone misses the instances
    # at the taken input, a witness of the search for the earliest one)
    assert ms.families_step(kind, split, premises=1) == {"premises": z3.sat}
    answers = ms.families_step(kind, split)
    assert any(name.endswith(" every") for name in answers)
    assert all(answer == z3.unsat for answer in answers.values()), answers


@pytest.mark.parametrize(
    ("kind", "fault", "fact"),
    [
        ("arrive", "offset", "waiting below offset op every"),
        ("take", "unaccepted", "accepted = delivered op every"),
    ],
)
def test_a_broken_step_breaks_an_induction_fact(kind: str, fault: str, fact: str) -> None:
    answers = ms.families_step(kind, broken=fault, timeout_ms=3_000)
    assert answers[fact] != z3.unsat
    with pytest.raises(ValueError, match="unknown fault 'late'"):
        ms.families_step(kind, broken="late")
    with pytest.raises(ValueError, match="unknown step 'restore'"):
        ms.families_step("restore")


@pytest.mark.parametrize(("t", "size"), [(1, 1), (2, 2), (5, 1), (6, 1), (9, 1), (10, 1)])
def test_the_whole_micro_step_agrees_with_the_bounded_one(t: int, size: int) -> None:
    # ``Machine.micro_step`` itself, every cell of the state symbolic, in each epoch
    # (the micro-steps that may restore are not settled within minutes; the restore
    # by itself is, below)
    assert ms.micro_step_agree(t, size) == z3.unsat


def test_the_restore_agrees_with_the_bounded_one() -> None:
    assert ms.restore_agree(1) == z3.unsat
    assert ms.restore_agree(1, "unrestored", timeout_ms=5_000) != z3.unsat
    with pytest.raises(ValueError, match="unknown fault 'late'"):
        ms.restore_agree(1, "late")


def test_a_whole_micro_step_on_a_broken_domain_does_not_agree() -> None:
    assert ms.micro_step_agree(6, 1, "first", timeout_ms=5_000) != z3.unsat
    with pytest.raises(ValueError, match="unknown fault 'late'"):
        ms.micro_step_agree(6, 1, "late")


#: facts the whole micro-step is asked in the tests (all of them take minutes)
_WHOLE = ("waiting since", "accepted = delivered op", "loop's sequel", "loop's place")


@pytest.mark.parametrize("t", [4, 5])
def test_the_whole_micro_step_keeps_the_facts_about_records(t: int) -> None:
    # the induction's own facts, universals over the records, after ``Machine.micro_step``
    # itself (a restore may come at 4), case by case of the phase it starts in
    answers = ms.whole_families_step(t, only=_WHOLE)
    assert len(answers) == 5  # waiting since in both views
    assert all(answer == z3.unsat for answer in answers.values()), answers


def test_a_whole_micro_step_on_a_broken_search_breaks_a_fact() -> None:
    # any undelivered record may come next: one below the offset is left undelivered
    # (the same fact is kept with the search as it is, in the same time)
    fact = ("below offset accepted op",)
    kept = _alone(f'whole_families_step(5, "", {fact}, 60_000)')
    assert kept == "{'below offset accepted op every': unsat}"
    broken = _alone(f'whole_families_step(5, "first", {fact}, 60_000)')
    assert broken != kept and "every" in broken
    with pytest.raises(ValueError, match="unknown fault 'late'"):
        ms.whole_families_step(5, "late")
