"""The machine's aggregates (:mod:`replay_contract.spec.logic`) over a symbolic number of
records: stage 2 of the plan in ``spec/notes/deepen-bench.md``, first step.

Each aggregate of the bounded machine is a chain of ``ite``s over a list whose length is
the bound. Here the list is a Z3 function over the integers ``0 .. size - 1`` with
``size`` a term, and each aggregate is a fresh constant (its *witness*) with a
definition by quantified facts whose instantiation is driven by a pattern on the
list's function (E-matching only: no model-based instantiation). :func:`agree` asks Z3
whether the two forms give the same value at a concrete size, for every content of the
list: the check that the symbolic form means what the bounded one computes.

:func:`waiting_step` uses them in a fragment of the machine of the contracts that wait,
with the number of records a term and the keys concrete: the invariant of the waiting
inputs and a ghost count of each key's waiting inputs (what ``give_up_after`` is compared
with) are proved for every number of records at once (in milliseconds), and a broken
step is not.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import z3

from replay_contract.spec import logic as lg
from replay_contract.spec.encoding import ABSENT

_fresh = itertools.count()


def _name(what: str) -> str:
    return f"{what}!{next(_fresh)}"


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


def defined(
    body: Callable[[z3.ArithRef], z3.ExprRef], sort: z3.SortRef
) -> tuple[z3.FuncDeclRef, z3.BoolRef]:
    """A function of the index equal to ``body`` everywhere, and its defining fact (the
    aggregates above take functions: their patterns are on the function's applications)."""
    f = z3.Function(_name("body"), z3.IntSort(), sort)
    i = z3.Int(_name("i"))
    return f, z3.ForAll([i], f(i) == body(i), patterns=[f(i)])


# -- a fragment of the machine over a symbolic number of records --------------------------
#
# The waiting inputs of the contracts that wait: a delivered input of a recovering key
# joins them (it waits since the tick of its arrival), and the advance loop takes the
# earliest one of its key (``minimum`` of the ticks, then ``first`` at that tick). The
# records' keys and channels are functions of the record, the number of records is a
# term ``n``; the invariant is three facts quantified over records (:func:`_inv`), and
# a ghost count per key (:func:`_count_inv`).


def _inv(
    n: z3.ArithRef,
    waiting: z3.ArrayRef,
    since: z3.ArrayRef,
    offset: z3.ArrayRef,
    channel: z3.FuncDeclRef,
    time: z3.ArithRef,
) -> list[z3.BoolRef]:
    r, q = z3.Ints("r q")
    rec = _below(r, n)
    return [
        z3.ForAll([r], z3.Implies(z3.And(rec, waiting[r]), since[r] < time), patterns=[waiting[r]]),
        z3.ForAll(
            [r],
            z3.Implies(z3.And(rec, waiting[r]), r < offset[channel(r)]),
            patterns=[waiting[r]],
        ),
        z3.ForAll(
            [r, q],
            z3.Implies(
                z3.And(rec, _below(q, n), waiting[r], waiting[q], r != q), since[r] != since[q]
            ),
            patterns=[z3.MultiPattern(waiting[r], waiting[q])],
        ),
    ]


#: the keys of the fragment, concrete (as the plan of the notes keeps them)
KEYS = 2


def _count_inv(
    n: z3.ArithRef,
    waiting: z3.ArrayRef,
    key: z3.FuncDeclRef,
    index: z3.ArrayRef,
    holder: z3.ArrayRef,
    count: z3.ArithRef,
    k: int,
) -> list[z3.BoolRef]:
    """A ghost count of key ``k``'s waiting inputs (what ``give_up_after`` is compared
    with), exact by a ghost bijection: each waiting input of ``k`` has an ``index``
    below ``count``, and each index below it its ``holder``, a waiting input of ``k``."""
    r, j = z3.Ints("r j")
    held = holder[j]
    return [
        count >= 0,
        z3.ForAll(
            [r],
            z3.Implies(
                z3.And(_below(r, n), waiting[r], key(r) == k),
                z3.And(_below(index[r], count), holder[index[r]] == r),
            ),
            patterns=[waiting[r]],
        ),
        z3.ForAll(
            [j],
            z3.Implies(
                _below(j, count),
                z3.And(_below(held, n), waiting[held], key(held) == k, index[held] == j),
            ),
            patterns=[held],
        ),
    ]


def waiting_step(
    kind: str, broken: str = "", premises: bool = False, timeout_ms: int = 30_000
) -> z3.CheckSatResult:
    """``unsat`` when a step of ``kind`` (``arrive`` or ``take``) keeps the invariant and
    the ghost counts for every number of records (and, for ``take``, takes the earliest
    waiting input of the key). ``broken`` names a fault whose check should then not be
    ``unsat``: ``tick`` (an arrival's tick one too small), ``latest`` (the take is of
    the latest waiting input), ``count`` (a take does not move the last index's holder
    into the gap it leaves). ``premises``: whether the step's premises alone can hold
    (``sat``) with at most three records, so that its ``unsat`` is not vacuous."""
    if broken not in ("", "tick", "latest", "count"):
        raise ValueError(f"unknown fault {broken!r}: tick, latest or count")
    n, time, ch = z3.Ints("n time ch")
    waiting = z3.Array("waiting", z3.IntSort(), z3.BoolSort())
    since = z3.Array("since", z3.IntSort(), z3.IntSort())
    offset = z3.Array("offset", z3.IntSort(), z3.IntSort())
    index = z3.Array("index", z3.IntSort(), z3.IntSort())
    holder = [z3.Array(f"holder{k}", z3.IntSort(), z3.IntSort()) for k in range(KEYS)]
    count = [z3.Int(f"count{k}") for k in range(KEYS)]
    channel = z3.Function("channel", z3.IntSort(), z3.IntSort())
    key = z3.Function("key", z3.IntSort(), z3.IntSort())
    r = z3.Int("r")
    facts = [
        n >= 0,
        z3.ForAll([r], z3.And(key(r) >= 0, key(r) < KEYS), patterns=[key(r)]),
        *_inv(n, waiting, since, offset, channel, time),
    ]
    for k in range(KEYS):
        facts += _count_inv(n, waiting, key, index, holder[k], count[k], k)
    goals: list[z3.BoolRef] = []
    if kind == "arrive":
        cond, define = defined(
            lambda r: z3.And(channel(r) == ch, offset[ch] <= r, z3.Not(waiting[r])),
            z3.BoolSort(),
        )
        rec, found = first(cond, n, -1)
        tick = time - 1 if broken == "tick" else time
        mine = [key(rec) == k for k in range(KEYS)]
        index_after = index
        for k in range(KEYS):
            index_after = z3.If(mine[k], z3.Store(index, rec, count[k]), index_after)
        after = (
            z3.Store(waiting, rec, True),
            z3.Store(since, rec, tick),
            z3.Store(offset, ch, rec + 1),
        )
        ghosts = [
            (
                index_after,
                z3.If(mine[k], z3.Store(holder[k], count[k], rec), holder[k]),
                z3.If(mine[k], count[k] + 1, count[k]),
            )
            for k in range(KEYS)
        ]
        facts += [define, *found, rec >= 0]
    elif kind == "take":
        # of key 0: the keys are a function of the record, so any key is key 0 renamed
        cond, define = defined(lambda r: z3.And(waiting[r], key(r) == 0), z3.BoolSort())
        value, define_value = defined(lambda r: since[r], z3.IntSort())
        if broken == "latest":
            later, define_later = defined(lambda r: -since[r], z3.IntSort())
            least, found = minimum(cond, later, n, ABSENT)
            least = -least
            facts.append(define_later)
        else:
            least, found = minimum(cond, value, n, ABSENT)
        at, define_at = defined(lambda r: z3.And(cond(r), value(r) == least), z3.BoolSort())
        taken, found_taken = first(at, n, -1)
        earliest = z3.ForAll(
            [r],
            z3.Implies(z3.And(_below(r, n), cond(r)), since[taken] <= since[r]),
            patterns=[cond(r)],
        )
        after = (z3.Store(waiting, taken, False), since, offset)
        # the last index's holder moves into the gap the taken input leaves
        gap, moved = index[taken], holder[0][count[0] - 1]
        ghosts = [
            (
                index if broken == "count" else z3.Store(index, moved, gap),
                holder[0] if broken == "count" else z3.Store(holder[0], gap, moved),
                count[0] - 1,
            ),
            *((index, holder[k], count[k]) for k in range(1, KEYS)),
        ]
        facts += [define, define_value, define_at, *found, *found_taken, taken >= 0]
        goals.append(earliest)
    else:
        raise ValueError(f"unknown step {kind!r}: arrive or take")
    goals += _inv(n, *after, channel, time + 1)
    for k, ghost in enumerate(ghosts):
        # the ghosts after the step by name (a pattern cannot hold an ``if``)
        named = [z3.Const(_name(f"ghost{k}"), g.sort()) for g in ghost]
        facts += [a == b for a, b in zip(named, ghost, strict=True)]
        index_k, holder_k, count_k = named
        goals += _count_inv(n, after[0], key, index_k, holder_k, count_k, k)
    solver = z3.Solver()
    # E-matching alone for the step; the premises' ``sat`` needs a model of the
    # quantified facts, which model-based instantiation builds and checks
    solver.set("mbqi", premises, "timeout", timeout_ms)
    solver.add(*facts)
    if premises:
        solver.add(n <= 3)  # a small model is enough, and found at once
    else:
        solver.add(z3.Not(z3.And(*goals)))
    return solver.check()
