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
*class* (:func:`step_classes`) stands for all of its class, which every check makes
sure of by comparing the states each member starts and ends in (:func:`check_class`,
:mod:`.digest`) and the tests formula by formula (:func:`step_formula`). The ticks
of the step are counted from :data:`BASE` instead of the real tick: the machine only
compares ticks with each other, so that renames no run. Each class is checked on its
own (:func:`check_step_class`): :func:`prove` checks them in class order, ``verify`` on
several cores as jobs of their own, put together in class order (:func:`settle`).

The invariant (:func:`invariant`) is written for two families of contracts
(:data:`FAMILIES`: those that wait and those that do not), and is kept whole by every
contract of its family. Every contract also has the *generic* invariant
(:func:`generic`), which has only the delivery facts (and, for a lookup by reads, the
outcome facts; for a contract that waits, the facts of its keys' ranks, waiting inputs
and advance loop that do not read the store), covers :data:`GENERIC` whatever the rules,
and is the one used when only what it covers is asked (:func:`by_generic`). For a
contract outside the families (:func:`unsupported` says which rules it changes) both
together are a candidate: :func:`prove` leaves out the families of facts (:func:`family`)
that a step breaks, round after round, until what is left is kept (:func:`weakened`,
Houdini's method), first at small bounds (:func:`search_bounds`), and proves the
properties whose flags stay unset under it. The families' main ghost is the *recorded order*
``G[view][key][position]`` = (record, version), for the live state and the checkpoint's,
written by every kept accept in both views, copied by a checkpoint and by a restore:
every valid completion at or after its key's position is G's entry there, and its prefix
is the key's history followed by G up to its position. Each slot also has a ghost copy
of its prefix as per-position cells (set from G when the slot is written), and each view
a ghost memory before each position of G (for ``equivalent-outcome``, agents with one
memory field, and for ``complete-reuse`` under a lookup by reads, which finds a
completion only where the key's memory is the one it was saved with). For the contracts
that wait, :func:`_waiting_facts` adds where each key's recorded order ends in the
store, the expected order, the waiting inputs, the keys' ranks and the advance loop, and
:func:`_reuse_facts` the facts of ``complete-reuse``.
The contracts that do not wait have no facts for ``complete-reuse`` (``seqnum`` breaks
it).

A failed query is not a counterexample (the symbolic start need not be reachable), so
this engine only proves; ``verify`` asks the unrolling about whatever it does not
prove.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import z3
from attrs import define, evolve, field

from replay_contract.model.bounded import AGENTS
from replay_contract.model.contracts import Contract

from . import encoding as enc
from . import logic as lg
from . import proofcache
from .agentterms import TAG_HISTORY, Plan, output_term, run_input, write_term
from .bound import Bound
from .cells import Cells
from .digest import Digest, digest, same
from .logic import Sym
from .properties import PROPERTIES

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

#: The properties the generic invariant (:func:`generic`) has facts for: what the
#: operator does with an input does not depend on how it looks up completions.
GENERIC = ("key-isolation", "no-lost-input")

T = lg.Term


#: The rules a contract needs for each invariant: one for the contracts that do not wait
#: (``seqnum``'s), one for those that do (``ordered``'s).
FAMILIES: dict[bool, dict[str, object]] = {
    False: {
        "match": "position",
        "on_miss": "invalidate",
        "record_order": "no",
        "durable_invalidation": True,
        "invalidation_scope": "key",
    },
    True: {
        "match": ("position", "reads"),
        "on_miss": "nothing",
        "record_order": ("with-first-completion", "before-first-tool-call"),
        "durable_invalidation": True,
        "invalidation_scope": "key",
    },
}


def unsupported(contract: Contract) -> str:
    """Which rules put ``contract`` outside its family (empty when it is in it): what of
    the family's invariant it keeps is then searched for (:func:`prove`)."""
    needs = FAMILIES[contract.wait]
    off = [
        f"{name}={getattr(contract, name)!r}"
        for name, want in needs.items()
        if getattr(contract, name) not in (want if isinstance(want, tuple) else (want,))
    ]
    if not off:
        return ""
    kind = (
        "look up by position or by reads, record the order and invalidate one key durably, and wait"
        if contract.wait
        else "look up by position and invalidate one key durably on a miss, without waiting"
    )
    return (
        f"the induction engine's invariant is kept whole only by contracts that {kind} "
        f"({contract.name} has {', '.join(off)})"
    )


def not_covered(contract: Contract, agent: str) -> str:
    """Why :func:`inductive` attempts nothing for ``contract`` and ``agent``, in one line."""
    covered = ", ".join(inductive(contract, agent, PROPERTIES))
    return f"it has an invariant only for {covered}"


def generic(contract: Contract) -> bool:
    """``contract`` fits neither family: the *generic* invariant, which knows nothing of
    the store or the recorded order, covers :data:`GENERIC` for it, and its family's
    invariant is a candidate whose facts :func:`prove` sorts out."""
    return bool(unsupported(contract))


def _generic_covers(contract: Contract) -> tuple[str, ...]:
    if contract.match == "reads":
        # its lookup compares the very values no-stale-reuse judges a reuse by
        return (*GENERIC, "no-stale-reuse", "equivalent-outcome")
    return GENERIC


def by_generic(contract: Contract, properties: Sequence[str]) -> bool:
    """Whether the generic invariant is the one that proves ``properties`` under
    ``contract``: it covers every property asked. It is much the smaller (at the default
    bound ``ordered``'s ``key-isolation`` and ``no-lost-input`` take seconds by it,
    twenty minutes by the full one), so deepen asks for what it covers apart
    (:func:`.deepen.tracks`)."""
    return all(p in _generic_covers(contract) for p in properties)


def inductive(contract: Contract, agent: str, properties: Sequence[str]) -> list[str]:
    """The properties of ``properties`` the engine attempts for ``contract`` and ``agent``."""
    family = (*INDUCTIVE, "complete-reuse") if contract.wait else INDUCTIVE
    covered = (*_generic_covers(contract), *family)
    one_field = len(Plan.of(AGENTS[agent]).fields) <= 1
    return [p for p in properties if p in covered and (p != "equivalent-outcome" or one_field)]


def step_classes(contract: Contract, bound: Bound) -> list[int]:
    """One micro-step per class: 0, 1, and the first two of each later epoch."""
    return sorted({class_of(contract, bound, t) for t in range(_steps(contract, bound))})


def _steps(contract: Contract, bound: Bound) -> int:
    """The micro-steps of the bound's unrolling."""
    return enc.first_budget(contract, bound) + bound.crashes * enc.budget(contract, bound)


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
    #: waiting contracts: per key, where its recorded order ends in the store (one for
    #: both views); the key of the write at each tick; the store's invalidation marks
    end: list[Sym] = field(factory=list)
    #: complete-reuse under a waiting contract: where each record was last accepted
    position: list[Sym] = field(factory=list)
    tick_key: Callable[[Sym], Any] | None = None
    marks: list[enc.InvalidationMark] = field(factory=list)


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


def _valid(view: Cells, s: enc.Slot) -> Sym:
    """Slot ``s`` is valid in ``view``: present, visible, not voided (as ``Machine.valid``,
    for either view)."""
    return lg.and_(
        s.present,
        lg.le(view["marker"], s.time),
        lg.not_(s.voided),
        lg.not_(view.cell("volatile-voided", s.index)),
    )


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


def _views(m: enc.Machine, epoch: int) -> tuple[tuple[str, Cells, Sym], ...]:
    """The views the facts of ``epoch`` are about, each with its name and the condition
    under which it holds (the live one while the operator is up). In an epoch without a
    checkpoint (:func:`.encoding.without_checkpoint`, the last) the checkpoint's view no
    longer changes and no restore reads it: facts about it would only be asked again
    after every step (the ghosts they read change with every accept), so there are none.
    Fewer facts make a weaker invariant, which the steps still have to keep."""
    live = ("op", m.op, m.world["up"])
    if enc.without_checkpoint(m, epoch):
        return (live,)
    return (live, ("saved", m.saved, True))


def family(name: str) -> str:
    """The family of a fact of the invariant: its name without the view, key, position,
    slot or record it is about (``recorded once op 1 2`` -> ``recorded once``). A search
    for the invariant of a contract outside the families (:func:`prove`) leaves out
    whole families, so that what it finds at a small bound carries to a larger one."""
    name = re.sub(r" (op|saved)( |$)", r"\2", name)
    return " ".join(part for part in name.split() if not re.fullmatch(r"-?\d+", part))


def invariant(
    m: enc.Machine,
    ghosts: Ghosts,
    epoch: int,
    properties: Sequence[str],
    now: int,
    without: frozenset[str] = frozenset(),
) -> list[Fact]:
    """The facts of the invariant about ``m``'s state in ``epoch`` (named, one query
    each); every tick so far is below ``now``. Those of the families ``without`` are
    left out. For a contract outside the families (:func:`generic`), the candidate is
    the family's invariant and the generic one together, and :func:`prove` finds which
    families of facts are not kept."""
    facts = _facts(m, ghosts, epoch, properties, now)
    if generic(m.contract) and not by_generic(m.contract, properties):
        names = {name for name, _ in facts}
        add = _adder(facts, names)
        _generic_facts(m, epoch, properties, now, add)
    return [(name, fact) for name, fact in facts if family(name) not in without]


def _adder(facts: list[Fact], names: set[str]) -> Callable[[str, Sym], None]:
    """An ``add`` for :func:`_facts`' helpers that skips a fact already named."""

    def add(name: str, fact: Sym) -> None:
        if name not in names:
            names.add(name)
            facts.append((name, fact))

    return add


def _generic_facts(
    m: enc.Machine, epoch: int, properties: Sequence[str], now: int, add: Callable[[str, Sym], None]
) -> None:
    """The generic invariant's facts (:func:`generic`)."""
    _delivery_facts(m, _views(m, epoch), add)
    if m.contract.wait:
        _generic_waiting_facts(m, epoch, now, add)
    if m.contract.match == "reads" and "equivalent-outcome" in properties:
        # a reuse gives what the action, run now on the same reads, would give
        written = [s for s in m.slots if s.kind == "completion" and s.epoch <= epoch]
        _outcome_facts(m, written, _views(m, epoch), add)


def _facts(
    m: enc.Machine, ghosts: Ghosts, epoch: int, properties: Sequence[str], now: int
) -> list[Fact]:
    """:func:`invariant`'s facts, every family."""
    op, saved, world = m.op, m.saved, m.world
    up = world["up"]
    n, keys = m.n, m.k
    facts: list[Fact] = []

    def add(name: str, fact: Sym) -> None:
        facts.append((name, fact))

    views = _views(m, epoch)
    if by_generic(m.contract, properties):
        _generic_facts(m, epoch, properties, now, add)
        return facts
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
    _delivery_facts(m, views, add)
    go = g["op"]
    # a slot written in this epoch (a completion or an order entry) lies before its
    # key's position, and its input is accepted
    for s in m.slots:
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
    for s in slots:
        if s.epoch != epoch:
            continue
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
    outcome = _memory_ghost_facts(m.contract, properties)
    safeguard = "divergence-safeguard" in properties
    if outcome:
        mem = ghosts.memory
        _outcome_facts(m, slots, views, add)
        for name, view, guard in views:
            for k in range(keys):
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
            valid = _valid(view, s)
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
    if m.contract.wait:
        _waiting_facts(m, ghosts, epoch, properties, now, add)
        if "complete-reuse" in properties:
            _reuse_facts(m, ghosts, epoch, add)
    return facts


def _memory_ghost_facts(contract: Contract, properties: Sequence[str]) -> bool:
    """Whether the invariant states the ghost memory before each recorded position: for
    ``equivalent-outcome``, and for ``complete-reuse`` under a lookup by reads, which
    finds a saved completion only where the key's memory is the one it was saved with."""
    return "equivalent-outcome" in properties or (
        contract.match == "reads" and "complete-reuse" in properties
    )


def _outcome_facts(
    m: enc.Machine,
    slots: Sequence[enc.Slot],
    views: Sequence[tuple[str, Cells, Sym]],
    add: Callable[[str, Sym], None],
) -> None:
    """What a saved completion holds is what its action gives on the input and the
    values it read, and each view's memory and outputs are those of the failure-free
    run over its accepted history (agents with one memory field)."""
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
        for k in range(m.k):
            add(f"outputs equal {name} {k}", lg.implies(guard, view.cell("outputs-equal", k)))
            add(
                f"memory failure-free {name} {k}",
                lg.implies(
                    guard, lg.eq(view.cell("memory", k, 0), view.cell("failure-free", k, 0))
                ),
            )


def counted(m: enc.Machine, view: Cells, key: int) -> Sym:
    """Key ``key``'s position in ``view`` is the number of its accepted inputs."""
    accepted = [lg.and_(view.cell("accepted", r), lg.eq(m.shape.key[r], key)) for r in range(m.n)]
    return lg.eq(view.cell("next", key), lg.count(accepted))


def accepted_below_offset(m: enc.Machine, view: Cells, record: Sym) -> Sym:
    """An accepted input lies below its channel's offset in ``view``."""
    offset = view.at("offset", m.shape.channel[record])
    return lg.implies(view.cell("accepted", record), lg.lt(record, offset))


def delivered(m: enc.Machine, name: str, view: Cells, guard: Sym) -> Callable[[Sym], list[Fact]]:
    """The facts of :func:`_delivery_facts` about one record in ``view`` (named
    ``name``; ``guard``: whether the view is live): it is accepted (or waits) exactly
    when it was delivered, which is when it lies below its channel's offset, unless the
    channel lost it."""
    shape, world = m.shape, m.world

    def at(r: Sym) -> list[Fact]:
        offset = view.at("offset", shape.channel[r])
        lost = lg.and_(lg.eq(shape.mode[r], 1), lg.lt(r, world.at("high", shape.channel[r])))
        out = [(f"accepted below offset {name}", accepted_below_offset(m, view, r))]
        taken = view.cell("accepted", r)
        if m.contract.wait:  # delivered: accepted or waiting, not both
            waiting = view.cell("waiting", r)
            out += [
                (f"waiting below offset {name}", lg.implies(waiting, lg.lt(r, offset))),
                (
                    f"waiting not accepted {name}",
                    lg.implies(guard, lg.not_(lg.and_(taken, waiting))),
                ),
            ]
            taken = lg.or_(taken, waiting)
        return [
            *out,
            (
                f"accepted = delivered {name}",
                lg.implies(guard, lg.eq(taken, view.cell("delivered", r))),
            ),
            (
                f"below offset accepted {name}",
                lg.implies(lg.and_(guard, lg.lt(r, offset), lg.not_(lost)), taken),
            ),
        ]

    return at


def _delivery_facts(
    m: enc.Machine, views: Sequence[tuple[str, Cells, Sym]], add: Callable[[str, Sym], None]
) -> None:
    """Each key's position counts its accepted inputs, and an input is accepted (or
    waits) in a view exactly when it was delivered there, which is when it lies below
    its channel's offset, unless the channel lost it. No rule of reuse enters them."""
    world, keys, n = m.world, m.k, m.n
    for name, view, guard in views:
        for k in range(keys):
            add(f"count {name} {k}", lg.implies(guard, counted(m, view, k)))
        for label, fact in m.records.every(delivered(m, name, view, guard)):
            add(label, fact)
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


def _reuse_facts(
    m: enc.Machine, ghosts: Ghosts, epoch: int, add: Callable[[str, Sym], None]
) -> None:
    """The facts of ``complete-reuse`` under a waiting contract: a completion saved once
    stays valid at or after its key's position until a divergence voids it, and a
    divergence leaves its key *excused*: unclean, or with an outstanding input that can
    only come back changed or not at all (*doomed*). The ghost ``position`` of each
    record is where it was last accepted: the recorded inputs of a key are distinct."""
    op, saved, w, shape = m.op, m.saved, m.world, m.shape
    up = w["up"]
    n, keys = m.n, m.k
    end, g, position = ghosts.end, ghosts.order, ghosts.position
    entries = len(m.plan.entries)
    completions = [s for s in m.slots if s.kind == "completion" and s.epoch <= epoch]
    views = _views(m, epoch)
    outstanding = [w.cell("outstanding", r) for r in range(n)]
    outstanding_version = [w.cell("outstanding-version", r) for r in range(n)]

    def column(view: Cells, name: str) -> list[Sym]:
        return [view.cell(name, r) for r in range(n)]

    def changed(r: int) -> Sym:
        return lg.ite(lg.eq(shape.mode[r], 2), 1, 0)

    def cannot_return(view: Cells, r: int) -> Sym:
        return lg.or_(
            lg.and_(
                view.cell("waiting", r),
                lg.ne(view.cell("waiting-version", r), outstanding_version[r]),
            ),
            lg.and_(
                lg.not_(view.cell("delivered", r)),
                lg.or_(lg.eq(shape.mode[r], 1), lg.ne(changed(r), outstanding_version[r])),
            ),
        )

    def doomed(r: int) -> Sym:
        return lg.and_(
            outstanding[r],
            lg.or_(
                lg.and_(up, cannot_return(op, r)), lg.and_(lg.not_(up), cannot_return(saved, r))
            ),
        )

    excused = [
        lg.or_(
            w.cell("unclean", k),
            *(lg.and_(lg.eq(shape.key[r], k), doomed(r)) for r in range(n)),
        )
        for k in range(keys)
    ]

    def excuse(key: Sym) -> Sym:
        return lg.or_(*(lg.and_(lg.eq(key, k), excused[k]) for k in range(keys)))

    accepted, accepted_saved = column(op, "accepted"), column(saved, "accepted")
    version, version_saved = column(op, "accepted-version"), column(saved, "accepted-version")
    for k in range(keys):
        saved_next, live_next = saved.cell("next", k), op.cell("next", k)
        for q in range(n):
            a, b = g["op"][k][q], g["saved"][k][q]
            add(f"orders equal {k} {q}", lg.and_(lg.eq(a[0], b[0]), lg.eq(a[1], b[1])))
            record, ver = b
            recorded = lg.and_(lg.le(saved_next, q), lg.lt(q, end[k]))
            add(
                f"recorded once {k} {q}",
                lg.implies(recorded, lg.eq(lg.select(record, position, -1), q)),
            )
            add(
                f"recorded accepted {k} {q}",
                lg.implies(
                    lg.and_(up, lg.lt(q, live_next)),
                    lg.and_(
                        lg.select(record, accepted, False),
                        lg.eq(lg.select(record, version, -1), ver),
                    ),
                ),
            )
            add(
                f"recorded accepted at checkpoint {k} {q}",
                lg.implies(
                    lg.lt(q, saved_next),
                    lg.and_(
                        lg.select(record, accepted_saved, False),
                        lg.eq(lg.select(record, version_saved, -1), ver),
                    ),
                ),
            )
            add(
                f"recorded not accepted at checkpoint {k} {q}",
                lg.implies(recorded, lg.not_(lg.select(record, accepted_saved, True))),
            )
            out = lg.select(record, outstanding, False)
            out_version = lg.select(record, outstanding_version, -1)
            add(
                f"recorded outstanding {k} {q}",
                lg.implies(
                    lg.and_(up, lg.le(live_next, q), lg.lt(q, end[k])),
                    lg.and_(out, lg.eq(out_version, ver)),
                ),
            )
            live = lg.select(record, accepted, True)
            add(
                f"recorded outstanding or accepted {k} {q}",
                lg.implies(
                    recorded,
                    lg.or_(
                        lg.and_(lg.not_(live), out, lg.eq(out_version, ver)),
                        lg.and_(
                            live,
                            lg.eq(lg.select(record, version, -1), ver),
                            lg.not_(lg.select(record, accepted_saved, True)),
                        ),
                    ),
                ),
            )
    for r in range(n):
        add(f"accepted at checkpoint {r}", lg.implies(saved.cell("accepted", r), accepted[r]))
        add(
            f"delivered at checkpoint {r}",
            lg.implies(saved.cell("delivered", r), op.cell("delivered", r)),
        )
        add(f"outstanding not accepted {r}", lg.implies(outstanding[r], lg.not_(accepted[r])))
        add(
            f"outstanding below high {r}",
            lg.implies(outstanding[r], lg.lt(r, w.at("high", shape.channel[r]))),
        )
        add(
            f"outstanding waiting {r}",
            lg.implies(
                lg.and_(up, outstanding[r], op.cell("waiting", r)),
                lg.or_(
                    lg.and_(
                        saved.cell("waiting", r),
                        lg.eq(saved.cell("waiting-version", r), op.cell("waiting-version", r)),
                    ),
                    lg.and_(
                        lg.not_(saved.cell("delivered", r)),
                        lg.eq(op.cell("waiting-version", r), changed(r)),
                    ),
                ),
            ),
        )
        add(f"repeated excused {r}", lg.implies(w.cell("repeated", r), excuse(shape.key[r])))
        for v in (0, 1):
            for e in range(entries):
                once = w.cell("saved-once", r, v * entries + e)
                mine = [s for s in completions if s.record == r and s.entry == e]
                for name, view, guard in views:
                    kept = lg.or_(
                        *(
                            lg.and_(
                                _valid(view, s),
                                lg.eq(s.version, 0) if v == 0 else lg.ne(s.version, 0),
                                lg.le(view.at("next", s.key), s.position),
                            )
                            for s in mine
                        )
                    )
                    add(
                        f"saved once still there {name} {r} {v} {e}",
                        lg.implies(
                            lg.and_(guard, once, lg.not_(view.cell("accepted", r))),
                            lg.or_(excuse(shape.key[r]), kept),
                        ),
                    )
    advancing = lg.eq(w["phase"], enc.ADVANCE)
    after, arg, key = w["after"], w["after-arg"], w["key"]
    for k in range(keys):
        add(
            f"divergence excused {k}",
            lg.implies(lg.and_(up, lg.le(0, op.cell("diverge-at", k))), excused[k]),
        )
        nxt = op.cell("next", k)
        head = lg.select(nxt, [g["op"][k][q][0] for q in range(n)], -1)
        head_waits = lg.select(head, column(op, "waiting"), False)
        later = lg.or_(
            *(
                lg.and_(lg.le(arg, j), w.cell("order-in", j), lg.eq(w.cell("order", j), k))
                for j in range(keys)
            )
        )
        add(
            f"waiting head in a loop {k}",
            lg.implies(
                lg.and_(up, lg.lt(nxt, op.cell("expected-end", k)), head_waits),
                lg.and_(
                    advancing,
                    lg.or_(lg.eq(key, k), lg.and_(lg.eq(after, enc.AFTER_RESTORE), later)),
                ),
            ),
        )
    # a restore's loop visits the keys by place until the first empty one: a key placed
    # after an empty place would be skipped, its waiting head left to a divergence. The
    # first place is the loop's own or behind it ("loop's key is in order"), so only
    # three keys or more can have such a gap
    restoring = lg.and_(advancing, lg.eq(after, enc.AFTER_RESTORE))
    for j in range(1, keys - 1):
        add(
            f"restore's order without gap {j}",
            lg.implies(lg.and_(restoring, w.cell("order-in", j + 1)), w.cell("order-in", j)),
        )
    ending = lg.and_(advancing, lg.eq(after, enc.AFTER_END))
    for r in range(n):
        add(
            f"end loop after every delivery {r}",
            lg.implies(
                lg.and_(ending, lg.le(op.at("offset", shape.channel[r]), r)),
                lg.and_(lg.eq(shape.mode[r], 1), lg.lt(r, w.at("high", shape.channel[r]))),
            ),
        )
    for j in range(keys):
        for other in range(j + 1, keys):
            add(
                f"order's keys apart {j} {other}",
                lg.implies(
                    lg.and_(w.cell("order-in", j), w.cell("order-in", other)),
                    lg.ne(w.cell("order", j), w.cell("order", other)),
                ),
            )


def waiting(
    m: enc.Machine, name: str, view: Cells, guard: Sym, epoch: int, now: Sym
) -> Callable[[Sym], list[Fact]]:
    """The facts of :func:`_waiting_facts` about one record waiting in ``view``: its
    key has a rank, it waits since a tick before ``now``, and nothing waits in the
    first epoch."""
    keys = m.k

    def at(r: Sym) -> list[Fact]:
        rank = lg.select(m.shape.key[r], [view.cell("inserted", k) for k in range(keys)], 0)
        since = view.cell("waiting-since", r)
        out = [
            (
                f"waiting key inserted {name}",
                lg.implies(lg.and_(guard, view.cell("waiting", r)), lg.lt(rank, enc.ABSENT)),
            ),
            (
                f"waiting since {name}",
                lg.implies(view.cell("waiting", r), lg.and_(lg.le(0, since), lg.lt(since, now))),
            ),
        ]
        if epoch == 0:
            out.append((f"first epoch waits for nothing {name}", lg.not_(view.cell("waiting", r))))
        return out

    return at


def loop_facts(m: enc.Machine, epoch: int) -> list[Fact]:
    """The facts of a waiting contract about the advance loop in ``epoch``: its sequel,
    its argument and the order of the keys it goes through are well formed, and at the
    end of input it still reaches every waiting input's key."""
    w, op, keys = m.world, m.op, m.k
    facts: list[Fact] = []

    def add(name: str, fact: Sym) -> None:
        facts.append((name, fact))

    advancing = lg.eq(w["phase"], enc.ADVANCE)
    after, arg, key = w["after"], w["after-arg"], w["key"]
    # a loop after an arrival that gives up (more inputs wait than the contract lets)
    # goes on with nothing after it, its argument still the arrived input: only when
    # more records than ``give_up_after`` can wait
    gives_up = lg.lt(m.contract.give_up_after, m.records.end)
    # a timeout that gives up goes through the keys as the end of input does
    timing = m.timeouts > 0 and m.contract.give_up_on_timeout
    top = enc.AFTER_TIMEOUT if timing else lg.ite(gives_up, enc.AFTER_NOTHING, enc.AFTER_END)
    sequel = [lg.le(0, after), lg.le(after, top)]
    if timing:  # nothing after a loop only after a give-up
        sequel.append(lg.or_(gives_up, lg.ne(after, enc.AFTER_NOTHING)))
    add("loop's sequel", lg.implies(advancing, lg.and_(*sequel)))
    # a loop whose argument is a place in its order of keys
    keyed = (
        advancing,
        lg.ne(after, enc.AFTER_ARRIVAL),
        lg.not_(lg.and_(gives_up, lg.eq(after, enc.AFTER_NOTHING))),
    )
    add(
        "loop's input",
        lg.implies(
            lg.and_(advancing, lg.eq(after, enc.AFTER_ARRIVAL)),
            lg.and_(lg.le(0, arg), lg.lt(arg, m.records.end)),
        ),
    )
    add("loop's place", lg.implies(lg.and_(*keyed), lg.and_(lg.le(1, arg), lg.le(arg, keys))))
    for j in range(keys):
        add(
            f"order's key {j}",
            lg.and_(lg.le(0, w.cell("order", j)), lg.lt(w.cell("order", j), keys)),
        )
    if epoch == 0:
        ends = [lg.eq(after, enc.AFTER_END), timing and lg.eq(after, enc.AFTER_TIMEOUT)]
        add("first epoch loops only at the end", lg.implies(advancing, lg.or_(*ends)))
    ending = lg.and_(advancing, lg.eq(after, enc.AFTER_END))
    cut = w["cut"]
    add(
        "cut pending",
        lg.implies(
            lg.le(0, cut),
            lg.and_(
                lg.ne(after, enc.AFTER_END),
                lg.lt(w["crashes"], m.f),
                lg.le(0, w["effects"]),
                lg.lt(w["effects"], cut),
            ),
        ),
    )
    add(
        "end loop's key expects nothing",
        lg.implies(ending, lg.le(op.at("expected-end", key), op.at("next", key))),
    )
    for j in range(1, keys + 1):
        add(
            f"loop's key is in order {j}",
            lg.implies(
                lg.and_(*keyed, lg.eq(arg, j)),
                lg.and_(w.cell("order-in", j - 1), lg.eq(w.cell("order", j - 1), key)),
            ),
        )
    for j in range(keys - 1):
        add(
            f"order without gap {j}",
            lg.implies(lg.and_(ending, w.cell("order-in", j + 1)), w.cell("order-in", j)),
        )

    def reaches(r: Sym) -> list[Fact]:
        # a waiting input's key: the loop's own, or one later in its order
        kr = m.shape.key[r]
        later = lg.or_(
            lg.eq(kr, key),
            *(
                lg.and_(lg.le(arg, j), w.cell("order-in", j), lg.eq(w.cell("order", j), kr))
                for j in range(keys)
            ),
        )
        return [
            ("end loop reaches waiting", lg.implies(lg.and_(ending, op.cell("waiting", r)), later))
        ]

    return facts + m.records.every(reaches)


def _expecting(view: Cells, key: int) -> Sym:
    """Key ``key`` expects recorded inputs in ``view``, or a divergence of it is pending
    (the machine's :meth:`.encoding.Machine.recovering`, without its waiting inputs)."""
    return lg.or_(
        lg.lt(view.cell("next", key), view.cell("expected-end", key)),
        lg.le(0, view.cell("diverge-at", key)),
    )


def _rank_facts(
    m: enc.Machine,
    name: str,
    view: Cells,
    guard: Sym,
    epoch: int,
    now: int,
    add: Callable[[str, Sym], None],
) -> None:
    """The facts of a waiting contract about each key's place in ``view`` (named
    ``name``) and the inputs that wait there: the expected order ends within the
    records, each key is inserted at a tick of its own before ``now`` (or not at all),
    the first epoch expects nothing, and a waiting input's key has a rank."""
    keys = m.k
    for k in range(keys):
        ee, da = view.cell("expected-end", k), view.cell("diverge-at", k)
        add(f"expected end {name} {k}", lg.and_(lg.le(0, ee), lg.le(ee, m.n)))
        inserted = view.cell("inserted", k)
        add(
            f"inserted {name} {k}",
            lg.or_(lg.eq(inserted, enc.ABSENT), lg.and_(lg.le(0, inserted), lg.lt(inserted, now))),
        )
        for other in range(k + 1, keys):
            add(
                f"inserted apart {name} {k} {other}",
                lg.implies(
                    lg.lt(inserted, enc.ABSENT), lg.ne(inserted, view.cell("inserted", other))
                ),
            )
        if m.contract.durable_invalidation:
            add(f"no volatile rank {name} {k}", lg.eq(view.cell("volatile-rank", k), enc.ABSENT))
        if epoch == 0:
            add(f"first epoch expects nothing {name} {k}", lg.and_(lg.eq(ee, 0), lg.eq(da, -1)))
    for label, fact in m.records.every(waiting(m, name, view, guard, epoch, now)):
        add(label, fact)


def _generic_waiting_facts(
    m: enc.Machine, epoch: int, now: int, add: Callable[[str, Sym], None]
) -> None:
    """The facts the generic invariant adds for a contract that waits: those of
    :func:`_rank_facts`, a key that expects recorded inputs is inserted (so the loops of
    the end of input and of a timeout reach its waiting inputs), and the advance loop is
    well formed. None reads the store or the recorded order, so they hold whatever the
    rules of lookup, order and invalidation."""
    for name, view, guard in _views(m, epoch):
        _rank_facts(m, name, view, guard, epoch, now, add)
        for k in range(m.k):
            add(
                f"recovering key inserted {name} {k}",
                lg.implies(
                    lg.and_(guard, _expecting(view, k)),
                    lg.lt(view.cell("inserted", k), enc.ABSENT),
                ),
            )
    for name, fact in loop_facts(m, epoch):
        add(name, fact)


def _waiting_facts(
    m: enc.Machine,
    ghosts: Ghosts,
    epoch: int,
    properties: Sequence[str],
    now: int,
    add: Callable[[str, Sym], None],
) -> None:
    """The facts of a waiting contract: the store's recorded order of each key runs
    without a gap from its position to the ghost ``end`` (every valid entry at or after
    the position lies before it); the live expected order is that recorded order; the
    waiting inputs, the keys' ranks and the advance loop are well formed."""
    op, saved, w = m.op, m.saved, m.world
    up = w["up"]
    n, keys = m.n, m.k
    end, g = ghosts.end, ghosts.order
    every = [s for s in m.slots if s.epoch <= epoch]
    carriers = [s for s in every if s.kind == "order" or lg._const(s.order) is not False]
    entries: list[enc.Slot | enc.InvalidationMark] = [*every, *ghosts.marks]
    views = _views(m, epoch)

    def appears(view: Cells, k: int) -> Sym:
        return lg.or_(
            *(lg.and_(x.present, lg.le(view["marker"], x.time), lg.eq(x.key, k)) for x in entries)
        )

    for s in every:
        add(f"voided only if present slot {s.index}", lg.implies(s.voided, s.present))
        add(
            f"position in range slot {s.index}",
            lg.implies(s.present, lg.and_(lg.le(0, s.position), lg.lt(s.position, n))),
        )
    for k in range(keys):
        add(
            f"end after checkpoint {k}",
            lg.and_(lg.le(saved.cell("next", k), end[k]), lg.le(end[k], n)),
        )
        add(f"end after position {k}", lg.implies(up, lg.le(op.cell("next", k), end[k])))
    safeguard = "divergence-safeguard" in properties
    for name, view, guard in views:
        for s in every:
            ahead = lg.and_(guard, _valid(view, s), lg.le(view.at("next", s.key), s.position))
            add(
                f"before end {name} slot {s.index}",
                lg.implies(ahead, lg.lt(s.position, lg.select(s.key, end, 0))),
            )
            if s.kind != "order":
                continue
            add(
                f"order is order {name} slot {s.index}",
                lg.implies(
                    ahead,
                    lg.and_(
                        lg.eq(_at(_rows(g[name], 0), s.key, s.position, -1), s.record),
                        lg.eq(_at(_rows(g[name], 1), s.key, s.position, 0), s.version),
                    ),
                ),
            )
            if safeguard:
                code = lg.add(lg.add(s.record, s.record), s.version)
                add(
                    f"recorded {name} slot {s.index}",
                    lg.implies(_valid(view, s), lg.eq(w.at("recorded", s.key, s.position), code)),
                )
                for q in range(n):
                    add(
                        f"no later divergence {name} slot {s.index} {q}",
                        lg.implies(
                            lg.and_(_valid(view, s), lg.le(q, s.position)),
                            lg.lt(w.at("diverged", s.key, q), s.time),
                        ),
                    )
        for k in range(keys):
            nxt = view.cell("next", k)
            for q in range(n):
                carried = lg.or_(
                    *(
                        lg.and_(
                            _valid(view, s),
                            s.order if s.kind == "completion" else True,
                            lg.eq(s.key, k),
                            lg.eq(s.position, q),
                        )
                        for s in carriers
                    )
                )
                add(
                    f"recorded without gap {name} {k} {q}",
                    lg.implies(lg.and_(guard, lg.le(nxt, q), lg.lt(q, end[k])), carried),
                )
            ee, da = view.cell("expected-end", k), view.cell("diverge-at", k)
            add(
                f"recovering key in view {name} {k}",
                lg.implies(lg.and_(guard, _expecting(view, k)), appears(view, k)),
            )
            add(
                f"pending divergence {name} {k}",
                lg.implies(guard, lg.or_(lg.eq(da, -1), lg.and_(lg.eq(da, ee), lg.le(nxt, da)))),
            )
        _rank_facts(m, name, view, guard, epoch, now, add)
    for k in range(keys):
        nxt, ee, da = op.cell("next", k), op.cell("expected-end", k), op.cell("diverge-at", k)
        add(f"expected before end {k}", lg.implies(up, lg.le(ee, end[k])))
        for q in range(n):
            add(
                f"expected is order {k} {q}",
                lg.implies(
                    lg.and_(up, lg.le(nxt, q), lg.lt(q, ee)),
                    lg.and_(
                        lg.eq(op.cell("expected", k, q), g["op"][k][q][0]),
                        lg.eq(op.cell("expected-version", k, q), g["op"][k][q][1]),
                    ),
                ),
            )
        add(
            f"expected to end {k}",
            lg.implies(up, lg.or_(lg.eq(ee, end[k]), lg.eq(nxt, end[k]), lg.le(0, da))),
        )
        add(f"divergence before end {k}", lg.implies(up, lg.lt(da, end[k])))
        add(
            f"recovering key inserted {k}",
            lg.implies(
                lg.and_(up, _expecting(op, k)),
                lg.lt(op.cell("inserted", k), enc.ABSENT),
            ),
        )
    # a tick belongs to one key, so that two keys never share a rank: a restore orders
    # the keys by their first appearance in the checkpoint's view of the store, and two
    # keys cannot first appear at the same tick. (That consequence is not a fact of its
    # own: asked after each step it cost about a sixth of ordered's time with three keys,
    # and no other fact needs it stated.)
    assert ghosts.tick_key is not None
    for x in entries:
        label = f"slot {x.index}" if isinstance(x, enc.Slot) else "mark"
        add(f"tick's key {label}", lg.implies(x.present, lg.eq(ghosts.tick_key(x.time), x.key)))
    for name, fact in loop_facts(m, epoch):
        add(name, fact)


def _basic(m: enc.Machine, epoch: int) -> list[Sym]:
    """Facts of every state of an epoch: the crash count, the phase, no crash pending
    (a waiting contract: none outside an advance loop, which runs while up)."""
    w = m.world
    crashes = [
        lg.le(0, w["crashes"]),
        lg.le(w["crashes"], epoch + 1),
        lg.implies(w["up"], lg.le(w["crashes"], epoch)),
    ]
    if not m.contract.wait:
        return [
            *crashes,
            lg.or_(lg.eq(w["phase"], enc.IDLE), lg.eq(w["phase"], enc.DONE)),
            lg.eq(w["cut"], -1),
        ]
    advancing = lg.eq(w["phase"], enc.ADVANCE)
    return [
        *crashes,
        lg.or_(lg.eq(w["phase"], enc.IDLE), advancing, lg.eq(w["phase"], enc.DONE)),
        lg.implies(lg.not_(advancing), lg.eq(w["cut"], -1)),
        lg.implies(advancing, w["up"]),
        lg.le(0, w["key"]),
        lg.lt(w["key"], m.k),
    ]


# -- one micro-step --------------------------------------------------------------------


@define
class Step:
    """The solver of one micro-step's check and its goals (each to be unsatisfiable)."""

    t: int
    solver: z3.Solver
    goals: list[tuple[str, Any]]
    premises: list[Any]
    #: what the check is a function of: the states the facts are assumed in and asked
    #: in, with their epochs (:func:`.digest.digest`); equal digests, equal checks
    digest: Digest

    @property
    def formula(self) -> list[Any]:
        return [*self.premises, *(goal for _, goal in self.goals)]


def symbolic_machine(
    contract: Contract, agent: str, bound: Bound, premises: list[Any]
) -> enc.Machine:
    """The machine of a step check: a symbolic shape of the bound (its assumptions are
    added to ``premises``), the environment :func:`_env`, the bound's budgets, at most
    one checkpoint between two restores."""
    shape = enc.symbolic_shape(bound, premises.append)
    return enc.Machine(
        contract,
        agent,
        bound,
        shape,
        _env,
        enc.budget(contract, bound),
        enc.first_budget(contract, bound),
        one_checkpoint=True,
    )


def symbolic_start(
    m: enc.Machine,
    bound: Bound,
    t: int,
    properties: Sequence[str],
    fresh: Callable[[Sym, str], Any],
) -> list[Sym]:
    """Make ``m``'s state the fully symbolic start of micro-step ``t`` (``t`` > 0): every
    cell of the operator, the checkpoint and the world, every store slot of the epochs
    up to that of ``t - 1`` and the invalidation marks (:func:`marks_before`) become
    fresh constants, every earlier tick lies below :data:`BASE` and the step's ticks
    count from it. Gives the assumptions about that start: the ticks, no flag of
    ``properties`` set, the basic facts of the epoch of ``t - 1``."""
    contract = m.contract
    keys, n = m.k, m.n
    pre: list[Sym] = []
    before = m.epoch_of(t - 1)
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
    for _ in range(marks_before(contract, bound, t)):
        mark = enc.InvalidationMark(
            fresh(False, "mark"), fresh(0, "mark-key"), fresh(0, "mark-time")
        )
        m.marks.append(mark)
        pre.append(
            lg.implies(
                mark.present,
                lg.and_(
                    lg.le(0, mark.time),
                    lg.lt(mark.time, BASE),
                    lg.le(0, mark.key),
                    lg.lt(mark.key, keys),
                ),
            )
        )
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
    return pre


def build_step(
    contract: Contract,
    agent: str,
    bound: Bound,
    t: int,
    properties: Sequence[str],
    without: frozenset[str] = frozenset(),
) -> Step:
    """The check of micro-step ``t`` for ``properties`` (see the module's docstring),
    the invariant without the families ``without``."""
    step = _build(contract, agent, bound, t, properties, True, without)
    assert isinstance(step, Step)
    return step


def step_digest(
    contract: Contract, agent: str, bound: Bound, t: int, properties: Sequence[str]
) -> Digest:
    """The states micro-step ``t``'s check is made of (:attr:`Step.digest`), without
    the facts about them: about a fifth of the work of :func:`build_step`."""
    picture = _build(contract, agent, bound, t, properties, False)
    assert not isinstance(picture, Step)
    return picture


def _build(
    contract: Contract,
    agent: str,
    bound: Bound,
    t: int,
    properties: Sequence[str],
    facts: bool,
    without: frozenset[str] = frozenset(),
) -> Step | Digest:
    """:func:`build_step`, or with ``facts`` false only its digest."""
    solver = z3.Solver()
    # the old simplex: on the later epochs' steps about 1.1-1.5x less solver time than
    # the default arithmetic solver, the more the larger the bound
    solver.set("arith.solver", 2)
    premises: list[Any] = []
    m = symbolic_machine(contract, agent, bound, premises)
    fresh = _Fresh()
    n, keys = m.n, m.k
    epoch = m.epoch_of(t)
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
    if contract.wait:
        ghosts.end = [fresh(0, f"end{k}") if t else 0 for k in range(keys)]
        ghosts.tick_key = _tick_key
        ghosts.position = [fresh(0, f"position{r}") for r in range(n)]
        if t == 0 and "complete-reuse" in properties:
            # nothing is accepted yet: the checkpoint's recorded order is the live one
            ghosts.order["saved"] = [list(row) for row in ghosts.order["op"]]
    pre: list[Sym] = []
    assumed: list[Fact] = []
    before = m.epoch_of(t - 1) if t else None
    if before is None:
        for v in ("op", "saved"):
            for k in range(keys):
                ghosts.memory[v][k][0] = m.op.cell("memory", k, 0)
    else:
        pre = symbolic_start(m, bound, t, properties, fresh)
        ghosts.marks = list(m.marks)
    # the facts assumed are a function of the start's state and its epoch: this picture
    start = digest(m, ghosts, premises, pre, before)
    if before is not None and facts:
        assumed = invariant(m, ghosts, before, properties, BASE, without)
        pre += [fact for _, fact in assumed]
    _track(m, ghosts)
    present = {s.index: s.present for s in m.slots}
    marks = len(m.marks)
    m.micro_step(t)
    writes: list[tuple[Sym, Sym, Sym]] = []  # (written now, tick, key)
    for s in m.slots:
        if s.epoch != epoch:
            continue
        new = lg.and_(s.present, lg.not_(present[s.index]))
        if lg._const(new) is False:
            continue
        writes.append((new, s.time, s.key))
        if contract.wait:
            ghosts.end = [
                lg.ite(
                    lg.and_(new, lg.eq(s.key, k), lg.le(end, s.position)),
                    lg.add(s.position, 1),
                    end,
                )
                for k, end in enumerate(ghosts.end)
            ]
        if s.kind != "completion":
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
    if contract.wait:
        writes += [(mark.present, mark.time, mark.key) for mark in m.marks[marks:]]
        ghosts.tick_key = _tick_key_after(ghosts.tick_key, writes)
        ghosts.marks = list(m.marks)
    # the rest of the check is a function of that picture and of the state after the
    # step, its epoch and the properties: this one (the facts read only the machine's
    # ``STATE``, which ``tests/spec/test_digest.py`` checks)
    pictures = [*start, *digest(m, ghosts, premises, epoch, list(properties))]
    if not facts:
        return pictures
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
        for name, f in invariant(m, ghosts, epoch, properties, m.time + 1, without)
        if lg._const(f) is not True and not (name in kept and kept[name].eq(lg.lift_bool(f)))
    ]
    return Step(t, solver, goals, premises, pictures)


_TICK_KEY = z3.Function("tick-key", z3.IntSort(), z3.IntSort())


def _tick_key(tick: Sym) -> Any:
    """The key whose store write has tick ``tick`` (before the micro-step: unknown)."""
    return _TICK_KEY(lg.lift_int(tick))


def _tick_key_after(
    before: Callable[[Sym], Any] | None, writes: list[tuple[Sym, Sym, Sym]]
) -> Callable[[Sym], Any]:
    assert before is not None

    def after(tick: Sym) -> Any:
        out = before(tick)
        for new, time_, key in writes:
            out = z3.If(lg.lift_bool(lg.and_(new, lg.eq(tick, time_))), lg.lift_int(key), out)
        return out

    return after


def marks_before(contract: Contract, bound: Bound, t: int) -> int:
    """How many invalidation marks the symbolic start of micro-step ``t`` has: as many
    as the store can hold before the last micro-step of ``t``'s class (a micro-step
    invalidates at most once per action on a miss and once on a divergence, each for one
    key or for every key), where the machine reads them (a waiting contract's restore, an
    invalidation of every key); none where it does not."""
    if not contract.durable_invalidation or not (
        contract.wait or contract.invalidation_scope == "all"
    ):
        return 0
    actions = max(len(Plan.of(AGENTS[a]).entries) for a in bound.agents)
    per_step = (actions if contract.on_miss == "invalidate" else 0) + 1
    targets = bound.keys if contract.invalidation_scope == "all" else 1
    last = max(members(contract, bound, class_of(contract, bound, t)))
    return per_step * targets * last


def _track(m: enc.Machine, ghosts: Ghosts) -> None:
    """Keep the ghosts up to date as the machine runs: accepts, checkpoints, restores,
    divergences."""
    accept, checkpoint, restore = m.monitors.accept, m.checkpoint, m.restore
    diverge = m.diverge
    g, mem = ghosts.order, ghosts.memory

    def on_accept(kept: Sym, key: Sym, position: Sym, record: Sym, version: Sym, tick: int) -> None:
        for k in range(m.k):
            for q in range(m.n):
                here = lg.and_(kept, lg.eq(key, k), lg.eq(position, q))
                for v in ("op", "saved"):
                    old = g[v][k][q]
                    g[v][k][q] = (lg.ite(here, record, old[0]), lg.ite(here, version, old[1]))
        accept(kept, key, position, record, version, tick)
        ghosts.position = [
            lg.ite(lg.and_(kept, lg.eq(record, r)), position, old)
            for r, old in enumerate(ghosts.position)
        ]
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

    def on_diverge(happens: Sym, key: Sym) -> None:
        # a kept invalidation from the key's position ends its recorded order there
        position, marks = m.op.at("next", key), len(m.marks)
        diverge(happens, key)
        if m.contract.wait and len(m.marks) > marks:
            kept = m.marks[-1].present
            ghosts.end = [
                lg.ite(lg.and_(kept, lg.eq(key, k)), position, end)
                for k, end in enumerate(ghosts.end)
            ]

    m.monitors.accept = on_accept  # type: ignore[method-assign,assignment]
    m.diverge = on_diverge  # type: ignore[method-assign]
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
    return [t for t in range(_steps(contract, bound)) if class_of(contract, bound, t) == rep]


def check_class(
    contract: Contract, agent: str, bound: Bound, step: Step, properties: Sequence[str]
) -> int:
    """Every other micro-step of ``step``'s class has the same formula; raises
    :class:`ClassMismatch` if not. Gives how many. The formulas are not built: the
    check's formula is a function of the states it starts and ends in (its digest), so
    their digests are compared (Z3 terms as terms, names included)."""
    others = [t for t in members(contract, bound, step.t) if t != step.t]
    for t in others:
        if not same(step.digest, step_digest(contract, agent, bound, t, properties)):
            raise ClassMismatch(
                f"{contract.name} / {agent} at {bound}: the check of micro-step {t} differs "
                f"from that of micro-step {step.t}, which stands for it"
            )
    return len(others)


#: The families whose facts are asked one a query: ``complete-reuse``'s facts about the
#: input recorded at each position of a key (:func:`_reuse_facts`). Each reads the
#: columns of the records at its own ghost record, a search over the records; asked
#: together, the solver searches them all at once. At the default bound (agent
#: ``chain``) they took 2.6 times as long by family as one a query, and the two classes
#: of the last epoch 1272 s and 1007 s against 804 s and 761 s; at ``inputs=4`` the two
#: ways take as long (``spec/notes/deepen-bench.md``, thirty-seventh session).
ALONE = (
    "recorded once",
    "recorded accepted",
    "recorded accepted at checkpoint",
    "recorded not accepted at checkpoint",
    "recorded outstanding",
    "recorded outstanding or accepted",
)


def _groups(goals: list[tuple[str, Any]]) -> list[tuple[str, list[tuple[str, Any]]]]:
    """The goals asked together: the facts about one store slot in one query, the other
    facts of one family (one fact for each view, key, position or record) in one query,
    each flag and basic fact alone, and each fact of the families of :data:`ALONE`.
    Fewer, larger queries were measured faster, up to these at the smaller bounds (the
    facts of an epoch's slots in one query, or all facts, were slower); at the default
    bound six slots a query was faster inside an epoch and slower at a restore, about
    even over a deepening (``spec/notes/deepen-bench.md``, thirty-eighth session)."""
    out: dict[str, list[tuple[str, Any]]] = {}
    for name, goal in goals:
        slot = re.search(r"\bslot \d+", name)
        if slot:
            label = slot.group(0)
        elif name.startswith(("flag ", "basic ")):
            label = name
        else:
            label = re.sub(r"[\d ]+$", "", re.sub(r" (op|saved)( |$)", r"\2", name))
            if label in ALONE:
                label = name
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
    #: when the invariant was not kept: the families of the facts it broke, and the
    #: flags the classes before that set (property: why)
    dropped: tuple[str, ...] = ()
    flags: dict[str, str] = field(factory=dict)
    #: the families of facts the invariant was without
    without: frozenset[str] = frozenset()


@define
class ClassOutcome:
    """What the check of one step class says: the flags it may set (property: why),
    why the invariant is not kept there (empty when every fact held), the flags it was
    told to leave out, its queries and its seconds."""

    t: int
    failed: dict[str, str]
    broken: str
    skipped: tuple[str, ...]
    queries: int
    seconds: float
    #: when the invariant is not kept: the families of the facts the counterexample to
    #: induction breaks (:func:`family`), which :func:`prove` leaves out next
    dropped: tuple[str, ...] = ()


def check_step_class(
    contract: Contract,
    agent: str,
    bound: Bound,
    t: int,
    properties: Sequence[str],
    timeout: float | None = None,
    say: Callable[[str], None] | None = None,
    skip: Sequence[str] = (),
    without: frozenset[str] = frozenset(),
) -> ClassOutcome:
    """The check of the step class micro-step ``t`` stands for, the invariant without
    the families ``without``: the step is built and compared with the rest of its class
    (:func:`check_class`), then each group of goals (:func:`_groups`) is one query, the
    flags of ``skip`` (already known not kept) left out. Past the first fact found
    broken only the other facts are asked (so that the families of all those broken are
    left out at once), unless it was a basic fact. Each class is checked on its own: a
    step assumes the invariant, not what an earlier step found. The outcome of a check whose
    queries were all answered is kept in the proof cache (:mod:`.proofcache`) and read
    back, instead of checking again, by the same check; a check that ends before that
    keeps the queries it answered ``unsat`` (at least every :data:`PARTIAL_EVERY`
    seconds), and the same check started again asks only the others."""
    started = time.monotonic()
    classes = step_classes(contract, bound)
    if t not in classes:
        raise ValueError(f"micro-step {t} stands for no step class at {bound} (those: {classes})")
    cached = proofcache.key(contract, agent, bound, t, properties, skip, without)
    known = proofcache.read(cached, _CACHED)
    if known is not None:
        outcome = ClassOutcome(
            t,
            dict(known["failed"]),
            known["broken"],
            tuple(skip),
            known["queries"],
            time.monotonic() - started,
            tuple(known["dropped"]),
        )
        if say is not None:
            say(
                f"{_class_line(contract, agent, bound, t, known['facts'], outcome.queries)} "
                f"from the proof cache (checked in {known['seconds']:.1f} s)"
            )
        return outcome
    step = build_step(contract, agent, bound, t, properties, without)
    check_class(contract, agent, bound, step, properties)
    if timeout is not None:
        step.solver.set("timeout", max(1, int(timeout * 1000)))
    failed: dict[str, str] = {}
    broken = ""
    dropped: list[str] = []
    settled = True  # no query unknown
    groups = [(label, goals) for label, goals in _groups(step.goals) if _flag(label) not in skip]
    begun = proofcache.read(proofcache.partial(cached), _PARTIAL)
    proved: list[str] = []
    earlier = 0.0  # the seconds of the queries read back
    if begun is not None:
        labels = {label for label, _ in groups}
        proved = [label for label in begun["proved"] if isinstance(label, str) and label in labels]
        earlier = float(begun["seconds"])
        if say is not None and proved:
            say(
                f"{contract.name} / induction / {agent}: micro-step {t}: {len(proved)} of "
                f"{len(groups)} queries from the proof cache (answered in {earlier:.1f} s)"
            )
    asked = len(proved)
    read_back = set(proved)
    kept_count = len(proved)

    def keep() -> None:  # the queries proved so far, when there are more than last kept
        nonlocal kept_count
        if len(proved) > kept_count:
            so_far = {"proved": proved, "seconds": round(earlier + time.monotonic() - started, 3)}
            proofcache.write(proofcache.partial(cached), so_far)
            kept_count = len(proved)

    said = kept = time.monotonic()
    for label, goals in groups:
        if label in read_back:
            continue
        prop = _flag(label)
        if broken and (prop or not dropped):
            continue  # past a break, only what else to leave out (:func:`weakened`)
        if say is not None and time.monotonic() - said >= PROGRESS_EVERY:
            said = time.monotonic()
            say(
                f"{contract.name} / induction / {agent}: micro-step {t}: {asked} of "
                f"{len(groups)} queries answered ({said - started:.0f} s)"
            )
        if time.monotonic() - kept >= PARTIAL_EVERY:
            kept = time.monotonic()
            keep()
        step.solver.push()
        step.solver.add(z3.Or(*(goal for _, goal in goals)))
        result = step.solver.check()
        reason = step.solver.reason_unknown() if result == z3.unknown else ""
        settled = settled and result != z3.unknown
        name = label
        if result == z3.sat:  # the facts the counterexample to induction breaks
            model = step.solver.model()
            true = [n for n, g in goals if z3.is_true(model.eval(g, model_completion=True))]
            name = true[0]
            if not prop and not name.startswith("basic "):
                dropped = sorted({*dropped, *(family(n) for n in true)})
        step.solver.pop()
        asked += 1
        if result == z3.unsat:
            proved.append(label)
            continue
        what = "its flag" if prop else f"the fact '{name}'"
        why = (
            f"micro-step {t}: the solver did not settle {what} ({reason})"
            if reason
            else f"micro-step {t}, which may {'set' if prop else 'break'} {what}"
        )
        if prop:
            failed[prop] = f"not inductive at {why}"
        elif not broken:
            broken = f"the invariant is not inductive at {why}"
    seconds = time.monotonic() - started
    if settled:
        record = {
            "failed": failed,
            "broken": broken,
            "queries": asked,
            "facts": len(step.goals),
            "dropped": dropped,
        }
        proofcache.write(cached, {**record, "seconds": round(earlier + seconds, 3)})
        proofcache.remove(proofcache.partial(cached))
    else:
        keep()
    if say is not None:
        say(f"{_class_line(contract, agent, bound, t, len(step.goals), asked)} {seconds:.1f} s")
    return ClassOutcome(t, failed, broken, tuple(skip), asked, seconds, tuple(dropped))


def _flag(label: str) -> str:
    """The property whose flag a group of goals asks about ("" for a group of facts)."""
    return label[len("flag ") :] if label.startswith("flag ") else ""


#: How often (seconds) a step class's check says how far it is: a class of the default
#: bound may take minutes.
PROGRESS_EVERY = 30.0

#: How often (seconds) at least a step class's check keeps the queries it has answered
#: ``unsat`` so far, so that a check stopped before its end loses no more than that.
PARTIAL_EVERY = 10.0

#: What the proof cache keeps of a check stopped before its end: the labels of the groups
#: of :func:`_groups` answered ``unsat``, and the seconds they took.
_PARTIAL: dict[str, type | tuple[type, ...]] = {"proved": list, "seconds": (int, float)}

#: What the proof cache keeps of a step class's check (:mod:`.proofcache`).
_CACHED: dict[str, type | tuple[type, ...]] = {
    "failed": dict,
    "broken": str,
    "queries": int,
    "facts": int,
    "seconds": (int, float),
    "dropped": list,
}


def _class_line(
    contract: Contract, agent: str, bound: Bound, t: int, facts: int, queries: int
) -> str:
    """The progress line of a step class's check, without its time."""
    classes = step_classes(contract, bound)
    group = members(contract, bound, t)
    return (
        f"{contract.name} / induction / {agent}: micro-step {t} "
        f"(class {classes.index(t) + 1} of {len(classes)}: "
        f"{_plural(len(group), 'micro-step')}, {facts} facts in {queries} queries)"
    )


def combine(properties: Sequence[str], outcomes: Sequence[ClassOutcome]) -> Outcome:
    """What the checks of the step classes, in class order, say together: a property's
    flag fails with the reason of the first class that may set it; the first class that
    breaks the invariant fails every property with its reason, and the classes after it
    do not count. The seconds are those of the classes that count."""
    failed: dict[str, str] = {}
    counted: list[ClassOutcome] = []
    flags: dict[str, str] = {}
    dropped: tuple[str, ...] = ()
    for outcome in outcomes:
        counted.append(outcome)
        if outcome.broken:
            flags, dropped = failed, outcome.dropped
            failed = dict.fromkeys(properties, outcome.broken)
            break
        for prop, why in outcome.failed.items():
            failed.setdefault(prop, why)
    return Outcome(
        [p for p in properties if p not in failed],
        failed,
        sum(o.seconds for o in counted),
        sum(o.queries for o in counted),
        dropped,
        flags,
    )


def weakened(
    properties: Sequence[str], outcome: Outcome
) -> tuple[list[str], frozenset[str]] | None:
    """What to try next after an induction whose invariant was not kept: the properties
    whose flags no class before the break set, and the invariant without the families
    of the facts the break found (and those it was without already). ``None`` when it
    was kept, or nothing is left to leave out. A flag set stays set with fewer facts,
    so this is Houdini's search for the largest part of the invariant that is kept;
    the invariant of a contract outside the families is found this way."""
    new = set(outcome.dropped) - outcome.without
    if not new:
        return None
    rest = [p for p in properties if p not in outcome.flags]
    return (rest, outcome.without | new) if rest else None


def merged(first: Outcome, again: Outcome) -> Outcome:
    """The outcome of an induction tried ``again`` after ``first`` (:func:`weakened`,
    or at a larger bound): the properties ``first`` failed and ``again`` does not prove
    fail with ``first``'s reasons."""
    failed = {p: why for p, why in first.failed.items() if p not in again.proved}
    return evolve(
        again,
        failed={**failed, **again.failed},
        seconds=first.seconds + again.seconds,
        queries=first.queries + again.queries,
    )


def found_at(outcome: Outcome, bound: Bound) -> Outcome:
    """``outcome``, found at a search bound: its reasons say so."""
    return evolve(outcome, failed={p: f"at {bound}: {w}" for p, w in outcome.failed.items()})


def leaving_out(contract: Contract, agent: str, bound: Bound, outcome: Outcome) -> str:
    """The line said when an induction is tried again without more facts."""
    new = sorted(set(outcome.dropped) - outcome.without)
    why = next(iter(outcome.failed.values()), "")
    return (
        f"{contract.name} / induction / {agent}: at {bound} {why}; again without the facts "
        f"of {len(new)} {'family' if len(new) == 1 else 'families'} ({', '.join(new)})"
    )


def search_bounds(contract: Contract, bound: Bound, properties: Sequence[str]) -> list[Bound]:
    """Where the invariant of a contract outside the families is searched, in order,
    before ``bound``: two inputs and one crash, then two inputs and the crashes of
    ``bound`` (at most two), no more channels and keys than two, each smaller than
    ``bound``. Their checks take seconds, and what a second crash breaks shows at two
    inputs already, so the bound asked starts from what is kept there. Empty for a
    contract of a family, or when the generic invariant is the one for ``properties``
    (nothing is searched for)."""
    if not generic(contract) or by_generic(contract, properties):
        return []
    out: list[Bound] = []
    for crashes in (1, 2):
        small = evolve(
            bound,
            inputs=min(bound.inputs, 2),
            crashes=min(bound.crashes, crashes),
            channels=min(bound.channels, 2),
            keys=min(bound.keys, 2),
        )
        if small != bound and small not in out:
            out.append(small)
    return out


#: A check of a step class: its micro-step and the flags to leave out.
Check = tuple[int, tuple[str, ...]]


def settle(
    properties: Sequence[str], classes: Sequence[int], done: Mapping[int, ClassOutcome]
) -> Outcome | list[Check]:
    """What an induction checked class by class (``done``: by class) gives, as
    :func:`prove` would: once every class it rests on is checked, its outcome; until
    then, the checks still needed, each a class and the flags to leave out. It rests on
    the classes up to the first that breaks the invariant. That one is checked again
    when it was asked about a flag an earlier class failed, which ``prove`` leaves out:
    the fact its reason names comes from the solver's model, and the model may depend on
    the queries asked before."""
    needed: list[Check] = []
    counted: list[ClassOutcome] = []
    failed: set[str] = set()  # by the classes before, while all are known
    for t in classes:
        outcome = done.get(t)
        if outcome is None:
            needed.append((t, ()))
            continue
        counted.append(outcome)
        if outcome.broken:
            if not needed and set(outcome.skipped) != failed:
                needed.append((t, tuple(p for p in properties if p in failed)))
            break
        failed.update(outcome.failed)
    return needed or combine(properties, counted)


def prove(
    contract: Contract,
    agent: str,
    bound: Bound,
    properties: Sequence[str],
    timeout: float | None = None,
    say: Callable[[str], None] | None = None,
) -> Outcome:
    """Check every step class for ``properties`` (those :func:`inductive` gives), in
    class order, each without the flags an earlier class found not kept, until one
    breaks the invariant; then again without the families of facts it broke
    (:func:`weakened`), until the invariant is kept. For a contract outside the
    families, first at :func:`search_bounds`."""
    earlier: Outcome | None = None
    without: frozenset[str] = frozenset()
    for small in [*search_bounds(contract, bound, properties), bound]:
        outcome = _rounds(contract, agent, small, properties, without, timeout, say)
        if small != bound:
            outcome = found_at(outcome, small)
        earlier = outcome if earlier is None else merged(earlier, outcome)
        properties, without = outcome.proved, outcome.without
        if not properties:
            break
    assert earlier is not None
    return earlier


def _rounds(
    contract: Contract,
    agent: str,
    bound: Bound,
    properties: Sequence[str],
    without: frozenset[str],
    timeout: float | None,
    say: Callable[[str], None] | None,
) -> Outcome:
    """:func:`prove` at one bound, from the invariant without ``without``."""
    started = time.monotonic()
    earlier: Outcome | None = None  # the rounds before: the flags they set
    outcome = _round(contract, agent, bound, properties, without, timeout, say)
    while (again := weakened(properties, outcome)) is not None:
        if say is not None:
            say(leaving_out(contract, agent, bound, outcome))
        flags = evolve(outcome, failed=outcome.flags)
        earlier = flags if earlier is None else merged(earlier, flags)
        properties, without = again
        outcome = _round(contract, agent, bound, properties, without, timeout, say)
    if earlier is not None:
        outcome = merged(earlier, outcome)
    return evolve(outcome, seconds=time.monotonic() - started)


def _round(
    contract: Contract,
    agent: str,
    bound: Bound,
    properties: Sequence[str],
    without: frozenset[str],
    timeout: float | None,
    say: Callable[[str], None] | None,
) -> Outcome:
    """One induction: every step class in class order, until one breaks the invariant."""
    attempted = list(properties)
    outcomes: list[ClassOutcome] = []
    failed: dict[str, str] = {}
    for t in step_classes(contract, bound):
        skip = tuple(failed)
        outcome = check_step_class(
            contract, agent, bound, t, attempted, timeout, say, skip, without
        )
        outcomes.append(outcome)
        failed.update(outcome.failed)
        if outcome.broken:
            break
    return evolve(combine(attempted, outcomes), without=without)


__all__ = [
    "BASE",
    "GENERIC",
    "INDUCTIVE",
    "Check",
    "ClassMismatch",
    "ClassOutcome",
    "Outcome",
    "accepted_below_offset",
    "build_step",
    "check_class",
    "check_step_class",
    "class_of",
    "combine",
    "counted",
    "family",
    "found_at",
    "generic",
    "inductive",
    "invariant",
    "leaving_out",
    "members",
    "merged",
    "not_covered",
    "prove",
    "search_bounds",
    "settle",
    "step_classes",
    "step_digest",
    "step_formula",
    "symbolic_machine",
    "symbolic_start",
    "unsupported",
    "weakened",
]
