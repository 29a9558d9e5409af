"""Proofs by induction over one micro-step: the second engine of ``verify``.

The unrolling of :mod:`.verify` asks whether some run of the bound breaks a property;
its formula grows with the schedule, and beyond small bounds the solver does not
finish. This engine proves the same claim with formulas whose size does not grow with
the schedule: an *invariant* (a list of facts about the state of the machine of
:mod:`.encoding`, with some ghost state) holds in the initial state and is kept by
every micro-step of the bound, and while it holds no property's flag is set.

How a micro-step is checked: the machine is started at micro-step ``t`` from a fully
symbolic state (every cell of the operator, the checkpoint and the world, every store
slot of the epochs up to that of ``t - 1``, every earlier tick below a symbolic base
:data:`BASE`), the invariant and "no flag set" are assumed there, ``micro_step(t)``
runs, and each fact of the invariant, each property's flag and a few basic facts are
asked afterwards, each as its own query on an incremental solver. Micro-step 0 starts
from the initial state. The formula of micro-step ``t`` depends on ``t`` only through
its epoch, whether ``t`` starts an epoch and whether it is the first: one step of each
*class* (:func:`step_classes`) stands for all of its class, which the tests check
formula by formula (:func:`step_formula`). The ticks of the step are counted from
:data:`BASE` instead of the real tick: the machine only compares ticks with each other,
so that renames no run.

The invariant (:func:`invariant`) is that of the contracts that look up by position and
invalidate a key's later entries on a miss, durably, without waiting
(:func:`unsupported` says which rules a contract must have). Its main ghost is the
*recorded order* ``G[view][key][position]`` = (record, version), for the live state and
the checkpoint's, written by every kept accept in both views, copied by a checkpoint
and by a restore: every valid completion at or after its key's position is G's entry
there, and its prefix is the key's history followed by G up to its position. Each
slot also has a ghost copy of its prefix as per-position cells (set from G when the
slot is written), and each view a ghost memory before each position of G (for
``equivalent-outcome``, agents with one memory field).

A failed query is not a counterexample (the symbolic start need not be reachable), so
this engine only proves; ``verify`` asks the unrolling about whatever it does not
prove. ``complete-reuse`` has no facts here and always goes to the unrolling.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import z3
from attrs import define, field

from replay_contract.model.bounded import AGENTS
from replay_contract.model.contracts import Contract

from . import encoding as enc
from . import logic as lg
from .agentterms import TAG_HISTORY, Plan, output_term, run_input, write_term
from .bound import Bound
from .logic import Sym

#: The tick the symbolic start counts from: above every tick of an unrolling of the
#: bounds ``verify`` accepts, and far below the encoding's sentinel ranks.
BASE = 1_000_000

#: The properties the invariant has facts for.
INDUCTIVE = (
    "no-stale-reuse",
    "key-isolation",
    "no-lost-input",
    "equivalent-outcome",
    "divergence-safeguard",
)

T = lg.Term


def unsupported(contract: Contract) -> str:
    """Why the invariant does not fit ``contract`` (empty when it does)."""
    needs = {
        "wait": False,
        "match": "position",
        "on_miss": "invalidate",
        "record_order": "no",
        "durable_invalidation": True,
        "invalidation_scope": "key",
    }
    off = [
        f"{name}={getattr(contract, name)!r}"
        for name, want in needs.items()
        if getattr(contract, name) != want
    ]
    if not off:
        return ""
    return (
        "the induction engine has an invariant only for contracts that look up by "
        "position and invalidate one key durably on a miss, without waiting "
        f"({contract.name} has {', '.join(off)})"
    )


def inductive(contract: Contract, agent: str, properties: Sequence[str]) -> list[str]:
    """The properties of ``properties`` the engine attempts for ``contract`` and ``agent``."""
    if unsupported(contract):
        return []
    one_field = len(Plan.of(AGENTS[agent]).fields) <= 1
    return [p for p in properties if p in INDUCTIVE and (p != "equivalent-outcome" or one_field)]


def step_classes(contract: Contract, bound: Bound) -> list[int]:
    """One micro-step per class: 0, 1, and the first two of each later epoch."""
    first, epoch = enc.first_budget(contract, bound), enc.budget(contract, bound)
    starts = [first + e * epoch for e in range(bound.crashes)]
    steps = [0] + ([1] if first > 1 else [])
    for s in starts:
        steps += [s] + ([s + 1] if epoch > 1 else [])
    return steps


def class_of(contract: Contract, bound: Bound, t: int) -> int:
    """The representative of micro-step ``t``'s class."""
    first, epoch = enc.first_budget(contract, bound), enc.budget(contract, bound)
    if t < first:
        return min(t, 1)
    start = first + (t - first) // epoch * epoch
    return min(t, start + 1)


