"""Is every micro-step of :mod:`..encoding`'s machine a step of the
parametric model of :mod:`.parametric`?

For the runs of a small bound under ``seqnum`` (every run, or a random sample), the
concrete :class:`~.encoding.Machine` is driven micro-step by micro-step, as
:func:`~.encoding.run_concrete` does. Before and after each micro-step its state is read
(each key's position and history in both views, the marker, ``up``, the monitors' flags
and cells, the tick and every store slot) and bound to a pre- and a post-state of
:func:`.parametric.step`; the solver must find the move, the witnesses and the ghost
order that make the model's transition relation hold. A step the model cannot take is
a place where the model is not an over-approximation of the machine (its proofs would
then say nothing about the machine). Ticks are scaled by :data:`SCALE` (the model's
ticks are any increasing integers; the machine's are consecutive). The ghost ``era``
(restores so far, and per slot at its write) is computed alongside.

This is testing, not proof: it covers the runs it is given.

No command line of its own: ``verify`` runs it (:mod:`.parametric_engine`), the tests
drive it directly (tests/spec).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import z3

from replay_contract.model import bounded
from replay_contract.model.contracts import Contract
from replay_contract.model.contracts import contract as contract_named

from .. import encoding as enc
from .. import logic as lg
from ..agentterms import Plan
from ..bound import Bound
from ..monitors import flag
from . import parametric as ps

#: the factor from the machine's ticks to the model's
SCALE = 100

Snapshot = dict[str, Any]


def codes(term: Any) -> list[int]:
    """A history term (a cons list, the latest input outermost) as codes, oldest first."""
    out: list[int] = []
    while term != lg.NONE:
        _, _tag, rec, ver, rest, _ = term
        out.append(ps.code(rec, ver))
        term = rest
    return out[::-1]


def bools(values: Sequence[bool]) -> z3.ArrayRef:
    """An array from a position to a bool: ``values`` at ``0 .. len - 1``, false elsewhere."""
    a = z3.K(ps.INT, z3.BoolVal(False))
    for i, x in enumerate(values):
        a = z3.Store(a, i, x)
    return a


def hist_array(cs: Sequence[int]) -> z3.ArrayRef:
    """The model's history array of a list of codes."""
    a = z3.K(ps.INT, z3.IntVal(ps.BOT))
    for q, c in enumerate(cs):
        a = z3.Store(a, q, c)
    return a


def snapshot(m: enc.Machine) -> Snapshot:
    """What the model sees of the concrete machine's state."""
    views = {}
    for name, cells in (("op", m.op), ("sv", m.saved)):
        views[name] = {
            "nxt": [cells.cell("next", k) for k in range(m.k)],
            "H": [codes(cells.cell("history", k)) for k in range(m.k)],
            "marker": cells["marker"],
        }
    slots = {}
    for s in m.slots:
        if s.kind != "completion":
            continue
        slots[s.index] = {
            "pres": bool(s.present),
            "rec": s.record,
            "ver": s.version,
            "pos": s.position,
            "ent": s.entry,
            "tim": s.time,
            "void": bool(s.voided),
            "pre": codes(s.prefix) if s.present else [],
        }
    w = m.world
    return {
        "recorded": [[w.cell("recorded", k, q) for q in range(m.n)] for k in range(m.k)],
        "diverged": [[w.cell("diverged", k, q) for q in range(m.n)] for k in range(m.k)],
        "flag2": bool(w[flag("divergence-safeguard")]),
        "views": views,
        "slots": slots,
        "up": bool(w["up"]),
        "flag": bool(w[flag("no-stale-reuse")]),
        "now": m.time,
    }


class Monitored(Protocol):
    """A model state with the divergence-safeguard monitor's cells and flag (this
    module's and :mod:`.parametric_ordered`'s)."""

    recd: z3.ArrayRef
    divd: z3.ArrayRef
    flag2: z3.BoolRef


