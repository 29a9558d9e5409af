"""Experimental: a *parametric* induction step for ``ordered`` / ``no-lost-input``.

:mod:`.parametric_ordered` proves the properties about reuse with a model of the store
and the recorded order, and leaves the waiting machinery out. ``no-lost-input`` is the
other way round: it is about the inputs that wait and the advance loop that takes them,
and the store does not matter to it. This module models that part of the machine of
:mod:`.encoding` alone, with arrays over a record, a key and an index of the end's order
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

Run: ``python -m replay_contract.spec.parametric_lost --help`` (see docs/parametric.md).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import z3

from replay_contract.cli import OneLineParser, positive_int

from .parametric import (
    BOOL,
    INT,
    Facts,
    Rows,
    _bounds,
    _kept,
    keyOf,
    report_initial,
    report_step,
    solve_each,
)

# phases and what follows a loop, as in spec/encoding.py
IDLE, ADVANCE, DONE = 0, 1, 2
AFTER_ARRIVAL, AFTER_RESTORE, AFTER_END, AFTER_NOTHING = 0, 1, 2, 3

Pred = Callable[[z3.ArithRef], z3.BoolRef]

#: the per-key and per-record arrays of a view
KEYED = ("nxt", "ee", "da", "ins")
RECORDED = ("dl", "ac", "wt")
#: and the offset of each channel
FIELDS = (*KEYED, *RECORDED, "off")

#: the channel of a record (``shape.channel``)
chanOf = z3.Function("chanOf", INT, INT)


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
    )


#: The broken models of ``--variant`` (the empty name is the machine's).
VARIANTS = (
    "end-skips-key",
    "finish-while-waiting",
    "no-end-divergence",
    "wait-anyway",
    "forget-waiting",
    "redeliver",
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
    #: of its channel, not only one at or after the channel's offset)
    variant: str = ""
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


def all_facts(st: LState, r: z3.ArithRef, k: z3.ArithRef, j: z3.ArithRef) -> Facts:
    return [
        *view_facts(st, r, k),
        *end_facts(st, r, k, j),
        ("no lost input", z3.Not(st.flag)),
        ("accepted once", z3.Not(st.twice)),
    ]


def fact_names() -> list[str]:
    """The names of the invariant's facts (``--drop`` takes them)."""
    st = fresh_state("names")
    return [n for n, _ in all_facts(st, z3.Int("r"), z3.Int("k"), z3.Int("j"))]


def bounds(st: LState, r: z3.ArithRef, k: z3.ArithRef, o: Options) -> list[z3.BoolRef]:
    """The bound of the parameters, as plain assumptions about the terms of a query."""
    out: list[z3.BoolRef] = []
    if o.n is not None:
        for v in (st.op, st.sv):
            out.append(z3.Implies(z3.Or(v.dl[r], v.ac[r], v.wt[r]), z3.And(r >= 0, r < o.n)))
            out += [v.nxt[k] <= o.n, v.ee[k] <= o.n]
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


def _store(arr: z3.ArrayRef, cond: z3.BoolRef, i: z3.ArithRef, value: z3.ExprRef) -> z3.ArrayRef:
    return z3.If(cond, z3.Store(arr, i, value), arr)


