"""Opt-in (``verify --engine parametric``): a *parametric* induction step for
``ordered`` / ``no-stale-reuse``
(and ``divergence-safeguard`` with ``--safeguard``, ``key-isolation`` with
``--isolation``, ``equivalent-outcome`` with ``--outcome``, and the store's half of
``complete-reuse`` with ``--complete``).

The counterpart of :mod:`.parametric` (``seqnum``) for the contract that waits
(``model/contracts.ORDERED``: match by position, nothing on a miss, wait,
``record_order`` with-first-completion). The state is made of Z3 arrays over a slot id,
a key and a position; the invariant quantifies over them; one micro-step is a
transition relation; each fact is asked after it for a fresh slot ``s0``, key ``k0`` and
position ``q0``, with the universals instantiated by hand (``manual``) or left to Z3
(``quant``). The queries do not depend on the bound.

State, beyond :mod:`.parametric`'s (``nxt``, ``H``, ghost ``G``, ``marker`` per view; the
store's ``pres``, ``rec``, ``ver``, ``pos``, ``ent``, ``tim``, ``void``, ``pre``, ghost
``era``; ``up``, ``now``, ``era``, the monitor's flag):

* per view and key: ``ee`` (``expected-end``), ``X`` (the expected order as codes,
  ``2 * expected + expected-version``, position -> code) and ``da`` (``diverge-at``);
* per slot: ``ord`` (a completion that carries its input's position:
  ``record_order`` with-first-completion); a standalone order entry is a slot with
  ``ent = -1``. A *carrier* of the recorded order is an order entry or a completion
  with ``ord``;
* ghosts: ``E[k]``, where the key's recorded order ends in the store (spec/induction.py's
  ``end``: a kept write at or after it moves it past the write, a kept divergence sets
  it to the key's position), and ``W[k][q]``, the slot that records position ``q`` of
  key ``k`` (a ghost index: "every position of ``[next, E)`` has a valid carrier", a
  forall-exists, becomes a plain universal, as in :mod:`.parametric_restore`);
* with ``--safeguard``, the divergence-safeguard monitor's ``recorded`` and ``diverged``
  per (key, position) and its flag, as in :mod:`.parametric`;
* with ``--isolation``, key-isolation's flag: set by a kept divergence whose
  invalidation reaches a valid settled completion of another key (a witness slot of the
  step); under ``ordered`` the invalidation's target is the diverging key;
* with ``--outcome`` (agents with one memory field: ``stateful`` for ``--entries 1``,
  ``chain`` for 2), per view and key the memory ``M``, the monitor's failure-free memory
  ``FM`` and outputs-equal ``OE``, the ghost memory ``FF[k][q]`` (the failure-free
  memory after the first ``q`` inputs of ``G``), and per slot what it read (``rd``); a
  slot's writes and output are the agent's terms of its input and reads
  (spec/agentterms.py, as uninterpreted functions of the input's code and the memory).

The invariant (22 facts; 26 with ``--safeguard``) is the counterpart of
spec/induction.py's waiting facts restricted to what no-stale-reuse needs: ``E`` after
the positions, the store's recorded order without a gap on ``[next, E)`` and every
valid slot ahead before ``E``, the expected order is ``G`` on ``[next, ee)``, ``ee`` is
``E`` unless nothing or a divergence is expected, a pending divergence is at ``ee``
and before ``E``, and a key that recovers in the checkpoint appears in its view; plus
:mod:`.parametric`'s facts. Dropping any one of them makes another fail. With
``--isolation``, one more (the flag); with ``--outcome``, nine more: per view, a valid
completion ahead read the ghost memory at its position, ``FM`` is ``FF`` at ``next``,
``FF`` follows ``G`` on ``[next, E)`` (one input's run per position); the views' ``FF``
agree up to the live ``next``; the checkpoint's and (while up) the live memory and
outputs are the failure-free ones (the latter is the property). Each of the eight
besides the property is needed.

The step: an optional checkpoint; an optional restore, which rebuilds ``ee``, ``X`` and
``da`` of the keys it includes from the store's valid carriers (Skolem functions
``has(k, q)`` and ``sel(k, q)`` of the scan, a universal "no carrier where ``has`` is
false"; ``ee`` is the first position at or after ``next`` without a carrier); an
optional give-up (``split_order``: ``ee`` and ``da`` of the key set to a position of
``[next, ee)``); then at most one heavy operation on a key ``k``: an accept (the head
of the expected order when ``next < ee``, which is then already recorded; any input of
the key when ``next >= ee`` and no divergence is pending), or a divergence (``ee`` and
``da`` reset, a durable invalidation of the key's slots at or after its position). An
accept looks each entry of the plan up by position (witness + universal), reuses or
calls its tool and saves a completion; the first saved completion carries the
position, or a standalone order entry is written at the end when none was saved; the
crash point ``cut`` decides which effects are kept, as in ``Machine.effect``.

SIMPLIFIED with respect to spec/encoding.py (each one only adds behaviours, or is
equivalent under a fact of this invariant; see also :mod:`.parametric`'s list, which
applies here: arbitrary delivered records and versions, restores and crashes at any
idle micro-step, the checkpoint's marker anywhere between the old marker and the tick,
saves into any absent slot id, "settled" as "written before the last restore", ticks
any increasing integers, one tool call per entry):

* no waiting inputs, no advance loop, no keys' order or ranks (``inserted``), no
  phase: an accept or a divergence may happen on any key at any micro-step where the
  operator is up, under the guards the machine's loop and arrival imply (a direct
  accept or ``take_waiting`` needs ``next >= ee`` and no pending divergence;
  ``take_head`` takes ``X`` at ``next`` when ``next < ee``; a divergence needs
  nothing); which waiting input is taken, when, and the count of ``give_up_after``
  are free;
* the give-up of ``split_order`` may pick any position of ``[next, ee)`` (the machine:
  the first one whose expected input is an earlier record of the channel), on the key
  of the heavy operation;
* the restore may include any key, except that a key it leaves out has no present
  slot visible in the checkpoint's view (the machine includes exactly the keys that
  appear in the store's view, by a slot or an invalidation mark, or have a waiting
  input); the scan's ``sel`` is any valid carrier at the position (the machine's: the
  last one in slot order);
* invalidation marks are not modelled (only the keys' first appearance reads them);
* a crash point is chosen per micro-step (``cut``: effects of this micro-step); the
  machine chooses it per macro-step (the restore or delivery and its advance loop),
  and after it is reached the machine goes on running the loop with nothing kept
  until the macro-step ends: the model's ``up`` is the machine's ``up`` and "no crash
  point reached" (``Machine.live``), and while it is down the live state (``op``) is
  anything (the machine's dead loop changes it, a restore overwrites it);
* the checkpoint's marker is at most the tick of every valid settled slot at or after
  its key's position (the machine's minimum is such a value);
* the monitors of no-stale-reuse, divergence-safeguard, key-isolation and
  equivalent-outcome only (the latter's end as a fact of every state where the operator
  is up; an output counts on every accept, kept or cut); no channels, offsets or
  ``high``;
* the variant ``every-key`` invalidates the diverging key and one other key (the
  machine's scope ``every-key``: every key present in the store's view).

With ``--complete``, per view the monitor's ``accepted``, in the world its
``saved-once`` and ``repeated``, and three ghosts (an excuse per key, the position where
each input was last accepted, a witness slot per input and entry); four more facts
(``recorded once``, ``saved once still there`` per view, ``repeated excused``), proved
given two guards of the step: a kept divergence finds its key excused, and no version of
an accepted input is accepted again. The guards are what the other half of the property would
prove; :mod:`.parametric_ordered_refine` tests them on the machine's runs.

No command line of its own: ``verify`` runs it (:mod:`.parametric_engine`), the tests
drive it directly (tests/spec).
The engine of ``verify`` does not use this module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import z3

from replay_contract.model.bounded import AGENTS

from ..agentterms import Entry, Plan
from .parametric import (
    BOOL,
    BOT,
    HIST,
    INT,
    Facts,
    Rows,
    _kept,
    code,
    keyOf,
    same_hist,
    solve,
    solve_each,
    valid_in,
)

#: the code of "no expected input" (``expected`` -1, ``expected-version`` 0)
NO_CODE = code(z3.IntVal(-1), z3.IntVal(0))
#: ``ent`` of a standalone order entry
ORDER = -1

SlotPred = Callable[[z3.ArithRef], z3.BoolRef]
KeyPred = Callable[[z3.ArithRef], z3.BoolRef]
KeyPosPred = Callable[[z3.ArithRef, z3.ArithRef], z3.BoolRef]
SlotKeyPred = Callable[[z3.ArithRef, z3.ArithRef], z3.BoolRef]
SlotKeyPosPred = Callable[[z3.ArithRef, z3.ArithRef, z3.ArithRef], z3.BoolRef]


@dataclass
class OView:
    nxt: z3.ArrayRef
    H: z3.ArrayRef
    G: z3.ArrayRef
    marker: z3.ArithRef
    ee: z3.ArrayRef
    X: z3.ArrayRef
    da: z3.ArrayRef
    #: equivalent-outcome: the memory per key (``M``), the monitor's failure-free memory
    #: (``FM``) and outputs-equal (``OE``) per key, and the ghost memory ``FF`` per key
    #: and position (the failure-free memory after the first ``q`` inputs of ``G``)
    M: z3.ArrayRef
    FM: z3.ArrayRef
    OE: z3.ArrayRef
    FF: z3.ArrayRef
    #: complete-reuse: the monitor's accepted inputs (``accepted`` and
    #: ``accepted-version``), by input code
    ac: z3.ArrayRef


@dataclass
class OState:
    op: OView
    sv: OView
    pres: z3.ArrayRef
    rec: z3.ArrayRef
    ver: z3.ArrayRef
    pos: z3.ArrayRef
    ent: z3.ArrayRef
    tim: z3.ArrayRef
    void: z3.ArrayRef
    pre: z3.ArrayRef
    sera: z3.ArrayRef
    ord: z3.ArrayRef
    up: z3.BoolRef
    now: z3.ArithRef
    era: z3.ArithRef
    flag: z3.BoolRef
    #: ghosts: where each key's recorded order ends; the carrier of each (key, position)
    E: z3.ArrayRef
    W: z3.ArrayRef
    #: divergence-safeguard: the world's recorded code and latest divergence tick per
    #: (key, position) (monitors.py ``recorded``, ``diverged``), and its flag
    recd: z3.ArrayRef
    divd: z3.ArrayRef
    flag2: z3.BoolRef
    #: key-isolation's flag (monitors.py ``invalidate``)
    flag3: z3.BoolRef
    #: equivalent-outcome: what each slot read (its saved writes and output are the
    #: agent's terms of its input and reads; the property is a fact, not a flag)
    rd: z3.ArrayRef
    #: complete-reuse: the monitor's ``saved-once`` (input code -> entry -> saved) and
    #: ``repeated`` (record), the ghost ``excused`` per key (monotone: see
    #: :func:`step`), the ghost ``position`` of each input (where it was last
    #: accepted: key -> input code -> position) and the ghost witness ``WS`` (input
    #: code -> entry -> slot) of a completion saved once that is still there
    SO: z3.ArrayRef
    REP: z3.ArrayRef
    XC: z3.ArrayRef
    POS: z3.ArrayRef
    WS: z3.ArrayRef


STORE = ("pres", "rec", "ver", "pos", "ent", "tim", "void", "pre", "sera", "ord")
VIEW = ("nxt", "H", "G", "marker", "ee", "X", "da")
#: the views' part of equivalent-outcome
OUTCOME = ("M", "FM", "OE", "FF")
#: the views' part of complete-reuse
COMPLETE = ("ac",)


def fresh_view(name: str) -> OView:
    return OView(
        z3.Array(f"{name}.nxt", INT, INT),
        z3.Array(f"{name}.H", INT, HIST),
        z3.Array(f"{name}.G", INT, HIST),
        z3.Int(f"{name}.marker"),
        z3.Array(f"{name}.ee", INT, INT),
        z3.Array(f"{name}.X", INT, HIST),
        z3.Array(f"{name}.da", INT, INT),
        z3.Array(f"{name}.memory", INT, INT),
        z3.Array(f"{name}.failure-free", INT, INT),
        z3.Array(f"{name}.outputs-equal", INT, BOOL),
        z3.Array(f"{name}.FF", INT, HIST),
        z3.Array(f"{name}.accepted", INT, BOOL),
    )


def pick(cond: z3.BoolRef, x: OView, y: OView, **over: z3.ExprRef) -> OView:
    """The view ``x`` if ``cond``, else ``y``; ``over`` replaces some fields."""
    names = (*VIEW, *OUTCOME, *COMPLETE)
    vals = {n: over.get(n, z3.If(cond, getattr(x, n), getattr(y, n))) for n in names}
    return OView(**vals)


def fresh_state(tag: str) -> OState:
    """A fully symbolic state, its constants named after ``tag``."""
    arr = {
        name: z3.Array(f"{tag}.{name}", INT, BOOL if name in ("pres", "void", "ord") else INT)
        for name in STORE
        if name != "pre"
    }
    return OState(
        fresh_view(f"{tag}.op"),
        fresh_view(f"{tag}.sv"),
        arr["pres"],
        arr["rec"],
        arr["ver"],
        arr["pos"],
        arr["ent"],
        arr["tim"],
        arr["void"],
        z3.Array(f"{tag}.pre", INT, HIST),
        arr["sera"],
        arr["ord"],
        z3.Bool(f"{tag}.up"),
        z3.Int(f"{tag}.now"),
        z3.Int(f"{tag}.era_now"),
        z3.Bool(f"{tag}.flag"),
        z3.Array(f"{tag}.E", INT, INT),
        z3.Array(f"{tag}.W", INT, HIST),
        z3.Array(f"{tag}.recorded", INT, HIST),
        z3.Array(f"{tag}.diverged", INT, HIST),
        z3.Bool(f"{tag}.flag2"),
        z3.Bool(f"{tag}.flag3"),
        z3.Array(f"{tag}.reads", INT, INT),
        z3.Array(f"{tag}.saved-once", INT, z3.ArraySort(INT, BOOL)),
        z3.Array(f"{tag}.repeated", INT, BOOL),
        z3.Array(f"{tag}.excused", INT, BOOL),
        z3.Array(f"{tag}.position", INT, HIST),
        z3.Array(f"{tag}.WS", INT, HIST),
    )


#: The broken models of ``--variant`` (the empty name is ordered itself).
VARIANTS = (
    "any-position",
    "no-wait",
    "no-scan",
    "no-order-record",
    "forget-saved-order",
    "every-key",
    "forget-memory",
    "other-reads",
    "unexcused-divergence",
    "accept-again",
)


@dataclass
class Options:
    entries: int = 1
    #: positions, records and keys bounded (None: unbounded)
    n: int | None = None
    keys: int | None = None
    #: broken variants: "any-position" (lookup by identity: a waiting input is reused at
    #: any position), "no-wait" (an input is accepted even while its key recovers),
    #: "no-scan" (a restore forgets the recorded order: nothing is expected),
    #: "no-order-record" (no accept makes its position durable), "forget-saved-order"
    #: (an accept does not write the checkpoint's ghost order: an invariant too weak),
    #: "every-key" (a divergence also invalidates the slots of another key, as the scope
    #: ``every-key`` does: it breaks "recorded without gap", and with ``isolation`` the
    #: property)
    variant: str = ""
    mode: str = "manual"
    drop: tuple[str, ...] = ()
    #: the facts asked one after the other on one solver (push / pop) instead of one
    #: fresh solver each
    incremental: bool = True
    #: ask only these facts after the step (all of them are still assumed before it)
    only: tuple[str, ...] = ()
    #: also the divergence-safeguard property (its monitor and facts)
    safeguard: bool = False
    #: also the key-isolation property (its monitor's flag)
    isolation: bool = False
    #: also equivalent-outcome (the agent: ``stateful`` with one entry, ``chain`` with
    #: two); its variants: "forget-memory" (a restore keeps the live memory),
    #: "other-reads" (a completion saves reads other than those it ran with)
    outcome: bool = False
    #: also the store's half of complete-reuse: a repeated tool call finds its key
    #: excused, given that a kept divergence does and an accepted input is not accepted
    #: again (guards of the step); its variants: "unexcused-divergence" (a divergence
    #: needs no excuse), "accept-again" (an accepted input may be accepted again)
    complete: bool = False
    #: ``record_order`` before-first-tool-call: the position is written in an entry of
    #: its own before the plan runs (when not recorded yet), and no completion carries it
    early: bool = False


def plan_of(o: Options) -> Plan:
    """The agent of ``o.entries`` (both have one memory field)."""
    return Plan.of(AGENTS["stateful" if o.entries == 1 else "chain"])


def reads_of(entry: Entry, m: z3.ArithRef) -> tuple[z3.ArithRef, ...]:
    return (m,) if entry.reads else ()


def agent_term(entry: Entry, kind: str, cd: z3.ArithRef, m: z3.ArithRef) -> z3.ArithRef:
    """What ``entry`` writes or outputs (``kind``) for the input coded ``cd`` when the
    memory it reads is ``m`` (spec/agentterms.py's ``write_term`` / ``output_term``, as
    uninterpreted functions)."""
    reads = reads_of(entry, m)
    fn = z3.Function(f"agent{entry.index}.{kind}", *([INT] * (1 + len(reads))), INT)
    out = fn(cd, *reads)
    assert isinstance(out, z3.ArithRef)
    return out


def run(plan: Plan, m: z3.ArithRef, cd: z3.ArithRef) -> tuple[z3.ArithRef, list[z3.ArithRef]]:
    """The failure-free run of the input coded ``cd`` from memory ``m`` (one field): the
    memory after it and the memory each entry reads (spec/agentterms.py ``run_input``)."""
    before = []
    for entry in plan.entries:
        before.append(m)
        if entry.writes:
            m = agent_term(entry, "write", cd, m)
    return m, before


# -- the invariant ---------------------------------------------------------------------


def valid(st: OState, v: OView, s: z3.ArithRef) -> z3.BoolRef:
    return valid_in(st.pres, st.tim, st.void, v.marker, s)


def carrier(ent: z3.ArrayRef, ordf: z3.ArrayRef, s: z3.ArithRef) -> z3.BoolRef:
    """Slot ``s`` records its input's position: an order entry or a carrying completion."""
    return z3.Or(ent[s] == ORDER, ordf[s])


