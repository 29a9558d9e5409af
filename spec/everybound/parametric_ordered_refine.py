"""Is every micro-step of :mod:`..encoding`'s machine under ``ordered`` a
step of the parametric model of :mod:`.parametric_ordered`?

As :mod:`.parametric_refine` does for ``seqnum``: the concrete
:class:`~.encoding.Machine` is driven micro-step by micro-step on the runs of a small
bound (every run, or a random sample); before and after each micro-step its state is
read (each key's position, history, expected order, expected end and pending
divergence in both views, the marker, whether it is up and no crash point was reached,
the monitors' flags and cells (no-stale-reuse, divergence-safeguard), the tick and
every completion and order slot) and bound to a pre-
and a post-state of :func:`.parametric_ordered.step`; the solver must find the move,
the witnesses, the restore's scan and the ghosts that make the transition relation
hold. A micro-step the model cannot take is a place where the model is not an
over-approximation of the machine. Ticks are scaled by :data:`.parametric_refine.SCALE`;
the ghost ``era`` is computed alongside.

With ``--isolation`` and ``--outcome`` (the model's options of the same names), the
parts of the model they add are bound too: key-isolation's flag (the world's
``broken:key-isolation``), and per view and key the memory (``memory``), the
failure-free memory (``failure-free``) and outputs-equal (``outputs-equal``) cells of
:mod:`.monitors`, and per present completion what it read (its ``reads``) and, as a
check of the model's reading of a slot, its saved writes and output.

**Agent terms.** The machine's memories and outputs are concrete terms of
:mod:`.agentterms` (``write_term``, ``output_term``: a node tagged with the entry and
the kind, over the input's record and version and what the entry read); the model's
are applications of uninterpreted functions (:func:`.parametric_ordered.agent_term`).
A concrete term is encoded through the *same* functions (:func:`encode`): ``NONE`` is 0
(the model's initial memory), and a write or output node of entry ``e`` is
``agent<e>.write(code)`` / ``agent<e>.write(code, m)`` / ``agent<e>.output(code, m)``
of the input's code ``2 * record + version`` and the encoding of what it read. Alone
this is too weak: the solver could interpret the functions non-injectively (e.g. every
write as 0) and so equate terms the machine keeps apart, hiding a model that, say,
forgets the memory. So the functions are made to behave as the free term algebra the
machine uses, on the terms of the query: for every application ``f(x1, ..., xn)`` of an
agent function in it (the model's and the encoded ones alike) the query says
``tag(f(...)) = t_f`` (a number per function, and ``tag(0) = 0``) and ``proj_f_i(f(...)) =
xi``, with fresh functions ``tag`` and ``proj_f_i`` (:func:`free_algebra`). Two
different concrete terms are then different values (by induction on the terms: a
different top function or ``NONE`` changes the tag, a different argument the
projection), and every interpretation where the agent functions are injective with
disjoint ranges not containing 0 (the machine's) satisfies these ground facts: so a
micro-step that is a model step under the machine's interpretation passes, and one that
passes is a model step under an interpretation that keeps the query's different terms
apart. (Without these facts ``--variant forget-memory`` is not caught. Numbering the
concrete terms and fixing the functions only where a concrete term occurs would be
weaker: the model also applies them where the machine stores no term, e.g. to the
failure-free run's outputs, and those values could collide.) Only one-field agents
(``stateful``, ``chain``) are covered, as by the model's ``--outcome``.

This is testing, not proof: it covers the runs it is given.

No command line of its own: ``verify`` runs it (:mod:`.parametric_engine`), the tests
drive it directly (tests/spec).
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import Any

import z3

from replay_contract.model import bounded
from replay_contract.model.contracts import ORDERED, Contract

from .. import encoding as enc
from .. import logic as lg
from ..agentterms import Plan
from ..bound import Bound
from ..monitors import flag
from ..properties import KEY_ISOLATION
from . import parametric_ordered as po
from . import parametric_refine as pr
from .parametric import INT, code, keyOf
from .parametric_lost_refine import excused, ordered_runs
from .parametric_refine import (
    SCALE,
    Snapshot,
    bools,
    codes,
    entries,
    hist_array,
    machine_of,
    monitor_cells,
    world_cells,
)

#: what the machine did in a run, counted over the runs checked (``Machine.reach``:
#: a kept reuse, a crash, a restore, an input left waiting by its arrival, a kept
#: invalidation)
REACH = ("reuse", "crash", "restore", "wait", "invalidation")


def snapshot(m: enc.Machine) -> Snapshot:
    """What the model sees of the concrete machine's state."""
    views = {}
    for name, cells in (("op", m.op), ("sv", m.saved)):
        views[name] = {
            "nxt": [cells.cell("next", k) for k in range(m.k)],
            "H": [codes(cells.cell("history", k)) for k in range(m.k)],
            "marker": cells["marker"],
            "ee": [cells.cell("expected-end", k) for k in range(m.k)],
            "X": [
                [
                    2 * cells.cell("expected", k, q) + cells.cell("expected-version", k, q)
                    for q in range(m.n)
                ]
                for k in range(m.k)
            ],
            "da": [cells.cell("diverge-at", k) for k in range(m.k)],
            "M": [cells.cell("memory", k, 0) for k in range(m.k)],
            "FM": [cells.cell("failure-free", k, 0) for k in range(m.k)],
            "OE": [bool(cells.cell("outputs-equal", k)) for k in range(m.k)],
            "ac": [
                code(r, cells.cell("accepted-version", r))
                for r in range(m.n)
                if cells.cell("accepted", r)
            ],
        }
    slots = {}
    for s in m.slots:
        slots[s.index] = {
            "pres": bool(s.present),
            "rec": s.record,
            "ver": s.version,
            "pos": s.position,
            "ent": s.entry if s.kind == "completion" else po.ORDER,
            "tim": s.time,
            "void": bool(s.voided),
            "pre": codes(s.prefix) if s.present and s.kind == "completion" else None,
            "ord": bool(s.order),
            "entry": s.entry,
            "reads": s.reads,
            "writes": dict(s.writes),
            "output": s.output,
        }
    w = m.world
    entries = len(m.plan.entries)
    return {
        "saved-once": [
            [
                [bool(w.cell("saved-once", r, v * entries + e)) for e in range(entries)]
                for v in (0, 1)
            ]
            for r in range(m.n)
        ],
        "repeated": [bool(w.cell("repeated", r)) for r in range(m.n)],
        "excused": excused(m),
        "recorded": [[w.cell("recorded", k, q) for q in range(m.n)] for k in range(m.k)],
        "diverged": [[w.cell("diverged", k, q) for q in range(m.n)] for k in range(m.k)],
        "flag2": bool(w[flag("divergence-safeguard")]),
        "flag3": bool(w[flag(KEY_ISOLATION)]),
        "views": views,
        "slots": slots,
        "up": bool(w["up"]) and bool(m.live()),
        "flag": bool(w[flag("no-stale-reuse")]),
        "now": m.time,
    }


