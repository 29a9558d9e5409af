"""The suite: which scenarios run, running them, and keeping what fails.

Three families of cases:

``catalogue`` (or ``file``)
    every built-in scenario of the reference model, or the scenarios asked for;
``sweep``
    each of those crashed at every crash point before its first failure
    (:func:`~.generate.crash_sweep`): after every effect of every delivery;
``generated``
    ``examples`` scenarios drawn from seeds ``seed``, ``seed + 1``, ... — each one
    reproducible alone with ``--seed <its seed> --examples 1``.

A failing case is written as a scenario file (and its report next to it) under the
output folder; a failing generated case is also shrunk and the smaller scenario written
beside it.

Generated cases and sweeps stay within the target's capabilities (a target without
crash points gets crashes between steps only, one without non-replayable sources gets
replayable ones), and they are built one at a time as the run reaches them: the memory a
run needs does not grow with ``examples``.

A case the implementation could not run to its end for a reason outside the contract
(:class:`~.interface.TargetUnavailable`, or a failure while its ``health()`` names a
cause) is an ``error``; :class:`Limits` stops the run after ``max_errors`` errors in a
row, or when its deadline has passed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from attrs import define, evolve, frozen

from replay_contract.model import catalogue
from replay_contract.model.contracts import Contract
from replay_contract.model.files import slug
from replay_contract.model.scenario import Scenario

from .generate import crash_sweep, generate
from .interface import Capabilities, Implementation
from .judge import ERROR, FAILED, Result, judge, skip_reason
from .shrink import shrink

#: How many failing generated cases of one run are shrunk.
SHRINK_FIRST = 3


@frozen
class Case:
    """One scenario to run: built lazily, so that listing the suite is cheap."""

    name: str
    family: str
    build: Callable[[], Scenario]
    seed: int | None = None


#: What a target that claims everything can do: the generator's default.
EVERYTHING = Capabilities(contracts=(), crash_points=True, non_replayable=True)


class Cases:
    """The cases of a suite run, in order: the fixed ones and their sweeps, listed
    up front (a few hundred), then the generated ones, built only when iterated to."""

    def __init__(
        self, fixed: list[Case], seed: int, examples: int, caps: Capabilities = EVERYTHING
    ) -> None:
        self.fixed, self.seed, self.examples, self.caps = fixed, seed, examples, caps

    def __len__(self) -> int:
        return len(self.fixed) + self.examples

    def __iter__(self) -> Iterator[Case]:
        yield from self.fixed
        for s in range(self.seed, self.seed + self.examples):
            yield Case(f"generated-{s}", "generated", _seeded(s, self.caps), s)


def cases(
    examples: int,
    seed: int,
    contract: Contract,
    sweep: bool = True,
    scenarios: Sequence[Scenario] | None = None,
    capabilities: Capabilities = EVERYTHING,
) -> Cases:
    """The fixed scenarios (the catalogue, or ``scenarios`` when given), their crash
    sweeps, and ``examples`` generated scenarios, the sweeps and the generated ones
    within ``capabilities``."""
    fixed = (
        [Case(name, "catalogue", _builtin(name)) for name in catalogue.names()]
        if scenarios is None
        else [Case(s.name, "file", _const(s)) for s in scenarios]
    )
    out = list(fixed)
    if sweep:
        for case in fixed:
            for variant in crash_sweep(
                case.build(),
                contract=contract,
                crash_points=capabilities.crash_points,
                timeout=capabilities.timeout,
            ):
                out.append(Case(variant.name, "sweep", _const(variant)))
    return Cases(out, seed, examples, capabilities)


def _builtin(name: str) -> Callable[[], Scenario]:
    return lambda: catalogue.builtin(name)


def _const(scenario: Scenario) -> Callable[[], Scenario]:
    return lambda: scenario


def _seeded(seed: int, caps: Capabilities) -> Callable[[], Scenario]:
    return lambda: generate(seed, caps.crash_points, caps.non_replayable, caps.timeout)


@define
class Limits:
    """When a run stops before its end: after ``max_errors`` errors in a row (an
    outage makes every later case an error too), or once ``deadline`` (a
    :func:`time.monotonic` time) has passed, before the next case. ``stopped`` says why
    it stopped, as one line, once it has."""

    max_errors: int = 3
    deadline: float | None = None
    stopped: str | None = None


def health(impl: Implementation) -> str | None:
    """What the implementation's optional ``health()`` says is missing, if anything."""
    check = getattr(impl, "health", None)
    if not callable(check):
        return None
    cause = check()
    return None if cause is None else str(cause)