def entry_at(st: OState, s: z3.ArithRef, k: z3.ArithRef, q: z3.ArithRef) -> z3.BoolRef:
    """Slot ``s`` is a valid carrier of key ``k`` at position ``q`` (the markers are equal)."""
    return z3.And(
        valid(st, st.sv, s), carrier(st.ent, st.ord, s), keyOf(st.rec[s]) == k, st.pos[s] == q
    )


def slot_facts(st: OState, s: z3.ArithRef, q: z3.ArithRef, o: Options) -> Facts:
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
                        z3.Implies(st.ent[s] >= 0, same_hist(st.pre[s], v.G[k], st.pos[s], q)),
                    ),
                ),
            )
        )
    # (the live view's "before end" follows: its position is at or after the checkpoint's)
    ahead_sv = z3.And(valid(st, st.sv, s), st.sv.nxt[keyOf(st.rec[s])] <= st.pos[s])
    out.append(("before end", z3.Implies(ahead_sv, st.pos[s] < st.E[k])))
    out.append(
        (
            "written behind",
            z3.Implies(z3.And(st.up, st.pres[s], st.sera[s] == st.era), st.pos[s] < st.op.nxt[k]),
        )
    )
    if o.outcome:
        # what a valid completion ahead read is the ghost memory at its position
        plan = plan_of(o)
        for name, v, guard in (("op", st.op, st.up), ("sv", st.sv, z3.BoolVal(True))):
            ahead = z3.And(guard, valid(st, v, s), v.nxt[k] <= st.pos[s])
            _, before = run(plan, v.FF[k][st.pos[s]], code(st.rec[s], st.ver[s]))
            read = [
                z3.Implies(st.ent[s] == e, st.rd[s] == before[e])
                for e, entry in enumerate(plan.entries)
                if entry.reads
            ]
            out.append((f"valid ahead reads ghost {name}", z3.Implies(ahead, z3.And(*read))))
    if o.safeguard:
        # spec/induction.py's "recorded" and "no later divergence" (one view: the
        # markers are equal), for completions and order entries alike
        valid_sv = valid(st, st.sv, s)
        out.append(
            ("recorded", z3.Implies(valid_sv, st.recd[k][st.pos[s]] == code(st.rec[s], st.ver[s])))
        )
        out.append(
            (
                "no later divergence",
                z3.Implies(z3.And(valid_sv, q <= st.pos[s]), st.divd[k][q] < st.tim[s]),
            )
        )
    out.append(
        (
            "slot basics",
            z3.Implies(
                st.pres[s],
                z3.And(
                    st.tim[s] >= 0,
                    st.tim[s] <= st.now,
                    st.sera[s] <= st.era,
                    st.pos[s] >= 0,
                    st.ent[s] >= ORDER,
                ),
            ),
        )
    )
    return out