#: the number of the agent functions' tags that stands for ``NONE`` (the value 0)
NONE_TAG = 0


def encode(plan: Plan, term: Any) -> z3.ArithRef:
    """A concrete memory value or output of :mod:`.agentterms` as a model value: through
    the model's agent functions (``NONE`` is 0)."""
    if term == lg.NONE:
        return z3.IntVal(0)
    _, tag, record, version, read, _ = term
    index, fld = divmod(tag - 100, 32)
    entry = plan.entries[index]
    cd = z3.IntVal(code(record, version))
    return po.agent_term(entry, "output" if fld == 31 else "write", cd, encode(plan, read))


def agent_tags(plan: Plan) -> dict[str, int]:
    """The tag of each agent function (the concrete terms' tags: spec/agentterms.py)."""
    out = {}
    for e in plan.entries:
        out[f"agent{e.index}.write"] = 100 + 32 * e.index
        out[f"agent{e.index}.output"] = 100 + 32 * e.index + 31
    return out


def applications(exprs: Sequence[z3.ExprRef], names: Container[str]) -> list[z3.ExprRef]:
    """The applications of the functions named ``names`` in ``exprs`` (each once)."""
    seen: set[int] = set()
    out: list[z3.ExprRef] = []
    todo = list(exprs)
    while todo:
        e = todo.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_quantifier(e):
            todo.append(e.body())
            continue
        if not z3.is_app(e):
            continue
        if e.decl().name() in names:
            out.append(e)
        todo.extend(e.children())
    return out