# -- the ghost state -------------------------------------------------------------------

Pair = tuple[Sym, Sym]


@define
class Ghosts:
    """The recorded order per view (``op``, ``saved``), key and position; the memory
    before each position per view and key; a copy of each slot's prefix."""

    order: dict[str, list[list[Pair]]]
    memory: dict[str, list[list[Sym]]]
    prefix: dict[int, list[Pair]] = field(factory=dict)


class _Fresh:
    def __init__(self) -> None:
        self.ids = itertools.count()

    def __call__(self, like: Sym, name: str) -> Any:
        name = f"{name}#{next(self.ids)}"
        if isinstance(like, bool) or (lg.is_sym(like) and like.sort() == z3.BoolSort()):
            return z3.Bool(name)
        if isinstance(like, tuple) or (lg.is_sym(like) and like.sort() == T):
            return z3.Const(name, T)
        return lg.int_var(name)


def _env(t: int, idle: Sym) -> enc.Move:
    """The environment's move, named without the micro-step (one step per solver)."""
    return enc.Move(
        z3.Bool("move_checkpoint"),
        z3.Bool("move_crash"),
        lg.int_var("move_main"),
        lg.int_var("move_channel"),
        lg.int_var("move_cut"),
    )


def _rows(g: list[list[Pair]], i: int) -> list[list[Sym]]:
    return [[pair[i] for pair in row] for row in g]


def _reader(pairs: list[Pair], i: int, default: Sym) -> Callable[[Sym], Sym]:
    """Position -> the ``i``-th part of that position's pair."""
    column = [pair[i] for pair in pairs]

    def read(q: Sym) -> Sym:
        return lg.select(q, column, default)

    return read


def _at(g: list[list[Sym]], key: Sym, q: Sym, default: Sym) -> Sym:
    return lg.select(key, [lg.select(q, row, default) for row in g], default)


# -- the invariant ---------------------------------------------------------------------

Fact = tuple[str, Sym]


def _length_is(h: Sym, p: Sym, n: int) -> Sym:
    """History term ``h`` has exactly ``p`` entries."""

    def exactly(d: int) -> Any:
        x, parts = lg.lift_term(h), []
        for _ in range(d):
            parts += [T.is_node(x), T.tag(x) == TAG_HISTORY, T.d(x) == T.none]
            x = T.c(x)
        parts.append(T.is_none(x))
        return z3.And(*parts)

    return lg.or_(*(lg.and_(lg.eq(p, d), exactly(d)) for d in range(n + 1)))


def _entries_below(
    h: Sym, p: Sym, n: int, rec: Callable[[Sym], Sym], ver: Callable[[Sym], Sym], guard: Sym = True
) -> list[Sym]:
    """Per depth: the entry ``p - 1 - d`` of history term ``h`` is (``rec``, ``ver``) there."""
    x, parts = lg.lift_term(h), []
    for d in range(n):
        q = lg.add(p, -(d + 1))
        parts.append(
            lg.implies(
                lg.and_(guard, lg.le(0, q)), lg.and_(lg.eq(T.a(x), rec(q)), lg.eq(T.b(x), ver(q)))
            )
        )
        x = T.c(x)
    return parts