def key_facts(st: OState, k: z3.ArithRef, q: z3.ArithRef, o: Options) -> Facts:
    """The facts about key ``k`` (at position ``q``)."""
    op, sv, up = st.op, st.sv, st.up
    out: Facts = []
    for name, v, guard in (("op", op, up), ("sv", sv, z3.BoolVal(True))):
        out.append(
            (f"history is order {name}", z3.Implies(guard, same_hist(v.H[k], v.G[k], v.nxt[k], q)))
        )
    out.append(
        (
            "orders agree below next",
            z3.Implies(z3.And(up, q >= 0, q < op.nxt[k]), sv.G[k][q] == op.G[k][q]),
        )
    )
    out.append(("next nonneg", sv.nxt[k] >= 0))  # (the live one's follows)
    out.append(("checkpoint behind", z3.Implies(up, sv.nxt[k] <= op.nxt[k])))
    E = st.E[k]
    out.append(("end after next", z3.And(sv.nxt[k] <= E, z3.Implies(up, op.nxt[k] <= E))))
    out.append(
        (
            "recorded without gap",
            z3.Implies(z3.And(sv.nxt[k] <= q, q < E), entry_at(st, st.W[k][q], k, q)),
        )
    )
    nxt, ee, da = op.nxt[k], op.ee[k], op.da[k]
    out.append(
        (
            "expected is order",
            z3.Implies(z3.And(up, nxt <= q, q < ee), op.X[k][q] == op.G[k][q]),
        )
    )
    out.append(("expected to end", z3.Implies(up, z3.Or(ee == E, nxt == E, da >= 0))))
    out.append(("expected before end", z3.Implies(up, ee <= E)))
    out.append(
        (
            "pending divergence",
            z3.Implies(up, z3.Or(da < 0, z3.And(da == ee, nxt <= da))),
        )
    )
    out.append(("divergence before end", z3.Implies(up, da < E)))
    w = st.W[k][sv.nxt[k]]
    out.append(
        (
            "saved recovering appears",
            z3.Implies(
                z3.Or(sv.nxt[k] < sv.ee[k], sv.da[k] >= 0),
                z3.And(st.pres[w], sv.marker <= st.tim[w], keyOf(st.rec[w]) == k),
            ),
        )
    )
    if o.safeguard:
        out.append(("divergences in the past", st.divd[k][q] <= st.now))
    if o.outcome:
        plan = plan_of(o)
        for name, v, guard in (("op", op, up), ("sv", sv, z3.BoolVal(True))):
            out.append((f"ghost memory {name}", z3.Implies(guard, v.FM[k] == v.FF[k][v.nxt[k]])))
            after, _ = run(plan, v.FF[k][q], v.G[k][q])
            out.append(
                (
                    f"ghost memory chain {name}",
                    z3.Implies(z3.And(guard, v.nxt[k] <= q, q < E), v.FF[k][q + 1] == after),
                )
            )
        out.append(
            (
                "ghost memories agree",
                z3.Implies(z3.And(up, q >= 0, q <= op.nxt[k]), sv.FF[k][q] == op.FF[k][q]),
            )
        )
        out.append(("saved outcome", z3.And(sv.M[k] == sv.FM[k], sv.OE[k])))
        out.append(("equivalent outcome", z3.Implies(up, z3.And(op.M[k] == op.FM[k], op.OE[k]))))
    if o.complete:
        for name, v, guard in (("op", op, up), ("sv", sv, z3.BoolVal(True))):
            # the history's inputs are accepted
            out.append(
                (
                    f"history accepted {name}",
                    z3.Implies(z3.And(guard, q >= 0, q < v.nxt[k]), v.ac[v.G[k][q]]),
                )
            )
        # the recorded inputs ahead of the checkpoint are where each was last accepted,
        # so they are distinct (the live view's follow: its order agrees below its
        # position, and an accept records its input where it is accepted)
        out.append(
            (
                "recorded once",
                z3.Implies(z3.And(sv.nxt[k] <= q, q < E), st.POS[k][sv.G[k][q]] == q),
            )
        )
    return out


