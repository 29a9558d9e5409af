"""Is every micro-step of :mod:`..encoding`'s machine under ``ordered`` a
step of the model of :mod:`.parametric_lost` (``no-lost-input``)?

As :mod:`.parametric_ordered_refine` does for the reuse properties: the concrete
:class:`~.encoding.Machine` is driven micro-step by micro-step on the runs of a small
bound (every run, or a random sample). Before and after each micro-step its state is
read and bound to a pre- and a post-state of :func:`.parametric_lost.step`: per view
each key's ``next``, ``expected-end``, ``diverge-at`` and whether it is ``inserted``,
each record's ``delivered``, ``accepted`` (the monitor's) and ``waiting``, and each
channel's offset (and the model's flag of an input accepted twice is never set); the
world's ``up`` (and no crash point reached), phase, ``after``, ``key``, ``after-arg``,
``order`` and ``order-in``, and no-lost-input's flag. The model's ghosts of the end are
computed from the machine's order (``cnt``: the places that hold a key; ``idx``: each
present key's place). The solver must find the model's choices (the move, the records,
the restore's keys, the end's order) that make the transition relation hold, with its
universals instantiated at every record, key and place of the bound and at the step's
own terms. A micro-step the model cannot take is a place where the model is not an
over-approximation of the machine.

This is testing, not proof: it covers the runs it is given.

No command line of its own: ``verify`` runs it (:mod:`.parametric_engine`), the tests
drive it directly (tests/spec).
"""

from __future__ import annotations

import random

import z3

from replay_contract.model import bounded
from replay_contract.model.contracts import ORDERED, Contract

from .. import encoding as enc
from ..bound import Bound
from ..monitors import flag
from ..properties import NO_LOST_INPUT
from . import parametric_lost as pl
from . import parametric_refine as pr
from .parametric import code, keyOf
from .parametric_refine import Snapshot, bools, codes, machine_of, runs_of

#: what the machine did in a run, counted over the runs checked (``Machine.reach``),
#: whether it reached the end of input and the end's loop took a waiting input, and
#: (``--excuse``) whether a divergence excused a key
REACH = ("crash", "restore", "wait", "end", "end takes", "excused")


def snapshot(m: enc.Machine) -> Snapshot:
    """What the model sees of the concrete machine's state."""
    views = {}
    for name, cells in (("op", m.op), ("sv", m.saved)):
        views[name] = {
            "nxt": [cells.cell("next", k) for k in range(m.k)],
            "ee": [cells.cell("expected-end", k) for k in range(m.k)],
            "da": [cells.cell("diverge-at", k) for k in range(m.k)],
            "ins": [cells.cell("inserted", k) != enc.ABSENT for k in range(m.k)],
            "dl": [bool(cells.cell("delivered", r)) for r in range(m.n)],
            "ac": [bool(cells.cell("accepted", r)) for r in range(m.n)],
            "wt": [bool(cells.cell("waiting", r)) for r in range(m.n)],
            "off": [cells.cell("offset", ch) for ch in range(m.c)],
            "wv": [cells.cell("waiting-version", r) for r in range(m.n)],
            "av": [cells.cell("accepted-version", r) for r in range(m.n)],
        }
    w = m.world
    up = bool(w["up"]) and bool(m.live())
    order = [w.cell("order", j) for j in range(m.k)]
    oin = [bool(w.cell("order-in", j)) for j in range(m.k)]
    idx = {}
    for j in range(m.k - 1, -1, -1):
        if oin[j]:
            idx[order[j]] = j
    return {
        "views": views,
        "up": up,
        "ph": w["phase"],
        "aft": w["after"],
        "cur": w["key"],
        "arg": w["after-arg"],
        "order": order,
        "oin": oin,
        "cnt": sum(oin),
        "idx": idx,
        "flag": bool(w[flag(NO_LOST_INPUT)]),
        "hi": [w.cell("high", ch) for ch in range(m.c)],
        "out": [bool(w.cell("outstanding", r)) for r in range(m.n)],
        "ov": [w.cell("outstanding-version", r) for r in range(m.n)],
        "unc": [bool(w.cell("unclean", k)) for k in range(m.k)],
        "recorded": [recorded_order(m, k) for k in range(m.k)],
        "marks": len(m.marks),
    }


def recorded_order(m: enc.Machine, k: int) -> list[int]:
    """The ghost recorded order of key ``k`` as codes: the checkpoint's history below its
    position, then the store's recorded order (its valid carriers) up to the first
    position without one (the ghost ``E`` is its length)."""
    out = codes(m.saved.cell("history", k))
    recorded = m.recorded_order(k)
    q = len(out)
    while q < m.n:
        has, record, version = recorded(q)
        if not has:
            break
        out.append(code(record, version))
        q += 1
    return out