def _memory_before(plan: Plan, entry: int, memory: Sym, record: Sym, version: Sym) -> list[Sym]:
    """The memory (one field) when ``entry`` of an input runs, from ``memory`` before it."""
    mem = [memory]
    for e in plan.entries[:entry]:
        reads = tuple(mem[f] for f in e.reads)
        for f in e.writes:
            mem[f] = write_term(e, f, record, version, reads)
    return mem


def invariant(m: enc.Machine, ghosts: Ghosts, epoch: int, properties: Sequence[str]) -> list[Fact]:
    """The facts of the invariant about ``m``'s state in ``epoch`` (named, one query each)."""
    op, saved, world = m.op, m.saved, m.world
    up = world["up"]
    n, keys = m.n, m.k
    shape = m.shape
    facts: list[Fact] = []

    def add(name: str, fact: Sym) -> None:
        facts.append((name, fact))

    views = (("op", op, up), ("saved", saved, True))
    slots = [s for s in m.slots if s.kind == "completion" and s.epoch <= epoch]
    g, pg = ghosts.order, ghosts.prefix
    add("markers equal", lg.eq(op["marker"], saved["marker"]))
    for i in range(len(m.slots)):
        add(
            f"no volatile void {i}",
            lg.and_(
                lg.not_(op.cell("volatile-voided", i)), lg.not_(saved.cell("volatile-voided", i))
            ),
        )
    for s in slots:
        add(
            f"prefix length slot {s.index}",
            lg.implies(s.present, _length_is(s.prefix, s.position, n)),
        )
        own = pg[s.index]
        add(
            f"prefix ghost slot {s.index}",
            lg.implies(
                s.present,
                lg.and_(
                    *_entries_below(
                        s.prefix,
                        s.position,
                        n,
                        _reader(own, 0, -1),
                        _reader(own, 1, 0),
                    )
                ),
            ),
        )
    for k in range(keys):
        add(
            f"history length saved {k}",
            _length_is(saved.cell("history", k), saved.cell("next", k), n),
        )
        add(
            f"history length op {k}",
            lg.implies(up, _length_is(op.cell("history", k), op.cell("next", k), n)),
        )
        add(
            f"checkpoint behind {k}",
            lg.implies(up, lg.le(saved.cell("next", k), op.cell("next", k))),
        )
        for q in range(n):
            add(
                f"orders agree {k} {q}",
                lg.implies(
                    lg.and_(up, lg.lt(q, op.cell("next", k))),
                    lg.and_(
                        lg.eq(g["saved"][k][q][0], g["op"][k][q][0]),
                        lg.eq(g["saved"][k][q][1], g["op"][k][q][1]),
                    ),
                ),
            )
        for name, view, guard in views:
            row = g[name][k]
            for d, part in enumerate(
                _entries_below(
                    view.cell("history", k),
                    view.cell("next", k),
                    n,
                    _reader(row, 0, -1),
                    _reader(row, 1, 0),
                    guard,
                )
            ):
                add(f"history is order {name} {k} {d}", part)
    for name, view, guard in views:
        for k in range(keys):
            accepted = [lg.and_(view.cell("accepted", r), lg.eq(shape.key[r], k)) for r in range(n)]
            add(
                f"count {name} {k}",
                lg.implies(guard, lg.eq(view.cell("next", k), lg.count(accepted))),
            )
        for r in range(n):
            offset = view.at("offset", shape.channel[r])
            lost = lg.and_(lg.eq(shape.mode[r], 1), lg.lt(r, world.at("high", shape.channel[r])))
            add(
                f"accepted below offset {name} {r}",
                lg.implies(view.cell("accepted", r), lg.lt(r, offset)),
            )
            add(
                f"accepted = delivered {name} {r}",
                lg.implies(guard, lg.eq(view.cell("accepted", r), view.cell("delivered", r))),
            )
            add(
                f"below offset accepted {name} {r}",
                lg.implies(
                    lg.and_(guard, lg.lt(r, offset), lg.not_(lost)), view.cell("accepted", r)
                ),
            )
        for c in range(m.c):
            add(
                f"offset {name} {c}",
                lg.and_(
                    lg.le(0, view.cell("offset", c)),
                    lg.le(view.cell("offset", c), world.cell("high", c)),
                ),
            )
    for c in range(m.c):
        add(f"high {c}", lg.le(world.cell("high", c), n))
    go = g["op"]
    for s in slots:
        if s.epoch != epoch:
            continue
        add(
            f"written behind slot {s.index}",
            lg.implies(s.present, lg.lt(s.position, op.at("next", s.key))),
        )
        add(
            f"written accepted slot {s.index}",
            lg.implies(lg.and_(up, s.present), op.cell("accepted", s.record)),
        )
        parts = [
            lg.eq(_at(_rows(go, 0), s.key, s.position, -1), s.record),
            lg.eq(_at(_rows(go, 1), s.key, s.position, 0), s.version),
        ]
        for q in range(n):
            parts.append(
                lg.implies(
                    lg.lt(q, s.position),
                    lg.and_(
                        lg.eq(
                            pg[s.index][q][0],
                            lg.select(s.key, [go[k][q][0] for k in range(keys)], -1),
                        ),
                        lg.eq(
                            pg[s.index][q][1],
                            lg.select(s.key, [go[k][q][1] for k in range(keys)], 0),
                        ),
                    ),
                )
            )
        add(f"written is order slot {s.index}", lg.implies(lg.and_(up, s.present), lg.and_(*parts)))
    outcome = "equivalent-outcome" in properties
    safeguard = "divergence-safeguard" in properties
    if outcome:
        mem = ghosts.memory
        for s in slots:
            entry = m.plan.entries[s.entry]
            same = [
                lg.eq(s.writes[f], write_term(entry, f, s.record, s.version, s.reads))
                for f in entry.writes
            ]
            if entry.output:
                same.append(lg.eq(s.output, output_term(entry, s.record, s.version, s.reads)))
            add(f"agent terms slot {s.index}", lg.implies(s.present, lg.and_(*same)))
        for name, view, guard in views:
            for k in range(keys):
                add(f"outputs equal {name} {k}", lg.implies(guard, view.cell("outputs-equal", k)))
                add(
                    f"memory failure-free {name} {k}",
                    lg.implies(
                        guard, lg.eq(view.cell("memory", k, 0), view.cell("failure-free", k, 0))
                    ),
                )
                add(
                    f"memory is ghost {name} {k}",
                    lg.implies(
                        guard,
                        lg.eq(
                            lg.select(view.cell("next", k), mem[name][k], lg.NONE),
                            view.cell("memory", k, 0),
                        ),
                    ),
                )
        for k in range(keys):
            on, sn = op.cell("next", k), saved.cell("next", k)
            gm = mem["saved"][k]
            for q in range(n):
                add(
                    f"ghost memory saved {k} {q}",
                    lg.implies(
                        lg.and_(up, lg.le(sn, q), lg.lt(q, on)),
                        lg.eq(
                            gm[q + 1],
                            run_input(m.plan, [gm[q]], g["saved"][k][q][0], g["saved"][k][q][1])[0][
                                0
                            ],
                        ),
                    ),
                )
            add(
                f"ghost memory live {k}",
                lg.implies(up, lg.eq(lg.select(on, gm, lg.NONE), op.cell("memory", k, 0))),
            )
    for name, view, guard in views:
        recs, vers = _rows(g[name], 0), _rows(g[name], 1)
        for s in slots:
            valid = lg.and_(
                s.present,
                lg.le(view["marker"], s.time),
                lg.not_(s.voided),
                lg.not_(view.cell("volatile-voided", s.index)),
            )
            ahead = lg.and_(guard, valid, lg.le(view.at("next", s.key), s.position))
            add(
                f"valid is order {name} slot {s.index}",
                lg.implies(
                    lg.and_(guard, valid),
                    lg.and_(
                        lg.eq(_at(recs, s.key, s.position, -1), s.record),
                        lg.eq(_at(vers, s.key, s.position, 0), s.version),
                    ),
                ),
            )
            own = pg[s.index]
            add(
                f"prefix is order {name} slot {s.index}",
                lg.implies(
                    ahead,
                    lg.and_(
                        *(
                            lg.implies(
                                lg.lt(q, s.position),
                                lg.and_(
                                    lg.eq(
                                        own[q][0],
                                        lg.select(
                                            s.key, [g[name][k][q][0] for k in range(keys)], -1
                                        ),
                                    ),
                                    lg.eq(
                                        own[q][1],
                                        lg.select(
                                            s.key, [g[name][k][q][1] for k in range(keys)], 0
                                        ),
                                    ),
                                ),
                            )
                            for q in range(n)
                        )
                    ),
                ),
            )
            if outcome:
                entry = m.plan.entries[s.entry]
                gm = ghosts.memory[name]
                before = _memory_before(
                    m.plan, s.entry, _at(gm, s.key, s.position, lg.NONE), s.record, s.version
                )
                add(
                    f"reads are ghost memory {name} slot {s.index}",
                    lg.implies(
                        ahead,
                        lg.and_(
                            *(
                                lg.eq(a, before[f])
                                for a, f in zip(s.reads, entry.reads, strict=True)
                            )
                        ),
                    ),
                )
                for q in range(n):
                    add(
                        f"ghost memory ahead {name} slot {s.index} {q}",
                        lg.implies(
                            lg.and_(ahead, lg.le(view.at("next", s.key), q), lg.lt(q, s.position)),
                            lg.eq(
                                _at(gm, s.key, lg.add(q, 1), lg.NONE),
                                run_input(
                                    m.plan,
                                    [_at(gm, s.key, q, lg.NONE)],
                                    _at(recs, s.key, q, -1),
                                    _at(vers, s.key, q, 0),
                                )[0][0],
                            ),
                        ),
                    )
            if safeguard:
                code = lg.add(lg.add(s.record, s.record), s.version)
                add(
                    f"recorded {name} slot {s.index}",
                    lg.implies(valid, lg.eq(world.at("recorded", s.key, s.position), code)),
                )
                for q in range(n):
                    add(
                        f"no later divergence {name} slot {s.index} {q}",
                        lg.implies(
                            lg.and_(valid, lg.le(q, s.position)),
                            lg.lt(world.at("diverged", s.key, q), s.time),
                        ),
                    )
    return facts