def step(a: LState, b: LState, o: Options, tag: str = "") -> Step:
    """``b`` is ``a`` after one micro-step (``tag`` prefixes the step's own variables)."""
    st = Step()
    c = st.cons

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

    op, sv = a.op, a.sv
    st.keys.append(a.cur)
    st.places += [a.arg, a.arg - 1]
    # -- the finish of the loop left by the previous micro-step
    fin = var("finish", "bool")
    c.append(z3.Implies(fin, z3.And(a.ph == ADVANCE, a.up)))
    ending = z3.And(fin, a.aft == AFTER_END)
    if o.variant != "finish-while-waiting":

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
    c.append(z3.Implies(other, z3.Or(ph_o == IDLE, ph_o == ADVANCE)))
    c.append(
        z3.Implies(
            other, z3.Or(aft_o == AFTER_ARRIVAL, aft_o == AFTER_RESTORE, aft_o == AFTER_NOTHING)
        )
    )
    arg_o = var("finish.arg")
    gives_up = var("finish.giveup", "bool")  # the give-up's divergence after an arrival
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
    v = replace(
        v,
        off=_store(v.off, deliver, ch, r + 1),
        dl=_store(v.dl, deliver, r, z3.BoolVal(True)),
        wt=_store(v.wt, waits, r, z3.BoolVal(True)),
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
    v = replace(
        v,
        ac=_store(v.ac, acc, ra, z3.BoolVal(True)),
        wt=_store(v.wt, take, rt, z3.BoolVal(False)),
        nxt=_store(v.nxt, acc, ka, v.nxt[ka] + 1),
        ins=_store(v.ins, acc, ka, z3.BoolVal(True)),
    )
    div = z3.Or(heavy, loop_div)
    v = replace(v, ee=_store(v.ee, div, cur3, v.nxt[cur3]), da=_store(v.da, div, cur3, -1))
    # -- a crash point reached after the heavy operation (outside the end)
    crash2 = var("crash.heavy", "bool")
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
        c.append(z3.Implies(b.up, getattr(b.op, f) == getattr(v, f)))
        c.append(getattr(b.sv, f) == getattr(sv2, f))
    keep = z3.And(in_end(a), z3.Not(end))
    c.append(z3.Implies(end, z3.And(b.order == e_order, b.oin == e_oin)))
    c.append(z3.Implies(end, z3.And(b.cnt == e_cnt, b.idx == e_idx)))
    c.append(z3.Implies(keep, z3.And(b.order == a.order, b.oin == a.oin)))
    c.append(z3.Implies(keep, z3.And(b.cnt == a.cnt, b.idx == a.idx)))
    c.append(b.flag == z3.Or(a.flag, z3.And(done, lost)))
    c.append(b.twice == twice)
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
    return out


def check_initial(o: Options, timeout_ms: int) -> Rows:
    a = fresh_state("i")
    facts = _kept(all_facts(a, z3.Int("r0"), z3.Int("k0"), z3.Int("j0")), o)
    return solve_each(facts, initial(a), timeout_ms)


def _terms(
    a: LState, tr: Step, r0: z3.ArithRef, k0: z3.ArithRef, j0: z3.ArithRef
) -> tuple[list[z3.ArithRef], list[z3.ArithRef], list[z3.ArithRef]]:
    """The record, key and index terms of a step query (manual instantiation)."""
    records = [r0, *tr.records]
    keys = [k0, *tr.keys, *(keyOf(r) for r in records)]
    places = [j0, *tr.places]
    for k in keys:
        places.append(a.idx[k])
    return records, keys, places


def check_step(o: Options, timeout_ms: int) -> Rows:
    """Each fact after the step (``unsat`` = kept), for a fresh record, key and index."""
    a, b = fresh_state("a"), fresh_state("b")
    r0, k0, j0 = z3.Int("r0"), z3.Int("k0"), z3.Int("j0")
    tr = step(a, b, o)
    hyps = list(tr.cons)
    post = [(n, f) for n, f in _kept(all_facts(b, r0, k0, j0), o) if not o.only or n in o.only]
    records, keys, places = _terms(a, tr, r0, k0, j0)
    if o.mode == "manual":
        seen: dict[int, z3.BoolRef] = {}
        for r, k, j in (
            [(r, k0, j0) for r in records]
            + [(r0, k, j0) for k in keys]
            + [(r0, k0, j) for j in places]
        ):
            for _, f in _kept(all_facts(a, r, k, j), o):
                seen.setdefault(f.get_id(), f)
        inst = [u(r) for u in tr.univ_r for r in records]
        inst += [u(k) for u in tr.univ_k for k in keys]
        inst += [u(j) for u in tr.univ_j for j in places]
        hyps += [*seen.values(), *inst]
    else:
        x, y, z = z3.Int("xr"), z3.Int("yk"), z3.Int("zj")
        hyps += [z3.ForAll([x, y, z], f) for _, f in _kept(all_facts(a, x, y, z), o)]
        hyps += [z3.ForAll([x], u(x)) for u in tr.univ_r]
        hyps += [z3.ForAll([y], u(y)) for u in tr.univ_k]
        hyps += [z3.ForAll([z], u(z)) for u in tr.univ_j]
    for r in records:
        hyps += bounds(a, r, k0, o)
    for k in keys:
        hyps += bounds(a, r0, k, o)
    return solve_each(post, hyps, timeout_ms)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: the step's facts for each bound of ``--n``."""
    ap = OneLineParser(
        prog="python -m replay_contract.spec.parametric_lost",
        description="A parametric induction step for ordered / no-lost-input (experimental).",
    )
    ap.add_argument(
        "--n", type=_bounds, default=[None], help="comma list of record bounds (none: unbounded)"
    )
    ap.add_argument("--keys", type=positive_int, default=None)
    ap.add_argument("--variant", default="", choices=VARIANTS, help="a broken model")
    ap.add_argument("--mode", default="manual", choices=("manual", "quant"))
    ap.add_argument("--drop", default="", help="comma list of facts to leave out")
    ap.add_argument("--initial", action="store_true", help="check the initial state too")
    ap.add_argument("--timeout", type=positive_int, default=120, help="seconds per query")
    ap.add_argument("--quiet", action="store_true", help="only the totals")
    args = ap.parse_args(argv)
    drop = tuple(d.strip() for d in args.drop.split(",") if d.strip())
    known = fact_names()
    unknown = [d for d in drop if d not in known]
    if unknown:
        ap.error(f"--drop: no fact named {unknown[0]!r} (known: {', '.join(known)})")
    for n in args.n:
        o = Options(n=n, keys=args.keys, variant=args.variant, mode=args.mode, drop=drop)
        label = (
            f"n={'none' if n is None else n} keys={args.keys} mode={o.mode} "
            f"variant={o.variant or 'ordered'}" + (f" drop={','.join(o.drop)}" if o.drop else "")
        )
        if args.initial:
            report_initial(label, check_initial(o, args.timeout * 1000))
        t0 = time.perf_counter()
        rows = check_step(o, args.timeout * 1000)
        report_step(label, rows, time.perf_counter() - t0, args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
