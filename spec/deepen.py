"""Verdicts as they come: ``verify --deepen``, for any contract.

A proof at the default bound can take long for a contract no every-bound step fits (a
proposed change). This engine asks the cheapest questions first and reports each
answer once it has it, so a run that is stopped (Ctrl-C or ``--deadline``) still says
what it knows:

1. **Random runs of the model** at each bound of the ladder (:func:`ladder`), a few
   seconds in all: a run whose trace breaks a property is a counterexample found by
   the model itself, reduced as every counterexample is (:func:`.verify.simplify`).
2. **Proofs deepening bound by bound**: :func:`.verify.verify_contract` (parametric
   steps, induction, the unrolling, as ``verify`` chooses them) for the properties
   still open, at each bound of the ladder in turn, one progress line per step with the
   bound reached. A counterexample at a smaller bound is one within the asked bound
   (every run of a smaller bound is a run of the larger), and closes the property; a
   property proved at every bound by a parametric step needs no larger bound. Each
   step's line says about how long it will take, from how the time grew so far
   (:func:`estimate`), so that a user can choose to wait or to ask a smaller bound.
   The properties induction tries go up the ladder first (what the generic invariant
   covers before what needs a family's), the rest (left to the unrolling, which grows
   much faster) after them (:func:`tracks`), so that a slow unrolling does not hold
   back what an invariant proves at the bound asked.

Each step of the ladder runs in a process group of its own, so that the deadline can
stop it (and its solver workers) at once; what is proved up to then is kept, and the
properties left open get ``unknown`` with the bound they are proved up to.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import random
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from attrs import evolve

from replay_contract.model import bounded
from replay_contract.model.contracts import Contract
from replay_contract.model.scenario import Step
from replay_contract.model.trace import Trace

from . import induction, proofcache, witness
from .bound import Bound
from .properties import BOUNDED_WAITING, PROPERTIES, check
from .verify import BEHAVIOURS, QUERY_TIMEOUT, Result, reduced, verify_contract
from .verify import reachability as reachability_of
from .workers import die_with_parent

#: Seconds the random runs of the model may take, over all bounds of the ladder.
SAMPLE_SECONDS = 5.0

#: Random runs per bound of the ladder (within :data:`SAMPLE_SECONDS`).
SAMPLE_RUNS = 400

#: What the reason of a property left open by a stopped deepening says before the bound.
STOPPED = "stopped before"

Progress = Callable[[str], None]
Found = Callable[[Result], None]


def ladder(target: Bound) -> list[Bound]:
    """The bounds asked, smallest first, ending with ``target``: two inputs and one
    crash (at most the target's), then three inputs, then the target's crashes, then the
    inputs growing by half (at least one) up to the target's. Channels and keys are the
    target's, at most the inputs. A step costs more than all the steps before it
    together, so deepening adds about half to the time of the target alone."""

    def at(inputs: int, crashes: int) -> Bound:
        return evolve(
            target,
            inputs=inputs,
            crashes=crashes,
            channels=min(target.channels, inputs),
            keys=min(target.keys, inputs),
            changes=min(target.changes, inputs),
        )

    inputs, crashes = min(2, target.inputs), min(1, target.crashes)
    out = [at(inputs, crashes)]
    while (inputs, crashes) != (target.inputs, target.crashes):
        if inputs < min(3, target.inputs) or crashes == target.crashes:
            inputs = min(target.inputs, inputs + max(1, inputs // 2))
        else:
            crashes = target.crashes
        out.append(at(inputs, crashes))
    if out[-1] != target:
        out.append(target)
    return out


#: Steps shorter than this (seconds) say too little of how the time grows.
MEASURABLE = 1.0


def estimate(done: Sequence[tuple[Bound, float]], bound: Bound) -> float | None:
    """About how many seconds the step at ``bound`` will take, given the steps ``done``
    before it (each bound with its seconds, in the ladder's order), or ``None`` when they
    do not tell: the latest of them times, per input added, the factor by which one input
    multiplied the time between the two latest. All three bounds must differ in inputs
    alone (the factor differs with the crashes, ``spec/notes/deepen-bench.md``), so the
    ladder's first steps, a few seconds each, have none. A step's seconds are the wall
    clock over every run that worked on it (:func:`.proofcache.spent`), so a step read
    back from the proof cache counts as long as it took to prove."""

    def like(other: Bound) -> bool:
        return evolve(other, inputs=bound.inputs) == bound

    if len(done) < 2:
        return None
    (a, ta), (latest, seconds) = done[-2], done[-1]
    if not (like(a) and like(latest) and a.inputs < latest.inputs < bound.inputs):
        return None
    if ta < MEASURABLE or seconds < MEASURABLE:
        return None
    factor = (seconds / ta) ** (1 / (latest.inputs - a.inputs))
    return float(seconds * factor ** (bound.inputs - latest.inputs))


def _duration(seconds: float) -> str:
    """``seconds`` as a rough duration for a person: "about 40 s", "about 35 min"."""
    if seconds < 90:
        return f"about {max(10, round(seconds, -1)):.0f} s"
    return f"about {round(seconds / 60):.0f} min"


def sample(
    contract: Contract,
    bounds: Sequence[Bound],
    properties: Sequence[str],
    seconds: float = SAMPLE_SECONDS,
    runs: int = SAMPLE_RUNS,
) -> Iterator[Result]:
    """Counterexamples among random runs of the model, smallest bounds first: one
    result per property broken, its scenario reduced in the model."""
    open_ = list(properties)
    started = time.monotonic()
    for bound in bounds:
        rng = random.Random(f"{contract.name}/deepen/{bound}")
        for i in range(runs):
            if not open_ or time.monotonic() - started > seconds:
                return
            agent = bound.agents[i % len(bound.agents)]
            shape = witness.random_shape(rng, bound, agent)
            node = bounded.random_run(shape, contract, bound, rng.randrange)
            trace = Trace(node.world.agent, contract.basis, node.world.events)
            for prop in [p for p in open_ if not check(p, trace).holds]:
                t0 = time.monotonic()
                steps = [s for s in node.steps if s.kind != "end"]
                yield _counterexample(contract, bound, prop, shape, steps, t0)
                open_.remove(prop)


def _counterexample(
    contract: Contract,
    bound: Bound,
    prop: str,
    shape: bounded.Shape,
    steps: list[Step],
    started: float,
) -> Result:
    name = f"{contract.name}-{prop}"
    description = (
        f"Counterexample found by verify (a random run of the model) at bound {bound}: "
        f"{contract.name} breaks {prop}."
    )
    found = reduced(contract, prop, shape, shape.scenario(steps, name, description))
    return Result(
        contract.name,
        prop,
        "counterexample",
        bound,
        time.monotonic() - started,
        counterexample=found,
        engines={shape.agent: "model"},
    )


def tracks(
    contract: Contract, target: Bound, properties: Sequence[str], engine: str
) -> list[tuple[str, ...]]:
    """The properties in the order the ladder takes them: first those induction tries
    for every agent of ``target``, up to it, then the rest (left to the unrolling, which
    grows much faster with the bound). So the proofs an invariant gives come at the
    bound asked even when the unrolling of the other properties takes far longer. Of
    those induction tries, what the generic invariant covers comes first
    (:func:`.induction.by_generic`): for a contract of a family it is proved in seconds,
    where the full invariant takes up to the rest of the run."""
    if engine == "unrolling":
        return [tuple(properties)]
    first = tuple(
        p
        for p in properties
        if all(induction.inductive(contract, agent, [p]) for agent in target.agents)
    )
    light = tuple(p for p in first if induction.by_generic(contract, [p]))
    full = tuple(p for p in first if p not in light)
    rest = tuple(p for p in properties if p not in first)
    return [group for group in (light, full, rest) if group]


def _step(
    contract: Contract,
    bound: Bound,
    properties: tuple[str, ...],
    kwargs: dict[str, Any],
    remaining: float | None,
) -> list[Result] | None:
    """``verify_contract`` at one bound in a process group of its own, or ``None`` when
    ``remaining`` seconds pass first (the group is then killed)."""
    answers: list[Result] | None = _in_group(
        lambda: verify_contract(contract, bound, properties, **kwargs), remaining
    )
    return answers


def _in_group(work: Callable[[], Any], remaining: float | None) -> Any:
    """``work()`` in a forked process group of its own, or ``None`` when ``remaining``
    seconds pass first or the user stops it (the group is then killed)."""
    if "fork" not in mp.get_all_start_methods():  # no way to stop it: run it here
        return work()
    context = mp.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    parent = os.getpid()

    def child() -> None:
        os.setpgid(0, 0)
        die_with_parent(parent)  # its workers die with it in turn
        try:
            send.send(work())
        except BaseException as exc:
            send.send(exc)

    process = context.Process(target=child, daemon=False)
    process.start()
    send.close()
    try:
        if not receive.poll(remaining):
            return None
        answer = receive.recv()
    except EOFError:
        answer = RuntimeError("a step of verify --deepen ended without an answer")
    except KeyboardInterrupt:  # the user stops: what is known so far is the answer
        answer = None
    finally:
        _stop(process)
    if isinstance(answer, BaseException):
        raise answer
    return answer


def _stop(process: Any) -> None:
    """Stop a step's process and every solver worker it started (its process group)."""
    if process.is_alive():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    process.join()


def deepen(
    contract: Contract,
    target: Bound,
    properties: Sequence[str] | None = None,
    *,
    deadline: float | None = None,
    progress: Progress | None = None,
    found: Found | None = None,
    milestones: Progress | None = None,
    **kwargs: Any,
) -> list[Result]:
    """Every property of ``properties`` at ``target`` (default: as
    :func:`.verify.verify_contract`'s), cheapest answers first.

    ``found`` is called with each counterexample as soon as it is known. ``progress``
    hears every line; ``milestones`` only the deepening's own (a bound begun, proved or
    stopped at, a counterexample, the reachability checks), not those of each step
    class. ``deadline`` (seconds) stops the proofs, and the properties not decided by
    then are ``unknown`` with the bound they are proved up to. ``kwargs`` go to
    :func:`.verify.verify_contract` (``timeout``, ``reachability``, ``workers``,
    ``engine``); the reachability checks are made at the target only."""
    started = time.monotonic()
    if properties is None:  # as verify_contract: bounded-waiting only with a timeout step
        properties = [p for p in PROPERTIES if target.timeouts or p != BOUNDED_WAITING]

    def say(line: str) -> None:
        for tell in (progress, milestones):
            if tell is not None:
                tell(line)

    bounds = ladder(target)
    results: dict[str, Result] = {}
    seconds = SAMPLE_SECONDS if deadline is None else min(SAMPLE_SECONDS, deadline / 4)
    for r in sample(contract, bounds, properties, seconds):
        r.seconds = time.monotonic() - started
        say(f"{contract.name} / {r.property}: counterexample at {r.bound} ({_since(started)})")
        results[r.property] = r
        if found:
            found(r)
    proved_at: dict[str, Bound] = {}
    every_bound: set[str] = set()
    reach: dict[str, str] = {}
    stopped = False
    reachability = kwargs.pop("reachability", True)
    groups = tracks(contract, target, properties, kwargs.get("engine", "unrolling"))
    # each track's steps, bound and seconds, for its estimates
    done: dict[tuple[str, ...], list[tuple[Bound, float]]] = {g: [] for g in groups}
    for group, bound in [(g, b) for g in groups for b in bounds]:
        open_ = tuple(p for p in group if p not in results and p not in every_bound)
        if not open_:
            continue  # the next track, if any
        last = bound == target
        remaining = None if deadline is None else deadline - (time.monotonic() - started)
        if remaining is not None and remaining <= 0:
            stopped = True
            break
        checks = reachability and last and not reach  # once, by the first at the target
        options = {**kwargs, "reachability": checks}
        step = proofcache.ladder_key(contract, bound, open_, options)
        guess = estimate(done[group], bound)
        expect = f"; {_duration(guess)} at the growth so far" if guess is not None else ""
        earlier = proofcache.begun(step)
        if earlier > 0 and earlier >= MEASURABLE:
            comma = ";" if guess is None else ","
            expect += f"{comma} {_duration(earlier)} of it in earlier runs"
        say(f"{contract.name}: deepening to {bound} ({', '.join(open_)}){expect}")
        begun = time.monotonic()
        answers = _step(contract, bound, open_, {**options, "progress": progress}, remaining)
        took = proofcache.spent(step, time.monotonic() - begun, whole=answers is not None)
        if answers is None:
            say(f"{contract.name}: stopped while at {bound} ({_since(started)})")
            stopped = True
            break
        done[group].append((bound, took))
        for r in answers:
            r.seconds = time.monotonic() - started  # the wall time to this answer
            if r.verdict == "counterexample":
                results[r.property] = r
                say(f"{contract.name} / {r.property}: counterexample at {bound}")
                if found:
                    found(r)
            elif r.verdict == "proved":
                proved_at[r.property] = bound
                if last:
                    results[r.property] = r
                elif r.engines and set(r.engines.values()) == {"parametric"}:
                    every_bound.add(r.property)
                    results[r.property] = evolve(r, bound=target)
            elif last:
                results[r.property] = r
        proved = sorted(p for p in open_ if proved_at.get(p) == bound and p not in every_bound)
        if proved:
            upto = f"{contract.name}: proved up to {bound}: {', '.join(proved)}"
            say(f"{upto} ({_since(started)})")
        if every_bound & set(open_):
            ours = ", ".join(sorted(every_bound & set(open_)))
            say(f"{contract.name}: proved for every bound: {ours} ({_since(started)})")
        if checks:
            reach = answers[0].reachable if answers else {}
    if reachability and not reach and not stopped:
        # every verdict came before the target: its reachability checks still tell
        # whether a proof there is vacuous (the witnesses make them cheap)
        remaining = None if deadline is None else deadline - (time.monotonic() - started)
        timeout = kwargs.get("timeout", QUERY_TIMEOUT)
        if remaining is None or remaining > 0:
            say(f"{contract.name}: reachability checks at {target}")
            reach = (
                _in_group(lambda: reachability_of(contract, target, timeout, progress), remaining)
                or {}
            )
    # a proof is vacuous without a crash and a restore (each track's proofs, whichever
    # step made the checks)
    missing = [b for b in ("crash", "restore") if reach.get(b) == "unreachable"]
    for r in results.values():
        if r.verdict == "proved" and missing:
            r.verdict = "unknown"
            r.reason = f"vacuous: no {' and no '.join(missing)} is reachable within the bound"
    if reachability and not reach:  # stopped before the checks were made
        reach = dict.fromkeys(BEHAVIOURS, "not checked (stopped)")
    for r in results.values():
        r.reachable = dict(reach)
    out = []
    for p in properties:
        if p in results:
            out.append(results[p])
            continue
        upto = f"proved up to {proved_at[p]}" if p in proved_at else "not proved at any bound"
        out.append(
            Result(
                contract.name,
                p,
                "unknown",
                target,
                time.monotonic() - started,
                reason=f"{upto}; {STOPPED} {target}",
                reachable=dict(reach),
            )
        )
    return out


def _since(started: float) -> str:
    return f"{time.monotonic() - started:.1f} s"