def _basic(m: enc.Machine, epoch: int) -> list[Sym]:
    """Facts of every state of an epoch: the crash count, the phase, no crash pending."""
    w = m.world
    return [
        lg.le(0, w["crashes"]),
        lg.le(w["crashes"], epoch + 1),
        lg.implies(w["up"], lg.le(w["crashes"], epoch)),
        lg.or_(lg.eq(w["phase"], enc.IDLE), lg.eq(w["phase"], enc.DONE)),
        lg.eq(w["cut"], -1),
    ]


# -- one micro-step --------------------------------------------------------------------


@define
class Step:
    """The solver of one micro-step's check and its goals (each to be unsatisfiable)."""

    t: int
    solver: z3.Solver
    goals: list[tuple[str, Any]]
    premises: list[Any]

    @property
    def formula(self) -> list[Any]:
        return [*self.premises, *(goal for _, goal in self.goals)]


def _epoch(m: enc.Machine, t: int) -> int:
    return max(e for e, start in enumerate(m.starts) if start <= t)


def build_step(
    contract: Contract, agent: str, bound: Bound, t: int, properties: Sequence[str]
) -> Step:
    """The check of micro-step ``t`` for ``properties`` (see the module's docstring)."""
    solver = z3.Solver()
    premises: list[Any] = []
    shape = enc.symbolic_shape(bound, premises.append)
    m = enc.Machine(
        contract,
        agent,
        bound,
        shape,
        _env,
        enc.budget(contract, bound),
        enc.first_budget(contract, bound),
        one_checkpoint=True,
    )
    fresh = _Fresh()
    n, keys = m.n, m.k
    epoch = _epoch(m, t)
    ghosts = Ghosts(
        {
            v: [
                [(fresh(0, f"g{v}{k}.{q}r"), fresh(0, f"g{v}{k}.{q}v")) for q in range(n)]
                for k in range(keys)
            ]
            for v in ("op", "saved")
        },
        {
            v: [[fresh(lg.NONE, f"gm{v}{k}.{q}") for q in range(n + 1)] for k in range(keys)]
            for v in ("op", "saved")
        },
        {
            s.index: [
                (fresh(0, f"pg{s.index}.{q}r"), fresh(0, f"pg{s.index}.{q}v")) for q in range(n)
            ]
            for s in m.slots
        },
    )
    pre: list[Sym] = []
    assumed: list[Fact] = []
    if t == 0:
        for v in ("op", "saved"):
            for k in range(keys):
                ghosts.memory[v][k][0] = m.op.cell("memory", k, 0)
    else:
        before = _epoch(m, t - 1)
        for label, cells in (("op", m.op), ("world", m.world), ("saved", m.saved)):
            for index in list(cells.values):
                cells.values[index] = fresh(cells.values[index], f"{label}{index}")
        for s in m.slots:
            if s.epoch > before:
                continue
            tag = f"slot{s.index}."
            s.present = fresh(False, tag + "present")
            s.position = fresh(0, tag + "position")
            s.version = fresh(0, tag + "version")
            s.reads = tuple(fresh(lg.NONE, tag + "read") for _ in s.reads)
            s.writes = {f: fresh(lg.NONE, tag + f"write{f}") for f in s.writes}
            s.output = fresh(lg.NONE, tag + "output")
            s.order = fresh(False, tag + "order")
            s.voided = fresh(False, tag + "voided")
            s.prefix = fresh(lg.NONE, tag + "prefix")
            s.time = fresh(0, tag + "time")
            pre.append(lg.implies(s.present, lg.and_(lg.le(0, s.time), lg.lt(s.time, BASE))))
        m.time = BASE
        m.decode.append({"padding": fresh(False, "padding")})
        w = m.world
        pre += [lg.not_(m.monitors.broken(p)) for p in properties]
        pre += _basic(m, before)
        for k in range(keys):
            for q in range(n):
                pre.append(lg.lt(w.cell("diverged", k, q), BASE))
        for view in (m.op, m.saved):
            pre += [lg.le(0, view["marker"]), lg.le(view["marker"], BASE)]
        assumed = invariant(m, ghosts, before, properties)
        pre += [fact for _, fact in assumed]
    _track(m, ghosts)
    present = {s.index: s.present for s in m.slots}
    m.micro_step(t)
    for s in m.slots:
        if s.epoch != epoch or s.kind != "completion":
            continue
        new = lg.and_(s.present, lg.not_(present[s.index]))
        if lg._const(new) is False:
            continue
        row = [
            (
                lg.select(s.key, [ghosts.order["op"][k][q][0] for k in range(keys)], -1),
                lg.select(s.key, [ghosts.order["op"][k][q][1] for k in range(keys)], 0),
            )
            for q in range(n)
        ]
        ghosts.prefix[s.index] = [
            (lg.ite(new, a[0], b[0]), lg.ite(new, a[1], b[1]))
            for a, b in zip(row, ghosts.prefix[s.index], strict=True)
        ]
    premises += [lg.lift_bool(a) for a in m.assumptions] + [lg.lift_bool(f) for f in pre]
    for p in premises:
        solver.add(p)
    goals = [(f"flag {p}", lg.lift_bool(m.monitors.broken(p))) for p in properties]
    goals += [
        (f"basic {i}", lg.lift_bool(lg.not_(b)))
        for i, b in enumerate(_basic(m, epoch))
        if lg._const(b) is not True
    ]
    # a fact the micro-step left alone is the very term assumed before it: no query
    kept = {name: lg.lift_bool(f) for name, f in assumed}
    goals += [
        (name, lg.lift_bool(lg.not_(f)))
        for name, f in invariant(m, ghosts, epoch, properties)
        if lg._const(f) is not True and not (name in kept and kept[name].eq(lg.lift_bool(f)))
    ]
    return Step(t, solver, goals, premises)