def accepted_any(v: OView, r: z3.ArithRef) -> z3.BoolRef:
    """The view has accepted some version of record ``r``."""
    return z3.Or(v.ac[code(r, z3.IntVal(0))], v.ac[code(r, z3.IntVal(1))])


#: an input and an entry of the plan: (record, version, entry)
Action = tuple[z3.ArithRef, z3.ArithRef, z3.ArithRef]


def actions_of(r: z3.ArithRef, o: Options) -> list[Action]:
    """Every version and entry of record ``r``."""
    return [(r, z3.IntVal(v), z3.IntVal(e)) for v in (0, 1) for e in range(o.entries)]


def record_facts(
    st: OState, r: z3.ArithRef, o: Options, actions: Sequence[Action] | None = None
) -> Facts:
    """The facts about record ``r`` (complete-reuse's store half): for each of
    ``actions`` (of ``r``; None: every version and entry)."""
    if not o.complete:
        return []
    k = keyOf(r)
    out: Facts = []
    for name, v, guard in (("op", st.op, st.up), ("sv", st.sv, z3.BoolVal(True))):
        parts = []
        for _, ver, e in actions_of(r, o) if actions is None else actions:
            cd = code(r, ver)
            w = st.WS[cd][e]
            there = z3.And(
                valid(st, v, w),
                st.ent[w] == e,
                st.rec[w] == r,
                st.ver[w] == ver,
                v.nxt[k] <= st.pos[w],
            )
            parts.append(
                z3.Implies(
                    z3.And(guard, st.SO[cd][e], z3.Not(accepted_any(v, r))), z3.Or(st.XC[k], there)
                )
            )
        out.append((f"saved once still there {name}", z3.And(*parts)))
    out.append(("repeated excused", z3.Implies(st.REP[r], st.XC[k])))
    return out


def global_facts(st: OState, o: Options) -> Facts:
    return [
        ("markers equal", st.op.marker == st.sv.marker),
        ("marker below now", st.op.marker <= st.now),
        ("counters", z3.And(st.era >= 0, st.now >= 0)),
        ("no stale reuse", z3.Not(st.flag)),
    ] + (
        ([("divergence safeguard", z3.Not(st.flag2))] if o.safeguard else [])
        + ([("key isolation", z3.Not(st.flag3))] if o.isolation else [])
    )


def all_facts(st: OState, s: z3.ArithRef, k: z3.ArithRef, q: z3.ArithRef, o: Options) -> Facts:
    return slot_facts(st, s, q, o) + key_facts(st, k, q, o) + global_facts(st, o)


def bounds(st: OState, s: z3.ArithRef, k: z3.ArithRef, o: Options) -> list[z3.BoolRef]:
    """The bound of the parameters, as plain assumptions about the terms of a query."""
    out: list[z3.BoolRef] = []
    if o.n is not None:
        out += [st.op.nxt[k] <= o.n, st.sv.nxt[k] <= o.n, st.E[k] <= o.n]
        out += [st.op.ee[k] <= o.n, st.sv.ee[k] <= o.n]
        out += [z3.Implies(st.pres[s], z3.And(st.pos[s] < o.n, st.rec[s] >= 0, st.rec[s] < o.n))]
    if o.keys is not None:
        out += [z3.And(k >= 0, k < o.keys)]
    return out


# -- the step --------------------------------------------------------------------------


@dataclass
class Step:
    """The transition relation, its universals (by the kinds of terms they take) and the
    terms it introduces."""

    cons: list[z3.BoolRef] = field(default_factory=list)
    univ_s: list[SlotPred] = field(default_factory=list)
    univ_k: list[KeyPred] = field(default_factory=list)
    univ_kq: list[KeyPosPred] = field(default_factory=list)
    univ_sk: list[SlotKeyPred] = field(default_factory=list)
    univ_skq: list[SlotKeyPosPred] = field(default_factory=list)
    slots: list[z3.ArithRef] = field(default_factory=list)
    keys: list[z3.ArithRef] = field(default_factory=list)
    positions: list[z3.ArithRef] = field(default_factory=list)
    #: complete-reuse: the accepted input's actions (one per entry of the plan)
    actions: list[Action] = field(default_factory=list)
    #: terms of the restore's scan: (key term -> the scan's end), Skolem functions
    scan_end: z3.ArrayRef | None = None
    sel: z3.FuncDeclRef | None = None


