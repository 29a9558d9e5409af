"""Opt-in (``verify --engine parametric``): a *parametric* induction step for
``ordered`` / ``no-lost-input``.

:mod:`.parametric_ordered` proves the properties about reuse with a model of the store
and the recorded order, and leaves the waiting machinery out. ``no-lost-input`` is the
other way round: it is about the inputs that wait and the advance loop that takes them,
and the store does not matter to it. This module models that part of the machine of
:mod:`..encoding` alone, with arrays over a record, a key and an index of the end's order
of keys, and proves that the invariant below is kept by one micro-step whatever the
bound. As in the other parametric modules each fact is asked after the step for a
fresh record ``r0``, key ``k0`` and index ``j0``, with the universals instantiated by
hand (``manual``) or left to Z3 (``quant``).

State, per view (``op`` the live operator's, ``sv`` the checkpoint's): per key ``nxt``
(next position), ``ee`` (``expected-end``), ``da`` (``diverge-at``) and ``ins`` (the key
is in ``inserted``); per record the monitor's ``dl`` (delivered) and ``ac`` (accepted)
and ``wt`` (waiting). The world: ``up`` (up and no crash point reached), the phase
(``ph``: idle, advance, done), what follows the loop (``aft``: arrival, restore, end,
nothing), the loop's key ``cur`` and ``arg``, the end's order of keys (``order`` and
``oin``, the world's ``order`` and ``order-in``) and no-lost-input's flag. Two ghosts,
fixed when the end of input starts: ``cnt``, how many places of the order hold a key,
and ``idx[k]``, the place of an inserted key.

The invariant, for every record ``r``, key ``k`` and index ``j``:

* per view (the live one while up): an accepted input was delivered, a waiting one was
  delivered, a delivered input not accepted waits, a waiting input's key is inserted,
  and so is a key that recovers (``nxt < ee`` or a divergence pending);
* the loop runs only while up, and so does the end;
* during the end (the loop of the end's keys, or done): the places of the order that
  hold a key are ``[0, cnt)``, and every inserted key is at its place ``idx``; while the
  loop of the end runs, its key is the one at place ``arg - 1`` and expects nothing, and
  a waiting input's key is at that place or after it;
* the flag is not set.

(That nothing waits once the run is done need not be a fact: the flag is set, or not,
by the step that finishes the run, and nothing changes after it.)

The proof of the property: when the end's loop of a key finishes, the key expects
nothing, so nothing of it waits (the loop takes every waiting input of a key that
expects nothing); the next key is the one at place ``arg``; when there is none, every
inserted key (hence every waiting input's key) had its place before, so nothing waits,
and every delivered input is accepted.

SIMPLIFIED with respect to spec/encoding.py (each one only adds behaviours):

* no store, no expected order (``expected``, ``expected-version``), no ``waiting-since``
  or ``waiting-version``, no channels or offsets: a delivered input is any record, a
  restore gives the keys it includes any ``expected-end``, a give-up any
  ``expected-end`` and ``diverge-at``, and an iteration of the loop takes any waiting
  input (the machine: the head of the expected order, or the earliest waiting input of
  the loop's key), or diverges the loop's key;
* a loop may finish at any iteration, except that of the end, which finishes only when
  its key expects something or nothing of its key waits and no divergence is pending
  (the machine: when it is stuck on a head that does not wait, or nothing is left);
  what follows a loop other than the end's is any phase but the end, on any key, with
  or without the give-up's divergence;
* a restore may include any key, in any order, and leaves any phase but the end;
* the end's order is any list of the inserted keys (the machine: by ``inserted``);
* a crash (a crash point reached, or a plain crash) may happen at any micro-step
  outside the end, after the loop's finish or after the heavy operation; while the
  operator is down its live view is anything (a restore overwrites it).

The same model proves the first guard of complete-reuse's store half in
:mod:`.parametric_ordered` (``--complete``): no input is accepted twice in a timeline.
Each view has the offset of each channel (a delivery takes a record at or after its
channel's offset, and moves the offset past it; ``chanOf`` is a record's channel), the
world a flag set by an accept of an accepted input, and the invariant says, per view,
that an accepted or waiting input is below its channel's offset and a waiting input is
not accepted, and that the flag is not set.

With ``--excuse`` (``Options.excuse``) the model proves the second guard: a
divergence finds its key *excused* (spec/induction.py's ``_reuse_facts``: the monitor
marked the key unclean, or one of its outstanding inputs cannot come back unchanged), and
the excuse lasts. The ghost ``XC`` is set by every divergence and every give-up of
``split_order`` and never reset, so the guard holds by construction; the invariant says
that the machine's excuse follows from it, with a witness record per key (``DW``). For
that the model gains each record's waiting and accepted version, the channels'
high-water marks and the records' replay modes (``modeOf``), complete-reuse's monitor
(outstanding inputs, their versions, unclean keys), the recorded order as a ghost
(``GR``/``GV`` per key and position, its end ``E``, and each input's last accepted
position ``P``), and the restore's order of keys; and the step follows the machine more
closely: a delivery takes the next record of its channel that the replay does not lose
(with the version its replay gives it) and is accepted at once exactly when its key
does not recover; the give-up of ``split_order`` is at a position whose expected input
is an earlier record of the arrival's channel that does not wait; the loop takes the
head of the expected order when it waits with its recorded version, diverges when it
waits with another or when nothing is expected and a divergence is pending, or takes a
waiting input of its key; a loop finishes only when the machine's does, and is followed
by what follows it in the machine; the restore loops over the keys it includes, in an
order of them; the end comes only when no channel has a next record. Two facts come from
:mod:`.parametric_ordered`'s model of the store, as assumptions of the restore: a key
whose recorded order goes past its position, or that recovers in the checkpoint,
appears in the store's view and is included; an included key expects its recorded order
(``ee = E``); and the expected order is the recorded one (the head is ``GR`` at
``next``). The count of ``give_up_after`` is never reached: the proof is for bounds of
at most 64 inputs (``ordered``'s ``give_up_after``; beyond it, a key with that many
inputs waiting gives up its recorded order without an excuse). While the operator is down, the
monitor's cells of the live view (delivered, accepted, accepted version) keep what the
last kept effects left; an accept is seen by the monitor unless a crash point is reached
before its first effect.

No command line of its own: ``verify`` runs it (:mod:`.parametric_engine`), the tests
drive it directly (tests/spec).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import z3

from .parametric import (
    BOOL,
    HIST,
    INT,
    Facts,
    Rows,
    _kept,
    keyOf,
    solve_each,
)

# phases and what follows a loop, as in spec/encoding.py
IDLE, ADVANCE, DONE = 0, 1, 2
AFTER_ARRIVAL, AFTER_RESTORE, AFTER_END, AFTER_NOTHING = 0, 1, 2, 3

Pred = Callable[[z3.ArithRef], z3.BoolRef]

#: the per-key and per-record arrays of a view
KEYED = ("nxt", "ee", "da", "ins")
RECORDED = ("dl", "ac", "wt")
#: and the offset of each channel; with ``--excuse``, per record the waiting and the
#: accepted version
FIELDS = (*KEYED, *RECORDED, "off", "wv", "av")
#: the monitors' cells of a view, which only kept effects change (frozen while down)
MONITORED = ("dl", "ac", "av")

#: the channel of a record (``shape.channel``)
chanOf = z3.Function("chanOf", INT, INT)
#: the replay mode of a record (``shape.mode``: 0 same, 1 lost, 2 changed)
modeOf = z3.Function("modeOf", INT, INT)
#: how many records there are (the records are ``[0, records)``)
RECORDS = z3.Int("records")


@dataclass
class LView:
    nxt: z3.ArrayRef
    ee: z3.ArrayRef
    da: z3.ArrayRef
    ins: z3.ArrayRef
    dl: z3.ArrayRef
    ac: z3.ArrayRef
    wt: z3.ArrayRef
    off: z3.ArrayRef
    wv: z3.ArrayRef
    av: z3.ArrayRef


@dataclass
class LState:
    op: LView
    sv: LView
    up: z3.BoolRef
    ph: z3.ArithRef
    aft: z3.ArithRef
    cur: z3.ArithRef
    arg: z3.ArithRef
    order: z3.ArrayRef
    oin: z3.ArrayRef
    flag: z3.BoolRef
    #: set by an accept of an input that is already accepted (complete-reuse's first
    #: guard in :mod:`.parametric_ordered`: it never is)
    twice: z3.BoolRef
    #: ghosts of the end: the places that hold a key, and each inserted key's place
    cnt: z3.ArithRef
    idx: z3.ArrayRef
    #: complete-reuse's excuse (``--excuse``): each channel's high-water mark, the
    #: monitor's outstanding inputs, their versions and the unclean keys; ghosts: where
    #: each key's recorded order ends (``E``), the recorded order (``GR`` record, ``GV``
    #: version, key -> position -> value), where each input was last accepted (``P``),
    #: the excuse of each key (``XC``, set by a divergence, never reset) and its witness
    #: (``DW``, an outstanding input of the key that cannot come back unchanged)
    hi: z3.ArrayRef
    out: z3.ArrayRef
    ov: z3.ArrayRef
    unc: z3.ArrayRef
    E: z3.ArrayRef
    GR: z3.ArrayRef
    GV: z3.ArrayRef
    P: z3.ArrayRef
    XC: z3.ArrayRef
    DW: z3.ArrayRef


def fresh_view(name: str) -> LView:
    def arr(f: str) -> z3.ArrayRef:
        return z3.Array(f"{name}.{f}", INT, BOOL if f in ("ins", *RECORDED) else INT)

    return LView(*(arr(f) for f in FIELDS))


def fresh_state(tag: str) -> LState:
    """A fully symbolic state, its constants named after ``tag``."""
    return LState(
        fresh_view(f"{tag}.op"),
        fresh_view(f"{tag}.sv"),
        z3.Bool(f"{tag}.up"),
        z3.Int(f"{tag}.phase"),
        z3.Int(f"{tag}.after"),
        z3.Int(f"{tag}.key"),
        z3.Int(f"{tag}.after-arg"),
        z3.Array(f"{tag}.order", INT, INT),
        z3.Array(f"{tag}.order-in", INT, BOOL),
        z3.Bool(f"{tag}.flag"),
        z3.Bool(f"{tag}.twice"),
        z3.Int(f"{tag}.cnt"),
        z3.Array(f"{tag}.idx", INT, INT),
        z3.Array(f"{tag}.high", INT, INT),
        z3.Array(f"{tag}.outstanding", INT, BOOL),
        z3.Array(f"{tag}.outstanding-version", INT, INT),
        z3.Array(f"{tag}.unclean", INT, BOOL),
        z3.Array(f"{tag}.E", INT, INT),
        z3.Array(f"{tag}.GR", INT, HIST),
        z3.Array(f"{tag}.GV", INT, HIST),
        z3.Array(f"{tag}.P", INT, INT),
        z3.Array(f"{tag}.excused", INT, BOOL),
        z3.Array(f"{tag}.DW", INT, INT),
    )


#: The broken models of ``--variant`` (the empty name is the machine's).
VARIANTS = (
    "end-skips-key",
    "finish-while-waiting",
    "no-end-divergence",
    "wait-anyway",
    "forget-waiting",
    "redeliver",
    "give-up-anywhere",
    "forget-outstanding",
    "deliver-lost",
)


@dataclass
class Options:
    #: records and keys bounded (None: unbounded)
    n: int | None = None
    keys: int | None = None
    #: broken variants: "end-skips-key" (the end's order may leave an inserted key
    #: out), "finish-while-waiting" (the end's loop of a key may finish while an input
    #: of the key waits), "no-end-divergence" (the end does not give up a key's missing
    #: recorded inputs before its loop), "wait-anyway" (an input may wait although its
    #: key does not recover), "forget-waiting" (a restore brings back the checkpoint's
    #: state without its waiting inputs), "redeliver" (a delivery may take any record
    #: of its channel, not only one at or after the channel's offset); with ``excuse``,
    #: "give-up-anywhere" (the give-up of ``split_order`` needs no earlier record of the
    #: arrival's channel at its position), "forget-outstanding" (a restore does not make
    #: the inputs it rolls back outstanding), "deliver-lost" (a replay may deliver a
    #: record it loses)
    variant: str = ""
    #: complete-reuse's excuse: a divergence finds its key excused, and the excuse lasts
    excuse: bool = False
    mode: str = "manual"
    drop: tuple[str, ...] = ()
    #: ask only these facts after the step (all of them are still assumed before it)
    only: tuple[str, ...] = ()


# -- the invariant ---------------------------------------------------------------------


def in_end(st: LState) -> z3.BoolRef:
    """The loop of the end runs, or the run is done."""
    return z3.Or(z3.And(st.ph == ADVANCE, st.aft == AFTER_END), st.ph == DONE)


def view_facts(st: LState, r: z3.ArithRef, k: z3.ArithRef) -> Facts:
    out: Facts = []
    for name, v, guard in (("op", st.op, st.up), ("sv", st.sv, z3.BoolVal(True))):
        kr = keyOf(r)
        out += [
            (f"accepted delivered {name}", z3.Implies(z3.And(guard, v.ac[r]), v.dl[r])),
            (f"waiting delivered {name}", z3.Implies(z3.And(guard, v.wt[r]), v.dl[r])),
            (
                f"unaccepted waits {name}",
                z3.Implies(z3.And(guard, v.dl[r], z3.Not(v.ac[r])), v.wt[r]),
            ),
            (f"waiting key inserted {name}", z3.Implies(z3.And(guard, v.wt[r]), v.ins[kr])),
            (
                f"recovering key inserted {name}",
                z3.Implies(z3.And(guard, z3.Or(v.nxt[k] < v.ee[k], v.da[k] >= 0)), v.ins[k]),
            ),
            (
                f"accepted below offset {name}",
                z3.Implies(z3.And(guard, v.ac[r]), r < v.off[chanOf(r)]),
            ),
            (
                f"waiting below offset {name}",
                z3.Implies(z3.And(guard, v.wt[r]), r < v.off[chanOf(r)]),
            ),
            (f"waiting not accepted {name}", z3.Implies(z3.And(guard, v.wt[r]), z3.Not(v.ac[r]))),
        ]
    return out


def end_facts(st: LState, r: z3.ArithRef, k: z3.ArithRef, j: z3.ArithRef) -> Facts:
    op, end = st.op, in_end(st)
    looping = z3.And(st.ph == ADVANCE, st.aft == AFTER_END)
    return [
        ("loop up", z3.Implies(z3.Or(st.ph == ADVANCE, st.ph == DONE), st.up)),
        ("places", z3.Implies(end, st.oin[j] == z3.And(j >= 0, j < st.cnt))),
        (
            "inserted key placed",
            z3.Implies(
                z3.And(end, op.ins[k]),
                z3.And(st.idx[k] >= 0, st.idx[k] < st.cnt, st.order[st.idx[k]] == k),
            ),
        ),
        (
            "end key",
            z3.Implies(
                looping,
                z3.And(
                    st.arg >= 1,
                    st.cur == st.order[st.arg - 1],
                    op.nxt[st.cur] >= op.ee[st.cur],
                ),
            ),
        ),
        (
            "waiting key ahead",
            z3.Implies(z3.And(looping, op.wt[r]), st.idx[keyOf(r)] >= st.arg - 1),
        ),
    ]


def is_record(r: z3.ArithRef) -> z3.BoolRef:
    return z3.And(r >= 0, r < RECORDS)


def changed(r: z3.ArithRef) -> z3.ArithRef:
    """The version a replay delivers record ``r`` with (1 if it changes it)."""
    return z3.If(modeOf(r) == 2, 1, 0)


def lost_below_high(st: LState, r: z3.ArithRef) -> z3.BoolRef:
    """A replay of ``r``'s channel passes over ``r``: delivered before, and lost."""
    return z3.And(r < st.hi[chanOf(r)], modeOf(r) == 1)


