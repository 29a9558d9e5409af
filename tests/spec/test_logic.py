"""The logic layer builds, through Z3's C interface, the very terms Z3's Python
operators build (the solver's times depend on the exact terms)."""

from __future__ import annotations

import z3

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
