"""Opt-in (``verify --engine parametric``): a *parametric* induction step for
``seqnum`` / ``no-stale-reuse``.

The store, the per-key state and the ghost recorded order are Z3 arrays indexed by a
slot id, a key and a position, so the size of a step query does not depend on the
number of inputs, slots or positions. The invariant quantifies over slots and keys;
one micro-step is asserted as a transition relation between two symbolic states, and
each fact of the invariant is asked after it, for a fresh (Skolem) slot ``s0`` and key
``k0``.

State (``op`` = live operator state, ``sv`` = the checkpoint; both called *views*):

* per view: ``nxt[k]`` (the key's next position), ``H[k]`` (the key's accepted history,
  the monitor's ``history``), ``G[k]`` (ghost: the recorded order, key -> position ->
  code), ``marker`` (the store's recovery marker);
* the store, per slot id: ``pres``, ``rec``, ``ver``, ``pos``, ``ent`` (the plan's entry),
  ``tim`` (tick of the write), ``void`` (durably invalidated), ``pre`` (the saved prefix,
  a history), ``era`` (ghost: how many restores had happened when it was written);
  a save writes any slot id that is not present (``fresh``);
* the world: ``up``, ``now`` (the last tick), ``era`` (restores so far), ``flag`` (the
  monitor of no-stale-reuse has fired); with ``--safeguard`` also ``recorded`` and
  ``diverged`` per (key, position) and the divergence-safeguard monitor's flag.

A history is an *array* position -> code (code = 2 * record + version) that is ``BOT``
outside ``[0, length)``: the cons-list term of ``spec/agentterms.history_term`` maps one
to one onto such arrays, so "same history" is array equality, which Z3 decides by
extensionality, whatever the length. ``trunc(A, n)`` (a lambda) is the history made of
the first ``n`` entries of ``A``. With ``hist="point"`` (the default) no lambda is used:
every fact about a history is stated at a position ``q`` and a stale reuse is a
difference at a free position.

The step (an over-approximation of ``Machine.micro_step`` for a contract that does not
wait; see SIMPLIFIED below): an optional checkpoint, then one of: deliver and accept an
input (with a crash after any number of its effects, ``cut``), restore, a plain crash,
or nothing. ``accept`` follows ``Machine.accept``: per entry of the plan, a lookup
(``find``: an existential witness ``w_e`` for a hit, a universal for a miss), the reuse
monitor, on a miss a durable invalidation of the key's valid settled slots at or after
the position (except the same input at the position) when there is some, one tool call,
the save of a new slot; the effects are counted and the crash point ``cut`` decides which
are kept, as in ``Machine.effect``/``Machine.live``.

SIMPLIFIED with respect to spec/encoding.py (each one only adds behaviours, or is
equivalent under a fact of the invariant, so a proof here is a proof for the real step):

* the delivered record and its version are arbitrary (no channels, offsets, ``high``,
  lost or changed shapes): no-stale-reuse does not depend on which input comes;
* restores and plain crashes may happen at any idle micro-step, any number of times
  (the real machine: only at epoch boundaries, at most ``crashes``); there is no padding
  or symmetry breaking; ``end`` is "nothing" (it only sets ``DONE``);
* a checkpoint sets the marker to *any* value between the old marker and the
  checkpoint's tick (the real one: the least tick of the valid slots at or after their
  key's position, or the checkpoint's tick; that value is in the range);
* slots: a save writes any slot id not present (the real store: the slot of its
  epoch, record and entry, written at most once); "settled" is "written before the last
  restore" (ghost ``era``) instead of "written in an earlier epoch": the slots these
  differ on lie below their key's position (fact ``written behind``), where no lookup
  or invalidation looks;
* a slot's key is ``keyOf(rec)`` (as ``shape.key[record]``); ``keyOf`` is uninterpreted;
* no volatile invalidation (seqnum's are durable), no memory/outputs/agent terms, no
  other monitor than no-stale-reuse (and divergence-safeguard with ``--safeguard``); one
  tool call per entry (both agents of ``model/bounded.AGENTS`` have one), ``entries`` =
  1 (``stateful``) or 2 (``chain``);
* ticks: any increasing integers (the machine's are consecutive; it only compares
  them).

:mod:`.parametric_refine` checks on concrete runs that every micro-step of the machine is
a step of this model.

Modes for the universally quantified premises (the invariant before the step and the
miss / no-invalidation facts of the step): ``manual`` instantiates them by hand at the
finitely many slot and key terms of the query (sound: instances of a hypothesis), so
each query is quantifier-free; ``lazy`` adds those instances only when a model
falsifies them; ``quant`` gives Z3 the quantifiers (E-matching + MBQI).

No command line of its own: ``verify`` runs it (:mod:`.parametric_engine`), the tests
drive it directly (tests/spec).
The engine of ``verify`` (:mod:`.induction`) does not use this module.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import z3

INT = z3.IntSort()
BOOL = z3.BoolSort()
HIST = z3.ArraySort(INT, INT)
#: the code of "no entry" in a history
BOT = -1

#: a formula about one slot term
SlotPred = Callable[[z3.ArithRef], z3.BoolRef]
#: named facts
Facts = list[tuple[str, z3.BoolRef]]
#: a query's answers: (fact, "sat" / "unsat" / "unknown", seconds)
Rows = list[tuple[str, str, float]]


def trunc(a: z3.ArrayRef, n: z3.ArithRef) -> z3.ArrayRef:
    """The history made of the first ``n`` entries of ``a``."""
    q = z3.Int("q")
    return z3.Lambda([q], z3.If(z3.And(q >= 0, q < n), a[q], BOT))


def same_hist(x: z3.ArrayRef, a: z3.ArrayRef, n: z3.ArithRef, q: z3.ArithRef | None) -> z3.BoolRef:
    """History ``x`` is ``trunc(a, n)``: as one array equality (``q`` None, a lambda), or
    at position ``q`` only (the pointwise form, free of lambdas)."""
    if q is None:
        return x == trunc(a, n)
    return x[q] == z3.If(z3.And(q >= 0, q < n), a[q], BOT)


def code(rec: z3.ArithRef, ver: z3.ArithRef) -> z3.ArithRef:
    """The code of an entry of a history: ``2 * record + version``."""
    return 2 * rec + ver


@dataclass
class View:
    nxt: z3.ArrayRef
    H: z3.ArrayRef
    G: z3.ArrayRef
    marker: z3.ArithRef


@dataclass
class State:
    op: View
    sv: View
    pres: z3.ArrayRef
    rec: z3.ArrayRef
    ver: z3.ArrayRef
    pos: z3.ArrayRef
    ent: z3.ArrayRef
    tim: z3.ArrayRef
    void: z3.ArrayRef
    pre: z3.ArrayRef
    sera: z3.ArrayRef
    up: z3.BoolRef
    now: z3.ArithRef
    era: z3.ArithRef
    flag: z3.BoolRef
    #: divergence-safeguard: the world's recorded code and latest divergence tick per
    #: (key, position) (monitors.py ``recorded``, ``diverged``), and its flag
    recd: z3.ArrayRef
    divd: z3.ArrayRef
    flag2: z3.BoolRef


def fresh_state(tag: str) -> State:
    """A fully symbolic state, its constants named after ``tag``."""

    def view(name: str) -> View:
        return View(
            z3.Array(f"{tag}.{name}.nxt", INT, INT),
            z3.Array(f"{tag}.{name}.H", INT, HIST),
            z3.Array(f"{tag}.{name}.G", INT, HIST),
            z3.Int(f"{tag}.{name}.marker"),
        )

    return State(
        view("op"),
        view("sv"),
        z3.Array(f"{tag}.pres", INT, BOOL),
        z3.Array(f"{tag}.rec", INT, INT),
        z3.Array(f"{tag}.ver", INT, INT),
        z3.Array(f"{tag}.pos", INT, INT),
        z3.Array(f"{tag}.ent", INT, INT),
        z3.Array(f"{tag}.tim", INT, INT),
        z3.Array(f"{tag}.void", INT, BOOL),
        z3.Array(f"{tag}.pre", INT, HIST),
        z3.Array(f"{tag}.era", INT, INT),
        z3.Bool(f"{tag}.up"),
        z3.Int(f"{tag}.now"),
        z3.Int(f"{tag}.era_now"),
        z3.Bool(f"{tag}.flag"),
        z3.Array(f"{tag}.recorded", INT, HIST),
        z3.Array(f"{tag}.diverged", INT, HIST),
        z3.Bool(f"{tag}.flag2"),
    )


keyOf = z3.Function("keyOf", INT, INT)


#: The broken models of ``--variant`` (the empty name is seqnum itself).
VARIANTS = ("no-divergence-check", "stable-id", "forget-saved-order")


@dataclass
class Options:
    entries: int = 1
    #: positions, records and keys bounded (None: unbounded)
    n: int | None = None
    keys: int | None = None
    #: broken variants: "" (seqnum), "no-divergence-check" (a miss never invalidates),
    #: "stable-id" (lookup by identity, any position), "forget-saved-order" (an accept
    #: does not write the checkpoint's ghost order: an invariant that is too weak)
    variant: str = ""
    mode: str = "manual"
    #: histories compared as whole arrays (``lambda``) or position by position
    #: (``point``: every fact about a history is stated at a position ``q``)
    hist: str = "point"
    #: also the divergence-safeguard property (its monitor and facts; needs ``point``)
    safeguard: bool = False
    #: facts left out of the invariant (to see that the others need them)
    drop: tuple[str, ...] = ()


# -- the invariant ---------------------------------------------------------------------


def valid_in(
    pres: z3.ArrayRef, tim: z3.ArrayRef, void: z3.ArrayRef, marker: z3.ArithRef, s: z3.ArithRef
) -> z3.BoolRef:
    """Slot ``s`` of the store ``pres``, ``tim``, ``void`` is valid under ``marker``:
    present, not before the marker, not voided."""
    return z3.And(pres[s], marker <= tim[s], z3.Not(void[s]))


def valid(st: State, v: View, s: z3.ArithRef) -> z3.BoolRef:
    """Slot ``s`` is valid in view ``v``."""
    return valid_in(st.pres, st.tim, st.void, v.marker, s)


def slot_facts(st: State, s: z3.ArithRef, q: z3.ArithRef | None, o: Options) -> Facts:
    """The facts about slot ``s`` (at position ``q`` of its prefix)."""
    k = keyOf(st.rec[s])
    out: Facts = []
    for name, v, guard in (("op", st.op, st.up), ("sv", st.sv, z3.BoolVal(True))):
        ahead = z3.And(guard, valid(st, v, s), v.nxt[k] <= st.pos[s])
        out.append(
            (
                f"valid ahead is order {name}",
                z3.Implies(
                    ahead,
                    z3.And(
                        v.G[k][st.pos[s]] == code(st.rec[s], st.ver[s]),
                        same_hist(st.pre[s], v.G[k], st.pos[s], q),
                    ),
                ),
            )
        )
    out.append(
        (
            "written behind",
            z3.Implies(z3.And(st.up, st.pres[s], st.sera[s] == st.era), st.pos[s] < st.op.nxt[k]),
        )
    )
    out.append(
        (
            "slot basics",
            z3.Implies(
                st.pres[s],
                z3.And(st.tim[s] >= 0, st.tim[s] <= st.now, st.sera[s] <= st.era, st.pos[s] >= 0),
            ),
        )
    )
    if o.safeguard:
        # spec/induction.py's "recorded" and "no later divergence" (one view: the
        # markers are equal)
        valid_sv = valid(st, st.sv, s)
        out.append(
            ("recorded", z3.Implies(valid_sv, st.recd[k][st.pos[s]] == code(st.rec[s], st.ver[s])))
        )
        if q is not None:
            out.append(
                (
                    "no later divergence",
                    z3.Implies(z3.And(valid_sv, q <= st.pos[s]), st.divd[k][q] < st.tim[s]),
                )
            )
    return out


def key_facts(st: State, k: z3.ArithRef, q: z3.ArithRef | None, o: Options) -> Facts:
    """The facts about key ``k`` (at position ``q`` of its histories)."""
    out: Facts = []
    for name, v, guard in (("op", st.op, st.up), ("sv", st.sv, z3.BoolVal(True))):
        out.append(
            (
                f"history is order {name}",
                z3.Implies(guard, same_hist(v.H[k], v.G[k], v.nxt[k], q)),
            )
        )
        out.append((f"next nonneg {name}", v.nxt[k] >= 0))
    out.append(
        (
            "orders agree below next",
            z3.Implies(
                st.up,
                trunc(st.sv.G[k], st.op.nxt[k]) == trunc(st.op.G[k], st.op.nxt[k])
                if q is None
                else z3.Implies(z3.And(q >= 0, q < st.op.nxt[k]), st.sv.G[k][q] == st.op.G[k][q]),
            ),
        )
    )
    out.append(("checkpoint behind", z3.Implies(st.up, st.sv.nxt[k] <= st.op.nxt[k])))
    if o.safeguard and q is not None:
        out.append(("divergences in the past", st.divd[k][q] <= st.now))
    return out


def global_facts(st: State, o: Options) -> Facts:
    """The facts about no slot or key."""
    return [
        ("markers equal", st.op.marker == st.sv.marker),
        ("marker below now", st.op.marker <= st.now),
        ("counters", z3.And(st.era >= 0, st.now >= 0)),
        ("no stale reuse", z3.Not(st.flag)),
    ] + ([("divergence safeguard", z3.Not(st.flag2))] if o.safeguard else [])


def bounds(st: State, s: z3.ArithRef, k: z3.ArithRef, o: Options) -> list[z3.BoolRef]:
    """The bound of the parameters, as plain assumptions about the terms of a query."""
    out: list[z3.BoolRef] = []
    if o.n is not None:
        out += [st.op.nxt[k] <= o.n, st.sv.nxt[k] <= o.n, z3.Implies(st.pres[s], st.pos[s] < o.n)]
        out += [z3.Implies(st.pres[s], z3.And(st.rec[s] >= 0, st.rec[s] < o.n))]
    if o.keys is not None:
        out += [z3.And(k >= 0, k < o.keys)]
    return out


# -- the step --------------------------------------------------------------------------


@dataclass
class Choice:
    """An existential variable of the step whose value a refinement check may pick
    itself: a value of a finite domain (``"slot"``: slot ids, the last that fits;
    ``"position"``: positions, the first) that satisfies ``wanted``, and ``found`` (if
    any) = whether one does."""

    var: z3.ArithRef
    domain: str
    wanted: SlotPred
    found: z3.BoolRef | None = None


@dataclass
class Defined:
    """A fresh array of the step, equal to ``old`` except where ``value`` says (a
    universal of the step defines it slot by slot: ``array[x] == value(x)``)."""

    array: z3.ArrayRef
    old: z3.ArrayRef
    value: SlotPred


@dataclass
class Step:
    """The transition relation and the terms it introduces."""

    cons: list[z3.BoolRef] = field(default_factory=list)
    #: universally quantified constraints of the step: functions of a slot term
    univ: list[SlotPred] = field(default_factory=list)
    slots: list[z3.ArithRef] = field(default_factory=list)
    keys: list[z3.ArithRef] = field(default_factory=list)
    positions: list[z3.ArithRef] = field(default_factory=list)
    #: the slot ids the saves write
    fresh: list[z3.ArithRef] = field(default_factory=list)
    #: per entry of the plan: the input reuses a saved completion (and it is kept)
    reused: list[z3.BoolRef] = field(default_factory=list)
    #: the state after the step, as terms of the state before and of the step's own
    #: variables; its ``now`` is the step's last tick (the state after has ``now`` at or
    #: after it)
    post: State | None = None
    #: the step's own (existentially quantified) variables, by name, in the order made
    witnesses: dict[str, z3.ExprRef] = field(default_factory=dict)
    #: the step's ticks in order, each with its role (``checkpoint``, ``deliver``,
    #: ``accept``, then per entry ``lookupE``, ``invalidateE``, ``toolE``, ``saveE``)
    ticks: list[tuple[str, z3.ArithRef]] = field(default_factory=list)
    #: the witnesses a refinement check may pick by their meaning
    choices: list[Choice] = field(default_factory=list)
    #: the fresh arrays the step defines slot by slot
    defined: list[Defined] = field(default_factory=list)

    def var(self, name: str, sort: z3.SortRef) -> z3.ExprRef:
        """A new variable of the step, recorded among the witnesses."""
        x = z3.Const(name, sort)
        self.witnesses[name] = x
        return x


def step(a: State, b: State, o: Options, tag: str = "") -> Step:
    """``b`` is ``a`` after one micro-step; ``tag`` prefixes the names of the step's own
    variables (one per step of an unrolling)."""
    st = transition(a, o, tag)
    assert st.post is not None
    st.cons += frame(b, st.post)
    return st


def frame(b: State, post: State) -> list[z3.BoolRef]:
    """The state ``b`` is the step's state after (``post``)."""
    return [
        b.op.nxt == post.op.nxt,
        post.op.H == b.op.H,
        post.op.G == b.op.G,
        b.op.marker == post.op.marker,
        b.sv.nxt == post.sv.nxt,
        b.sv.H == post.sv.H,
        post.sv.G == b.sv.G,
        b.sv.marker == post.sv.marker,
        *(getattr(b, name) == getattr(post, name) for name in STORE),
        b.up == post.up,
        b.now >= post.now,  # the last tick of the step (a write's, or later)
        b.era == post.era,
        b.flag == post.flag,
        b.recd == post.recd,
        b.divd == post.divd,
        b.flag2 == post.flag2,
    ]