def cannot_return(st: LState, v: LView, r: z3.ArithRef) -> z3.BoolRef:
    """Outstanding input ``r`` cannot come back unchanged in view ``v``: it waits with
    another version, or is not delivered and its replay loses or changes it
    (spec/induction.py's ``doomed``)."""
    return z3.Or(
        z3.And(v.wt[r], v.wv[r] != st.ov[r]),
        z3.And(z3.Not(v.dl[r]), z3.Or(modeOf(r) == 1, changed(r) != st.ov[r])),
    )


def doomed(st: LState, r: z3.ArithRef) -> z3.BoolRef:
    return z3.And(st.out[r], z3.If(st.up, cannot_return(st, st.op, r), cannot_return(st, st.sv, r)))


def restoring(st: LState) -> z3.BoolRef:
    """The loop of a restore's keys runs."""
    return z3.And(st.ph == ADVANCE, st.aft == AFTER_RESTORE)


def excuse_facts(st: LState, r: z3.ArithRef, k: z3.ArithRef, j: z3.ArithRef) -> Facts:
    """The facts of complete-reuse's excuse about a record, a key and a place."""
    op, sv, up = st.op, st.sv, st.up
    c = chanOf(r)
    out: Facts = []
    for name, v, guard in (("op", op, up), ("sv", sv, z3.BoolVal(True))):
        out += [
            (f"outstanding not accepted {name}", z3.Implies(st.out[r], z3.Not(v.ac[r]))),
            (f"delivered is a record {name}", z3.Implies(v.dl[r], is_record(r))),
            (f"delivered below high {name}", z3.Implies(v.dl[r], r < st.hi[c])),
            (
                f"passed over is lost {name}",
                z3.Implies(
                    z3.And(guard, is_record(r), r < v.off[c], z3.Not(v.dl[r])),
                    lost_below_high(st, r),
                ),
            ),
        ]
    out.append(("accepted below high", z3.Implies(op.ac[r], r < st.hi[c])))
    head = st.GR[k][op.nxt[k]]
    out += [
        ("outstanding below high", z3.Implies(st.out[r], r < st.hi[c])),
        (
            "outstanding waiting",
            z3.Implies(
                z3.And(up, st.out[r], op.wt[r]),
                z3.Or(
                    z3.And(sv.wt[r], sv.wv[r] == op.wv[r]),
                    z3.And(z3.Not(sv.dl[r]), op.wv[r] == changed(r)),
                ),
            ),
        ),
        ("delivered at checkpoint", z3.Implies(z3.And(up, sv.dl[r]), op.dl[r])),
        ("accepted at checkpoint", z3.Implies(z3.And(up, sv.ac[r]), op.ac[r])),
        (
            "end after every delivery",
            z3.Implies(z3.And(in_end(st), is_record(r), r >= op.off[c]), lost_below_high(st, r)),
        ),
        ("positions from zero", z3.And(sv.nxt[k] >= 0, z3.Implies(up, op.nxt[k] >= 0))),
        ("end after checkpoint", sv.nxt[k] <= st.E[k]),
        ("end after position", z3.Implies(up, op.nxt[k] <= st.E[k])),
        ("expected before end", z3.Implies(up, op.ee[k] <= st.E[k])),
        (
            "expected to end",
            z3.Implies(up, z3.Or(op.ee[k] == st.E[k], op.nxt[k] == st.E[k], op.da[k] >= 0)),
        ),
        ("divergence excused", z3.Implies(z3.And(up, op.da[k] >= 0), st.XC[k])),
        (
            "excuse witnessed",
            z3.Implies(
                st.XC[k],
                z3.Or(st.unc[k], z3.And(keyOf(st.DW[k]) == k, doomed(st, st.DW[k]))),
            ),
        ),
        (
            "waiting head in a loop",
            z3.Implies(
                z3.And(up, op.nxt[k] < op.ee[k], op.wt[head]),
                z3.And(
                    st.ph == ADVANCE,
                    z3.Or(
                        st.cur == k,
                        z3.And(st.aft == AFTER_RESTORE, st.idx[k] >= st.arg),
                    ),
                ),
            ),
        ),
        (
            "recovering key placed",
            z3.Implies(
                z3.And(restoring(st), op.nxt[k] < op.ee[k]),
                z3.And(st.idx[k] >= 0, st.idx[k] < st.cnt, st.order[st.idx[k]] == k),
            ),
        ),
        (
            "restore's key",
            z3.Implies(restoring(st), z3.And(st.arg >= 1, st.cur == st.order[st.arg - 1])),
        ),
        (
            "restore's places",
            z3.Implies(restoring(st), st.oin[j] == z3.And(j >= 0, j < st.cnt)),
        ),
    ]
    return out


