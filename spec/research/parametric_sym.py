"""Experimental: every micro-step of the machine is a step of the parametric model,
proved symbolically at a bound.

:mod:`.parametric` proves, for every bound at once, that its invariant ``Inv`` is kept
by one step of a model of the machine. This module proves, at a bound, that the model
*is* a model of the machine of :mod:`.encoding` (under ``seqnum``): for each class of
micro-steps (:func:`.induction.step_classes`), from a fully symbolic start of the
machine (as :func:`.induction.build_step` sets it up), whatever the machine does in
the micro-step, the model can take a step between the abstractions of the states
before and after. With the initial state (:func:`check_initial`) this is a proof of
``no-stale-reuse`` (and ``divergence-safeguard``) for the machine at the bound:

* ``J(s)`` = ``B(s)`` and, for some state ``A`` of the model, ``R(s, A)`` and ``Inv(A)``;
* ``J`` holds initially: ``B`` holds and :func:`initial_abstraction` is an ``A``;
* if ``J(s)`` and the machine steps ``s -> s'``, then ``B(s')``, and the model steps
  ``A -> A'`` for an explicit ``A'`` with ``R(s', A')`` (this module); the parametric
  step gives ``Inv(A')``, so ``J(s')``;
* ``R`` says that the model's flags are the machine's, and ``Inv`` that they are not
  set.

The abstraction ``R(s, A)`` (:func:`relate`) maps machine slot ``i`` to model slot id
``i``; every other id is absent. A present slot's record, version, position, entry,
tick, voided flag and prefix are the model's; each key's position and marker in both
views; the histories (the checkpoint's, and the live one while the operator is up) as
arrays (:func:`history`); ``up``, the monitors' flags and, with ``safeguard``, the
monitor cells ``recorded`` and ``diverged``. Ticks are scaled by :data:`SCALE` (the
model's step has more ticks than some micro-steps). What ``R`` leaves open is like a
ghost: the fields of absent slots, the keys and positions beyond the bound, and the
model's ghosts (the recorded order ``G``, ``era`` and the slots' eras). Before the step
they are free, constrained only by ``Inv``; after it they are what the model's step
makes of them.

``B`` (:func:`basic`) holds facts of the machine alone that ``R`` needs to be exact or
the refinement needs: each history term has as many entries as its key's position (at
most ``inputs``) with versions 0 or 1, a key's position counts its accepted inputs, an
accepted input lies below its channel's offset, a slot written in the current epoch
lies below its key's position and its input is accepted, a present slot's prefix has
as many entries as its position with versions 0 or 1, an absent slot is not voided,
there is no volatile invalidation, and :func:`.induction._basic`. They are asked after
the step like the refinement.

The query of a micro-step class is quantifier-free. The model's universals before the
step (the facts of ``Inv`` in :data:`NEEDED`, and the global ones) are instantiated at
every machine slot id and key; the existentials of the model's step are given explicit
values (:func:`witnesses`): the move, the checkpoint's marker, the crash point, the
record and version, the ticks, the slot a save writes, a lookup's hit and slot (the
encoding's ``Found.index``) from what the machine does; the invalidation's slot, the
positions where a stale prefix differs or a divergence lies, and the voided flags after
an invalidation by their meaning (a machine slot id or position that satisfies
it); the step's universals (a miss, no slot to void, the voided flags) are asked at a
fresh (Skolem) slot id. Two lemmas about history terms, proved once for any terms
(:func:`check_lemmas`), are instantiated where the step needs them (:func:`extensional`
at each lookup, :func:`appended` at each accept). ``unsat`` means that the refinement
holds; ``sat`` gives a micro-step the model cannot take with these witnesses (a place
to look: with other witnesses it might).

As in :mod:`.induction`, the step's ticks count from :data:`.induction.BASE` and every
earlier one lies below it: the machine and the model only compare ticks, so that renames
no run. The class of a micro-step stands for its members (``check_classes`` compares
their formulas).

Run: ``python -m research.parametric_sym --bound ... [--agent ...]
[--safeguard]`` (see spec/notes/parametric.md).
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import z3

from replay_contract.arguments import OneLineParser, positive_int
from replay_contract.model.bounded import AGENTS
from replay_contract.model.contracts import Contract
from replay_contract.model.contracts import contract as contract_named
from replay_contract.spec import encoding as enc
from replay_contract.spec import induction as ind
from replay_contract.spec import logic as lg
from replay_contract.spec.agentterms import history_term
from replay_contract.spec.bound import Bound, BoundError, parse
from replay_contract.spec.everybound import parametric as ps
from replay_contract.spec.everybound.parametric import Rows
from replay_contract.spec.everybound.parametric_refine import SCALE, entries
from replay_contract.spec.logic import Sym
from replay_contract.spec.monitors import flag

#: the monitors the model has
STALE, SAFEGUARD = "no-stale-reuse", "divergence-safeguard"

T = lg.Term
Fact = tuple[str, Sym]


def scaled(x: Sym) -> Any:
    """The model's tick for the machine's tick ``x`` (order kept, negative sentinels
    such as -1 for "never" unchanged)."""
    if not lg.is_sym(x):
        return z3.IntVal(x if x < 0 else SCALE * x)
    return z3.If(x < 0, x, SCALE * x)


def history(h: Sym, length: Sym, n: int) -> list[Any]:
    """The model's history array of the history term ``h`` of ``length`` entries (at
    most ``n``), at positions ``0 .. n - 1``: position ``q`` holds the code of the
    ``q``-th input (the term's node at depth ``length - 1 - q``), ``BOT`` from ``length``
    on."""
    x, codes = lg.lift_term(h), []
    for _ in range(n):
        codes.append(ps.code(T.a(x), T.b(x)))
        x = T.c(x)
    size = lg.lift_int(length)
    return [
        z3.If(q < size, lg.select(size - 1 - q, codes, z3.IntVal(ps.BOT)), ps.BOT) for q in range(n)
    ]


def same(a: z3.ArrayRef, h: Sym, length: Sym, n: int) -> z3.BoolRef:
    """The model's history ``a`` is the history term ``h`` of ``length`` entries, at the
    positions ``0 .. n - 1`` (the machine has no others: what ``a`` holds elsewhere is
    the model's business, like a ghost)."""
    return z3.And(*(a[q] == x for q, x in enumerate(history(h, length, n))))


def well_formed(h: Sym, length: Sym, n: int) -> Sym:
    """History term ``h`` has ``length`` entries (at most ``n``), each of version 0 or 1."""
    return lg.and_(ind._length_is(h, length, n), versions(h, length, n))


def extensional(x: Sym, y: Sym, length: Sym, n: int) -> z3.BoolRef:
    """Two well-formed history terms of the same length are equal exactly when their
    arrays are (a lemma, proved by :func:`check_lemmas`; an instance of it at ``x``,
    ``y``)."""
    both = lg.lift_bool(lg.and_(well_formed(x, length, n), well_formed(y, length, n)))
    equal = z3.And(
        *(a == b for a, b in zip(history(x, length, n), history(y, length, n), strict=True))
    )
    return z3.Implies(both, (lg.lift_term(x) == lg.lift_term(y)) == equal)


def appended(h: Sym, record: Sym, version: Sym, length: Sym, n: int) -> z3.BoolRef:
    """The array of history term ``h`` of ``length`` entries (below ``n``) followed by
    one input is that of ``h`` with the input's code stored at ``length`` (a lemma,
    proved by :func:`check_lemmas`; an instance of it)."""
    size = lg.lift_int(length)
    longer = history(history_term(h, record, version), lg.add(length, 1), n)
    shorter = history(h, length, n)
    code = ps.code(lg.lift_int(record), lg.lift_int(version))
    return z3.Implies(
        z3.And(size >= 0, size < n),
        z3.And(
            *(
                a == z3.If(size == q, code, b)
                for q, (a, b) in enumerate(zip(longer, shorter, strict=True))
            )
        ),
    )


def check_lemmas(n: int, timeout_ms: int) -> Rows:
    """:func:`extensional` and :func:`appended` hold for any terms, inputs and length
    (``unsat``)."""
    x, y, size = z3.Const("x", T), z3.Const("y", T), z3.Int("length")
    r, v = z3.Int("record"), z3.Int("version")
    rows: Rows = []
    for name, lemma in (
        ("extensional", extensional(x, y, size, n)),
        ("appended", appended(x, r, v, size, n)),
    ):
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(z3.Not(lemma))
        t0 = time.perf_counter()
        res = solver.check()
        rows.append((f"lemma {name}", str(res), time.perf_counter() - t0))
    return rows


def completions(m: enc.Machine) -> list[enc.Slot]:
    """The machine's completion slots (the model's slots)."""
    return [s for s in m.slots if s.kind == "completion"]


def presence(m: enc.Machine) -> z3.ArrayRef:
    """The model's ``pres`` for the machine's store: slot ``i`` present as the machine's
    ``i``-th slot, every other id absent."""
    out = z3.K(ps.INT, z3.BoolVal(False))
    for s in completions(m):
        out = z3.Store(out, s.index, lg.lift_bool(s.present))
    return out


def relate(
    m: enc.Machine, st: ps.State, o: ps.Options, outside: z3.ArithRef | None = None
) -> list[tuple[str, z3.BoolRef]]:
    """``R``: the model's state ``st`` is an abstraction of ``m``'s current state
    (everything but ``now``; see the module's docstring), in named parts: the views,
    each store slot, the monitors. With ``outside`` (a slot id), the store's presence is
    stated slot by slot and at ``outside`` (a Skolem constant: a goal's form) instead of
    as one array."""
    up = lg.lift_bool(m.world["up"])
    if outside is None:
        store = st.pres == presence(m)
    else:
        ids = [s.index for s in completions(m)]
        store = z3.And(
            *(st.pres[s.index] == lg.lift_bool(s.present) for s in completions(m)),
            z3.Implies(z3.And(*(outside != i for i in ids)), z3.Not(st.pres[outside])),
        )
    out: list[tuple[str, z3.BoolRef]] = [("up", st.up == up), ("store", store)]
    for name, view, cells, guard in (
        ("op", st.op, m.op, up),
        ("saved", st.sv, m.saved, z3.BoolVal(True)),
    ):
        out.append((f"marker {name}", view.marker == scaled(cells["marker"])))
        for k in range(m.k):
            nxt = cells.cell("next", k)
            out.append((f"next {name} {k}", view.nxt[k] == lg.lift_int(nxt)))
            out.append(
                (
                    f"history {name} {k}",
                    z3.Implies(guard, same(view.H[k], cells.cell("history", k), nxt, m.n)),
                )
            )
    for s in completions(m):
        out.append(
            (
                f"slot {s.index}",
                z3.Implies(
                    lg.lift_bool(s.present),
                    z3.And(
                        st.rec[s.index] == s.record,
                        st.ver[s.index] == lg.lift_int(s.version),
                        st.pos[s.index] == lg.lift_int(s.position),
                        st.ent[s.index] == s.entry,
                        st.tim[s.index] == scaled(s.time),
                        st.void[s.index] == lg.lift_bool(s.voided),
                        same(st.pre[s.index], s.prefix, s.position, m.n),
                    ),
                ),
            )
        )
    w = m.world
    out.append((f"flag {STALE}", st.flag == lg.lift_bool(w[flag(STALE)])))
    if o.safeguard:
        out.append((f"flag {SAFEGUARD}", st.flag2 == lg.lift_bool(w[flag(SAFEGUARD)])))
        for k in range(m.k):
            row = [
                z3.And(
                    st.recd[k][q] == lg.lift_int(w.cell("recorded", k, q)),
                    st.divd[k][q] == scaled(w.cell("diverged", k, q)),
                )
                for q in range(m.n)
            ]
            out.append((f"monitor cells {k}", z3.And(*row)))
    return out


def key_of(m: enc.Machine) -> list[z3.BoolRef]:
    """The model's ``keyOf`` is the shape's key of each record."""
    return [ps.keyOf(z3.IntVal(r)) == lg.lift_int(m.shape.key[r]) for r in range(m.n)]


# -- the machine's basic facts ---------------------------------------------------------


def versions(h: Sym, length: Sym, n: int) -> Sym:
    """Each of the first ``length`` entries of history term ``h`` has version 0 or 1."""
    x, parts = lg.lift_term(h), []
    for d in range(n):
        parts.append(lg.implies(lg.lt(d, length), z3.Or(T.b(x) == 0, T.b(x) == 1)))
        x = T.c(x)
    return lg.and_(*parts)


def basic(m: enc.Machine, epoch: int) -> list[Fact]:
    """``B``: facts of the machine's state in ``epoch`` (see the module's docstring)."""
    n, up = m.n, m.world["up"]
    out: list[Fact] = [(f"basic {i}", b) for i, b in enumerate(ind._basic(m, epoch))]
    for name, view, guard in (("op", m.op, up), ("saved", m.saved, True)):
        for k in range(m.k):
            h, nxt = view.cell("history", k), view.cell("next", k)
            out.append((f"history length {name} {k}", lg.implies(guard, ind._length_is(h, nxt, n))))
            out.append((f"history versions {name} {k}", lg.implies(guard, versions(h, nxt, n))))
            out.append((f"count {name} {k}", lg.implies(guard, ind.counted(m, view, k))))
        for r in range(n):
            out.append((f"accepted below offset {name} {r}", ind.accepted_below_offset(m, view, r)))
    for s in m.slots:
        volatile = [m.op.cell("volatile-voided", s.index), m.saved.cell("volatile-voided", s.index)]
        out.append((f"no volatile void {s.index}", lg.not_(lg.or_(*volatile))))
        out.append((f"absent not voided {s.index}", lg.implies(s.voided, s.present)))
        if s.kind != "completion":
            continue
        out.append(
            (
                f"prefix length slot {s.index}",
                lg.implies(s.present, ind._length_is(s.prefix, s.position, n)),
            )
        )
        out.append(
            (
                f"prefix versions slot {s.index}",
                lg.implies(s.present, versions(s.prefix, s.position, n)),
            )
        )
        if s.epoch == epoch:
            out.append(
                (
                    f"written behind slot {s.index}",
                    lg.implies(s.present, lg.lt(s.position, m.op.at("next", s.key))),
                )
            )
            out.append(
                (
                    f"written accepted slot {s.index}",
                    lg.implies(lg.and_(up, s.present), m.op.cell("accepted", s.record)),
                )
            )
    return [(name, f) for name, f in out if lg._const(f) is not True]


# -- what the machine does in a micro-step ---------------------------------------------


@dataclass
class Decisions:
    """What the machine did in one micro-step, as it did it (terms of its state)."""

    checkpoint: Sym = False
    checkpoint_tick: int | None = None
    marker: Sym = 0
    restoring: Sym = False
    accepting: Sym = False
    record: Sym = 0
    version: Sym = 0
    accept_tick: int | None = None
    #: per entry of the plan: the lookup's result, the save's tick
    found: list[enc.Found] = field(default_factory=list)
    save_ticks: list[int] = field(default_factory=list)
    #: the accepted input's history before it, record, version and position
    append: tuple[Sym, Sym, Sym, Sym] | None = None
    #: per entry: the reuse monitor's position, saved prefix and history
    reuses: list[tuple[Sym, Sym, Sym]] = field(default_factory=list)
    #: the crash point chosen for the micro-step (-1: none)
    cut: Sym = -1


def watch(m: enc.Machine) -> Decisions:
    """Record the machine's decisions as it runs (wraps some of its methods)."""
    d = Decisions()
    checkpoint, restore, accept, find, end_macro = (
        m.checkpoint, m.restore, m.accept, m.find, m.end_macro
    )  # fmt: skip
    on_accept_event, on_save, on_reuse = m.monitors.accept, m.monitors.save, m.monitors.reuse

    def on_checkpoint(happens: Sym) -> None:
        checkpoint(happens)
        if lg._const(happens) is not False:
            d.checkpoint, d.checkpoint_tick, d.marker = happens, m.time, m.op["marker"]

    def on_restore(happens: Sym) -> None:
        d.restoring = happens
        restore(happens)

    def on_accept(happens: Sym, record: Sym, version: Sym, recorded: Sym) -> None:
        d.accepting, d.record, d.version = happens, record, version
        accept(happens, record, version, recorded)

    def on_find(
        key: Sym, entry: int, record: Sym, version: Sym, position: Sym, reads: tuple[Sym, ...]
    ) -> enc.Found:
        found = find(key, entry, record, version, position, reads)
        d.found.append(found)
        return found

    def on_end_macro() -> None:
        d.cut = m.world["cut"]
        end_macro()

    def accept_event(
        kept: Sym, key: Sym, position: Sym, record: Sym, version: Sym, time: int
    ) -> None:
        d.accept_tick = time
        d.append = (m.op.at("history", key), record, version, position)
        on_accept_event(kept, key, position, record, version, time)

    def reuse_event(
        kept: Sym,
        key: Sym,
        position: Sym,
        reads: tuple[Sym, ...],
        saved_prefix: Sym,
        saved_reads: tuple[Sym, ...],
        saved_time: Sym,
        prefix_now: Sym,
    ) -> None:
        d.reuses.append((position, saved_prefix, prefix_now))
        on_reuse(kept, key, position, reads, saved_prefix, saved_reads, saved_time, prefix_now)

    def save_event(kept: Sym, record: Sym, version: Sym, entry: int) -> None:
        d.save_ticks.append(m.time)
        on_save(kept, record, version, entry)

    m.checkpoint = on_checkpoint  # type: ignore[method-assign]
    m.restore = on_restore  # type: ignore[method-assign]
    m.accept = on_accept  # type: ignore[method-assign]
    m.find = on_find  # type: ignore[method-assign]
    m.end_macro = on_end_macro  # type: ignore[method-assign]
    m.monitors.accept = accept_event  # type: ignore[method-assign]
    m.monitors.save = save_event  # type: ignore[method-assign]
    m.monitors.reuse = reuse_event  # type: ignore[method-assign]
    return d


# -- the witnesses -----------------------------------------------------------------------


def first(domain: Sequence[int], wanted: Callable[[z3.ArithRef], z3.BoolRef], last: bool) -> Any:
    """The first (``last``: the last) value of ``domain`` that satisfies ``wanted`` (the
    first value of ``domain`` if none does)."""
    out: Any = z3.IntVal(domain[0])
    for x in domain if last else reversed(domain):
        out = z3.If(wanted(z3.IntVal(x)), x, out)
    return out


def witnesses(
    tr: ps.Step, a: ps.State, m: enc.Machine, d: Decisions, start: int, epoch: int
) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
    """A value for each of the model step's own variables (see the module's docstring),
    as terms of the model's state before, the machine's state and decisions; ``start``
    is the machine's last tick before the micro-step."""
    ids = [s.index for s in completions(m)]
    absent = len(m.slots)  # ids from here on are absent
    choices = {id(c.var): c for c in tr.choices}
    found_of = {id(c.found): c for c in tr.choices if c.found is not None}
    roles = {id(t): role for role, t in tr.ticks}
    # a choice's ``found`` is worked out from its variable, which comes after it
    later = {id(c.var): c.found for c in tr.choices if c.found is not None}
    order: list[z3.ExprRef] = []
    for var in tr.witnesses.values():
        if id(var) not in found_of:
            order.append(var)
        if id(var) in later:
            order.append(later[id(var)])
    defined = {id(x.array): x for x in tr.defined}
    out: list[tuple[z3.ExprRef, z3.ExprRef]] = []
    previous = z3.IntVal(SCALE * start + 1)  # the last tick given so far
    for var in order:
        name = var.decl().name()
        entry = re.search(r"(\d+)\.", name)
        e = int(entry.group(1)) if entry else 0
        if id(var) in roles:
            role = roles[id(var)]
            if role == "checkpoint" and d.checkpoint_tick is not None:
                term: Any = z3.IntVal(SCALE * d.checkpoint_tick)
            elif role == "accept" and d.accept_tick is not None:
                term = z3.IntVal(SCALE * d.accept_tick)
            elif role.startswith("save") and int(role[4:]) < len(d.save_ticks):
                term = z3.IntVal(SCALE * d.save_ticks[int(role[4:])])
            elif role == "checkpoint":
                term = previous
            else:
                term = previous + 1
            previous = term
        elif name.endswith("move.checkpoint"):
            term = lg.lift_bool(d.checkpoint)
        elif name.endswith("move.main"):
            term = z3.If(lg.lift_bool(d.accepting), 0, z3.If(lg.lift_bool(d.restoring), 1, 3))
        elif name.endswith("ckpt.marker"):
            term = scaled(d.marker) if d.checkpoint_tick is not None else a.op.marker
        elif name.endswith("acc.record"):
            # no record when the machine does not accept (no slot has it: no lookup hits)
            term = z3.If(lg.lift_bool(d.accepting), lg.lift_int(d.record), -1)
        elif name.endswith("acc.version"):
            term = lg.lift_int(d.version)
        elif name.endswith("acc.cut"):
            term = lg.lift_int(d.cut)
        elif re.search(r"find\d+\.hit$", name):
            term = lg.lift_bool(lg.and_(d.accepting, d.found[e].any))
        elif re.search(r"find\d+\.witness$", name):
            term = lg.lift_int(d.found[e].index)
        elif id(var) in found_of:
            c = found_of[id(var)]
            term = c.wanted(c.var)
        elif id(var) in choices:
            c = choices[id(var)]
            if c.domain == "slot":
                term = first(ids or [absent], c.wanted, last=True)
            else:
                term = first(range(m.n), c.wanted, last=False)
        elif id(var) in defined:
            x = defined[id(var)]
            term = x.old
            for i in ids:
                term = z3.Store(term, i, x.value(z3.IntVal(i)))
        elif re.search(r"save\d+\.slot$", name):
            mine: Sym = absent + e
            for s in completions(m):
                if s.epoch == epoch and s.entry == e:
                    mine = lg.ite(lg.eq(d.record, s.record), s.index, mine)
            term = z3.If(lg.lift_bool(d.accepting), lg.lift_int(mine), absent + e)
        else:
            raise ValueError(f"no value for the model's variable {name}")
        term = z3.substitute(term, *out) if out else term
        out.append((var, term))
    return out


# -- the checks --------------------------------------------------------------------------


@dataclass
class Check:
    """The refinement check of one micro-step: its premises and goals (each to be
    unsatisfiable)."""

    t: int
    premises: list[Any]
    goals: list[tuple[str, Any]]

    @property
    def formula(self) -> list[Any]:
        return [*self.premises, *(g for _, g in self.goals)]


#: the facts of the model's invariant the refinement needs (the others are left out of
#: its premises: fewer hypotheses, the same proof); None: all of them
NEEDED: tuple[str, ...] | None = ("written behind", "slot basics")


def invariant(m: enc.Machine, a: ps.State, o: ps.Options) -> list[z3.BoolRef]:
    """``Inv`` before the step, instantiated at every machine slot id, every key and a
    free position (of its facts, those in :data:`NEEDED`, and every global one)."""
    q = z3.Int("q")
    facts = [f for s in completions(m) for f in ps.slot_facts(a, z3.IntVal(s.index), q, o)]
    facts += [f for k in range(m.k) for f in ps.key_facts(a, z3.IntVal(k), q, o)]
    kept = [f for name, f in facts if NEEDED is None or name in NEEDED]
    return kept + [f for _, f in ps.global_facts(a, o)]


def options(agent: str, safeguard: bool, variant: str = "") -> ps.Options:
    """The model's options for ``agent``'s plan."""
    return ps.Options(entries=entries(agent), safeguard=safeguard, variant=variant)


def build(contract: Contract, agent: str, bound: Bound, t: int, o: ps.Options) -> Check:
    """The refinement check of micro-step ``t`` (see the module's docstring): the
    premises (the machine's micro-step from a symbolic start, ``B``, ``R`` and ``Inv``
    before it) and the goals (the model's step to the abstraction after it, ``B``
    after it)."""
    premises: list[Any] = []
    m = ind.symbolic_machine(contract, agent, bound, premises)
    properties = [STALE, SAFEGUARD] if o.safeguard else [STALE]
    a = ps.fresh_state("a")
    if t == 0:
        before, start = 0, 0
        now: Any = z3.IntVal(0)
    else:
        before, start = m.epoch_of(t - 1), ind.BASE
        pre = ind.symbolic_start(m, bound, t, properties, ind._Fresh())
        premises += [lg.lift_bool(f) for f in pre]
        now = z3.Int("now")
        premises += [now >= 0, now <= ind.BASE]
    premises += [lg.lift_bool(f) for _, f in basic(m, before)]
    premises += [f for _, f in relate(m, a, o)] + [a.now == SCALE * now, *key_of(m)]
    premises += invariant(m, a, o)
    decided = watch(m)
    m.micro_step(t)
    premises += [lg.lift_bool(f) for f in m.assumptions]
    # the lemma at each lookup: its saved prefix and the history
    premises += [extensional(x, y, size, m.n) for size, x, y in decided.reuses]
    if decided.append is not None:
        premises.append(appended(*decided.append, m.n))
    epoch = m.epoch_of(t)
    tr = ps.transition(a, o)
    assert tr.post is not None
    sigma = witnesses(tr, a, m, decided, start, epoch)
    skolem = [z3.Int(f"skolem{j}") for j in range(len(tr.univ))]
    # the slots of other epochs (the micro-step can only void those of earlier ones, and
    # those of later ones are absent): asked together
    settled = {f"slot {s.index}" for s in completions(m) if s.epoch != epoch}
    post = replace(tr.post, now=z3.IntVal(SCALE * m.time))
    model_step = [
        ("step", z3.And(*tr.cons, post.now >= tr.post.now)),
        *((f"universal {j}", u(x)) for j, (u, x) in enumerate(zip(tr.univ, skolem, strict=True))),
        *(
            (f"other {name}" if name in settled else name, f)
            for name, f in relate(m, post, o, z3.Int("outside"))
        ),
    ]
    goals = [(name, z3.Not(z3.substitute(f, *sigma))) for name, f in model_step]
    goals += [(f"basic: {name}", lg.lift_bool(lg.not_(f))) for name, f in basic(m, epoch)]
    return Check(t, premises, goals)


def group(name: str) -> str:
    """The query a goal is asked in: the model's step, its universals, the views (and
    the store's presence), each slot of the micro-step's epoch, the slots of the other
    epochs, the monitors, the machine's basic facts."""
    if name.startswith(("step", "universal", "basic")):
        return name.split(" ")[0].rstrip(":")
    if name.startswith("slot "):
        return name
    if name.startswith("other slot"):
        return "other slots"
    if name.startswith(("flag", "monitor")):
        return "monitors"
    return "views"


def solve(check: Check, timeout_ms: int, premises: bool = False) -> Rows:
    """Each group of goals' answer (:func:`group`); with ``premises``, first whether the
    premises can hold at all (``sat``: the other answers are not vacuous)."""
    groups: dict[str, list[tuple[str, Any]]] = {}
    for name, goal in check.goals:
        groups.setdefault(group(name), []).append((name, goal))
    asked: list[tuple[str, list[tuple[str, Any]]]] = list(groups.items())
    if premises:
        asked.insert(0, ("premises", []))
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(*check.premises)
    rows: Rows = []
    for label, goals in asked:
        solver.push()
        solver.add(z3.Or(*(g for _, g in goals)) if goals else z3.BoolVal(True))
        t0 = time.perf_counter()
        res = solver.check()
        dt = time.perf_counter() - t0
        if res == z3.sat and len(goals) > 1:
            model = solver.model()
            label += ": " + ", ".join(
                n for n, g in goals if z3.is_true(model.eval(g, model_completion=True))
            )
        solver.pop()
        rows.append((label, str(res), dt))
    return rows


def summary(rows: Rows) -> str:
    """One line for a class's answers: how many queries, the slowest, those that did not
    come out as they should."""
    bad = [r for r in rows if r[1] != ("sat" if r[0] == "premises" else "unsat")]
    slow = max(rows, key=lambda r: r[2])
    text = f"{len(rows)} queries {sum(r[2] for r in rows):.2f} s, slowest {slow[0]} {slow[2]:.2f} s"
    if bad:
        text += "; NOT AS EXPECTED: " + "; ".join(f"{n} {r}" for n, r, _ in bad)
    return text


def check_classes(contract: Contract, agent: str, bound: Bound, check: Check, o: ps.Options) -> int:
    """Every other micro-step of ``check``'s class has the same refinement check (the
    same Z3 terms); raises :class:`.induction.ClassMismatch` if not. Gives how many."""
    others = [t for t in ind.members(contract, bound, check.t) if t != check.t]
    mine = check.formula
    for t in others:
        theirs = build(contract, agent, bound, t, o).formula
        if len(theirs) != len(mine) or not all(x.eq(y) for x, y in zip(mine, theirs, strict=True)):
            raise ind.ClassMismatch(
                f"{contract.name} / {agent} at {bound}: the refinement check of micro-step "
                f"{t} differs from that of micro-step {check.t}, which stands for it"
            )
    return len(others)


def initial_abstraction(m: enc.Machine, a: ps.State, o: ps.Options) -> list[z3.BoolRef]:
    """``A`` for the machine's initial state: ``R`` and the model's initial state (the
    ghosts: the same order in both views, no restore yet)."""
    return [*(f for _, f in relate(m, a, o)), *ps.initial(a), *key_of(m)]


def check_initial(
    contract: Contract, agent: str, bound: Bound, o: ps.Options, timeout_ms: int
) -> Rows:
    """The machine's initial state: ``B`` holds, an ``A`` with ``R`` exists (``sat``),
    and every such ``A`` satisfies ``Inv`` (``unsat``)."""
    premises: list[Any] = []
    m = ind.symbolic_machine(contract, agent, bound, premises)
    a = ps.fresh_state("i")
    premises += initial_abstraction(m, a, o)
    s, k, q = z3.Int("s"), z3.Int("k"), z3.Int("q")
    queries = [
        ("abstraction exists", z3.BoolVal(True)),
        ("basic facts", z3.Or(*(lg.lift_bool(lg.not_(f)) for _, f in basic(m, 0)), False)),
        ("invariant", z3.Not(z3.And(*(f for _, f in ps.all_facts(a, s, k, q, o))))),
    ]
    rows: Rows = []
    for name, goal in queries:
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(*premises, goal)
        t0 = time.perf_counter()
        res = solver.check()
        rows.append((name, str(res), time.perf_counter() - t0))
    return rows


@dataclass
class Outcome:
    """What the checks of one agent answered."""

    initial: Rows = field(default_factory=list)
    #: the lemmas about histories the checks instantiate
    lemmas: Rows = field(default_factory=list)
    step: Rows = field(default_factory=list)
    #: per class: its micro-step, members, seconds (building + solving) and answers
    classes: list[tuple[int, int, float, Rows]] = field(default_factory=list)
    seconds: float = 0.0
    #: the processor time (this process, the solver's included)
    cpu: float = 0.0

    @property
    def holds(self) -> bool:
        """The initial state and every class check out, and the parametric step too (if
        it was asked)."""
        want = ["sat", "unsat", "unsat"]
        if [r[1] for r in self.initial] != want[: len(self.initial)]:
            return False
        rows = self.lemmas + self.step + [r for *_, rs in self.classes for r in rs]
        return all(r[1] == ("sat" if r[0] == "premises" else "unsat") for r in rows)


def refine(
    contract: Contract,
    agent: str,
    bound: Bound,
    o: ps.Options,
    timeout_ms: int = 600_000,
    classes: Sequence[int] | None = None,
    same_classes: bool = False,
    premises: bool = False,
    say: Callable[[str], None] | None = None,
) -> Outcome:
    """The initial state and the refinement check of each class of micro-steps (or of
    ``classes``), for ``agent`` at ``bound`` against the model of options ``o``."""
    out = Outcome()
    t0, cpu0 = time.perf_counter(), time.process_time()
    out.initial = check_initial(contract, agent, bound, o, timeout_ms)
    out.lemmas = check_lemmas(bound.inputs, timeout_ms)
    for t in ind.step_classes(contract, bound) if classes is None else classes:
        c0 = time.perf_counter()
        check = build(contract, agent, bound, t, o)
        if same_classes:
            check_classes(contract, agent, bound, check, o)
        rows = solve(check, timeout_ms, premises)
        members = len(ind.members(contract, bound, t))
        out.classes.append((t, members, time.perf_counter() - c0, rows))
        if say is not None:
            say(f"  micro-step {t} ({members} in its class): {summary(rows)}")
    out.seconds, out.cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: 0 if the refinement holds (and the parametric step)."""
    ap = OneLineParser(
        prog="python -m research.parametric_sym",
        description="Every micro-step of the machine of spec/encoding.py at a bound is a "
        "step of the parametric model of spec/everybound/parametric.py (experimental).",
    )
    ap.add_argument("--bound", default=str(parse("agents=stateful")))
    ap.add_argument("--agent", default="", help="one agent (default: the bound's)")
    ap.add_argument("--contract", default="seqnum", help="the machine's contract")
    ap.add_argument("--variant", default="", choices=ps.VARIANTS, help="a broken model")
    ap.add_argument("--safeguard", action="store_true", help="also divergence-safeguard")
    ap.add_argument("--check-classes", action="store_true", help="compare class members")
    ap.add_argument("--premises", action="store_true", help="also ask that the premises hold")
    ap.add_argument("--no-step", action="store_true", help="skip the parametric step proof")
    ap.add_argument("--timeout", type=positive_int, default=600, help="seconds per query")
    args = ap.parse_args(argv)
    try:
        bound = parse(args.bound)
        contract = contract_named(args.contract)
    except (BoundError, ValueError) as e:
        ap.error(str(e))
    if args.agent and args.agent not in AGENTS:
        ap.error(f"--agent: unknown agent {args.agent!r} (known: {', '.join(AGENTS)})")
    if contract.wait:
        ap.error(f"--contract: {contract.name} waits; the model is of a contract that does not")
    ok = True
    for agent in [args.agent] if args.agent else bound.agents:
        o = options(agent, args.safeguard, args.variant)
        label = f"{contract.name} machine / {o.variant or 'seqnum'} model / {agent} at {bound}"
        if o.safeguard:
            label += " +safeguard"
        print(f"{label}:")
        done = refine(
            contract,
            agent,
            bound,
            o,
            args.timeout * 1000,
            None,
            args.check_classes,
            args.premises,
            print,
        )
        if not args.no_step:
            done.step = ps.check_step(o, args.timeout * 1000)
        first_rows = ", ".join(f"{n} {r}" for n, r, _ in done.initial + done.lemmas)
        seconds = sum(r[2] for r in done.initial + done.lemmas)
        print(f"  initial state, lemmas: {first_rows} ({seconds:.2f} s)")
        if done.step:
            bad = [r[0] for r in done.step if r[1] != "unsat"]
            print(
                f"  parametric step: {len(done.step) - len(bad)}/{len(done.step)} facts kept "
                f"({sum(r[2] for r in done.step):.2f} s)" + (f"; NOT kept: {bad}" if bad else "")
            )
        verdict = "holds" if done.holds else "DOES NOT HOLD"
        print(
            f"  refinement {verdict}: {len(done.classes)} classes, {done.seconds:.1f} s "
            f"(processor {done.cpu:.1f} s)"
        )
        ok = ok and done.holds
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["SCALE", "Check", "Outcome", "basic", "build", "check_initial", "refine", "relate"]