def _track(m: enc.Machine, ghosts: Ghosts) -> None:
    """Keep the ghosts up to date as the machine runs: accepts, checkpoints, restores."""
    accept, checkpoint, restore = m.monitors.accept, m.checkpoint, m.restore
    g, mem = ghosts.order, ghosts.memory

    def on_accept(kept: Sym, key: Sym, position: Sym, record: Sym, version: Sym, tick: int) -> None:
        for k in range(m.k):
            for q in range(m.n):
                here = lg.and_(kept, lg.eq(key, k), lg.eq(position, q))
                for v in ("op", "saved"):
                    old = g[v][k][q]
                    g[v][k][q] = (lg.ite(here, record, old[0]), lg.ite(here, version, old[1]))
        accept(kept, key, position, record, version, tick)
        after = m.op.at("failure-free", key, 0)
        for k in range(m.k):
            for q in range(1, m.n + 1):
                here = lg.and_(kept, lg.eq(key, k), lg.eq(lg.add(position, 1), q))
                for v in ("op", "saved"):
                    mem[v][k][q] = lg.ite(here, after, mem[v][k][q])

    def copy(src: str, dst: str, happens: Sym) -> None:
        g[dst] = [
            [
                (lg.ite(happens, a[0], b[0]), lg.ite(happens, a[1], b[1]))
                for a, b in zip(ra, rb, strict=True)
            ]
            for ra, rb in zip(g[src], g[dst], strict=True)
        ]
        mem[dst] = [
            [lg.ite(happens, a, b) for a, b in zip(ra, rb, strict=True)]
            for ra, rb in zip(mem[src], mem[dst], strict=True)
        ]

    def on_checkpoint(happens: Sym) -> None:
        checkpoint(happens)
        if lg._const(happens) is not False:
            copy("op", "saved", happens)

    def on_restore(happens: Sym) -> None:
        restore(happens)
        if lg._const(happens) is not False:
            copy("saved", "op", happens)

    m.monitors.accept = on_accept  # type: ignore[method-assign,assignment]
    m.checkpoint = on_checkpoint  # type: ignore[method-assign]
    m.restore = on_restore  # type: ignore[method-assign]