def order_facts(st: LState, k: z3.ArithRef, q: z3.ArithRef) -> Facts:
    """The facts of complete-reuse's excuse about position ``q`` of key ``k``'s
    recorded order (``[checkpoint's next, E)``) and accepted history (below ``next``)."""
    op, sv, up = st.op, st.sv, st.up
    g, gv = st.GR[k][q], st.GV[k][q]
    recorded = z3.And(sv.nxt[k] <= q, q < st.E[k])
    return [
        ("recorded key", z3.Implies(recorded, z3.And(keyOf(g) == k, is_record(g)))),
        ("recorded once", z3.Implies(recorded, st.P[g] == q)),
        (
            "recorded outstanding",
            z3.Implies(z3.And(up, op.nxt[k] <= q, q < st.E[k]), z3.And(st.out[g], st.ov[g] == gv)),
        ),
        (
            "recorded outstanding or accepted",
            z3.Implies(
                recorded,
                z3.Or(
                    z3.And(z3.Not(op.ac[g]), st.out[g], st.ov[g] == gv),
                    z3.And(op.ac[g], op.av[g] == gv, z3.Not(sv.ac[g])),
                ),
            ),
        ),
        (
            "history accepted",
            z3.Implies(z3.And(up, q >= 0, q < op.nxt[k]), z3.And(op.ac[g], op.av[g] == gv)),
        ),
        (
            "history accepted at checkpoint",
            z3.Implies(z3.And(q >= 0, q < sv.nxt[k]), z3.And(sv.ac[g], sv.av[g] == gv)),
        ),
    ]