def step(a: OState, b: OState, o: Options, tag: str = "") -> Step:
    """``b`` is ``a`` after one micro-step (``tag`` prefixes the step's own variables)."""
    st = Step()
    c = st.cons
    ckpt, rest = z3.Bool(f"{tag}move.checkpoint"), z3.Bool(f"{tag}move.restore")
    crash, gu = z3.Bool(f"{tag}move.crash"), z3.Bool(f"{tag}move.giveup")
    heavy = z3.Int(f"{tag}move.heavy")  # 0 nothing, 1 accept, 2 diverge
    c.append(z3.And(heavy >= 0, heavy <= 2))
    c.append(z3.Implies(ckpt, a.up))
    up2 = z3.Or(a.up, rest)
    c.append(z3.Implies(z3.Not(up2), z3.And(heavy == 0, z3.Not(gu))))
    c.append(z3.Implies(crash, z3.And(heavy == 0, z3.Not(gu), z3.Not(rest))))
    # ticks: fresh, each larger than the one before; one that belongs to an operation
    # is taken only when it happens (the machine's last tick is that of its last write)
    last: list[z3.ArithRef] = [a.now]

    def tick(happens: z3.BoolRef | None = None) -> z3.ArithRef:
        t = z3.Int(f"{tag}tick{len(last)}")
        if happens is None:
            c.append(last[-1] < t)
            last.append(t)
        else:
            c.append(z3.Implies(happens, last[-1] < t))
            last.append(z3.If(happens, t, last[-1]))
        return t

    # -- checkpoint: saved := op, the marker moved forward but not past a valid settled
    # slot at or after its key's position
    m1 = z3.Int(f"{tag}ckpt.marker")
    tck = tick()
    c.append(z3.Implies(ckpt, z3.And(a.op.marker <= m1, m1 <= tck)))

    def needed(s: z3.ArithRef) -> z3.BoolRef:
        k = keyOf(a.rec[s])
        return z3.Implies(
            z3.And(ckpt, valid(a, a.op, s), a.sera[s] < a.era, a.op.nxt[k] <= a.pos[s]),
            m1 <= a.tim[s],
        )

    st.univ_s.append(needed)
    marker1 = z3.If(ckpt, m1, a.op.marker)

    sv1 = pick(ckpt, a.op, a.sv, marker=z3.If(ckpt, marker1, a.sv.marker))
    op1 = replace(a.op, marker=marker1)
    tick()
    # -- restore: op := saved; the included keys rescan the store's recorded order
    era2 = z3.If(rest, a.era + 1, a.era)
    inc = z3.Array(f"{tag}rst.inc", INT, BOOL)
    has = z3.Function(f"{tag}rst.has", INT, INT, BOOL)
    sel = z3.Function(f"{tag}rst.sel", INT, INT, INT)
    end = z3.Array(f"{tag}rst.end", INT, INT)
    ee_r, X_r, da_r = (
        z3.Array(f"{tag}rst.ee", INT, INT),
        z3.Array(f"{tag}rst.X", INT, HIST),
        z3.Array(f"{tag}rst.da", INT, INT),
    )
    st.scan_end, st.sel = end, sel

    def carrier_at(s: z3.ArithRef, k: z3.ArithRef, q: z3.ArithRef) -> z3.BoolRef:
        return z3.And(
            valid_in(a.pres, a.tim, a.void, sv1.marker, s),
            carrier(a.ent, a.ord, s),
            keyOf(a.rec[s]) == k,
            a.pos[s] == q,
        )

    scanned = o.variant != "no-scan"

    def scan_kq(k: z3.ArithRef, q: z3.ArithRef) -> z3.BoolRef:
        if not scanned:
            return z3.Implies(rest, X_r[k][q] == z3.If(inc[k], NO_CODE, sv1.X[k][q]))
        s = sel(k, q)
        return z3.Implies(
            rest,
            z3.And(
                z3.Implies(z3.And(inc[k], has(k, q)), carrier_at(s, k, q)),
                z3.Implies(z3.And(inc[k], sv1.nxt[k] <= q, q < end[k]), has(k, q)),
                X_r[k][q]
                == z3.If(
                    inc[k],
                    z3.If(has(k, q), code(a.rec[s], a.ver[s]), NO_CODE),
                    sv1.X[k][q],
                ),
            ),
        )

    def scan_k(k: z3.ArithRef) -> z3.BoolRef:
        parts = [
            ee_r[k] == z3.If(inc[k], end[k] if scanned else sv1.nxt[k], sv1.ee[k]),
            da_r[k] == z3.If(inc[k], -1, sv1.da[k]),
        ]
        if scanned:
            parts += [
                z3.Implies(inc[k], z3.And(sv1.nxt[k] <= end[k], z3.Not(has(k, end[k])))),
            ]
        return z3.Implies(rest, z3.And(*parts))

    def scan_miss(s: z3.ArithRef, k: z3.ArithRef, q: z3.ArithRef) -> z3.BoolRef:
        return z3.Implies(z3.And(rest, inc[k], z3.Not(has(k, q))), z3.Not(carrier_at(s, k, q)))

    def left_out(s: z3.ArithRef, k: z3.ArithRef) -> z3.BoolRef:
        return z3.Implies(
            z3.And(rest, z3.Not(inc[k])),
            z3.Not(z3.And(a.pres[s], sv1.marker <= a.tim[s], keyOf(a.rec[s]) == k)),
        )

    st.univ_k.append(scan_k)
    st.univ_kq.append(scan_kq)
    st.univ_sk.append(left_out)
    if scanned:
        st.univ_skq.append(scan_miss)
    forget: dict[str, z3.ExprRef] = {"M": op1.M} if o.variant == "forget-memory" else {}
    op2 = pick(
        rest,
        sv1,
        op1,
        ee=z3.If(rest, ee_r, op1.ee),
        X=z3.If(rest, X_r, op1.X),
        da=z3.If(rest, da_r, op1.da),
        **forget,
    )
    tick()
    # -- the heavy operation's key; a give-up of split_order on it first
    k = z3.Int(f"{tag}heavy.key")
    if o.keys is not None:
        c.append(z3.And(k >= 0, k < o.keys))
    st.keys.append(k)
    p = op2.nxt[k]
    st.positions.append(p)
    f = z3.Int(f"{tag}giveup.at")
    st.positions.append(f)
    c.append(z3.Implies(gu, z3.And(p <= f, f < op2.ee[k])))
    da_old = op2.da[k]
    ee3 = z3.If(gu, z3.Store(op2.ee, k, f), op2.ee)
    da3 = z3.If(gu, z3.Store(op2.da, k, z3.If(z3.Or(da_old < 0, f < da_old), f, da_old)), op2.da)
    # -- accept
    acc, div = heavy == 1, heavy == 2
    r, v = z3.Int(f"{tag}acc.record"), z3.Int(f"{tag}acc.version")
    c.append(z3.Implies(acc, z3.And(r >= 0, z3.Or(v == 0, v == 1), keyOf(r) == k)))
    if o.n is not None:
        c.append(z3.Implies(acc, r < o.n))
    cd = code(r, v)
    head = z3.And(p < ee3[k], cd == op2.X[k][p])
    free = z3.And(p >= ee3[k], da3[k] < 0)
    if o.variant != "no-wait":
        c.append(z3.Implies(acc, z3.Or(head, free)))
    recorded = head  # take_head: the input is already recorded
    st.actions += [(r, v, z3.IntVal(e)) for e in range(o.entries)]
    if o.complete and o.variant != "accept-again":
        # a guard (see Options.complete): no version of the input is accepted yet
        c.append(z3.Implies(acc, z3.Not(accepted_any(op2, r))))
    prefix = op2.H[k]
    # equivalent-outcome: the live memory through the plan, the failure-free run
    plan = plan_of(o)
    mem: z3.ArithRef = op2.M[k]
    ff_after, ff_before = run(plan, op2.FM[k], cd)
    same: z3.BoolRef = z3.BoolVal(True)
    rd = a.rd
    cut = z3.Int(f"{tag}cut")
    c.append(cut >= -1)
    eff: z3.ArithRef = z3.IntVal(0)

    def live(e: z3.ArithRef) -> z3.BoolRef:
        return z3.Or(cut < 0, e < cut)

    kept = z3.And(acc, live(eff))
    H_op = z3.Store(op2.H, k, z3.Store(prefix, p, cd))
    G_op = z3.If(kept, z3.Store(op2.G, k, z3.Store(op2.G[k], p, cd)), op2.G)
    if o.variant == "forget-saved-order":
        G_sv = sv1.G
    else:
        G_sv = z3.If(kept, z3.Store(sv1.G, k, z3.Store(sv1.G[k], p, cd)), sv1.G)
    t_acc = tick(acc)  # the accept event
    # divergence-safeguard: a different input at a position accepted before
    before = a.recd[k][p]
    diverges = z3.And(kept, before != -1, before != cd)
    recd = z3.If(kept, z3.Store(a.recd, k, z3.Store(a.recd[k], p, cd)), a.recd)
    divd = z3.If(diverges, z3.Store(a.divd, k, z3.Store(a.divd[k], p, t_acc)), a.divd)
    flag2 = a.flag2
    pres, rec, ver, pos, ent, tim, void, pre, sera, ordf = (
        a.pres, a.rec, a.ver, a.pos, a.ent, a.tim, a.void, a.pre, a.sera, a.ord,
    )  # fmt: skip
    E, W = a.E, a.W
    flag = a.flag
    SO, REP, WS = a.SO, a.REP, a.WS
    ordered: z3.BoolRef = recorded
    if o.variant == "no-order-record":
        ordered = z3.BoolVal(True)

    def wrote(saved: z3.BoolRef, sid: z3.ArithRef, carries: z3.BoolRef) -> None:
        nonlocal E, W
        E = z3.If(z3.And(saved, E[k] <= p), z3.Store(E, k, p + 1), E)
        W = z3.If(z3.And(saved, carries), z3.Store(W, k, z3.Store(W[k], p, sid)), W)

    def order_entry() -> None:
        """The standalone order entry when the position is not yet recorded: after the
        plan (no completion carried it), or before it (``early``)."""
        nonlocal eff, pres, rec, ver, pos, ent, tim, sera, ordf, void
        lone = z3.And(acc, z3.Not(ordered))
        saved = z3.And(lone, live(eff))
        eff = eff + z3.If(lone, 1, 0)
        oid = z3.Int(f"{tag}order.slot")
        c.append(z3.Implies(acc, z3.Not(pres[oid])))
        st.slots.append(oid)
        now = tick(lone)
        pres = z3.Store(pres, oid, saved)
        rec, ver, pos = z3.Store(rec, oid, r), z3.Store(ver, oid, v), z3.Store(pos, oid, p)
        ent, tim = z3.Store(ent, oid, ORDER), z3.Store(tim, oid, now)
        sera, ordf = z3.Store(sera, oid, era2), z3.Store(ordf, oid, False)
        void = z3.Store(void, oid, False)
        wrote(saved, oid, z3.BoolVal(True))

    if o.early:
        order_entry()
        ordered = z3.BoolVal(True)

    for e in range(o.entries):

        def match(
            s: z3.ArithRef,
            pres: z3.ArrayRef = pres,
            tim: z3.ArrayRef = tim,
            void: z3.ArrayRef = void,
            rec: z3.ArrayRef = rec,
            ver: z3.ArrayRef = ver,
            ent: z3.ArrayRef = ent,
            pos: z3.ArrayRef = pos,
            sera: z3.ArrayRef = sera,
            e: int = e,
        ) -> z3.BoolRef:
            parts = [
                valid_in(pres, tim, void, op2.marker, s),
                sera[s] < era2,
                rec[s] == r,
                ver[s] == v,
                ent[s] == e,
            ]
            if o.variant != "any-position":
                parts.append(pos[s] == p)
            return z3.And(*parts)

        hit, w = z3.Bool(f"{tag}find{e}.hit"), z3.Int(f"{tag}find{e}.witness")
        st.slots.append(w)
        c.append(z3.Implies(hit, match(w)))

        def no_match(s: z3.ArithRef, hit: z3.BoolRef = hit, match: SlotPred = match) -> z3.BoolRef:
            return z3.Implies(z3.Not(hit), z3.Not(match(s)))

        st.univ_s.append(no_match)
        reused = z3.And(acc, hit, live(eff))
        d = z3.Int(f"{tag}find{e}.diff")
        st.positions.append(d)
        flag = z3.Or(flag, z3.And(reused, pre[w][d] != prefix[d]))
        if o.safeguard:
            # a divergence at or before the position after the save (free position d2)
            d2 = z3.Int(f"{tag}find{e}.diverged")
            st.positions.append(d2)
            later = z3.Or(tim[w] < -1, z3.And(d2 <= p, tim[w] < divd[k][d2]))
            flag2 = z3.Or(flag2, z3.And(reused, later))
        read_now = mem
        if o.outcome:
            # a hit returns its saved writes and output: the terms of what it read
            entry = plan.entries[e]
            used = z3.If(hit, rd[w], mem)
            if entry.output:
                got = agent_term(entry, "output", cd, used)
                same = z3.And(same, got == agent_term(entry, "output", cd, ff_before[e]))
            if entry.writes:
                mem = agent_term(entry, "write", cd, used)
        tick(acc)
        miss = z3.And(acc, z3.Not(hit))
        called = z3.And(miss, live(eff))
        REP = z3.If(z3.And(called, SO[cd][e]), z3.Store(REP, r, True), REP)
        eff = eff + z3.If(miss, 1, 0)  # the tool call
        tick(acc)
        carries = z3.Not(ordered)
        saved = z3.And(miss, live(eff))
        eff = eff + z3.If(miss, 1, 0)
        sid = z3.Int(f"{tag}save{e}.slot")
        SO = z3.If(saved, z3.Store(SO, cd, z3.Store(SO[cd], e, True)), SO)
        WS = z3.If(saved, z3.Store(WS, cd, z3.Store(WS[cd], e, sid)), WS)
        c.append(z3.Implies(acc, z3.Not(pres[sid])))
        st.slots.append(sid)
        now = tick(acc)
        pres = z3.Store(pres, sid, saved)
        rec, ver, pos = z3.Store(rec, sid, r), z3.Store(ver, sid, v), z3.Store(pos, sid, p)
        ent, tim = z3.Store(ent, sid, e), z3.Store(tim, sid, now)
        pre, sera = z3.Store(pre, sid, prefix), z3.Store(sera, sid, era2)
        void, ordf = z3.Store(void, sid, False), z3.Store(ordf, sid, carries)
        if o.variant == "other-reads":
            read_now = z3.Int(f"{tag}save{e}.reads")
        rd = z3.Store(rd, sid, read_now)
        wrote(saved, sid, carries)
        ordered = z3.Or(ordered, miss)
    if not o.early:
        order_entry()
    E_acc, W_acc = E, W
    # -- divergence: ee and da reset; the key's settled slots at or after its position
    # are voided durably (one effect); "every-key" also voids another key's (``target``)
    kept_div = z3.And(div, live(z3.IntVal(0)))
    tick(div)
    void_div = z3.Array(f"{tag}div.void", INT, BOOL)
    target = k
    if o.variant == "every-key":
        target = z3.Int(f"{tag}div.target")
        st.keys.append(target)
        if o.keys is not None:
            c.append(z3.And(target >= 0, target < o.keys))

    def voided(x: z3.ArithRef) -> z3.BoolRef:
        return void_div[x] == z3.Or(
            a.void[x],
            z3.And(
                kept_div,
                a.pres[x],
                a.sera[x] < era2,
                z3.Or(keyOf(a.rec[x]) == k, keyOf(a.rec[x]) == target),
                p <= a.pos[x],
            ),
        )

    # key-isolation: the invalidation of another key voids some valid completion (a
    # free witness slot, a term of the queries only with ``isolation``: the flag is
    # asked for every choice)
    flag3 = a.flag3
    if o.isolation:
        vx = z3.Int(f"{tag}div.voids")
        st.slots.append(vx)
        voids_some = z3.And(
            valid_in(a.pres, a.tim, a.void, op2.marker, vx),
            a.ent[vx] >= 0,
            a.sera[vx] < era2,
            keyOf(a.rec[vx]) == target,
            p <= a.pos[vx],
        )
        flag3 = z3.Or(a.flag3, z3.And(kept_div, target != k, voids_some))

    st.univ_s.append(voided)
    if o.complete:
        # the ghost excuse only grows; a kept divergence finds its key excused (a guard:
        # see Options.complete)
        def excused(x: z3.ArithRef) -> z3.BoolRef:
            return z3.Implies(a.XC[x], b.XC[x])

        st.univ_k.append(excused)
        if o.variant != "unexcused-divergence":
            c.append(z3.Implies(kept_div, b.XC[k]))
    E_div = z3.If(kept_div, z3.Store(a.E, k, p), a.E)
    effects = z3.If(acc, eff, z3.If(div, 1, 0))
    # -- the post-state
    reached = z3.And(z3.Or(acc, div, rest), cut >= 0, cut <= effects)
    c.append(b.up == z3.If(reached, False, z3.If(crash, False, up2)))
    ee4 = z3.If(div, z3.Store(ee3, k, p), ee3)
    da4 = z3.If(div, z3.Store(da3, k, -1), da3)
    live_view = {
        "nxt": z3.If(acc, z3.Store(op2.nxt, k, p + 1), op2.nxt),
        "H": z3.If(kept, H_op, op2.H),
        "G": G_op,
        "ee": ee4,
        "X": op2.X,
        "da": da4,
    }
    sv_new: dict[str, z3.ExprRef] = {"G": G_sv}
    names: tuple[str, ...] = VIEW
    if o.outcome:
        names = (*VIEW, *OUTCOME)

        def ghost(ff: z3.ArrayRef) -> z3.ArrayRef:
            after, _ = run(plan, ff[k][p], cd)
            return z3.If(kept, z3.Store(ff, k, z3.Store(ff[k], p + 1, after)), ff)

        live_view["M"] = z3.If(acc, z3.Store(op2.M, k, mem), op2.M)
        live_view["FM"] = z3.If(acc, z3.Store(op2.FM, k, ff_after), op2.FM)
        live_view["OE"] = z3.If(acc, z3.Store(op2.OE, k, z3.And(op2.OE[k], same)), op2.OE)
        live_view["FF"] = ghost(op2.FF)
        sv_new["FF"] = ghost(sv1.FF)
        c.append(z3.If(acc, rd, a.rd) == b.rd)
    for name, new in live_view.items():
        c.append(z3.Implies(b.up, getattr(b.op, name) == new))
    c.append(b.op.marker == op2.marker)
    for name in names:
        c.append(getattr(b.sv, name) == sv_new.get(name, getattr(sv1, name)))
    news = (pres, rec, ver, pos, ent, tim, void, pre, sera, ordf)
    for name, new in zip(STORE, news, strict=True):
        old = getattr(a, name)
        if name == "void":
            c.append(b.void == z3.If(acc, new, z3.If(div, void_div, old)))
        else:
            c.append(getattr(b, name) == z3.If(acc, new, old))
    c.append(z3.If(acc, E_acc, z3.If(div, E_div, a.E)) == b.E)
    c.append(z3.If(acc, W_acc, a.W) == b.W)
    c.append(b.now >= last[-1])
    c.append(b.era == era2)
    c.append(b.flag == flag)
    if o.complete:
        live_view["ac"] = z3.If(acc, z3.Store(op2.ac, cd, True), op2.ac)
        c.append(z3.Implies(b.up, b.op.ac == live_view["ac"]))
        c.append(b.sv.ac == sv1.ac)
        c.append(z3.If(acc, SO, a.SO) == b.SO)
        c.append(z3.If(acc, REP, a.REP) == b.REP)
        c.append(z3.If(acc, WS, a.WS) == b.WS)
        c.append(z3.If(kept, z3.Store(a.POS, k, z3.Store(a.POS[k], cd, p)), a.POS) == b.POS)
    if o.safeguard:
        c.append(z3.If(acc, recd, a.recd) == b.recd)
        c.append(z3.If(acc, divd, a.divd) == b.divd)
        c.append(b.flag2 == z3.If(acc, flag2, a.flag2))
    if o.isolation:
        c.append(b.flag3 == z3.If(div, flag3, a.flag3))
    return st