#: the store's arrays (fields of :class:`State`)
STORE = ("pres", "rec", "ver", "pos", "ent", "tim", "void", "pre", "sera")


def transition(a: State, o: Options, tag: str = "") -> Step:
    """One micro-step from ``a``: the constraints on the step's own variables and the
    state after, as terms (``Step.post``); see :func:`step`."""
    st = Step()
    c = st.cons
    # the move
    ckpt = st.var(f"{tag}move.checkpoint", BOOL)
    main = st.var(f"{tag}move.main", INT)  # 0 deliver, 1 restore, 2 plain crash, 3 nothing
    c.append(z3.And(main >= 0, main <= 3))
    c.append(z3.Implies(z3.Or(main == 0, ckpt), a.up))  # only an operator that is up
    # ticks: fresh, each larger than the one before (the machine only compares them)
    last = [a.now]

    def tick(role: str) -> z3.ArithRef:
        t = st.var(f"{tag}tick{len(last)}", INT)
        c.append(last[-1] < t)
        last.append(t)
        st.ticks.append((role, t))
        return t

    # checkpoint: saved := op, marker moved forward (see SIMPLIFIED), then its tick
    m1 = st.var(f"{tag}ckpt.marker", INT)
    tck = tick("checkpoint")
    c.append(z3.Implies(ckpt, z3.And(a.op.marker <= m1, m1 <= tck)))
    marker1 = z3.If(ckpt, m1, a.op.marker)
    op1 = View(a.op.nxt, a.op.H, a.op.G, marker1)
    sv1 = View(
        z3.If(ckpt, a.op.nxt, a.sv.nxt),
        z3.If(ckpt, a.op.H, a.sv.H),
        z3.If(ckpt, a.op.G, a.sv.G),
        z3.If(ckpt, marker1, a.sv.marker),
    )
    tick("deliver")
    # -- deliver and accept --------------------------------------------------------------
    acc = main == 0
    r, v = st.var(f"{tag}acc.record", INT), st.var(f"{tag}acc.version", INT)
    c.append(z3.Implies(acc, z3.And(r >= 0, z3.Or(v == 0, v == 1))))
    if o.n is not None:
        c.append(z3.Implies(acc, r < o.n))
    k = keyOf(r)
    if o.keys is not None:
        c.append(z3.Implies(acc, z3.And(k >= 0, k < o.keys)))
    st.keys.append(k)
    p = op1.nxt[k]
    st.positions.append(p)
    prefix = op1.H[k]
    cut = st.var(f"{tag}acc.cut", INT)
    c.append(cut >= -1)
    eff: z3.ArithRef = z3.IntVal(0)

    def live(e: z3.ArithRef) -> z3.BoolRef:
        return z3.Or(cut < 0, e < cut)

    kept = z3.And(acc, live(eff))
    cd = code(r, v)
    H_op = z3.If(kept, z3.Store(op1.H, k, z3.Store(prefix, p, cd)), op1.H)
    nxt_op = z3.If(acc, z3.Store(op1.nxt, k, p + 1), op1.nxt)
    G_op = z3.If(kept, z3.Store(op1.G, k, z3.Store(op1.G[k], p, cd)), op1.G)
    if o.variant == "forget-saved-order":
        G_sv = sv1.G
    else:
        G_sv = z3.If(kept, z3.Store(sv1.G, k, z3.Store(sv1.G[k], p, cd)), sv1.G)
    t_acc = tick("accept")  # the tick of the monitor's accept event
    # divergence-safeguard: a different input at a position accepted before
    before = a.recd[k][p]
    diverges = z3.And(kept, before != -1, before != cd)
    recd = z3.If(kept, z3.Store(a.recd, k, z3.Store(a.recd[k], p, cd)), a.recd)
    divd = z3.If(diverges, z3.Store(a.divd, k, z3.Store(a.divd[k], p, t_acc)), a.divd)
    flag2 = a.flag2
    pres, rec, ver, pos, ent, tim, void, pre, sera = (
        a.pres, a.rec, a.ver, a.pos, a.ent, a.tim, a.void, a.pre, a.sera,
    )  # fmt: skip
    flag = a.flag
    for e in range(o.entries):
        # (the closures below bind the store of this entry's lookup through default
        # arguments: the step's universals are instantiated after the loop)
        def valid_now(
            s: z3.ArithRef,
            void: z3.ArrayRef = void,
            pres: z3.ArrayRef = pres,
            tim: z3.ArrayRef = tim,
        ) -> z3.BoolRef:
            return valid_in(pres, tim, void, marker1, s)

        def match(
            s: z3.ArithRef,
            valid_now: SlotPred = valid_now,
            sera: z3.ArrayRef = sera,
            rec: z3.ArrayRef = rec,
            ver: z3.ArrayRef = ver,
            ent: z3.ArrayRef = ent,
            pos: z3.ArrayRef = pos,
            e: int = e,
        ) -> z3.BoolRef:
            parts = [valid_now(s), sera[s] < a.era, rec[s] == r, ver[s] == v, ent[s] == e]
            if o.variant != "stable-id":
                parts.append(pos[s] == p)
            return z3.And(*parts)

        hit, w = st.var(f"{tag}find{e}.hit", BOOL), st.var(f"{tag}find{e}.witness", INT)
        st.slots.append(w)
        st.choices.append(Choice(w, "slot", match, hit))
        c.append(z3.Implies(hit, match(w)))

        def no_match(s: z3.ArithRef, hit: z3.BoolRef = hit, match: SlotPred = match) -> z3.BoolRef:
            return z3.Implies(z3.Not(hit), z3.Not(match(s)))

        st.univ.append(no_match)
        reused = z3.And(acc, hit, live(eff))
        st.reused.append(reused)
        if o.hist == "point":
            # a stale reuse differs from the history at some position d (free: the query
            # asks whether one exists)
            d = st.var(f"{tag}find{e}.diff", INT)
            st.positions.append(d)

            def differs(q: z3.ArithRef, pre: z3.ArrayRef = pre, w: z3.ArithRef = w) -> z3.BoolRef:
                return pre[w][q] != prefix[q]

            st.choices.append(Choice(d, "position", differs))
            stale = differs(d)
        else:
            stale = pre[w] != prefix
        flag = z3.Or(flag, z3.And(reused, stale))
        if o.safeguard:
            # a divergence at or before the position after the save (free position d2)
            d2 = st.var(f"{tag}find{e}.diverged", INT)
            st.positions.append(d2)

            def after_save(
                q: z3.ArithRef, tim: z3.ArrayRef = tim, w: z3.ArithRef = w
            ) -> z3.BoolRef:
                return z3.And(q <= p, tim[w] < divd[k][q])

            st.choices.append(Choice(d2, "position", after_save))
            later = z3.Or(tim[w] < -1, after_save(d2))
            flag2 = z3.Or(flag2, z3.And(reused, later))
        tick(f"lookup{e}")
        miss = z3.And(acc, z3.Not(hit))
        if o.variant not in ("no-divergence-check", "stable-id"):

            def voids(
                s: z3.ArithRef,
                pos: z3.ArrayRef = pos,
                rec: z3.ArrayRef = rec,
                ver: z3.ArrayRef = ver,
            ) -> z3.BoolRef:
                return z3.And(
                    keyOf(rec[s]) == k,
                    p <= pos[s],
                    z3.Or(p < pos[s], rec[s] != r, ver[s] != v),
                )

            def voidable(
                s: z3.ArithRef,
                valid_now: SlotPred = valid_now,
                voids: SlotPred = voids,
                sera: z3.ArrayRef = sera,
            ) -> z3.BoolRef:
                return z3.And(valid_now(s), sera[s] < a.era, voids(s))

            some, u = st.var(f"{tag}inv{e}.some", BOOL), st.var(f"{tag}inv{e}.witness", INT)
            st.slots.append(u)
            st.choices.append(Choice(u, "slot", voidable, some))
            c.append(z3.Implies(some, voidable(u)))

            def none_voidable(
                s: z3.ArithRef, some: z3.BoolRef = some, voidable: SlotPred = voidable
            ) -> z3.BoolRef:
                return z3.Implies(z3.Not(some), z3.Not(voidable(s)))

            st.univ.append(none_voidable)
            happens = z3.And(miss, some)
            kept_inv = z3.And(happens, live(eff))
            eff = eff + z3.If(happens, 1, 0)
            tick(f"invalidate{e}")

            def voided(
                x: z3.ArithRef,
                void: z3.ArrayRef = void,
                voids: SlotPred = voids,
                kept_inv: z3.BoolRef = kept_inv,
                pres: z3.ArrayRef = pres,
                sera: z3.ArrayRef = sera,
            ) -> z3.BoolRef:
                return z3.Or(void[x], z3.And(kept_inv, pres[x], sera[x] < a.era, voids(x)))

            if o.hist == "point":
                # a fresh array, defined slot by slot (a universal of the step)
                new_void = st.var(f"{tag}inv{e}.void", z3.ArraySort(INT, BOOL))
                st.defined.append(Defined(new_void, void, voided))

                def defines(
                    x: z3.ArithRef, nv: z3.ArrayRef = new_void, voided: SlotPred = voided
                ) -> z3.BoolRef:
                    return nv[x] == voided(x)

                st.univ.append(defines)
                void = new_void
            else:
                x = z3.Int("x")
                void = z3.Lambda([x], voided(x))
        # one tool call
        eff = eff + z3.If(miss, 1, 0)
        tick(f"tool{e}")
        # the save, into a fresh slot
        saved = z3.And(miss, live(eff))
        eff = eff + z3.If(miss, 1, 0)
        sid = st.var(f"{tag}save{e}.slot", INT)
        c.append(z3.Not(pres[sid]))
        st.slots.append(sid)
        st.fresh.append(sid)
        now = tick(f"save{e}")
        pres = z3.Store(pres, sid, saved)
        rec, ver, pos = z3.Store(rec, sid, r), z3.Store(ver, sid, v), z3.Store(pos, sid, p)
        ent, tim = z3.Store(ent, sid, e), z3.Store(tim, sid, now)
        pre, sera = z3.Store(pre, sid, prefix), z3.Store(sera, sid, a.era)
        void = z3.Store(void, sid, False)
    # -- restore / plain crash -------------------------------------------------------------
    rest = main == 1
    crash = main == 2
    # a crash point (an accept or a restore may crash after any of its effects) must be
    # reached by the end of the step, and ends it
    c.append(z3.Implies(cut >= 0, z3.And(z3.Or(acc, rest), cut <= eff)))
    reached = z3.And(z3.Or(acc, rest), cut >= 0)
    news = dict(zip(STORE, (pres, rec, ver, pos, ent, tim, void, pre, sera), strict=True))
    st.post = State(
        View(
            z3.If(rest, sv1.nxt, z3.If(acc, nxt_op, op1.nxt)),
            z3.If(rest, sv1.H, z3.If(acc, H_op, op1.H)),
            z3.If(rest, sv1.G, z3.If(acc, G_op, op1.G)),
            z3.If(rest, sv1.marker, op1.marker),
        ),
        View(sv1.nxt, sv1.H, z3.If(acc, G_sv, sv1.G), sv1.marker),
        **{name: z3.If(acc, new, getattr(a, name)) for name, new in news.items()},
        up=z3.If(reached, False, z3.If(rest, True, z3.If(crash, False, a.up))),
        now=last[-1],
        era=z3.If(rest, a.era + 1, a.era),
        flag=flag,
        recd=z3.If(acc, recd, a.recd),
        divd=z3.If(acc, divd, a.divd),
        flag2=z3.If(acc, flag2, a.flag2),
    )
    return st