def all_facts(
    st: LState,
    r: z3.ArithRef,
    k: z3.ArithRef,
    j: z3.ArithRef,
    q: z3.ArithRef | None = None,
    excuse: bool = False,
) -> Facts:
    base = [
        *view_facts(st, r, k),
        *end_facts(st, r, k, j),
        ("no lost input", z3.Not(st.flag)),
        ("accepted once", z3.Not(st.twice)),
    ]
    if not excuse:
        return base
    return [
        *base,
        *excuse_facts(st, r, k, j),
        *order_facts(st, k, z3.Int("q") if q is None else q),
    ]


def bounds(st: LState, r: z3.ArithRef, k: z3.ArithRef, o: Options) -> list[z3.BoolRef]:
    """The bound of the parameters, as plain assumptions about the terms of a query."""
    out: list[z3.BoolRef] = []
    if o.n is not None:
        for v in (st.op, st.sv):
            out.append(z3.Implies(z3.Or(v.dl[r], v.ac[r], v.wt[r]), z3.And(r >= 0, r < o.n)))
            out += [v.nxt[k] <= o.n, v.ee[k] <= o.n]
        out.append(o.n == RECORDS)
    if o.keys is not None:
        out += [z3.And(k >= 0, k < o.keys), st.cnt <= o.keys]
    return out


# -- the step --------------------------------------------------------------------------


@dataclass
class Step:
    """The transition relation, its universals (over a record, a key, an index of the
    end's order) and the terms it introduces."""

    cons: list[z3.BoolRef] = field(default_factory=list)
    univ_r: list[Pred] = field(default_factory=list)
    univ_k: list[Pred] = field(default_factory=list)
    univ_j: list[Pred] = field(default_factory=list)
    records: list[z3.ArithRef] = field(default_factory=list)
    keys: list[z3.ArithRef] = field(default_factory=list)
    places: list[z3.ArithRef] = field(default_factory=list)
    #: (key, position) terms of the recorded order (``--excuse``)
    pairs: list[tuple[z3.ArithRef, z3.ArithRef]] = field(default_factory=list)


def _store(arr: z3.ArrayRef, cond: z3.BoolRef, i: z3.ArithRef, value: z3.ExprRef) -> z3.ArrayRef:
    return z3.If(cond, z3.Store(arr, i, value), arr)