def step_formula(
    contract: Contract, agent: str, bound: Bound, t: int, properties: Sequence[str]
) -> list[Any]:
    """The whole formula of micro-step ``t``'s check: premises, then goals."""
    return build_step(contract, agent, bound, t, properties).formula


class ClassMismatch(AssertionError):
    """A micro-step whose check differs from its class's: a bug of :func:`step_classes`."""


def members(contract: Contract, bound: Bound, rep: int) -> list[int]:
    """The micro-steps of the bound whose class ``rep`` stands for."""
    total = enc.first_budget(contract, bound) + bound.crashes * enc.budget(contract, bound)
    return [t for t in range(total) if class_of(contract, bound, t) == rep]


def check_class(
    contract: Contract, agent: str, bound: Bound, step: Step, properties: Sequence[str]
) -> int:
    """Every other micro-step of ``step``'s class has the same formula (the same Z3
    terms, names included); raises :class:`ClassMismatch` if not. Gives how many."""
    others = [t for t in members(contract, bound, step.t) if t != step.t]
    mine = step.formula
    for t in others:
        theirs = step_formula(contract, agent, bound, t, properties)
        if len(theirs) != len(mine) or not all(a.eq(b) for a, b in zip(mine, theirs, strict=True)):
            raise ClassMismatch(
                f"{contract.name} / {agent} at {bound}: the check of micro-step {t} differs "
                f"from that of micro-step {step.t}, which stands for it"
            )
    return len(others)