# -- the queries -------------------------------------------------------------------------


def initial(st: State) -> list[z3.BoolRef]:
    """The state before any micro-step (the ghost order is anything still to come)."""
    empty = z3.K(INT, z3.K(INT, z3.IntVal(BOT)))
    return [
        st.op.nxt == z3.K(INT, z3.IntVal(0)),
        st.sv.nxt == z3.K(INT, z3.IntVal(0)),
        empty == st.op.H,
        empty == st.sv.H,
        st.op.G == st.sv.G,
        st.op.marker == 0,
        st.sv.marker == 0,
        st.pres == z3.K(INT, z3.BoolVal(False)),
        st.void == z3.K(INT, z3.BoolVal(False)),
        st.up,
        st.now == 0,
        st.era == 0,
        z3.Not(st.flag),
        st.recd == z3.K(INT, z3.K(INT, z3.IntVal(-1))),
        st.divd == z3.K(INT, z3.K(INT, z3.IntVal(-1))),
        z3.Not(st.flag2),
    ]


def all_facts(
    st: State, s: z3.ArithRef, k: z3.ArithRef, q: z3.ArithRef | None, o: Options
) -> Facts:
    """Every fact of the invariant, about slot ``s``, key ``k`` and position ``q``."""
    return slot_facts(st, s, q, o) + key_facts(st, k, q, o) + global_facts(st, o)


