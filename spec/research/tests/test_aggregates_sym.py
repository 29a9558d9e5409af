"""The machine's aggregates over a symbolic number of records
(:mod:`spec.research.aggregates_sym`) mean, at each concrete size, what the bounded
aggregates of :mod:`replay_contract.spec.logic` compute; a definition with a fact left
out does not."""

from __future__ import annotations

import pytest
import z3

from spec.research import aggregates_sym as agg


@pytest.mark.parametrize("which", ["first", "latest", "minimum"])
def test_the_symbolic_aggregates_agree_with_the_bounded_ones(which: str) -> None:
    for size in range(8):
        assert agg.agree(size, which) == z3.unsat, (which, size)


def test_a_first_without_its_universal_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    tight = agg.first

    def loose(
        cond: z3.FuncDeclRef, size: z3.ArithRef, default: int
    ) -> tuple[z3.ArithRef, list[z3.BoolRef]]:
        w, _ = tight(cond, size, default)
        return w, [z3.Or(z3.And(w >= 0, w < size, cond(w)), w == default)]

    monkeypatch.setattr(agg, "first", loose)
    assert agg.agree(2, "first") == z3.sat


def test_an_unknown_aggregate_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown aggregate 'count'"):
        agg.agree(2, "count")


@pytest.mark.parametrize("kind", ["arrive", "take"])
def test_the_waiting_inputs_keep_their_invariant_for_every_number_of_records(kind: str) -> None:
    assert agg.waiting_step(kind, premises=True) == z3.sat
    assert agg.waiting_step(kind) == z3.unsat


@pytest.mark.parametrize(
    ("kind", "fault"), [("arrive", "tick"), ("take", "latest"), ("take", "count")]
)
def test_a_broken_step_is_not_proved(kind: str, fault: str) -> None:
    # E-matching gives ``sat`` or runs out of time (``unknown``): never ``unsat``
    assert agg.waiting_step(kind, fault, timeout_ms=3_000) != z3.unsat


def test_an_unknown_step_or_fault_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown step 'restore'"):
        agg.waiting_step("restore")
    with pytest.raises(ValueError, match="unknown fault 'late'"):
        agg.waiting_step("take", "late")
