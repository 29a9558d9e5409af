"""Bounded proofs and counterexamples: the solver side of ``replay-contract verify``.

For one contract and a bound, :func:`verify_contract` builds the encoding of
:mod:`.encoding` once per agent of the bound and asks Z3, for each property, whether
some run of the bound sets the property's flag. No such run: ``proved`` up to the
bound. A run: it is decoded into a scenario (:class:`replay_contract.model.bounded.Shape`
plus its schedule), replayed through the model, and reported as a ``counterexample``
only when the model's trace breaks the same property; otherwise
:class:`EncodingMismatch` is raised, loudly. The solver running out of time gives
``unknown`` with Z3's reason. The properties are first asked about together (whether
some run sets any of their flags): where none is broken, as for a sound contract, that
one query proves them all, about as fast as the hardest of them alone.

Next to the proofs, :func:`verify_contract` checks that the interesting behaviour is
reachable within the bound (a crash, a restore, a reuse, a wait, an invalidation), and,
on request, that the number of micro-steps unrolled is enough for every scenario of
the bound (the machine always finishes). Both searches, for a counterexample and for a
behaviour, are first pinned to random runs of the model that show it
(:mod:`.witness`), and search freely only where none does.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing as mp
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import z3
from attrs import define, evolve, field, frozen

from replay_contract.model import bounded
from replay_contract.model.contracts import Contract
from replay_contract.model.files import slug
from replay_contract.model.run import Run, simulate
from replay_contract.model.scenario import Scenario, Step
from replay_contract.model.trace import Trace

from . import encoding as enc
from . import induction, witness
from . import logic as lg
from .agentterms import Plan
from .bound import ENGINES, Bound
from .induction import Check, ClassOutcome, Outcome
from .properties import BOUNDED_WAITING, PROPERTIES, check, check_all
from .workers import Key, Workers, die_with_parent

BEHAVIOURS = ("crash", "restore", "reuse", "wait", "invalidation")


class EncodingMismatch(AssertionError):
    """A counterexample of the encoding that the model does not reproduce: a bug."""


@frozen
class Counterexample:
    scenario: Scenario
    run: Run
    explanation: str
    path: Path | None = None


@define
class Result:
    contract: str
    property: str
    verdict: str
    bound: Bound
    seconds: float
    reason: str = ""
    counterexample: Counterexample | None = None
    reachable: dict[str, str] = field(factory=dict)
    #: per agent: the engine whose answer the verdict is (``parametric`` or ``induction``
    #: proofs, or the ``unrolling``'s proofs, counterexamples and unknowns)
    engines: dict[str, str] = field(factory=dict)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "contract": self.contract,
            "property": self.property,
            "verdict": self.verdict,
            "bound": str(self.bound),
            "seconds": round(self.seconds, 3),
        }
        if self.reason:
            data["reason"] = self.reason
        if self.counterexample is not None:
            data["counterexample"] = (
                str(self.counterexample.path) if self.counterexample.path else None
            )
            data["explanation"] = self.counterexample.explanation
        data["reachable"] = self.reachable
        data["engines"] = self.engines
        return data


Progress = Callable[[str], None]


@define
class Problem:
    """The encoding of one contract and agent, with a solver holding it."""

    contract: Contract
    agent: str
    bound: Bound
    machine: enc.Machine
    solver: z3.Solver
    build_seconds: float


def build(
    contract: Contract,
    agent: str,
    bound: Bound,
    finished: bool = True,
    epoch: int | None = None,
    first: int | None = None,
) -> Problem:
    started = time.monotonic()
    solver = z3.Then("simplify", "propagate-values", "solve-eqs", "elim-uncnstr", "smt").solver()
    shape = enc.symbolic_shape(bound, solver.add)
    machine = enc.Machine(
        contract,
        agent,
        bound,
        shape,
        enc.symbolic_env,
        epoch if epoch is not None else enc.budget(contract, bound),
        first if first is not None else enc.first_budget(contract, bound),
        one_checkpoint=True,
    )
    machine.run()
    for a in machine.assumptions:
        solver.add(a)
    if finished:
        solver.add(lg.lift_bool(machine.finished))
    return Problem(contract, agent, bound, machine, solver, time.monotonic() - started)


#: Seconds a solver query may take unless told (``verify --timeout``): the largest queries
#: of the default bound's step classes take two minutes and more.
QUERY_TIMEOUT = 600.0

#: Seconds a query pinned to a witness (:mod:`.witness`: a run that breaks a property or
#: reaches a behaviour) may take before the free search.
WITNESS_TIMEOUT = 60.0

#: Seconds between two "still solving" lines of a long solver query.
HEARTBEAT = 30.0


@contextlib.contextmanager
def _heartbeat(what: str) -> Iterator[None]:
    """Says every :data:`HEARTBEAT` seconds that ``what`` is still running, until the
    block ends: a query may take minutes, and Z3 gives no progress of its own."""
    if _progress is None:  # nobody listens (--quiet)
        yield
        return
    every = HEARTBEAT
    done = threading.Event()
    started = time.monotonic()

    def beat() -> None:
        while not done.wait(every):
            _say(f"{what}: still solving ({time.monotonic() - started:.0f} s)")

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _article(noun: str) -> str:
    return "an" if noun[0] in "aeiou" else "a"


def _check(
    problem: Problem,
    goal: Any,
    timeout: float | None,
    what: str,
    given: Sequence[z3.BoolRef] = (),
) -> tuple[z3.CheckSatResult, str]:
    """Is there a run of the problem where ``goal`` holds (and ``given``)?"""
    solver = problem.solver
    if timeout is not None:
        solver.set("timeout", max(1, int(timeout * 1000)))
    with _heartbeat(f"{problem.contract.name} / {what} / {problem.agent}"):
        result = solver.check(lg.lift_bool(goal), *given)
    reason = solver.reason_unknown() if result == z3.unknown else ""
    return result, reason


# -- decoding and replay -------------------------------------------------------------


def decode(problem: Problem, model: z3.ModelRef) -> tuple[bounded.Shape, list[Step]]:
    """The scenario of a solver model: the shape and the schedule of moves."""
    m, bound = problem.machine, problem.bound

    def value(x: Any) -> Any:
        if isinstance(x, bool | int):
            return x
        v = model.eval(x, model_completion=True)
        if z3.is_true(v):
            return True
        if z3.is_false(v):
            return False
        return lg.int_value(model, x)

    n = bound.inputs
    names: tuple[bounded.Mode, ...] = ("same", "lost", "changed")
    shape = bounded.Shape(
        tuple(value(c) for c in m.shape.channel),
        tuple(value(k) for k in m.shape.key),
        tuple(names[value(x)] for x in m.shape.mode),
        problem.agent,
    )
    steps: list[Step] = []
    for info in m.decode:
        if not value(info["idle"]):
            continue
        main = value(info["main"])
        if main == enc.NOTHING:
            continue
        if value(info["checkpoint"]):
            steps.append(Step("checkpoint"))
        if value(info["crash"]):
            steps.append(Step("crash"))
        cut = value(info["cut"])
        crash_after = None if cut < 0 else cut
        if main == enc.DELIVER:
            steps.append(Step("deliver", bounded.record_name(value(info["record"])), crash_after))
        elif main == enc.RESTORE:
            steps.append(Step("restore", None, crash_after))
        elif main == enc.TIMEOUT:
            steps.append(Step("timeout"))
        else:
            break
    assert len(shape.channel) == n
    return shape, steps


def replay(
    problem: Problem, prop: str, shape: bounded.Shape, steps: Sequence[Step]
) -> Counterexample:
    """Run a decoded counterexample through the model; it must break ``prop``."""
    name = f"{problem.contract.name}-{prop}"
    description = (
        f"Counterexample found by verify at bound {problem.bound}: "
        f"{problem.contract.name} breaks {prop}."
    )
    scenario = shape.scenario(steps, name, description)
    try:
        run = simulate(scenario, problem.contract)
    except ValueError as exc:
        raise EncodingMismatch(
            f"{name}: the model refuses the decoded schedule "
            f"{[str(s) for s in steps]} of {shape}: {exc}"
        ) from None
    verdict = check(prop, run.trace)
    if verdict.holds:
        raise EncodingMismatch(
            f"{name}: the decoded run {[str(s) for s in steps]} of "
            f"{shape} does not break {prop} in the model"
        )
    return reduced(problem.contract, prop, shape, scenario)


def reduced(
    contract: Contract, prop: str, shape: bounded.Shape, scenario: Scenario
) -> Counterexample:
    """``scenario``, a run of ``shape`` that breaks ``prop`` in the model, shrunk and
    simplified, then replayed through the model once more."""
    shape, steps = simplify(shape, shrink(scenario, contract, prop), contract, prop)
    small = shape.scenario(steps, scenario.name, scenario.description)
    run = simulate(small, contract)
    verdict = check(prop, run.trace)
    assert not verdict.holds, "a reduced counterexample must still break its property"
    return Counterexample(small, run, verdict.explanation)


def simplify(
    shape: bounded.Shape, steps: list[Step], contract: Contract, prop: str
) -> tuple[bounded.Shape, list[Step]]:
    """A smaller scenario that still breaks ``prop`` in the model: records dropped (with
    their deliveries) and records made to replay the same, one at a time while the
    violation stays; the schedule is shrunk again after each change."""

    def breaks(candidate: bounded.Shape, schedule: list[Step]) -> bool:
        return _breaks(candidate.scenario(schedule), contract, prop)

    changed = True
    while changed:
        changed = False
        for r in range(shape.inputs - 1, -1, -1):
            if shape.inputs > 1:
                candidate, schedule = _without(shape, steps, r)
                found = (
                    schedule
                    if breaks(candidate, schedule)
                    else _search(candidate, contract, prop, _crashes(steps))
                )
                if found is not None:
                    shape, steps, changed = candidate, found, True
                    break
            if shape.mode[r] != "same":
                mode = (*shape.mode[:r], "same", *shape.mode[r + 1 :])
                candidate = evolve(shape, mode=mode)
                if breaks(candidate, steps):
                    shape, changed = candidate, True
                    break
        if changed:
            steps = shrink(shape.scenario(steps), contract, prop)
    return shape, steps


#: The most runs of a smaller shape :func:`simplify` tries when the schedule without a
#: record's deliveries no longer breaks the property: all of them for two or three
#: records and one crash (328 and 1,312 runs with one key), not all for two crashes
#: (about 20,000 with agent ``chain``), which bounds the cost of a removal that fails.
SEARCHED_RUNS = 5_000


def _crashes(steps: Sequence[Step]) -> int:
    return sum(1 for s in steps if s.kind == "crash" or s.crash_after is not None)


def _search(shape: bounded.Shape, contract: Contract, prop: str, crashes: int) -> list[Step] | None:
    """The schedule of a run of ``shape`` with at most ``crashes`` crashes that breaks
    ``prop`` in the model, if one is among the first :data:`SEARCHED_RUNS` runs.

    The schedule of a counterexample depends on the solver's model, which depends on
    what the process asked the solver before; without a record's deliveries it may no
    longer break the property where another schedule of the same records does. This
    keeps the scenario the smallest whatever schedule the solver gave."""
    within = Bound(
        shape.inputs,
        max(shape.channel) + 1,
        max(shape.key) + 1,
        crashes,
        sum(1 for m in shape.mode if m != "same"),
        (shape.agent,),
    )
    for count, node in enumerate(bounded.runs(shape, contract, within)):
        if count >= SEARCHED_RUNS:
            return None
        if not check(prop, Trace(node.world.agent, contract.basis, node.world.events)).holds:
            return [s for s in node.steps if s.kind != "end"]
    return None


def _without(shape: bounded.Shape, steps: list[Step], r: int) -> tuple[bounded.Shape, list[Step]]:
    """``shape`` without record ``r`` (the others renumbered, channels and keys renamed
    in order of first appearance) and ``steps`` without its deliveries."""
    keep = [q for q in range(shape.inputs) if q != r]
    channels: dict[int, int] = {}
    keys: dict[int, int] = {}
    for q in keep:
        channels.setdefault(shape.channel[q], len(channels))
        keys.setdefault(shape.key[q], len(keys))
    smaller = evolve(
        shape,
        channel=tuple(channels[shape.channel[q]] for q in keep),
        key=tuple(keys[shape.key[q]] for q in keep),
        mode=tuple(shape.mode[q] for q in keep),
    )
    names = {bounded.record_name(q): bounded.record_name(i) for i, q in enumerate(keep)}
    schedule = [
        evolve(step, record=names[step.record]) if step.record else step
        for step in steps
        if step.record != bounded.record_name(r)
    ]
    return smaller, schedule


def _breaks(scenario: Scenario, contract: Contract, prop: str) -> bool:
    """Whether the model runs ``scenario`` and the run breaks ``prop``."""
    try:
        run = simulate(scenario, contract)
    except ValueError:
        return False
    return not check(prop, run.trace).holds


def shrink(scenario: Scenario, contract: Contract, prop: str) -> list[Step]:
    """A shorter schedule that still breaks ``prop`` in the model (steps dropped one at
    a time while the violation stays)."""
    steps = list(scenario.schedule)

    def breaks(candidate: list[Step]) -> bool:
        return _breaks(scenario.with_schedule(tuple(candidate)), contract, prop)

    changed = True
    while changed:
        changed = False
        for i in range(len(steps) - 1, -1, -1):
            candidate = steps[:i] + steps[i + 1 :]
            if breaks(candidate):
                steps, changed = candidate, True
                break
            if steps[i].crash_after is not None:
                plain = [
                    *steps[:i],
                    Step(steps[i].kind, steps[i].record),
                    Step("crash"),
                    *steps[i + 1 :],
                ]
                if steps[i].kind == "deliver" and breaks(plain):
                    steps, changed = plain, True
                    break
    return steps


# -- verifying a contract ------------------------------------------------------------


def verify_contract(
    contract: Contract,
    bound: Bound,
    properties: Sequence[str] | None = None,
    timeout: float | None = QUERY_TIMEOUT,
    reachability: bool = True,
    progress: Progress | None = None,
    workers: int | None = None,
    engine: str = "unrolling",
) -> list[Result]:
    """Every property of ``properties`` for one contract at one bound (default: all of
    them, but ``bounded-waiting`` only at a bound with a ``timeout`` step; asked for at a
    bound without one, it is ``unknown``, vacuous).

    Each agent of the bound is its own encoding and solver; with more than one worker
    (default: one per agent, at most one per core) they run in parallel processes.
    With ``engine="induction"``, the properties :func:`.induction.inductive` gives are
    first proved by induction (:mod:`.induction`); the unrolling answers for the rest.
    There each step class of each agent is a job of its own (default: at most one
    worker per core), the costliest first (:func:`_classes_in_parallel`). With
    ``engine="parametric"`` (opt-in), the parametric steps that fit the contract
    (:mod:`.everybound.parametric_engine`) go first, as proofs for every bound; what
    they leave goes on as with ``induction``.
    """
    global _progress
    if properties is None:
        properties = [p for p in PROPERTIES if bound.timeouts or p != BOUNDED_WAITING]
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r} (known: {', '.join(ENGINES)})")
    _progress = progress  # forked workers inherit it and report as they go
    by_step: dict[tuple[str, str], tuple[bool, float, str]] = {}
    if engine == "parametric":
        from .everybound import parametric_engine  # opt-in: hand-written second models

        by_step = parametric_engine.prove(contract, bound, properties, timeout, workers, progress)
        for (agent, prop), (ok, _, why) in sorted(by_step.items()):
            if not ok:
                _say(
                    f"{contract.name} / {prop} / {agent}: not proved by its parametric step "
                    f"({why}); induction"
                )
        engine = "induction"  # for what the parametric steps leave
    jobs = [
        (
            contract,
            agent,
            bound,
            tuple(p for p in properties if not by_step.get((agent, p), (False,))[0]),
            timeout,
            reachability,
            engine,
        )
        for agent in bound.agents
    ]
    tasks = len(jobs)
    if engine == "induction":
        tasks *= len(induction.step_classes(contract, bound))
    count = min(tasks, workers or os.cpu_count() or 1)
    try:
        if count > 1 and "fork" in mp.get_all_start_methods():
            if engine == "induction":
                outcomes = _classes_in_parallel(jobs, count, len(properties))
            else:
                outcomes = _in_parallel(jobs, count, len(properties))
        else:
            outcomes = []
            for job in jobs:
                outcomes.append(_verify_agent(*job))
                if outcomes[-1].refutes_all:
                    break  # every property has its counterexample: the others add nothing
    finally:
        _progress = None
    results = {p: Result(contract.name, p, "proved", bound, 0.0) for p in properties}
    for (agent, prop), (ok, seconds, _) in by_step.items():
        results[prop].seconds += seconds
        if ok:
            results[prop].engines[agent] = "parametric"
    reach: dict[str, str] = dict.fromkeys(
        BEHAVIOURS, "unreachable" if reachability else "not checked"
    )
    for outcome in outcomes:
        for prop, found in outcome.results.items():
            result = results[prop]
            result.seconds += found.seconds
            result.engines.update(found.engines)
            if result.verdict == "counterexample" or found.verdict == "proved":
                continue
            if found.verdict == "counterexample" or result.verdict == "proved":
                result.verdict, result.reason = found.verdict, found.reason
                result.counterexample = found.counterexample
        for behaviour, seen in outcome.reach.items():
            if reach[behaviour] != "reached" and seen != "unreachable":
                reach[behaviour] = seen
    for r in results.values():
        r.reachable = dict(reach)
        missing = [b for b in ("crash", "restore") if reach[b] != "reached"]
        if r.verdict == "proved" and reachability and missing:
            r.verdict = "unknown"
            r.reason = f"vacuous: no {' and no '.join(missing)} is reachable within the bound"
        if r.verdict == "proved" and r.property == BOUNDED_WAITING and not bound.timeouts:
            r.verdict = "unknown"
            r.reason = "vacuous: the bound has no timeout step (add timeouts=1 to the bound)"
    return list(results.values())


def reachability(
    contract: Contract,
    bound: Bound,
    timeout: float | None = QUERY_TIMEOUT,
    progress: Progress | None = None,
) -> dict[str, str]:
    """Only the reachability checks of :func:`verify_contract`, for a bound whose
    verdicts are known otherwise (a proof for every bound): whether each behaviour is
    reached by some run of the bound, of any agent."""
    global _progress
    _progress = progress
    try:
        reach = dict.fromkeys(BEHAVIOURS, "unreachable")
        for agent in bound.agents:
            outcome = _unroll(contract, agent, bound, (), timeout, True, {}, {})
            for behaviour, seen in outcome.reach.items():
                if reach[behaviour] != "reached" and seen != "unreachable":
                    reach[behaviour] = seen
            if all(v == "reached" for v in reach.values()):
                break
    finally:
        _progress = None
    return reach


@frozen
class AgentOutcome:
    """What the encoding of one agent gives: per property, and per behaviour checked."""

    results: dict[str, Result]
    reach: dict[str, str]

    @property
    def refutes_all(self) -> bool:
        """Every property has a counterexample and every behaviour checked is reached:
        the other agents could add nothing. (An agent left no property to check, all
        proved by parametric steps, refutes nothing.)"""
        return (
            bool(self.results)
            and all(r.verdict == "counterexample" for r in self.results.values())
            and all(v == "reached" for v in self.reach.values())
        )


Job = tuple[Contract, str, Bound, tuple[str, ...], float | None, bool, str]

#: The progress of the ``verify_contract`` call running; forked workers inherit it, so
#: each agent reports its steps as they happen, not when it is done.
_progress: Progress | None = None


def _say(message: str) -> None:
    if _progress is not None:
        _progress(message)


def _in_parallel(jobs: list[Job], workers: int, properties: int) -> list[AgentOutcome]:
    """The outcome of each job (in job order) from a pool of forked processes. When one
    agent has a counterexample for every property, the others are stopped: they could
    only add counterexamples, and one per property is enough."""
    with mp.get_context("fork").Pool(workers, die_with_parent, (os.getpid(),)) as pool:
        pending = [pool.apply_async(_verify_agent, job) for job in jobs]
        done: dict[int, AgentOutcome] = {}
        while len(done) < len(pending):
            for i, job in enumerate(pending):
                if i not in done and job.ready():
                    done[i] = job.get()
                    if properties and done[i].refutes_all:
                        pool.terminate()
                        return [done[i]]
            time.sleep(0.05)
    return [done[i] for i in range(len(pending))]


def _verify_agent(
    contract: Contract,
    agent: str,
    bound: Bound,
    properties: tuple[str, ...],
    timeout: float | None,
    reachability: bool,
    engine: str = "unrolling",
) -> AgentOutcome:
    """Every property and the reachability checks on the encoding of one agent."""
    by_induction, spent = (
        _induction(contract, agent, bound, properties, timeout)
        if engine == "induction"
        else ({}, {})
    )
    return _unroll(contract, agent, bound, properties, timeout, reachability, by_induction, spent)


def _unroll(
    contract: Contract,
    agent: str,
    bound: Bound,
    properties: tuple[str, ...],
    timeout: float | None,
    reachability: bool,
    by_induction: dict[str, Result],
    spent: dict[str, float],
) -> AgentOutcome:
    """The unrolling's part of :func:`_verify_agent`: the properties not proved by
    induction (``by_induction``; ``spent``: the seconds of those it tried) and the
    reachability checks."""
    rest = tuple(p for p in properties if p not in by_induction)
    results = dict(by_induction)
    if not rest and not reachability:
        return AgentOutcome(results, {})
    _say(f"{contract.name}: encoding agent {agent!r} at {bound}")
    problem = build(contract, agent, bound)
    share = problem.build_seconds / max(len(rest), 1)
    _say(
        f"{contract.name} / {agent}: {len(problem.machine.decode)} micro-steps, "
        f"{len(problem.machine.slots)} store slots, built in {problem.build_seconds:.1f} s"
    )
    for prop in rest:
        seconds = share + spent.get(prop, 0.0)  # with a failed induction's share
        results[prop] = Result(
            contract.name, prop, "proved", bound, seconds, engines={agent: "unrolling"}
        )
    started = time.monotonic()
    hints = witness.find(
        contract, agent, bound, problem.machine, BEHAVIOURS if reachability else (), rest
    )
    searching = time.monotonic() - started
    _say(
        f"{contract.name} / {agent}: witnesses of {', '.join(sorted(hints)) or 'nothing'} "
        f"among random runs ({searching:.1f} s)"
    )
    monitors = problem.machine.monitors
    # a property a random run breaks: the solver under that run's values, so that the
    # counterexample is a run of the encoding (decoded and replayed as any other)
    witnessed: dict[str, z3.ModelRef] = {}
    for prop in rest:
        results[prop].seconds += searching / (len(rest) + reachability)
        if prop in hints:
            started = time.monotonic()
            pinned = min(timeout or WITNESS_TIMEOUT, WITNESS_TIMEOUT)
            outcome, _ = _check(problem, monitors.broken(prop), pinned, prop, hints[prop])
            if outcome == z3.sat:
                witnessed[prop] = problem.solver.model()
            results[prop].seconds += time.monotonic() - started
    screened = tuple(p for p in rest if p not in witnessed)
    alone = _screen(problem, screened, timeout, results) if screened else set()
    for prop in rest:
        result = results[prop]
        if prop not in alone and prop not in witnessed:
            _say(f"{contract.name} / {prop} / {agent}: proved ({result.seconds:.1f} s)")
            continue
        started = time.monotonic()
        if prop in witnessed:
            outcome, found = z3.sat, witnessed[prop]
        else:
            outcome, reason = _check(problem, monitors.broken(prop), timeout, prop)
            found = problem.solver.model() if outcome == z3.sat else None
        if found is not None:
            shape, steps = decode(problem, found)
            result.counterexample = replay(problem, prop, shape, steps)
            result.verdict = "counterexample"
        elif outcome == z3.unknown:
            result.verdict = "unknown"
            result.reason = f"agent {agent}: {reason}"
        result.seconds += time.monotonic() - started
        _say(f"{contract.name} / {prop} / {agent}: {result.verdict} ({result.seconds:.1f} s)")
    reach: dict[str, str] = {}  # nothing checked
    if reachability:
        started = time.monotonic()
        for behaviour in BEHAVIOURS:
            if behaviour in reach:
                continue  # the run found for an earlier behaviour shows it
            reach[behaviour] = "unreachable"
            what = f"reaching {_article(behaviour)} {behaviour}"
            goal = problem.machine.reach[behaviour]
            outcome = z3.unknown
            if behaviour in hints:
                # a run of the model that reaches it, as values of the free variables: a
                # model under them is a run of the encoding; without one, the free search
                pinned = min(timeout or WITNESS_TIMEOUT, WITNESS_TIMEOUT)
                outcome, reason = _check(problem, goal, pinned, what, hints[behaviour])
            if outcome != z3.sat:
                outcome, reason = _check(problem, goal, timeout, what)
            if outcome == z3.sat:
                reach[behaviour] = "reached"
                model = problem.solver.model()
                for other in BEHAVIOURS:
                    flag = lg.lift_bool(problem.machine.reach[other])
                    if other not in reach and z3.is_true(model.eval(flag, model_completion=True)):
                        reach[other] = "reached"
            elif outcome == z3.unknown:
                reach[behaviour] = f"unknown ({reason})"
        reaching = time.monotonic() - started
        for r in results.values():
            r.seconds += reaching / len(results)
        reach = {b: reach[b] for b in BEHAVIOURS}
    return AgentOutcome(results, reach)


def _induction(
    contract: Contract,
    agent: str,
    bound: Bound,
    properties: tuple[str, ...],
    timeout: float | None,
) -> tuple[dict[str, Result], dict[str, float]]:
    """The properties proved by induction for one agent (the others are left out), and
    the seconds spent on each property it tried and did not prove."""
    attempted = _attempted(contract, agent, bound, properties)
    if not attempted:
        return {}, {}
    outcome = induction.prove(contract, agent, bound, attempted, timeout, _say)
    return _by_induction(contract, agent, bound, attempted, outcome)


def _attempted(
    contract: Contract, agent: str, bound: Bound, properties: tuple[str, ...]
) -> list[str]:
    """The properties induction tries for one agent, said."""
    if not properties:
        return []  # all proved by parametric steps
    attempted = induction.inductive(contract, agent, properties)
    if not attempted:
        why = induction.not_covered(contract, agent)
        _say(f"{contract.name} / induction / {agent}: not tried: {why}")
    else:
        _say(f"{contract.name} / induction / {agent}: {', '.join(attempted)} at {bound}")
    return attempted


def _by_induction(
    contract: Contract, agent: str, bound: Bound, attempted: list[str], outcome: Outcome
) -> tuple[dict[str, Result], dict[str, float]]:
    """The results of the properties ``outcome`` proves, and the seconds of the others
    (the outcome's seconds shared among the properties attempted), said."""
    for prop, why in outcome.failed.items():
        _say(f"{contract.name} / {prop} / {agent}: not proved by induction ({why}); unrolling")
    share = outcome.seconds / len(attempted)
    proved = {
        p: Result(contract.name, p, "proved", bound, share, engines={agent: "induction"})
        for p in outcome.proved
    }
    if proved:
        names = ", ".join(proved)
        _say(f"{contract.name} / induction / {agent}: proved {names} ({outcome.seconds:.1f} s)")
    return proved, dict.fromkeys(outcome.failed, share)


# -- the step classes as jobs of their own ----------------------------------------------


@define
class _Attempt:
    """One induction of one agent at one bound, from the invariant without the families
    ``without``, its step classes checked as jobs of their own."""

    agent: int
    properties: list[str]
    bound: Bound
    without: frozenset[str]
    classes: list[int]
    done: dict[int, ClassOutcome] = field(factory=dict)

    def key(self, wanted: Check) -> Key:
        return (*self._name(), *wanted)

    def _name(self) -> Key:
        props, without = tuple(self.properties), tuple(sorted(self.without))
        return ("class", self.agent, str(self.bound), props, without)

    def owns(self, key: Key) -> bool:
        name = self._name()
        return key[: len(name)] == name

    def after(self, t: int) -> Callable[[Key], bool]:
        """Whether a key is of a check of this attempt's classes after ``t``."""
        later = self.classes[self.classes.index(t) + 1 :]
        return lambda key: self.owns(key) and key[-2] in later


def _classes_in_parallel(jobs: list[Job], workers: int, properties: int) -> list[AgentOutcome]:
    """``--engine induction`` on a pool of forked processes: the outcome of each job
    (in job order), with each step class of each agent's induction a job of its own.

    The later classes first (the later epochs' are the costliest: more store slots,
    more facts), and among classes of the same place the agent's with more tool calls
    per input (more store slots), so that no worker waits for one long class at the
    end. The unrolling's jobs come before any class: they start once the induction
    they wait for is done, and are the last work of their agent. An agent's
    outcome is the one of :func:`_verify_agent`: its classes are put together in class
    order (:func:`.induction.settle`), the classes after one that breaks the invariant are
    dropped, the next round without the facts that broke (:func:`.induction.weakened`),
    each search bound of a contract outside the families in turn, then the bound asked
    (:func:`.induction.search_bounds`), and the unrolling are jobs once their turn comes.
    When one agent has a counterexample for every property, the others are stopped, as
    in :func:`_in_parallel`."""
    pool = Workers(workers)
    attempts: dict[int, _Attempt] = {}
    attempted: dict[int, list[str]] = {}
    earlier: dict[int, Outcome] = {}  # the rounds before the attempt under way
    bounds: dict[int, list[Bound]] = {}  # where the invariant is searched first
    searched: dict[int, Outcome] = {}  # what the search bounds done so far gave
    outcomes: dict[int, AgentOutcome] = {}

    def submit(attempt: _Attempt, checks: list[Check]) -> None:
        contract, agent, _, _, timeout, _, _ = jobs[attempt.agent]
        calls = len(Plan.of(bounded.AGENTS[agent]).entries)  # store slots per input
        for wanted in checks:
            key = attempt.key(wanted)
            if key not in pool:
                t, skip = wanted
                bound, props, without = attempt.bound, attempt.properties, attempt.without
                args = (contract, agent, bound, t, props, timeout, _say, skip, without)
                cost = (attempt.classes.index(t), calls)
                pool.add(key, cost, induction.check_step_class, *args)

    def induce(i: int, props: list[str], bound: Bound, without: frozenset[str]) -> None:
        contract = jobs[i][0]
        attempts[i] = _Attempt(i, props, bound, without, induction.step_classes(contract, bound))
        submit(attempts[i], [(t, ()) for t in attempts[i].classes])

    def unroll(i: int, by_induction: dict[str, Result], spent: dict[str, float]) -> None:
        contract, agent, bound, props, timeout, reachability, _ = jobs[i]
        if by_induction.keys() >= set(props) and not reachability:
            outcomes[i] = AgentOutcome(dict(by_induction), {})
            return
        args = (contract, agent, bound, props, timeout, reachability, by_induction, spent)
        pool.add(("unroll", i), (math.inf,), _unroll, *args)

    def induced(i: int, attempt: _Attempt, outcome: Outcome) -> None:
        # as induction.prove: again without what broke, and from each search bound to the next
        contract, agent, bound, _, _, _, _ = jobs[i]
        outcome = evolve(outcome, without=attempt.without)
        again = induction.weakened(attempt.properties, outcome)
        if again is not None:
            _say(induction.leaving_out(contract, agent, attempt.bound, outcome))
            flags = evolve(outcome, failed=outcome.flags)
            earlier[i] = induction.merged(earlier[i], flags) if i in earlier else flags
            induce(i, again[0], attempt.bound, again[1])
            return
        if i in earlier:
            outcome = induction.merged(earlier.pop(i), outcome)
        if attempt.bound != bound:  # a search bound of a contract outside the families
            outcome = induction.found_at(outcome, attempt.bound)
            if i in searched:
                outcome = induction.merged(searched.pop(i), outcome)
            later = bounds[i][bounds[i].index(attempt.bound) + 1 :]
            if outcome.proved:
                searched[i] = outcome
                induce(i, outcome.proved, later[0] if later else bound, outcome.without)
                return
        elif i in searched:
            outcome = induction.merged(searched.pop(i), outcome)
        unroll(i, *_by_induction(contract, agent, bound, attempted[i], outcome))

    try:
        for i, (contract, agent, bound, props, _, _, _) in enumerate(jobs):
            attempted[i] = _attempted(contract, agent, bound, props)
            if attempted[i]:
                bounds[i] = induction.search_bounds(contract, bound, attempted[i])
                induce(i, attempted[i], (*bounds[i], bound)[0], frozenset())
            else:
                unroll(i, {}, {})
        while len(outcomes) < len(jobs):
            key, value = pool.next()
            if key[0] == "unroll":
                outcomes[key[1]] = value
                if properties and value.refutes_all:
                    return [value]
                continue
            attempt = attempts[key[1]]
            if not attempt.owns(key):  # of a round dropped since
                continue
            attempt.done[value.t] = value
            if value.broken:  # the classes after it do not count
                pool.drop(attempt.after(value.t))
            settled = induction.settle(attempt.properties, attempt.classes, attempt.done)
            if isinstance(settled, list):
                submit(attempt, settled)
            else:
                pool.drop(attempt.owns)
                induced(attempt.agent, attempt, settled)
    finally:
        pool.close()
    return [outcomes[i] for i in range(len(jobs))]


def _screen(
    problem: Problem, properties: tuple[str, ...], timeout: float | None, results: dict[str, Result]
) -> set[str]:
    """The properties that need a query of their own; the others are proved.

    One query asks whether any of the properties left is broken (their flags'
    disjunction). Unsatisfiable: they all hold, for about the cost of the hardest one
    alone (a sound contract's proofs take one query instead of one per property).
    Satisfiable: the properties whose flag the model sets are broken and get their own
    query (so their counterexamples are the ones a query per property finds), and the
    rest are asked again. Unknown: each gets its own query. The time of a combined query
    is shared out among the properties it asks about."""
    alone: set[str] = set()
    pending = list(properties)
    monitors = problem.machine.monitors
    while len(pending) > 1:
        started = time.monotonic()
        outcome, _ = _check(
            problem,
            lg.or_(*(monitors.broken(p) for p in pending)),
            timeout,
            " or ".join(pending) if len(pending) < len(PROPERTIES) else "any property",
        )
        spent = (time.monotonic() - started) / len(pending)
        for p in pending:
            results[p].seconds += spent
        if outcome == z3.unsat:
            return alone
        broken = []
        if outcome == z3.sat:
            model = problem.solver.model()
            broken = [
                p
                for p in pending
                if z3.is_true(model.eval(lg.lift_bool(monitors.broken(p)), model_completion=True))
            ]
        if not broken:
            break
        alone.update(broken)
        pending = [p for p in pending if p not in broken]
    return alone | set(pending)


def check_budget(contract: Contract, bound: Bound, timeout: float | None = None) -> dict[str, str]:
    """Per agent: whether every run of the bound finishes within the micro-steps
    unrolled (``enough``), or not (``short``), or ``unknown``."""
    out = {}
    for agent in bound.agents:
        problem = build(contract, agent, bound, finished=False)
        outcome, reason = _check(
            problem, problem.machine.saturated(), timeout, "the unrolling's length"
        )
        if outcome == z3.unsat:
            out[agent] = "enough"
        elif outcome == z3.sat:
            out[agent] = "short"
        else:
            out[agent] = f"unknown ({reason})"
    return out


def explanation_table(result: Result) -> str:
    """The counterexample of a result as a readable table."""
    from replay_contract.model.narrate import table

    ce = result.counterexample
    if ce is None:
        return ""
    witnesses = {v.property: v.witness for v in check_all(ce.run.trace) if not v.holds}
    return table(ce.run.trace, witnesses)


def counterexample_name(contract: str, prop: str) -> str:
    """The file name of a contract's counterexample to a property."""
    return f"{slug(contract)}-{prop}.json"


def write_counterexample(result: Result, folder: Path) -> Path:
    ce = result.counterexample
    assert ce is not None
    path = folder / counterexample_name(result.contract, result.property)
    ce.scenario.write(path)
    result.counterexample = Counterexample(ce.scenario, ce.run, ce.explanation, path)
    return path