# -- the queries -------------------------------------------------------------------------


def initial(st: OState) -> list[z3.BoolRef]:
    """The state before any micro-step."""
    empty = z3.K(INT, z3.K(INT, z3.IntVal(BOT)))
    out = [
        st.pres == z3.K(INT, z3.BoolVal(False)),
        st.void == z3.K(INT, z3.BoolVal(False)),
        st.up,
        st.now == 0,
        st.era == 0,
        z3.Not(st.flag),
        z3.K(INT, z3.IntVal(0)) == st.E,
        st.op.G == st.sv.G,
        st.recd == z3.K(INT, z3.K(INT, z3.IntVal(-1))),
        st.divd == z3.K(INT, z3.K(INT, z3.IntVal(-1))),
        z3.Not(st.flag2),
        z3.Not(st.flag3),
        z3.K(INT, z3.K(INT, z3.BoolVal(False))) == st.SO,
        z3.K(INT, z3.BoolVal(False)) == st.REP,
    ]
    for v in (st.op, st.sv):
        out += [
            v.nxt == z3.K(INT, z3.IntVal(0)),
            empty == v.H,
            v.marker == 0,
            v.ee == z3.K(INT, z3.IntVal(0)),
            v.da == z3.K(INT, z3.IntVal(-1)),
            z3.K(INT, z3.K(INT, NO_CODE)) == v.X,
            z3.K(INT, z3.IntVal(0)) == v.M,
            z3.K(INT, z3.IntVal(0)) == v.FM,
            z3.K(INT, z3.BoolVal(True)) == v.OE,
            z3.K(INT, z3.K(INT, z3.IntVal(0))) == v.FF,
            z3.K(INT, z3.BoolVal(False)) == v.ac,
        ]
    return out


