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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from attrs import evolve, frozen

from replay_contract.model import catalogue
from replay_contract.model.contracts import Contract
from replay_contract.model.files import slug
from replay_contract.model.scenario import Scenario

from .generate import crash_sweep, generate
from .interface import Implementation
from .judge import FAILED, Result, judge, skip_reason
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


def cases(
    examples: int,
    seed: int,
    contract: Contract,
    sweep: bool = True,
    scenarios: Sequence[Scenario] | None = None,
) -> list[Case]:
    """The fixed scenarios (the catalogue, or ``scenarios`` when given), their crash
    sweeps, and ``examples`` generated scenarios."""
    fixed = (
        [Case(name, "catalogue", _builtin(name)) for name in catalogue.names()]
        if scenarios is None
        else [Case(s.name, "file", _const(s)) for s in scenarios]
    )
    out = list(fixed)
    if sweep:
        for case in fixed:
            for variant in crash_sweep(case.build(), contract=contract):
                out.append(Case(variant.name, "sweep", _const(variant)))
    out.extend(
        Case(f"generated-{s}", "generated", _seeded(s), s) for s in range(seed, seed + examples)
    )
    return out


def _builtin(name: str) -> Callable[[], Scenario]:
    return lambda: catalogue.builtin(name)


def _const(scenario: Scenario) -> Callable[[], Scenario]:
    return lambda: scenario


def _seeded(seed: int) -> Callable[[], Scenario]:
    return lambda: generate(seed)


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
    ``traces``, every run is recorded there as a trace file."""
    scenario = case.build()
    record = None
    if traces is not None:
        record = traces / slug(target) / slug(contract.name) / f"{slug(scenario.name)}.ndjson"
    result = judge(impl, scenario, contract, case.seed, record)
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
    traces: Path | None = None,
) -> list[Result]:
    """Run every case in order, reporting each result to ``progress``; only the first
    :data:`SHRINK_FIRST` failing generated cases are shrunk (the rest are written as
    they are), so that a badly broken target still finishes quickly."""
    results = []
    shrunk = 0
    for case in todo:
        result = run_case(
            impl, case, contract, out, target, shrinking and shrunk < SHRINK_FIRST, traces
        )
        shrunk += result.verdict == FAILED and case.family == "generated"
        results.append(result)
        if progress is not None:
            progress(result)
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


__all__ = ["Case", "cases", "run_all", "run_case", "shutdown", "skip_reason"]