def _groups(goals: list[tuple[str, Any]]) -> list[tuple[str, list[tuple[str, Any]]]]:
    """The goals asked together: the facts about one store slot in one query (fewer,
    larger queries were measured faster, up to one per slot), every other goal alone."""
    out: dict[str, list[tuple[str, Any]]] = {}
    for name, goal in goals:
        slot = re.search(r"\bslot \d+", name)
        label = slot.group(0) if slot else name
        out.setdefault(label, []).append((name, goal))
    return list(out.items())


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


# -- the engine ------------------------------------------------------------------------


@define
class Outcome:
    """What induction says for one agent: the properties proved (all attempted ones or
    those whose flag stayed unset, when every fact of the invariant held), and why the
    others were not."""

    proved: list[str]
    failed: dict[str, str]
    seconds: float
    queries: int = 0


def prove(
    contract: Contract,
    agent: str,
    bound: Bound,
    properties: Sequence[str],
    timeout: float | None = None,
    say: Callable[[str], None] | None = None,
) -> Outcome:
    """Check every step class for ``properties`` (those :func:`inductive` gives)."""
    started = time.monotonic()
    attempted = list(properties)
    failed: dict[str, str] = {}
    broken_invariant = ""
    queries = 0
    classes = step_classes(contract, bound)
    for i, t in enumerate(classes):
        step_started = time.monotonic()
        step = build_step(contract, agent, bound, t, attempted)
        check_class(contract, agent, bound, step, attempted)
        if timeout is not None:
            step.solver.set("timeout", max(1, int(timeout * 1000)))
        asked = 0
        for label, goals in _groups(step.goals):
            prop = label[len("flag ") :] if label.startswith("flag ") else ""
            if prop and prop in failed:
                continue
            step.solver.push()
            step.solver.add(z3.Or(*(goal for _, goal in goals)))
            result = step.solver.check()
            reason = step.solver.reason_unknown() if result == z3.unknown else ""
            name = label
            if result == z3.sat:  # the fact the counterexample to induction breaks
                model = step.solver.model()
                name = next(n for n, g in goals if z3.is_true(model.eval(g, model_completion=True)))
            step.solver.pop()
            asked += 1
            if result == z3.unsat:
                continue
            what = "its flag" if prop else f"the fact '{name}'"
            why = (
                f"micro-step {t}: the solver did not settle {what} ({reason})"
                if reason
                else f"micro-step {t}, which may {'set' if prop else 'break'} {what}"
            )
            if prop:
                failed[prop] = f"not inductive at {why}"
            else:
                broken_invariant = f"the invariant is not inductive at {why}"
                break
        queries += asked
        if say is not None:
            group = members(contract, bound, t)
            say(
                f"{contract.name} / induction / {agent}: micro-step {t} "
                f"(class {i + 1} of {len(classes)}: {_plural(len(group), 'micro-step')}, "
                f"{len(step.goals)} facts in {asked} queries) "
                f"{time.monotonic() - step_started:.1f} s"
            )
        if broken_invariant:
            break
    if broken_invariant:
        failed = {p: broken_invariant for p in attempted}
    proved = [p for p in attempted if p not in failed]
    return Outcome(proved, failed, time.monotonic() - started, queries)


__all__ = [
    "BASE",
    "INDUCTIVE",
    "ClassMismatch",
    "Outcome",
    "build_step",
    "check_class",
    "class_of",
    "inductive",
    "invariant",
    "members",
    "prove",
    "step_classes",
    "step_formula",
    "unsupported",
]