def monitor_cells(st: Monitored, snap: Snapshot) -> list[z3.BoolRef]:
    """The divergence-safeguard monitor of ``st`` is the snapshot's: its ``recorded`` and
    ``diverged`` cells (key -> position -> value, -1 where unset; a divergence's tick
    scaled) and its flag."""
    recd = z3.K(ps.INT, z3.K(ps.INT, z3.IntVal(-1)))
    divd = recd
    for k, (row_r, row_d) in enumerate(zip(snap["recorded"], snap["diverged"], strict=True)):
        ar = dr = z3.K(ps.INT, z3.IntVal(-1))
        for q, (x, y) in enumerate(zip(row_r, row_d, strict=True)):
            ar = z3.Store(ar, q, x)
            dr = z3.Store(dr, q, y if y < 0 else SCALE * y)
        recd, divd = z3.Store(recd, k, ar), z3.Store(divd, k, dr)
    return [st.recd == recd, st.divd == divd, st.flag2 == snap["flag2"]]


def machine_of(
    contract: Contract, bound: Bound, shape: bounded.Shape, node: bounded.Node
) -> enc.Machine:
    """The concrete machine of ``bound`` that plays the run ``node`` of ``shape``, before
    its first micro-step."""
    channel_of = {bounded.record_name(r): shape.channel[r] for r in range(shape.inputs)}
    env = enc.ScheduleEnv(enc.moves_of(node.steps, channel_of))
    m = enc.Machine(
        contract,
        shape.agent,
        bound,
        enc.concrete_shape(shape.channel, shape.key, shape.mode),
        env,
        enc.budget(contract, bound),
        enc.first_budget(contract, bound),
    )
    env.boundaries = m.boundaries
    return m


def runs_of(
    contract: Contract, bound: Bound, sample: int = 0, seed: int = 1
) -> list[tuple[bounded.Shape, bounded.Node]]:
    """Every run of ``bound`` under ``contract`` (``sample`` = 0), or ``sample`` random
    runs (of shapes drawn at random, from ``seed``)."""
    rng = random.Random(seed)
    shapes = list(bounded.shapes(bound))
    if not sample:
        return [(sh, node) for sh in shapes for node in bounded.runs(sh, contract, bound)]
    runs = []
    for _ in range(sample):
        shape = rng.choice(shapes)
        runs.append((shape, bounded.random_run(shape, contract, bound, rng.randrange)))
    return runs


def bind(st: ps.State, snap: Snapshot, era: int, slot_era: dict[int, int]) -> list[z3.BoolRef]:
    """The model's state ``st`` is the machine's snapshot ``snap``."""
    out: list[z3.BoolRef] = []
    for name in ("op", "sv"):
        v, data = getattr(st, name), snap["views"][name]
        for k, x in enumerate(data["nxt"]):
            out.append(v.nxt[k] == x)
        for k, cs in enumerate(data["H"]):
            out.append(v.H[k] == hist_array(cs))
        out.append(v.marker == SCALE * data["marker"])
    pres = z3.K(ps.INT, z3.BoolVal(False))
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
            st.pre[i] == hist_array(s["pre"]),
            st.sera[i] == slot_era[i],
        ]
    out.append(st.pres == pres)
    out += monitor_cells(st, snap)
    return out + world_cells(st, snap, era)


def world_cells(st: Any, snap: Snapshot, era: int) -> list[z3.BoolRef]:
    """The model's ``up``, no-stale-reuse flag, tick and era are the machine's (``st`` is
    either model's state)."""
    return [
        st.up == snap["up"],
        st.flag == snap["flag"],
        st.now == SCALE * snap["now"],
        st.era == era,
    ]