def check_initial(o: Options, timeout_ms: int) -> Rows:
    a = fresh_state("i")
    s0, k0, q0 = z3.Int("s0"), z3.Int("k0"), z3.Int("q0")
    out: Rows = []
    for name, fact in all_facts(a, s0, k0, q0, o) + record_facts(a, z3.Int("r0"), o):
        res, dt = solve([fact], initial(a), timeout_ms)
        out.append((name, res, dt))
    return out


def _terms(
    a: OState,
    tr: Step,
    s0: z3.ArithRef,
    k0: z3.ArithRef,
    q0: z3.ArithRef,
    o: Options,
    a0: Action | None = None,
) -> tuple[list[z3.ArithRef], list[z3.ArithRef], list[z3.ArithRef], list[Action]]:
    """The slot, key, position and action terms of a step query (manual instantiation):
    the actions are ``a0`` and those of the step's accepted input (``complete`` only)."""
    assert tr.scan_end is not None and tr.sel is not None
    keys = [k0, *tr.keys]
    base = [q0, *tr.positions]
    records: list[Action] = []
    if o.complete:
        records = [*([a0] if a0 is not None else []), *tr.actions]
    # the carriers the proofs name: the ghost index at the key terms' interesting
    # positions, and the restore scan's selections
    keys += [keyOf(x) for x, _, _ in records]
    pos_of_key: list[z3.ArithRef] = []
    for k in keys:
        pos_of_key += [a.sv.nxt[k], a.op.nxt[k], a.E[k], tr.scan_end[k]]
    ghost_slots: list[z3.ArithRef] = []
    for k in keys:
        for q in (*base, a.sv.nxt[k], a.op.nxt[k], tr.scan_end[k]):
            ghost_slots.append(a.W[k][q])
        for q in (*base, a.E[k]):
            ghost_slots.append(tr.sel(k, q))
    # complete-reuse: the completions saved once that are still there
    saved_once = [a.WS[code(x, ver)][e] for x, ver, e in records]
    slots = [s0, *tr.slots, *ghost_slots, *saved_once]
    keys += [keyOf(a.rec[s]) for s in [s0, *tr.slots]]
    positions = [*base, *pos_of_key, *(a.pos[s] for s in [s0, *tr.slots, *saved_once])]
    return slots, keys, positions, records


