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