class Drops(Protocol):
    """Options that name facts to leave out (this module's and
    :mod:`.parametric_ordered`'s)."""

    drop: tuple[str, ...]


def _kept(facts: Facts, o: Drops) -> Facts:
    """The facts not named in ``o.drop``."""
    return [(n, f) for n, f in facts if n not in o.drop]


def solve(
    goals: Sequence[z3.BoolRef], hyps: Sequence[z3.BoolRef], timeout_ms: int
) -> tuple[str, float]:
    """Can ``hyps`` hold and some goal not? (``unsat``: the goals follow.)"""
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*hyps)
    s.add(z3.Not(z3.And(*goals)))
    t0 = time.perf_counter()
    res = s.check()
    return str(res), time.perf_counter() - t0


def solve_each(goals: Facts, hyps: Sequence[z3.BoolRef], timeout_ms: int) -> Rows:
    """Each named goal under ``hyps``, one after the other on one solver (push / pop:
    what it learns from the hypotheses serves every goal), with the older simplex
    (``arith.solver`` 2, as the induction engine's step solver: 1.3-1.4x faster on the
    queries of ``parametric_ordered``)."""
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.set("arith.solver", 2)
    solver.add(*hyps)
    out: Rows = []
    for name, fact in goals:
        solver.push()
        solver.add(z3.Not(fact))
        t0 = time.perf_counter()
        res = str(solver.check())
        out.append((name, res, time.perf_counter() - t0))
        solver.pop()
    return out