#: the facts that depend on their position argument (the others are instantiated once)
POINTWISE = (
    "valid ahead is order op",
    "valid ahead is order sv",
    "history is order op",
    "history is order sv",
    "orders agree below next",
    "recorded without gap",
    "expected is order",
    "no later divergence",
    "divergences in the past",
    "ghost memory chain op",
    "ghost memory chain sv",
    "ghost memories agree",
    "recorded once",
    "history accepted op",
    "history accepted sv",
)


def instances(
    a: OState,
    tr: Step,
    o: Options,
    slots: Sequence[z3.ArithRef],
    keys: Sequence[z3.ArithRef],
    positions: Sequence[z3.ArithRef],
    records: Sequence[Action] = (),
) -> list[z3.BoolRef]:
    """The invariant's and the step's universals at the terms of a query (each distinct
    instance once). The scan's "no carrier where none was found" is needed only where
    the scan ends. The witnesses of complete-reuse's completions saved once need only
    the facts that do not depend on a position (theirs is that of the slot) and the
    step's universals about one slot."""
    assert tr.scan_end is not None
    out: dict[int, z3.BoolRef] = {}

    def add(fs: Sequence[z3.BoolRef]) -> None:
        for f in fs:
            out.setdefault(f.get_id(), f)

    first, rest = positions[0], positions[1:]
    light = {a.WS[code(x, ver)][e].get_id() for x, ver, e in records}
    for s in slots:
        add([u(s) for u in tr.univ_s])
        add([f for _, f in _kept(slot_facts(a, s, first, o), o)])
        if s.get_id() in light:
            continue
        for q in rest:
            add([f for n, f in _kept(slot_facts(a, s, q, o), o) if n in POINTWISE])
        for k in keys:
            add([u(s, k) for u in tr.univ_sk])
            add([u(s, k, tr.scan_end[k]) for u in tr.univ_skq])
    for k in keys:
        add([u(k) for u in tr.univ_k])
        add([f for _, f in _kept(key_facts(a, k, first, o), o)])
        for q in rest:
            add([f for n, f in _kept(key_facts(a, k, q, o), o) if n in POINTWISE])
        add([u(k, q) for u in tr.univ_kq for q in positions])
    for x, ver, e in records:
        add([f for _, f in _kept(record_facts(a, x, o, [(x, ver, e)]), o)])
    return list(out.values())


#: the facts of complete-reuse's store half (``--complete``): asked with the terms of
#: the records as well; the others without them (fewer instances, and the same
#: answers: an instance is a hypothesis the others do not need)
COMPLETE_FACTS = (
    "history accepted op",
    "history accepted sv",
    "recorded once",
    "saved once still there op",
    "saved once still there sv",
    "repeated excused",
)


def _hypotheses(
    a: OState, tr: Step, o: Options, terms: tuple[list[z3.ArithRef], ...], k0: z3.ArithRef
) -> list[z3.BoolRef]:
    """The step, the invariant before it and the step's universals (at ``terms`` with
    ``manual``), and the bound."""
    slots, keys, positions, records = terms
    s0 = slots[0]
    hyps = list(tr.cons)
    if o.mode == "manual":
        hyps += instances(a, tr, o, slots, keys, positions, records)
    else:
        x, y, z = z3.Int("xs"), z3.Int("yk"), z3.Int("zq")
        hyps += [z3.ForAll([x, z], f) for _, f in _kept(slot_facts(a, x, z, o), o)]
        hyps += [z3.ForAll([y, z], f) for _, f in _kept(key_facts(a, y, z, o), o)]
        w = z3.Int("wr")
        hyps += [z3.ForAll([w], f) for _, f in _kept(record_facts(a, w, o), o)]
        hyps += [z3.ForAll([x], u(x)) for u in tr.univ_s]
        hyps += [z3.ForAll([y], u(y)) for u in tr.univ_k]
        hyps += [z3.ForAll([y, z], u(y, z)) for u in tr.univ_kq]
        hyps += [z3.ForAll([x, y], u(x, y)) for u in tr.univ_sk]
        hyps += [z3.ForAll([x, y, z], u(x, y, z)) for u in tr.univ_skq]
    hyps += [f for _, f in _kept(global_facts(a, o), o)]
    for s in slots:
        hyps += bounds(a, s, k0, o)
    for k in keys:
        hyps += bounds(a, s0, k, o)
    return hyps


def check_step(o: Options, timeout_ms: int, split: bool = True) -> Rows:
    """Each fact after the step (``unsat`` = kept), for a fresh slot, key and position
    (and record, with ``complete``)."""
    a, b = fresh_state("a"), fresh_state("b")
    s0, k0, q0, r0 = z3.Int("s0"), z3.Int("k0"), z3.Int("q0"), z3.Int("r0")
    # a fresh action: any version and entry
    a0 = (r0, z3.Int("v0"), z3.Int("e0"))
    tr = step(a, b, o)
    facts = all_facts(b, s0, k0, q0, o) + record_facts(b, r0, o, [a0])
    post = [(n, f) for n, f in _kept(facts, o) if not o.only or n in o.only]
    groups = [([p for p in post if p[0] not in COMPLETE_FACTS], replace(o, complete=False))]
    if o.complete:
        groups.append(([p for p in post if p[0] in COMPLETE_FACTS], o))
    out: Rows = []
    for group, terms_of in groups:
        if not group:
            continue
        terms = _terms(a, tr, s0, k0, q0, terms_of, a0)
        # the instances are those of the invariant of ``o`` (all its facts) at the terms
        hyps = _hypotheses(a, tr, o, terms, k0)
        hyps += [z3.Or(a0[1] == 0, a0[1] == 1), a0[2] >= 0, a0[2] < o.entries]
        if split and o.incremental:
            out += solve_each(group, hyps, timeout_ms)
        elif split:
            for name, fact in group:
                res, dt = solve([fact], hyps, timeout_ms)
                out.append((name, res, dt))
        else:
            res, dt = solve([f for _, f in group], hyps, timeout_ms)
            out.append(("all facts", res, dt))
    return out