def free_algebra(plan: Plan, exprs: Sequence[z3.ExprRef]) -> list[z3.BoolRef]:
    """The agent functions are injective with disjoint ranges not containing 0, at every
    application in ``exprs``: ``tag`` and projections (see the module's docstring)."""
    tags = agent_tags(plan)
    tag = z3.Function("term.tag", INT, INT)
    out: list[z3.BoolRef] = [tag(z3.IntVal(0)) == NONE_TAG]
    for app in applications(exprs, tags):
        name = app.decl().name()
        out.append(tag(app) == tags[name])
        for i, arg in enumerate(app.children()):
            out.append(z3.Function(f"term.{name}.{i}", INT, INT)(app) == arg)
    return out


def bind(
    st: po.OState,
    snap: Snapshot,
    era: int,
    slot_era: dict[int, int],
    o: po.Options | None = None,
) -> list[z3.BoolRef]:
    """The model's state ``st`` is the machine's snapshot ``snap`` (with ``o.isolation``
    and ``o.outcome``, also the parts of the model those add)."""
    o = o or po.Options()
    plan = po.plan_of(o)
    out: list[z3.BoolRef] = []
    for name in ("op", "sv"):
        v, data = getattr(st, name), snap["views"][name]
        out.append(v.marker == SCALE * data["marker"])
        for k, x in enumerate(data["nxt"]):
            out += [v.nxt[k] == x, v.ee[k] == data["ee"][k], v.da[k] == data["da"][k]]
            out.append(v.H[k] == hist_array(data["H"][k]))
            row = z3.K(INT, po.NO_CODE)
            for q, c in enumerate(data["X"][k]):
                row = z3.Store(row, q, c)
            out.append(v.X[k] == row)
            if o.outcome:
                out += [
                    v.M[k] == encode(plan, data["M"][k]),
                    v.FM[k] == encode(plan, data["FM"][k]),
                    v.OE[k] == data["OE"][k],
                ]
    pres = z3.K(INT, z3.BoolVal(False))
    for i, s in snap["slots"].items():
        if not s["pres"]:
            continue
        pres = z3.Store(pres, i, True)
        out += [
            st.rec[i] == s["rec"],
            st.ver[i] == s["ver"],
            st.pos[i] == s["pos"],
            st.ent[i] == s["ent"],
            st.tim[i] == SCALE * s["tim"],
            st.void[i] == s["void"],
            st.ord[i] == s["ord"],
            st.sera[i] == slot_era[i],
        ]
        if s["pre"] is not None:
            out.append(st.pre[i] == hist_array(s["pre"]))
        if o.outcome and s["ent"] >= 0:
            # what it read; its writes and output are the terms of its input and reads
            entry = plan.entries[s["ent"]]
            if entry.reads:
                out.append(st.rd[i] == encode(plan, s["reads"][0]))
            cd = z3.IntVal(code(s["rec"], s["ver"]))
            for fld in entry.writes:
                term = po.agent_term(entry, "write", cd, st.rd[i])
                out.append(term == encode(plan, s["writes"][fld]))
            if entry.output:
                term = po.agent_term(entry, "output", cd, st.rd[i])
                out.append(term == encode(plan, s["output"]))
    out.append(st.pres == pres)
    out += monitor_cells(st, snap)
    if o.isolation:
        out.append(st.flag3 == snap["flag3"])
    if o.complete:
        # complete-reuse's cells, and the ghost excuse as the machine's state defines it
        for name in ("op", "sv"):
            accepted = z3.K(INT, z3.BoolVal(False))
            for cd in snap["views"][name]["ac"]:
                accepted = z3.Store(accepted, cd, True)
            out.append(getattr(st, name).ac == accepted)
        out.append(bools(snap["repeated"]) == st.REP)
        for r, by_version in enumerate(snap["saved-once"]):
            for v, by_entry in enumerate(by_version):
                for e, once in enumerate(by_entry):
                    out.append(st.SO[code(r, v)][e] == once)
        out += [st.XC[k] == x for k, x in enumerate(snap["excused"])]
    return out + world_cells(st, snap, era)