def step(a: LState, b: LState, o: Options, tag: str = "") -> Step:
    """``b`` is ``a`` after one micro-step (``tag`` prefixes the step's own variables)."""
    st = Step()
    c = st.cons
    ex = o.excuse

    def var(name: str, sort: str = "int") -> z3.ExprRef:
        full = f"{tag}{name}"
        return z3.Bool(full) if sort == "bool" else z3.Int(full)

    def key(name: str) -> z3.ArithRef:
        x = var(name)
        assert isinstance(x, z3.ArithRef)
        if o.keys is not None:
            c.append(z3.And(x >= 0, x < o.keys))
        st.keys.append(x)
        return x

    def record(name: str) -> z3.ArithRef:
        x = var(name)
        assert isinstance(x, z3.ArithRef)
        if o.n is not None:
            c.append(z3.And(x >= 0, x < o.n))
        st.records.append(x)
        return x

    def head(v: LView, k: z3.ArithRef) -> z3.ArithRef:
        """The head of key ``k``'s expected order in view ``v`` (the recorded order: the
        expected order is the recorded one from ``next`` on, as :mod:`.parametric_ordered`
        proves), noted as a record and a pair term."""
        h = a.GR[k][v.nxt[k]]
        st.records.append(h)
        st.pairs.append((k, v.nxt[k]))
        return h

    op, sv = a.op, a.sv
    st.keys.append(a.cur)
    st.places += [a.arg, a.arg - 1]
    # -- the finish of the loop left by the previous micro-step
    fin = var("finish", "bool")
    c.append(z3.Implies(fin, z3.And(a.ph == ADVANCE, a.up)))
    ending = z3.And(fin, a.aft == AFTER_END)
    if ex:
        # the machine's finish: stuck on a head that does not wait, or nothing expected,
        # no divergence pending and nothing of the key waiting
        expecting_a = op.nxt[a.cur] < op.ee[a.cur]
        stuck = z3.And(expecting_a, z3.Not(op.wt[head(op, a.cur)]))
        c.append(z3.Implies(fin, z3.Or(stuck, z3.And(z3.Not(expecting_a), op.da[a.cur] < 0))))

        def rest_empty(r: z3.ArithRef) -> z3.BoolRef:
            return z3.Implies(
                z3.And(fin, z3.Not(expecting_a)), z3.Not(z3.And(op.wt[r], keyOf(r) == a.cur))
            )

        if o.variant != "finish-while-waiting":
            st.univ_r.append(rest_empty)
    elif o.variant != "finish-while-waiting":

        def nothing_waits(r: z3.ArithRef) -> z3.BoolRef:
            return z3.Implies(
                z3.And(ending, op.nxt[a.cur] >= op.ee[a.cur]),
                z3.And(op.da[a.cur] < 0, z3.Not(z3.And(op.wt[r], keyOf(r) == a.cur))),
            )

        st.univ_r.append(nothing_waits)
    go = a.oin[a.arg]
    nxt_key = a.order[a.arg]
    st.keys.append(nxt_key)
    other = z3.And(fin, a.aft != AFTER_END)
    ph_o, aft_o, cur_o = var("finish.phase"), var("finish.after"), key("finish.key")
    arg_o = var("finish.arg")
    gives_up = var("finish.giveup", "bool")  # the give-up's divergence after an arrival
    if ex:
        # what follows is the machine's: idle after an arrival (the count of
        # give_up_after is not reached: no more inputs wait than it allows) or after
        # nothing, the next place of the order after a restore's key
        after_restore = a.aft == AFTER_RESTORE
        c.append(
            z3.Implies(
                other,
                z3.And(
                    ph_o == z3.If(z3.And(after_restore, go), ADVANCE, IDLE),
                    aft_o == z3.If(after_restore, AFTER_RESTORE, AFTER_NOTHING),
                    cur_o == z3.If(after_restore, nxt_key, a.cur),
                    arg_o == z3.If(after_restore, a.arg + 1, a.arg),
                ),
            )
        )
        c.append(z3.Not(gives_up))
    else:
        c.append(z3.Implies(other, z3.Or(ph_o == IDLE, ph_o == ADVANCE)))
        c.append(
            z3.Implies(
                other,
                z3.Or(aft_o == AFTER_ARRIVAL, aft_o == AFTER_RESTORE, aft_o == AFTER_NOTHING),
            )
        )
        c.append(z3.Implies(gives_up, z3.And(other, ph_o == ADVANCE)))
    ph1 = z3.If(ending, z3.If(go, ADVANCE, DONE), z3.If(other, ph_o, a.ph))
    aft1 = z3.If(other, aft_o, a.aft)
    cur1 = z3.If(ending, z3.If(go, nxt_key, a.cur), z3.If(other, cur_o, a.cur))
    arg1 = z3.If(ending, z3.If(go, a.arg + 1, a.arg), z3.If(other, arg_o, a.arg))
    end_div = z3.And(ending, go, op.nxt[nxt_key] < op.ee[nxt_key])
    if o.variant == "no-end-divergence":
        end_div = z3.BoolVal(False)
    done_f = z3.And(ending, z3.Not(go))
    # -- a crash point reached after the finish (outside the end)
    crash1 = var("crash.finish", "bool")
    c.append(z3.Implies(crash1, z3.And(a.up, z3.Not(in_end(a)), z3.Not(ending))))
    up1 = z3.And(a.up, z3.Not(crash1))
    ph2 = z3.If(crash1, IDLE, ph1)
    # -- the move, when idle: checkpoint, plain crash, then deliver, restore or end
    idle = ph2 == IDLE
    ckpt, crash = var("move.checkpoint", "bool"), var("move.crash", "bool")
    main = var("move.main")  # 0 deliver, 1 restore, 2 end, 3 nothing (spec/encoding.py)
    c.append(z3.And(main >= 0, main <= 3))
    deliver, restore, end = main == 0, main == 1, main == 2
    c.append(z3.Implies(z3.Or(ckpt, crash, main != 3), idle))
    c.append(z3.Implies(z3.Or(ckpt, crash), up1))
    up2 = z3.And(up1, z3.Not(crash))
    c.append(z3.Implies(z3.Or(deliver, end), up2))
    sv2 = LView(*(z3.If(ckpt, getattr(op, f), getattr(sv, f)) for f in FIELDS))
    v = op  # the live view, updated below
    # deliver: an input of any record; it waits when its key recovers, else is accepted
    r = record("deliver.record")
    kr = keyOf(r)
    st.keys.append(kr)
    waits = z3.And(deliver, var("deliver.waits", "bool"))
    rw = record("deliver.recovering")  # an input of the key that already waits
    recovering = z3.Or(v.nxt[kr] < v.ee[kr], v.da[kr] >= 0, z3.And(v.wt[rw], keyOf(rw) == kr))
    st.keys.append(keyOf(rw))
    if o.variant != "wait-anyway":
        c.append(z3.Implies(waits, recovering))
    gu = z3.And(waits, var("deliver.giveup", "bool"))
    g_ee, g_da = var("giveup.end"), var("giveup.at")
    # the next record of its channel: at or after the channel's offset
    ch = chanOf(r)
    if o.variant != "redeliver":
        c.append(z3.Implies(deliver, r >= v.off[ch]))
    hi, xc, dw = a.hi, a.XC, a.DW
    version: z3.ArithRef = z3.IntVal(0)
    if ex:
        # the machine's next record of the channel: the records of the channel it passes
        # over are lost by the replay (delivered before, below the high-water mark); a
        # record delivered before comes with the version its replay gives it
        again = r < hi[ch]
        c.append(z3.Implies(deliver, is_record(r)))
        if o.variant != "deliver-lost":
            c.append(z3.Implies(deliver, z3.Not(lost_below_high(a, r))))

        def passed_over(x: z3.ArithRef, off: z3.ArrayRef = v.off) -> z3.BoolRef:
            return z3.Implies(
                z3.And(deliver, chanOf(x) == ch, x >= off[ch], x < r), lost_below_high(a, x)
            )

        st.univ_r.append(passed_over)
        version = z3.If(z3.And(again, modeOf(r) == 2), 1, 0)
        hi = _store(hi, z3.And(deliver, z3.Not(again)), ch, r + 1)
        # an input of a key that does not recover is accepted at once
        c.append(z3.Implies(z3.And(deliver, v.nxt[kr] < v.ee[kr]), waits))
        c.append(z3.Implies(z3.And(deliver, v.da[kr] >= 0), waits))
        # the give-up of split_order: the first position of [next, ee) whose expected
        # input is an earlier record of the arrival's channel that does not wait
        f = var("giveup.position")
        assert isinstance(f, z3.ArithRef)
        e = a.GR[kr][f]
        st.records.append(e)
        st.pairs.append((kr, f))
        cond = [v.nxt[kr] <= f, f < v.ee[kr]]
        if o.variant != "give-up-anywhere":
            cond += [chanOf(e) == ch, e < r, z3.Not(v.wt[e])]
        c.append(z3.Implies(gu, z3.And(*cond)))
        old = v.da[kr]
        c.append(z3.Implies(gu, z3.And(g_ee == f, g_da == z3.If(z3.Or(old < 0, f < old), f, old))))
        # the give-up excuses the key: its input at that position cannot come back
        dw = _store(dw, z3.And(gu, z3.Not(xc[kr])), kr, e)
        xc = _store(xc, gu, kr, z3.BoolVal(True))
    v = replace(
        v,
        off=_store(v.off, deliver, ch, r + 1),
        dl=_store(v.dl, deliver, r, z3.BoolVal(True)),
        wt=_store(v.wt, waits, r, z3.BoolVal(True)),
        wv=_store(v.wv, waits, r, version),
        ee=_store(v.ee, gu, kr, g_ee),
        da=_store(v.da, gu, kr, g_da),
    )
    # restore: the checkpoint's view; the keys it includes (``inc``) are inserted, expect
    # any end and have no pending divergence
    inc = z3.Array(f"{tag}restore.inc", INT, BOOL)
    r_ins = z3.Array(f"{tag}restore.ins", INT, BOOL)
    r_ee = z3.Array(f"{tag}restore.ee", INT, INT)
    r_da = z3.Array(f"{tag}restore.da", INT, INT)

    def rebuilt(k: z3.ArithRef) -> z3.BoolRef:
        return z3.Implies(
            restore,
            z3.And(
                r_ins[k] == z3.Or(sv2.ins[k], inc[k]),
                z3.Implies(z3.Not(inc[k]), r_ee[k] == sv2.ee[k]),
                r_da[k] == z3.If(inc[k], -1, sv2.da[k]),
            ),
        )

    st.univ_k.append(rebuilt)
    r_wt = z3.K(INT, z3.BoolVal(False)) if o.variant == "forget-waiting" else sv2.wt
    restored = replace(sv2, ins=r_ins, ee=r_ee, da=r_da, wt=r_wt)
    v = LView(*(z3.If(restore, getattr(restored, f), getattr(v, f)) for f in FIELDS))
    ph_r, cur_r, arg_r = var("restore.phase"), key("restore.key"), var("restore.arg")
    c.append(z3.Implies(restore, z3.Or(ph_r == IDLE, ph_r == ADVANCE)))
    rs_order = z3.Array(f"{tag}restore.order", INT, INT)
    rs_oin = z3.Array(f"{tag}restore.order-in", INT, BOOL)
    rs_cnt, rs_idx = var("restore.cnt"), z3.Array(f"{tag}restore.idx", INT, INT)
    assert isinstance(rs_cnt, z3.ArithRef)
    outs, ovs = a.out, a.ov
    if ex:
        # what the store says (parametric_ordered's invariant at the checkpoint's view): a
        # key whose recorded order goes past its position, or that recovers, appears in
        # the store's view and is included; an included key expects its recorded order
        def scanned(k: z3.ArithRef) -> z3.BoolRef:
            appears = z3.Or(a.E[k] > sv2.nxt[k], sv2.nxt[k] < sv2.ee[k], sv2.da[k] >= 0)
            return z3.Implies(
                restore,
                z3.And(z3.Implies(appears, inc[k]), z3.Implies(inc[k], r_ee[k] == a.E[k])),
            )

        # the loop of the included keys, in an order of them
        def placed(k: z3.ArithRef) -> z3.BoolRef:
            return z3.Implies(
                z3.And(restore, inc[k]),
                z3.And(rs_idx[k] >= 0, rs_idx[k] < rs_cnt, rs_order[rs_idx[k]] == k),
            )

        def place(j: z3.ArithRef) -> z3.BoolRef:
            return z3.Implies(
                restore,
                z3.And(
                    rs_oin[j] == z3.And(j >= 0, j < rs_cnt),
                    z3.Implies(rs_oin[j], rs_idx[rs_order[j]] == j),
                ),
            )

        st.univ_k += [scanned, placed]
        st.univ_j.append(place)
        st.keys.append(rs_order[0])
        st.places += [z3.IntVal(0), rs_cnt]
        c.append(
            z3.Implies(
                restore,
                z3.And(ph_r == z3.If(rs_oin[0], ADVANCE, IDLE), cur_r == rs_order[0], arg_r == 1),
            )
        )
        # the monitor: the inputs accepted since the checkpoint are outstanding
        outs = z3.Array(f"{tag}restore.outstanding", INT, BOOL)
        ovs = z3.Array(f"{tag}restore.outstanding-version", INT, INT)

        def rolled_back(x: z3.ArithRef) -> z3.BoolRef:
            dead = z3.And(restore, op.ac[x], z3.Not(sv2.ac[x]))
            if o.variant == "forget-outstanding":
                dead = z3.BoolVal(False)
            return z3.And(
                outs[x] == z3.Or(a.out[x], dead), ovs[x] == z3.If(dead, op.av[x], a.ov[x])
            )

        st.univ_r.append(rolled_back)
    # end of input: the order of the inserted keys, then the loop of the first one
    e_order = z3.Array(f"{tag}end.order", INT, INT)
    e_oin = z3.Array(f"{tag}end.order-in", INT, BOOL)
    e_cnt, e_idx = var("end.cnt"), z3.Array(f"{tag}end.idx", INT, INT)
    assert isinstance(e_cnt, z3.ArithRef)

    def places(j: z3.ArithRef) -> z3.BoolRef:
        return z3.Implies(end, e_oin[j] == z3.And(j >= 0, j < e_cnt))

    def listed(k: z3.ArithRef, ins: z3.ArrayRef = v.ins) -> z3.BoolRef:
        return z3.Implies(
            z3.And(end, ins[k]),
            z3.And(e_idx[k] >= 0, e_idx[k] < e_cnt, e_order[e_idx[k]] == k),
        )

    st.univ_j.append(places)
    if o.variant != "end-skips-key":
        st.univ_k.append(listed)
    if ex:
        # the end comes when no channel has a next record, and lists each key once
        def drained(x: z3.ArithRef, off: z3.ArrayRef = v.off) -> z3.BoolRef:
            return z3.Implies(z3.And(end, is_record(x), x >= off[chanOf(x)]), lost_below_high(a, x))

        def once(j: z3.ArithRef) -> z3.BoolRef:
            return z3.Implies(z3.And(end, e_oin[j]), e_idx[e_order[j]] == j)

        st.univ_r.append(drained)
        st.univ_j.append(once)
    first = e_order[0]
    st.keys.append(first)
    st.places += [z3.IntVal(0), e_cnt]
    go0 = e_oin[0]
    end_div0 = z3.And(end, go0, v.nxt[first] < v.ee[first])
    if o.variant == "no-end-divergence":
        end_div0 = z3.BoolVal(False)
    done_e = z3.And(end, z3.Not(go0))
    ph3 = z3.If(deliver, z3.If(waits, ADVANCE, ph2), ph2)
    ph3 = z3.If(restore, ph_r, z3.If(end, z3.If(go0, ADVANCE, DONE), ph3))
    aft3 = z3.If(
        waits,
        AFTER_ARRIVAL,
        z3.If(restore, AFTER_RESTORE, z3.If(end, AFTER_END, aft1)),
    )
    cur3 = z3.If(waits, kr, z3.If(restore, cur_r, z3.If(end, first, cur1)))
    arg3 = z3.If(waits, r, z3.If(restore, arg_r, z3.If(end, 1, arg1)))
    up3 = z3.Or(up2, restore)
    # -- the heavy operation: the accept of a delivered input that does not wait, one
    # iteration of the loop (take a waiting input, diverge), or a divergence (give-up,
    # end); a divergence is on the loop's key
    heavy = z3.Or(gives_up, end_div, end_div0)
    adv = z3.And(ph3 == ADVANCE, z3.Not(heavy))
    take, loop_div = var("loop.take", "bool"), var("loop.diverge", "bool")
    c.append(z3.Implies(z3.Or(take, loop_div), adv))
    c.append(z3.Not(z3.And(take, loop_div)))
    rt = record("loop.record")
    st.keys.append(keyOf(rt))
    c.append(z3.Implies(take, v.wt[rt]))
    direct = z3.And(deliver, z3.Not(waits))
    acc = z3.Or(direct, take)
    ra = z3.If(direct, r, rt)
    ka = keyOf(ra)
    twice = z3.Or(a.twice, z3.And(acc, v.ac[ra]))
    st.keys.append(ka)
    pos = v.nxt[ka]  # the accepted input's position
    hd = head(v, cur3)
    if ex:
        # the machine's loop: take the head when it waits with its recorded version,
        # diverge when it waits with another; with nothing expected, diverge when a
        # divergence is pending, else take a waiting input of the key
        expecting = v.nxt[cur3] < v.ee[cur3]
        same = v.wv[hd] == a.GV[cur3][v.nxt[cur3]]
        take_head = z3.And(expecting, rt == hd, v.wt[hd], same)
        pending = v.da[cur3] >= 0
        take_waiting = z3.And(z3.Not(expecting), z3.Not(pending), keyOf(rt) == cur3)
        c.append(z3.Implies(take, z3.Or(take_head, take_waiting)))
        c.append(
            z3.Implies(
                loop_div,
                z3.Or(
                    z3.And(expecting, v.wt[hd], z3.Not(same)), z3.And(z3.Not(expecting), pending)
                ),
            )
        )
        c.append(z3.Implies(direct, z3.And(v.nxt[kr] >= v.ee[kr], v.da[kr] < 0)))
        version = z3.If(direct, version, v.wv[rt])
    # the monitor sees the accept unless a crash point is reached before its first effect
    # (a cut at 0); its store writes are kept when no crash point follows, or some are
    crash2 = var("crash.heavy", "bool")
    seen = z3.And(acc, z3.Or(z3.Not(crash2), var("accept.seen", "bool"))) if ex else acc
    kept = z3.Or(z3.Not(crash2), z3.And(seen, var("store.kept", "bool")))
    v = replace(
        v,
        ac=_store(v.ac, seen, ra, z3.BoolVal(True)),
        av=_store(v.av, seen, ra, version),
        wt=_store(v.wt, take, rt, z3.BoolVal(False)),
        nxt=_store(v.nxt, acc, ka, v.nxt[ka] + 1),
        ins=_store(v.ins, acc, ka, z3.BoolVal(True)),
    )
    div = z3.Or(heavy, loop_div)
    div_at = v.nxt[cur3]
    v = replace(v, ee=_store(v.ee, div, cur3, v.nxt[cur3]), da=_store(v.da, div, cur3, -1))
    # -- a crash point reached after the heavy operation (outside the end)
    c.append(z3.Implies(crash2, z3.And(up3, z3.Not(in_end(a)), z3.Not(ending), z3.Not(end))))
    up4 = z3.And(up3, z3.Not(crash2))
    ph4 = z3.If(crash2, IDLE, ph3)
    # -- no-lost-input's flag: done, and some input delivered but not accepted (or the
    # other way round), a witness record
    done = z3.Or(done_f, done_e)
    rf = record("flag.record")
    lost = v.dl[rf] != v.ac[rf]
    # -- the post-state
    c.append(b.up == up4)
    c += [b.ph == ph4, b.aft == aft3, b.cur == cur3, b.arg == arg3]
    for f in FIELDS:
        if ex and f in MONITORED:
            # the monitor's cells: only kept effects change them (frozen while down)
            c.append(getattr(b.op, f) == getattr(v, f))
        else:
            c.append(z3.Implies(b.up, getattr(b.op, f) == getattr(v, f)))
        c.append(getattr(b.sv, f) == getattr(sv2, f))
    if ex:
        restarts = z3.Or(end, restore)
        keep = z3.And(z3.Or(in_end(a), restoring(a)), z3.Not(restarts))
        c.append(z3.Implies(restore, z3.And(b.order == rs_order, b.oin == rs_oin)))
        c.append(z3.Implies(restore, z3.And(b.cnt == rs_cnt, b.idx == rs_idx)))
    else:
        keep = z3.And(in_end(a), z3.Not(end))
    c.append(z3.Implies(end, z3.And(b.order == e_order, b.oin == e_oin)))
    c.append(z3.Implies(end, z3.And(b.cnt == e_cnt, b.idx == e_idx)))
    c.append(z3.Implies(keep, z3.And(b.order == a.order, b.oin == a.oin)))
    c.append(z3.Implies(keep, z3.And(b.cnt == a.cnt, b.idx == a.idx)))
    c.append(b.flag == z3.Or(a.flag, z3.And(done, lost)))
    c.append(b.twice == twice)
    if ex:
        # the monitor of complete-reuse: an outstanding input accepted again is no longer
        # outstanding, and leaves its key unclean if its version changed
        back = z3.And(seen, outs[ra])
        unc = _store(a.unc, z3.And(back, ovs[ra] != version), ka, z3.BoolVal(True))
        c += [b.unc == unc, b.out == _store(outs, back, ra, z3.BoolVal(False)), b.ov == ovs]
        c.append(b.hi == hi)
        # the ghosts: an accept writes the recorded order at its position (the head is
        # already there) and, when its store writes are kept, moves E past it; a kept
        # divergence ends the key's recorded order at its position
        c.append(_store(a.GR, acc, ka, z3.Store(a.GR[ka], pos, ra)) == b.GR)
        c.append(_store(a.GV, acc, ka, z3.Store(a.GV[ka], pos, version)) == b.GV)
        c.append(_store(a.P, acc, ra, pos) == b.P)
        grown = _store(a.E, z3.And(acc, kept, pos >= a.E[ka]), ka, pos + 1)
        voided = z3.And(div, z3.Or(z3.Not(crash2), var("divergence.kept", "bool")))
        c.append(_store(grown, voided, cur3, div_at) == b.E)
        # a divergence excuses its key: the head it gives up cannot come back unchanged
        c.append(_store(dw, z3.And(div, z3.Not(xc[cur3])), cur3, hd) == b.DW)
        c.append(_store(xc, div, cur3, z3.BoolVal(True)) == b.XC)
        st.pairs += [(ka, pos), (cur3, div_at)]
        st.records.append(ra)
    st.places += [arg3, arg3 - 1]
    return st