def run_case(
    impl: Implementation,
    case: Case,
    contract: Contract,
    out: Path | None,
    target: str,
    shrinking: bool = True,
    traces: Path | None = None,
) -> Result:
    """Run one case; a failure is written to ``out`` (and shrunk, when generated); with
    ``traces``, every run is recorded there as a trace file. A failure while the
    implementation's ``health()`` names a cause is an error."""
    scenario = case.build()
    record = None
    if traces is not None:
        record = traces / slug(target) / slug(contract.name) / f"{slug(scenario.name)}.ndjson"
    result = judge(impl, scenario, contract, case.seed, record)
    if result.verdict == FAILED:
        cause = health(impl)
        if cause is not None:
            return evolve(result, verdict=ERROR, reason=f"{cause} (then: {result.reason})")
    if result.verdict != FAILED or out is None:
        return result
    folder = out / slug(target) / slug(contract.name)
    path = scenario.write(folder / f"{slug(scenario.name)}.json")
    report = result.report
    if shrinking and case.family == "generated":
        small = shrink(scenario, lambda s: _same_failure(judge(impl, s, contract), result))
        if small.to_json() != scenario.to_json():
            small = small.with_schedule(small.schedule, f"{scenario.name}-shrunk")
            shrunk = judge(impl, small, contract)
            small_path = small.write(folder / f"{slug(small.name)}.json")
            report += f"\n\nshrunk to {small_path}:\n\n{shrunk.report}"
    (folder / f"{slug(scenario.name)}.txt").write_text(report + "\n")
    return evolve(result, scenario_file=str(path), report=report)


def run_all(
    impl: Implementation,
    todo: Iterable[Case],
    contract: Contract,
    out: Path | None,
    target: str,
    shrinking: bool = True,
    progress: Callable[[Result], None] | None = None,
    limits: Limits | None = None,
    results: list[Result] | None = None,
    traces: Path | None = None,
) -> list[Result]:
    """Run every case in order, reporting each result to ``progress``; only the first
    :data:`SHRINK_FIRST` failing generated cases are shrunk (the rest are written as
    they are), so that a badly broken target still finishes quickly. ``results`` (a
    list the caller keeps) gets each result as it comes: a run interrupted by Ctrl-C
    keeps what it found. ``limits`` stops the run early (:class:`Limits`)."""
    results = [] if results is None else results
    limits = limits or Limits()
    shrunk = errors = 0
    for case in todo:
        if limits.deadline is not None and time.monotonic() >= limits.deadline:
            limits.stopped = f"the deadline passed after {len(results)} scenarios"
            break
        cause = health(impl) if errors else None
        if cause is not None:  # the outage goes on: no need to wait for it again
            result = Result(case.name, ERROR, case.seed, cause)
        else:
            result = run_case(
                impl, case, contract, out, target, shrinking and shrunk < SHRINK_FIRST, traces
            )
        shrunk += result.verdict == FAILED and case.family == "generated"
        errors = errors + 1 if result.verdict == ERROR else 0
        results.append(result)
        if progress is not None:
            progress(result)
        if errors >= limits.max_errors:
            limits.stopped = f"stopped after {errors} errors in a row (the last: {result.reason})"
            break
    return results


def shutdown(impl: Implementation) -> None:
    """Stop what a target keeps running between scenarios (a subprocess, say): the
    optional ``shutdown()`` method of an implementation, called once at the end."""
    stop = getattr(impl, "shutdown", None)
    if callable(stop):
        stop()


def _same_failure(now: Result, then: Result) -> bool:
    """Whether a smaller scenario fails the way the original did."""
    if now.verdict != FAILED:
        return False
    if then.property is not None:
        return now.property == then.property
    return (now.difference is None) == (then.difference is None) and now.property is None


__all__ = [
    "Case",
    "Cases",
    "Limits",
    "cases",
    "health",
    "run_all",
    "run_case",
    "shutdown",
    "skip_reason",
]