def check_run(
    contract: Contract,
    bound: Bound,
    shape: bounded.Shape,
    node: bounded.Node,
    o: po.Options,
    timeout_ms: int,
    reached: dict[str, int] | None = None,
) -> list[str]:
    """The first micro-step of one run the model cannot take (empty: it takes all);
    counts in ``reached`` what the run reached (when it is taken in full)."""
    m = machine_of(contract, bound, shape, node)
    era, slot_era = 0, dict[int, int]()
    before = snapshot(m)
    keys = [z3.IntVal(k) for k in range(bound.keys)]
    positions = [z3.IntVal(q) for q in range(bound.inputs + 1)]
    for t in range(m.steps):
        m.micro_step(t)
        after = snapshot(m)
        info = m.decode[-1]
        restored = bool(info["idle"]) and info["main"] == enc.RESTORE and t in m.boundaries
        new_era = era + (1 if restored else 0)
        new_slot_era = dict(slot_era)
        for i, s in after["slots"].items():
            if s["pres"] and not before["slots"][i]["pres"]:
                new_slot_era[i] = new_era  # written by this step, after its restore
        a, b = po.fresh_state("a"), po.fresh_state("b")
        tr = po.step(a, b, o)
        assert tr.scan_end is not None
        hyps = list(tr.cons)
        hyps += bind(a, before, era, slot_era, o) + bind(b, after, new_era, new_slot_era, o)
        hyps += [keyOf(r) == shape.key[r] for r in range(shape.inputs)]
        ids = [z3.IntVal(i) for i in before["slots"]] + tr.slots
        ks = keys + tr.keys
        qs = [*positions, *(tr.scan_end[k] for k in keys)]
        hyps += [u(x) for u in tr.univ_s for x in ids]
        hyps += [u(k) for u in tr.univ_k for k in ks]
        hyps += [u(k, q) for u in tr.univ_kq for k in keys for q in qs]
        hyps += [u(x, k) for u in tr.univ_sk for x in ids for k in keys]
        hyps += [u(x, k, q) for u in tr.univ_skq for x in ids for k in keys for q in qs]
        if o.outcome:
            hyps += free_algebra(po.plan_of(o), hyps)
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(*hyps)
        res = solver.check()
        if res != z3.sat:
            return [f"micro-step {t} ({res}): {[str(s) for s in node.steps]}"]
        before, era, slot_era = after, new_era, new_slot_era
    if reached is not None:
        for name in REACH:
            reached[name] += bool(m.reach[name])
    return []


def check_runs(
    bound: Bound,
    sample: int = 0,
    variant: str = "",
    timeout_ms: int = 60_000,
    seed: int = 1,
    stop_after: int = 3,
    isolation: bool = False,
    outcome: bool = False,
    complete: bool = False,
    waiting: int = 0,
    contract: Contract = ORDERED,
) -> pr.Outcome:
    """Every run of ``bound`` under ``ordered`` (``sample`` = 0) or ``sample`` random
    runs, and ``waiting`` random runs that leave an input waiting, each against the model
    (of ``variant``: a broken one may fail; with ``isolation``, ``outcome`` and
    ``complete``, the model's options of those names, and their parts bound too); stops
    after ``stop_after`` failing runs."""
    out = pr.Outcome(reached=dict.fromkeys(REACH, 0))

    def one(shape: bounded.Shape, node: bounded.Node) -> list[str]:
        o = po.Options(
            entries=entries(shape.agent),
            variant=variant,
            safeguard=True,
            isolation=isolation,
            outcome=outcome,
            complete=complete,
            early=contract.record_order == "before-first-tool-call",
        )
        return check_run(contract, bound, shape, node, o, timeout_ms, out.reached)

    runs = ordered_runs(bound, sample, waiting, seed, contract)
    return pr.check_each(runs, one, out, stop_after)