def solve_lazy(
    goals: Sequence[z3.BoolRef],
    hyps: Sequence[z3.BoolRef],
    instances: Sequence[z3.BoolRef],
    timeout_ms: int,
) -> tuple[str, float]:
    """As ``solve`` with the hypotheses ``instances`` too, but adding an instance only
    when a model of the query so far falsifies it (instantiation on demand, over the
    same finite set of terms as ``manual``): the same answer, smaller queries."""
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*hyps)
    s.add(z3.Not(z3.And(*goals)))
    pending = list(instances)
    t0 = time.perf_counter()
    while True:
        res = s.check()
        if res != z3.sat:
            return str(res), time.perf_counter() - t0
        m = s.model()
        wrong = [f for f in pending if z3.is_false(m.eval(f, model_completion=True))]
        if not wrong:
            return "sat", time.perf_counter() - t0
        s.add(*wrong)
        pending = [f for f in pending if not any(f is g for g in wrong)]


def check_initial(o: Options, timeout_ms: int) -> Rows:
    """Each fact of the invariant in the initial state (``unsat`` = it holds)."""
    a = fresh_state("i")
    s0, k0 = z3.Int("s0"), z3.Int("k0")
    out: Rows = []
    q0 = z3.Int("q0") if o.hist == "point" else None
    for name, fact in all_facts(a, s0, k0, q0, o):
        res, dt = solve([fact], initial(a), timeout_ms)
        out.append((name, res, dt))
    return out


