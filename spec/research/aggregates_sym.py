"""The machine's aggregates (:mod:`replay_contract.spec.logic`) over a symbolic number of
records: stage 2 of the plan in ``spec/notes/deepen-bench.md``, first step.

Each aggregate of the bounded machine is a chain of ``ite``s over a list whose length is
the bound. Here the list is a Z3 function over the integers ``0 .. size - 1`` with
``size`` a term, and each aggregate is a fresh constant (its *witness*) with a
definition by quantified facts whose instantiation is driven by a pattern on the
list's function (E-matching only: no model-based instantiation). :func:`agree` asks Z3
whether the two forms give the same value at a concrete size, for every content of the
list: the check that the symbolic form means what the bounded one computes.

:mod:`.machine_sym` runs the machine itself over a symbolic number of records with them.
"""

from __future__ import annotations

import itertools

import z3

from replay_contract.spec import logic as lg

_fresh = itertools.count()

#: sets that collect the fresh names made while they are on the stack (see
#: ``machine_sym.SymIndices``: the symbols a body makes under a bound index)
NAMES: list[set[str]] = []


def _name(what: str) -> str:
    name = f"{what}!{next(_fresh)}"
    for names in NAMES:
        names.add(name)
    return name


def _below(i: z3.ArithRef, size: z3.ArithRef) -> z3.BoolRef:
    return z3.And(i >= 0, i < size)


def first(
    cond: z3.FuncDeclRef, size: z3.ArithRef, default: int
) -> tuple[z3.ArithRef, list[z3.BoolRef]]:
    """The least index below ``size`` where ``cond`` holds (``default`` if none), and
    the facts that define it. ``default`` lies outside ``0 .. size - 1``."""
    w, i = z3.Int(_name("first")), z3.Int(_name("i"))
    none_before = z3.ForAll(
        [i], z3.Implies(z3.And(i >= 0, i < w, i < size), z3.Not(cond(i))), patterns=[cond(i)]
    )
    none_at_all = z3.ForAll([i], z3.Implies(_below(i, size), z3.Not(cond(i))), patterns=[cond(i)])
    facts = [
        z3.Or(
            z3.And(_below(w, size), cond(w), none_before),
            z3.And(w == default, none_at_all),
        )
    ]
    return w, facts


def latest(
    cond: z3.FuncDeclRef, value: z3.FuncDeclRef, size: z3.ArithRef, default: int
) -> tuple[z3.BoolRef, z3.ArithRef, list[z3.BoolRef]]:
    """Whether ``cond`` holds at some index below ``size``, the ``value`` at the last
    such index (``default`` if none), and the facts that define them."""
    w, i = z3.Int(_name("latest")), z3.Int(_name("i"))
    found = z3.Bool(_name("found"))
    none_after = z3.ForAll(
        [i], z3.Implies(z3.And(w < i, _below(i, size)), z3.Not(cond(i))), patterns=[cond(i)]
    )
    none_at_all = z3.ForAll([i], z3.Implies(_below(i, size), z3.Not(cond(i))), patterns=[cond(i)])
    out = z3.If(found, value(w), z3.IntVal(default))
    facts = [
        z3.If(found, z3.And(_below(w, size), cond(w), none_after), none_at_all),
    ]
    return found, out, facts


def minimum(
    cond: z3.FuncDeclRef, value: z3.FuncDeclRef, size: z3.ArithRef, default: int
) -> tuple[z3.ArithRef, list[z3.BoolRef]]:
    """The least ``value`` at an index below ``size`` where ``cond`` holds, or
    ``default`` if that is less (or none holds), and the facts that define it."""
    m, w, i = z3.Int(_name("min")), z3.Int(_name("w")), z3.Int(_name("i"))
    facts = [
        m <= default,
        z3.ForAll(
            [i],
            z3.Implies(z3.And(_below(i, size), cond(i)), m <= value(i)),
            patterns=[cond(i)],
        ),
        z3.Or(m == default, z3.And(_below(w, size), cond(w), m == value(w))),
    ]
    return m, facts


def agree(size: int, which: str, timeout_ms: int = 10_000) -> z3.CheckSatResult:
    """``unsat`` when, at ``size``, the symbolic form of aggregate ``which`` equals the
    bounded form of :mod:`.logic` for every content of the list."""
    cond = z3.Function(_name("cond"), z3.IntSort(), z3.BoolSort())
    value = z3.Function(_name("value"), z3.IntSort(), z3.IntSort())
    conds = [cond(z3.IntVal(i)) for i in range(size)]
    values = [value(z3.IntVal(i)) for i in range(size)]
    n = z3.IntVal(size)
    facts: list[z3.BoolRef]
    if which == "first":
        symbolic, facts = first(cond, n, -1)
        bounded = lg.lift_int(lg.first(conds, -1))
        differs = symbolic != bounded
    elif which == "latest":
        found, symbolic, facts = latest(cond, value, n, -1)
        hit, (v,) = lg.latest([(c, (x,)) for c, x in zip(conds, values, strict=True)], (-1,))
        differs = z3.Or(found != lg.lift_bool(hit), symbolic != lg.lift_int(v))
    elif which == "minimum":
        symbolic, facts = minimum(cond, value, n, 10**6)
        bounded = lg.lift_int(lg.minimum(list(zip(conds, values, strict=True)), 10**6))
        differs = symbolic != bounded
    else:
        raise ValueError(f"unknown aggregate {which!r}: first, latest or minimum")
    solver = z3.Solver()
    solver.set("mbqi", False, "timeout", timeout_ms)
    solver.add(*facts, differs)
    return solver.check()