# -- the queries -------------------------------------------------------------------------


def initial(st: LState) -> list[z3.BoolRef]:
    """The state before any micro-step."""
    out = [st.up, st.ph == IDLE, st.aft == AFTER_NOTHING, z3.Not(st.flag), z3.Not(st.twice)]
    for v in (st.op, st.sv):
        out += [
            v.nxt == z3.K(INT, z3.IntVal(0)),
            v.ee == z3.K(INT, z3.IntVal(0)),
            v.da == z3.K(INT, z3.IntVal(-1)),
            v.ins == z3.K(INT, z3.BoolVal(False)),
        ]
        out += [getattr(v, f) == z3.K(INT, z3.BoolVal(False)) for f in RECORDED]
        out.append(v.off == z3.K(INT, z3.IntVal(0)))
    out += [
        st.hi == z3.K(INT, z3.IntVal(0)),
        st.out == z3.K(INT, z3.BoolVal(False)),
        st.unc == z3.K(INT, z3.BoolVal(False)),
        z3.K(INT, z3.IntVal(0)) == st.E,
        z3.K(INT, z3.BoolVal(False)) == st.XC,
    ]
    return out


def _facts(
    st: LState, r: z3.ArithRef, k: z3.ArithRef, j: z3.ArithRef, q: z3.ArithRef, o: Options
) -> Facts:
    return _kept(all_facts(st, r, k, j, q, o.excuse), o)