def check_run(
    contract: Contract,
    bound: Bound,
    shape: bounded.Shape,
    node: bounded.Node,
    o: ps.Options,
    timeout_ms: int,
) -> list[str]:
    """The first micro-step of one run the model cannot take (empty: it takes all)."""
    m = machine_of(contract, bound, shape, node)
    era, slot_era = 0, dict[int, int]()
    before = snapshot(m)
    for t in range(m.steps):
        m.micro_step(t)
        after = snapshot(m)
        info = m.decode[-1]
        restored = bool(info["idle"]) and info["main"] == enc.RESTORE and t in m.boundaries
        new_era = era + (1 if restored else 0)
        new_slot_era = dict(slot_era)
        for i, s in after["slots"].items():
            if s["pres"] and not before["slots"][i]["pres"]:
                new_slot_era[i] = era  # written by this step, before any restore in it
        a, b = ps.fresh_state("a"), ps.fresh_state("b")
        tr = ps.step(a, b, o)
        hyps = list(tr.cons)
        hyps += bind(a, before, era, slot_era) + bind(b, after, new_era, new_slot_era)
        hyps += [ps.keyOf(r) == shape.key[r] for r in range(shape.inputs)]
        ids = [z3.IntVal(i) for i in before["slots"]] + tr.slots
        hyps += [u(x) for u in tr.univ for x in ids]
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(*hyps)
        res = solver.check()
        if res != z3.sat:
            return [f"micro-step {t} ({res}): {[str(s) for s in node.steps]}"]
        before, era, slot_era = after, new_era, new_slot_era
    return []


def entries(agent: str) -> int:
    """How many entries the plan of ``agent`` has (the model's ``entries``)."""
    return len(Plan.of(bounded.AGENTS[agent]).entries)


@dataclass
class Outcome:
    """The runs checked, those with a micro-step the model cannot take, and (where the
    check counts them) how many runs reached each behaviour it names."""

    runs: int = 0
    failures: list[tuple[bounded.Shape, list[str]]] = field(default_factory=list)
    seconds: float = 0.0
    reached: dict[str, int] = field(default_factory=dict)


def report(title: str, done: Outcome) -> int:
    """Print a refinement check's outcome (one line, then one per failing run); the
    command's exit status: 1 when some micro-step is not a model step."""
    counted = ", ".join(f"{name} {n}" for name, n in done.reached.items())
    print(
        f"refinement {title}: {done.runs} runs checked, {len(done.failures)} with a "
        f"micro-step the model cannot take ({done.seconds:.1f} s)"
        + (f"; runs that reached {counted}" if counted else "")
    )
    for shape, bad in done.failures:
        print(f"  {shape}: {bad[0]}")
    return 1 if done.failures else 0


Out = TypeVar("Out", bound=Outcome)


def check_runs(
    bound: Bound,
    sample: int = 0,
    variant: str = "",
    timeout_ms: int = 60_000,
    seed: int = 1,
    stop_after: int = 3,
) -> Outcome:
    """Every run of ``bound`` under ``seqnum`` (``sample`` = 0) or ``sample`` random runs,
    each against the model (of contract ``variant``: a broken one must fail); stops after
    ``stop_after`` failing runs."""
    contract = contract_named("seqnum")

    def one(shape: bounded.Shape, node: bounded.Node) -> list[str]:
        o = ps.Options(entries=entries(shape.agent), variant=variant, safeguard=True)
        return check_run(contract, bound, shape, node, o, timeout_ms)

    return check_each(runs_of(contract, bound, sample, seed), one, Outcome(), stop_after)


def check_each(
    runs: Sequence[tuple[bounded.Shape, bounded.Node]],
    one: Callable[[bounded.Shape, bounded.Node], list[str]],
    out: Out,
    stop_after: int,
) -> Out:
    """``one`` on each run, into ``out``, until ``stop_after`` runs have failed."""
    t0 = time.perf_counter()
    for shape, node in runs:
        bad = one(shape, node)
        out.runs += 1
        if bad:
            out.failures.append((shape, bad))
            if len(out.failures) >= stop_after:
                break
    out.seconds = time.perf_counter() - t0
    return out