def check_step(o: Options, timeout_ms: int, split: bool = True) -> Rows:
    """Each fact after the step (``unsat`` = kept), for a fresh slot ``s0`` and key ``k0``."""
    a, b = fresh_state("a"), fresh_state("b")
    s0, k0 = z3.Int("s0"), z3.Int("k0")
    tr = step(a, b, o)
    hyps = list(tr.cons)
    point = o.hist == "point"
    q0 = z3.Int("q0") if point else None
    post = _kept(all_facts(b, s0, k0, q0, o), o)
    # the slot, key and position terms of the query
    slots = [s0, *tr.slots]
    keys = [k0, *tr.keys, keyOf(a.rec[s0]), *(keyOf(a.rec[w]) for w in tr.slots)]
    positions = [q0, *tr.positions, *(a.pos[s] for s in slots)] if point else [None]
    instances: list[z3.BoolRef] = []
    for s in slots:
        instances += [u(s) for u in tr.univ]
        for q in positions:
            instances += [f for _, f in _kept(slot_facts(a, s, q, o), o)]
    for k in keys:
        for q in positions:
            instances += [f for _, f in _kept(key_facts(a, k, q, o), o)]
    if o.mode == "manual":
        hyps += instances
    elif o.mode == "lazy":
        pass  # added on demand by ``solve_lazy``
    else:
        x, y, z = z3.Int("xs"), z3.Int("yk"), z3.Int("zq")
        qs = [z] if point else []
        qz = z if point else None
        hyps += [z3.ForAll([x, *qs], f) for _, f in _kept(slot_facts(a, x, qz, o), o)]
        hyps += [z3.ForAll([x], u(x)) for u in tr.univ]
        hyps += [z3.ForAll([y, *qs], f) for _, f in _kept(key_facts(a, y, qz, o), o)]
    hyps += [f for _, f in _kept(global_facts(a, o), o)]
    for s in slots:
        hyps += bounds(a, s, k0, o)
    for k in keys:
        hyps += bounds(a, s0, k, o)
    out: Rows = []
    if o.mode == "lazy":
        goals = post if split else [("all facts", z3.And(*(f for _, f in post)))]
        for name, fact in goals:
            res, dt = solve_lazy([fact], hyps, instances, timeout_ms)
            out.append((name, res, dt))
    elif split:
        for name, fact in post:
            res, dt = solve([fact], hyps, timeout_ms)
            out.append((name, res, dt))
    else:
        res, dt = solve([f for _, f in post], hyps, timeout_ms)
        out.append(("all facts", res, dt))
    return out