def excused(m: enc.Machine) -> list[bool]:
    """Per key, whether the machine's state excuses it from complete-reuse (as
    spec/induction.py's ``_reuse_facts`` says): its monitor marked it unclean, or one of
    its outstanding inputs can only come back changed or not at all (it waits with
    another version, or is not delivered and its replay loses or changes it)."""
    w = m.world
    view = m.op if w["up"] and m.live() else m.saved

    def doomed(r: int) -> bool:
        if not w.cell("outstanding", r):
            return False
        version = w.cell("outstanding-version", r)
        if view.cell("waiting", r) and view.cell("waiting-version", r) != version:
            return True
        mode = m.shape.mode[r]
        changed = 1 if mode == 2 else 0
        return not view.cell("delivered", r) and (mode == 1 or changed != version)

    return [
        bool(w.cell("unclean", k)) or any(m.shape.key[r] == k and doomed(r) for r in range(m.n))
        for k in range(m.k)
    ]


def bind(st: pl.LState, snap: Snapshot, excuse: set[int] | None = None) -> list[z3.BoolRef]:
    """The model's state ``st`` is the machine's snapshot ``snap`` (with ``excuse``, the
    keys the ghost ``XC`` excuses, also the parts of ``--excuse``)."""
    out: list[z3.BoolRef] = []
    for name in ("op", "sv"):
        v, data = getattr(st, name), snap["views"][name]
        for k, x in enumerate(data["nxt"]):
            out += [v.nxt[k] == x, v.ee[k] == data["ee"][k], v.da[k] == data["da"][k]]
        out.append(v.ins == bools(data["ins"]))
        out += [v.off[ch] == x for ch, x in enumerate(data["off"])]
        out += [getattr(v, f) == bools(data[f]) for f in pl.RECORDED]
    out += [
        st.up == snap["up"],
        st.ph == snap["ph"],
        st.aft == snap["aft"],
        st.cur == snap["cur"],
        st.arg == snap["arg"],
        st.oin == bools(snap["oin"]),
        st.cnt == snap["cnt"],
        st.flag == snap["flag"],
        # the machine never accepts an input twice in a timeline: the model may not either
        z3.Not(st.twice),
    ]
    out += [st.order[j] == x for j, x in enumerate(snap["order"])]
    out += [st.idx[k] == j for k, j in snap["idx"].items()]
    if excuse is None:
        return out
    for name in ("op", "sv"):
        v, data = getattr(st, name), snap["views"][name]
        out += [v.wv[r] == x for r, x in enumerate(data["wv"])]
        out += [v.av[r] == x for r, x in enumerate(data["av"])]
    out += [st.hi[ch] == x for ch, x in enumerate(snap["hi"])]
    out.append(st.out == bools(snap["out"]))
    out += [st.ov[r] == x for r, x in enumerate(snap["ov"])]
    out.append(st.unc == bools(snap["unc"]))
    for k, order in enumerate(snap["recorded"]):
        out.append(st.E[k] == len(order))
        out += [st.GR[k][q] == x // 2 for q, x in enumerate(order)]
        out += [st.GV[k][q] == x % 2 for q, x in enumerate(order)]
    out += [st.XC[k] == (k in excuse) for k in range(len(snap["unc"]))]
    return out


def check_run(
    bound: Bound,
    shape: bounded.Shape,
    node: bounded.Node,
    o: pl.Options,
    timeout_ms: int,
    reached: dict[str, int] | None = None,
    contract: Contract = ORDERED,
) -> list[str]:
    """The first micro-step of one run the model cannot take (empty: it takes all);
    counts in ``reached`` what the run reached (when it is taken in full)."""
    m = machine_of(contract, bound, shape, node)
    before = snapshot(m)
    records = [z3.IntVal(r) for r in range(bound.inputs)]
    keys = [z3.IntVal(k) for k in range(bound.keys)]
    places = [z3.IntVal(j) for j in range(-1, bound.keys + 2)]
    ended = takes = False
    # the ghost excuse: the keys a divergence (an invalidation, or a give-up's pending
    # divergence) has excused so far
    xc: set[int] | None = set() if o.excuse else None
    for t in range(m.steps):
        marks = len(m.marks)
        m.micro_step(t)
        after = snapshot(m)
        a, b = pl.fresh_state("a"), pl.fresh_state("b")
        tr = pl.step(a, b, o)
        xc_after = None
        if xc is not None:
            xc_after = xc | {x.key for x in m.marks[marks:]}
            da0, da1 = before["views"]["op"]["da"], after["views"]["op"]["da"]
            xc_after |= {k for k in range(bound.keys) if da1[k] >= 0 and da1[k] != da0[k]}
            # the model proves its excuse is the machine's: check it on the run too
            machine = excused(m)
            if any(not machine[k] for k in xc_after):
                return [
                    f"micro-step {t}: a key excused by a divergence, not by the machine's "
                    f"state: {[str(s) for s in node.steps]}"
                ]
        hyps = list(tr.cons) + bind(a, before, xc) + bind(b, after, xc_after)
        hyps += [keyOf(r) == shape.key[r] for r in range(shape.inputs)]
        hyps += [pl.chanOf(r) == shape.channel[r] for r in range(shape.inputs)]
        if o.excuse:
            modes = {"same": 0, "lost": 1, "changed": 2}
            hyps += [pl.modeOf(r) == modes[x] for r, x in enumerate(shape.mode)]
            hyps.append(shape.inputs == pl.RECORDS)
        rs, ks, js = records + tr.records, keys + tr.keys, places + tr.places
        hyps += [u(r) for u in tr.univ_r for r in rs]
        hyps += [u(k) for u in tr.univ_k for k in ks]
        hyps += [u(j) for u in tr.univ_j for j in js]
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(*hyps)
        res = solver.check()
        if res != z3.sat:
            return [f"micro-step {t} ({res}): {[str(s) for s in node.steps]}"]
        looping = before["ph"] == enc.ADVANCE and before["aft"] == enc.AFTER_END
        ended = ended or after["aft"] == enc.AFTER_END
        gone = [
            r
            for r in range(bound.inputs)
            if before["views"]["op"]["wt"][r] and not after["views"]["op"]["wt"][r]
        ]
        takes = takes or (looping and bool(gone))
        before, xc = after, xc_after
    if reached is not None:
        for name in ("crash", "restore", "wait"):
            reached[name] += bool(m.reach[name])
        reached["end"] += ended
        reached["end takes"] += takes
        reached["excused"] += bool(xc)
    return []


#: how many random runs :func:`waiting_runs` draws, at most, per run it keeps
DRAWS = 200


def waiting_runs(
    bound: Bound, wanted: int, seed: int = 1, contract: Contract = ORDERED
) -> list[tuple[bounded.Shape, bounded.Node]]:
    """``wanted`` random runs of ``bound`` under ``ordered`` that leave an input waiting
    (the machine is run concretely first, which costs little beside the solver); fewer
    if that many are not among ``DRAWS`` times as many random runs."""
    rng = random.Random(seed)
    shapes = list(bounded.shapes(bound))
    out: list[tuple[bounded.Shape, bounded.Node]] = []
    for _ in range(DRAWS * wanted):
        if len(out) == wanted:
            break
        shape = rng.choice(shapes)
        node = bounded.random_run(shape, contract, bound, rng.randrange)
        m = machine_of(contract, bound, shape, node)
        m.run()
        if m.reach["wait"]:
            out.append((shape, node))
    return out


def ordered_runs(
    bound: Bound, sample: int, waiting: int, seed: int, contract: Contract = ORDERED
) -> list[tuple[bounded.Shape, bounded.Node]]:
    """``waiting`` random runs of ``bound`` under ``ordered`` that leave an input waiting,
    then ``sample`` random runs (0: every run, unless ``waiting`` runs were asked for)."""
    runs = waiting_runs(bound, waiting, seed, contract) if waiting else []
    if sample or not waiting:
        runs += runs_of(contract, bound, sample, seed)
    return runs


def check_runs(
    bound: Bound,
    sample: int = 0,
    variant: str = "",
    timeout_ms: int = 60_000,
    seed: int = 1,
    stop_after: int = 3,
    waiting: int = 0,
    excuse: bool = False,
    contract: Contract = ORDERED,
) -> pr.Outcome:
    """Every run of ``bound`` under ``ordered`` (``sample`` = 0) or ``sample`` random
    runs, and ``waiting`` random runs that leave an input waiting, each against the model
    (of ``variant``: a broken one may fail); stops after ``stop_after`` failing runs."""
    out = pr.Outcome(reached=dict.fromkeys(REACH, 0))
    o = pl.Options(variant=variant, excuse=excuse)

    def one(shape: bounded.Shape, node: bounded.Node) -> list[str]:
        return check_run(bound, shape, node, o, timeout_ms, out.reached, contract)

    runs = ordered_runs(bound, sample, waiting, seed, contract)
    return pr.check_each(runs, one, out, stop_after)