def check_initial(o: Options, timeout_ms: int) -> Rows:
    a = fresh_state("i")
    facts = _facts(a, z3.Int("r0"), z3.Int("k0"), z3.Int("j0"), z3.Int("q0"), o)
    return solve_each(facts, initial(a), timeout_ms)


Terms = tuple[
    list[z3.ArithRef],
    list[z3.ArithRef],
    list[z3.ArithRef],
    list[tuple[z3.ArithRef, z3.ArithRef]],
]


def _terms(
    a: LState, tr: Step, r0: z3.ArithRef, k0: z3.ArithRef, j0: z3.ArithRef, q0: z3.ArithRef
) -> Terms:
    """The record, key, index and (key, position) terms of a step query (manual
    instantiation)."""
    records = [r0, *tr.records]
    keys = [k0, *tr.keys]
    pairs = [(k0, q0), *tr.pairs]
    if tr.pairs:  # --excuse: the witnesses of the keys' excuses, each key's head
        records += [a.DW[k] for k in keys]
        pairs += [(k, a.op.nxt[k]) for k in keys]
        records += [a.GR[k][q] for k, q in pairs]
    keys += [keyOf(r) for r in records]
    places = [j0, *tr.places]
    for k in keys:
        places.append(a.idx[k])
    return records, keys, places, pairs


