"""The logic layer builds, through Z3's C interface, the very terms Z3's Python
operators build (the solver's times depend on the exact terms)."""

from __future__ import annotations

import z3
from hypothesis import given
from hypothesis import strategies as st

from replay_contract.spec import logic as lg


def test_the_c_interface_builds_the_terms_of_the_python_operators() -> None:
    x, y, b, c = z3.Int("x"), z3.Int("y"), z3.Bool("b"), z3.Bool("c")
    one = z3.IntVal(1)
    pairs = [
        (lg.eq(x, 1), x == one),
        (lg.eq(1, x), one == x),
        (lg.eq(x, y), x == y),
        (lg.lt(x, 1), x < one),
        (lg.lt(1, x), one < x),
        (lg.le(x, 1), x <= one),
        (lg.le(x, y), x <= y),
        (lg.add(x, 1), x + one),
        (lg.add(x, y), x + y),
        (lg.and_(b, c, True), z3.And(b, c)),
        (lg.or_(b, False, c), z3.Or(b, c)),
        (lg.not_(b), z3.Not(b)),
        (lg.ite(b, x, 1), z3.If(b, x, one)),
        (lg.ite(b, 1, 2), z3.If(b, one, z3.IntVal(2))),
        (lg.ite(b, c, True), z3.If(b, c, z3.BoolVal(True))),
    ]
    for mine, theirs in pairs:
        assert mine.eq(theirs), (mine, theirs)
    # an ite of numerals is a plain integer term, usable as one
    assert lg.ite(b, 1, 2).sort() == z3.IntSort()
    assert not isinstance(lg.ite(b, 1, 2), z3.IntNumRef)
    assert lg.ite(b, lg.NONE, lg.node(1, x, 2)).sort() == lg.Term


# -- the aggregates: what each computes, on Python values and as a formula --------------


@given(st.lists(st.booleans(), max_size=6), st.integers(-2, 9))
def test_first_is_the_least_index_whose_condition_holds(conds: list[bool], default: int) -> None:
    expected = next((i for i, c in enumerate(conds) if c), default)
    assert lg.first(conds, default) == expected


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 9), st.integers(0, 9)), max_size=6))
def test_latest_gives_the_values_of_the_last_option_that_holds(
    options: list[tuple[bool, int, int]],
) -> None:
    hits = [(a, b) for c, a, b in options if c]
    found, values = lg.latest([(c, (a, b)) for c, a, b in options], (-1, -2))
    assert found == bool(hits)
    assert values == (hits[-1] if hits else (-1, -2))


def _valid(claim: z3.BoolRef) -> bool:
    solver = z3.Solver()
    solver.add(z3.Not(claim))
    return solver.check() == z3.unsat


def test_first_and_latest_as_formulas() -> None:
    bs = [z3.Bool(f"b{i}") for i in range(4)]
    xs = [z3.Int(f"x{i}") for i in range(4)]
    first = lg.first(bs, -1)
    for i in range(4):
        least = z3.And(bs[i], *(z3.Not(b) for b in bs[:i]))
        assert _valid((first == i) == least)
    assert _valid((first == -1) == z3.Not(z3.Or(*bs)))
    found, (value,) = lg.latest([(b, (x,)) for b, x in zip(bs, xs, strict=True)], (-1,))
    assert _valid(found == z3.Or(*bs))
    for i in range(4):
        last = z3.And(bs[i], *(z3.Not(b) for b in bs[i + 1 :]))
        assert _valid(z3.Implies(last, value == xs[i]))
    assert _valid(z3.Implies(z3.Not(found), value == -1))
    # an option that cannot hold leaves no trace in the formula
    assert lg.latest([(False, (xs[0],)), (bs[1], (xs[1],))], (-1,))[0].eq(bs[1])


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 9)), max_size=6), st.integers(-2, 9))
def test_the_searches_over_indices_call_the_body_at_each_index(
    cells: list[tuple[bool, int]], default: int
) -> None:
    indices = lg.Indices(len(cells))
    holds = [i for i, (c, _) in enumerate(cells) if c]
    assert indices.some(lambda i: cells[i][0]) == bool(holds)
    assert indices.count(lambda i: cells[i][0]) == len(holds)
    assert indices.first(lambda i: cells[i][0], default) == (holds[0] if holds else default)
    assert indices.minimum(lambda i: cells[i], 10) == min((v for c, v in cells if c), default=10)