def bmc(o: Options, steps: int, timeout_ms: int) -> dict[str, tuple[str, float]]:
    """Runs of ``steps`` micro-steps from the initial state (a bounded model check of
    this model, not an induction): can a reuse happen, can a stale reuse happen?

    The step's universals need no quantifier here: the slots are numbered from 0 and
    every slot at or above the slot counter is absent, so their instances at the slot
    ids ``0 .. entries * steps - 1`` are all of them."""
    states = [fresh_state(f"t{i}") for i in range(steps + 1)]
    hyps = list(initial(states[0]))
    reuses: list[z3.BoolRef] = []
    ids = [z3.IntVal(i) for i in range(o.entries * steps)]
    for i in range(steps):
        tr = step(states[i], states[i + 1], o, tag=f"t{i}:")
        hyps += tr.cons
        hyps += [u(x) for u in tr.univ for x in ids]
        hyps += [z3.And(x >= 0, x < o.entries * steps) for x in tr.fresh]
        reuses += tr.reused
    out: dict[str, tuple[str, float]] = {}
    goals = [("reuse", z3.Or(*reuses)), ("stale reuse", states[-1].flag)]
    if o.safeguard:
        goals.append(("divergence-safeguard broken", states[-1].flag2))
    for name, goal in goals:
        s = z3.Solver()
        s.set("timeout", timeout_ms)
        s.add(*hyps, goal)
        t0 = time.perf_counter()
        res = s.check()
        out[name] = (str(res), time.perf_counter() - t0)
    return out


def count(text: str) -> int:
    """An ``argparse`` type: a whole number, zero or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number, 0 or more, got {text!r}")
    return value