def check_step(o: Options, timeout_ms: int) -> Rows:
    """Each fact after the step (``unsat`` = kept), for a fresh record, key, index and
    (with ``--excuse``) position."""
    a, b = fresh_state("a"), fresh_state("b")
    r0, k0, j0, q0 = z3.Int("r0"), z3.Int("k0"), z3.Int("j0"), z3.Int("q0")
    tr = step(a, b, o)
    hyps = list(tr.cons)
    post = [(n, f) for n, f in _facts(b, r0, k0, j0, q0, o) if not o.only or n in o.only]
    records, keys, places, pairs = _terms(a, tr, r0, k0, j0, q0)
    if o.mode == "manual":
        seen: dict[int, z3.BoolRef] = {}
        for r, k, j, q in (
            [(r, k0, j0, q0) for r in records]
            + [(r0, k, j0, q0) for k in keys]
            + [(r0, k0, j, q0) for j in places]
            + [(r0, k, j0, q) for k, q in pairs]
        ):
            for _, f in _facts(a, r, k, j, q, o):
                seen.setdefault(f.get_id(), f)
        inst = [u(r) for u in tr.univ_r for r in records]
        inst += [u(k) for u in tr.univ_k for k in keys]
        inst += [u(j) for u in tr.univ_j for j in places]
        hyps += [*seen.values(), *inst]
    else:
        x, y, z, w = z3.Int("xr"), z3.Int("yk"), z3.Int("zj"), z3.Int("wq")
        hyps += [z3.ForAll([x, y, z, w], f) for _, f in _facts(a, x, y, z, w, o)]
        hyps += [z3.ForAll([x], u(x)) for u in tr.univ_r]
        hyps += [z3.ForAll([y], u(y)) for u in tr.univ_k]
        hyps += [z3.ForAll([z], u(z)) for u in tr.univ_j]
    for r in records:
        hyps += bounds(a, r, k0, o)
    for k in keys:
        hyps += bounds(a, r0, k, o)
    return solve_each(post, hyps, timeout_ms)
