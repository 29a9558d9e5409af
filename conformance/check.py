"""Judging a recorded trace: the conformance suite's verdict on a run it did not drive.

A recorded run (:mod:`.tracefile`) holds what the environment did (``deliver``,
``checkpoint``, ``crash``, ``restore``, ``end``) between the operator's decisions and
effects. That is a schedule: each environment event starts a step, and a ``crash``
right after an effect of a ``deliver`` or ``restore`` step is that step crashing after
its N-th effect (``crash_after``). :func:`check` rebuilds the scenario, plays its
schedule through the reference model one step at a time, and judges the recorded steps
against the model's with :func:`~.judge.judge_observed`, the function the conformance
suite judges its own runs with: the same run gets the same verdict.

Events marked indeterminate (an effect whose outcome the recorder could not know) are
judged both ways, as having happened and as not; when the verdicts differ, the answer
is ``unknown``, with the events it depends on.

Each broken property comes with its witness: the events (and their lines), the key,
the positions, and the key's accepted history before each of those events. A failure
is reduced to a scenario file of the keys it involves, which ``simulate`` replays.
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import combinations
from pathlib import Path
from typing import Any

from attrs import evolve, frozen

from replay_contract.model import operator as op
from replay_contract.model import trace as t
from replay_contract.model.contracts import Contract, contract
from replay_contract.model.errors import ScenarioError, UnknownContractError
from replay_contract.model.run import apply
from replay_contract.model.scenario import Scenario, Step, check_schedule, from_json
from replay_contract.model.topology import Key, key_text
from replay_contract.spec.properties import Verdict, check_all, histories_before

from .compare import describe
from .judge import FAILED, PASSED, Result, judge_observed
from .runner import Observed
from .tracefile import RecordedRun, TraceError

PASS, FAIL, UNKNOWN = "pass", "fail", "unknown"

#: The most indeterminate events judged both ways (every combination is judged).
MOST_INDETERMINATE = 6

Steps = list[tuple[Step, list[int]]]


@frozen
class Broken:
    """A property the recorded run breaks, with its witness."""

    property: str
    explanation: str
    events: tuple[int, ...]
    lines: tuple[int, ...]
    described: tuple[str, ...]
    key: Key | None
    positions: tuple[int, ...]
    histories: tuple[tuple[str, ...], ...]
    also_by_model: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "property": self.property,
            "explanation": self.explanation,
            "lines": list(self.lines),
            "events": list(self.described),
            "key": self.key,
            "positions": list(self.positions),
            "histories": [list(h) for h in self.histories],
            "also_by_model": self.also_by_model,
        }


@frozen
class Judgement:
    """The verdict on a recorded run (``pass``, ``fail`` or ``unknown``)."""

    name: str
    contract: str
    verdict: str
    events: int
    steps: int
    broken: tuple[Broken, ...] = ()
    reason: str = ""
    difference: str | None = None
    property: str | None = None
    depends_on: tuple[int, ...] = ()
    scenario: Scenario | None = None
    scenario_file: str | None = None
    contract_file: str | None = None
    ended: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "trace": self.name,
            "contract": self.contract,
            "verdict": self.verdict,
            "events": self.events,
            "steps": self.steps,
            "reason": self.reason,
            "difference": self.difference,
            "property": self.property,
            "broken": [b.to_json() for b in self.broken],
            "depends_on_lines": list(self.depends_on),
            "scenario_file": self.scenario_file,
            "contract_file": self.contract_file,
            "ended": self.ended,
        }


# -- the schedule a trace shows -------------------------------------------------------------


def steps_of(
    run: RecordedRun, events: Sequence[t.Event], lines: Sequence[int], origin: Sequence[int]
) -> Steps:
    """The schedule steps of ``events`` (the run's events at indexes ``origin``), each
    with the indexes of its events."""
    steps: Steps = []
    crashed = False  # the current step ended with a crash inside it
    for i, e in enumerate(events):
        if isinstance(e, t.Deliver):
            steps.append((Step("deliver", e.identity), [i]))
            crashed = False
        elif isinstance(e, (t.Timeout, t.End)) and steps and not crashed:
            # the step's decisions came before its event, which counts them
            step, members = steps[-1]
            own = members[len(members) - e.step_events :] if e.step_events else []
            if e.step_events > len(members) - 1:
                raise TraceError(
                    f"{run.source}: line {lines[i]}: {e.kind} counts {e.step_events} events of "
                    f"its step, but {len(members) - 1} follow the step before"
                )
            steps[-1] = (step, members[: len(members) - len(own)])
            steps.append((Step(e.kind), [*own, i]))
            crashed = False
        elif isinstance(e, (t.Checkpoint, t.Restore, t.Timeout, t.End)):
            steps.append((Step(e.kind), [i]))
            crashed = False
        elif isinstance(e, t.Crash):
            inside = None
            if steps and not crashed:
                if run.marks_crashes:
                    inside = run.crash_after.get(origin[i])
                else:
                    inside = _crash_inside(steps, events)
            if inside is None:
                steps.append((Step("crash"), [i]))
            else:
                step, members = steps[-1]
                steps[-1] = (Step(step.kind, step.record, inside), [*members, i])
                crashed = True
        elif not steps or crashed or steps[-1][0].kind in ("checkpoint", "crash", "timeout", "end"):
            what = "before any delivery" if not steps else f"after a {steps[-1][0].kind} step"
            raise TraceError(f"{run.source}: line {lines[i]}: {e.kind} {what}")
        else:
            steps[-1][1].append(i)
    return steps


def _crash_inside(steps: Steps, events: Sequence[t.Event]) -> int | None:
    """``crash_after`` when a crash now falls inside the last step: right after its
    delivery (or restore), or right after an effect; ``None`` when the step was over."""
    step, members = steps[-1]
    if step.kind not in ("deliver", "restore"):
        return None
    if len(members) == 1:
        return 0
    if not t.is_effect(events[members[-1]]):
        return None
    return sum(t.is_effect(events[m]) for m in members)


def scenario_of(run: RecordedRun, steps: Steps, lines: Sequence[int]) -> Scenario:
    """The scenario the trace ran: the header's agent and channels, the steps. A
    recording may stop with the operator down, right after a crash: its schedule is
    checked as :func:`resumable` makes it."""
    scenario = Scenario(run.name, run.agent, run.topology, tuple(s for s, _ in steps))
    try:
        check_schedule(resumable(scenario), run.source)
    except ScenarioError as exc:
        text = str(exc)
        found = re.match(r".*?: schedule\[(\d+)\]: (.*)", text)
        if found is None or int(found.group(1)) >= len(steps):
            raise TraceError(text) from None
        first = steps[int(found.group(1))][1][0]
        raise TraceError(f"{run.source}: line {lines[first]}: {found.group(2)}") from None
    return scenario


def resumable(scenario: Scenario) -> Scenario:
    """``scenario`` with a ``restore`` after its last step when that step leaves the
    operator down (a crash, or a crash inside a step): a recording may stop there, a
    scenario file may not (``simulate`` would refuse it)."""
    last = scenario.schedule[-1] if scenario.schedule else None
    if last is None or (last.kind != "crash" and last.crash_after is None):
        return scenario
    return scenario.with_schedule((*scenario.schedule, Step("restore")))


def model_steps(scenario: Scenario, contract: Contract) -> list[tuple[Step, tuple[t.Event, ...]]]:
    """The reference model's events for each step of the schedule (no implied ``end``:
    a recording may stop before the end of input)."""
    world = op.World(scenario.topology, scenario.agent, contract)
    out = []
    for step in scenario.schedule:
        before = len(world.events)
        world = apply(world, step)
        out.append((step, world.events[before:]))
    return out


# -- judging --------------------------------------------------------------------------------


@contextmanager
def paused_collection() -> Iterator[None]:
    """No cyclic garbage collection while a trace is read and judged: the values are
    frozen and acyclic (reference counting frees them), and the collector's passes over
    a million live events would cost a quarter of the time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def check(run: RecordedRun, out: Path | None = None) -> Judgement:
    """Judge ``run`` (see the module's docstring); with ``out``, a failure is written
    there as a scenario file (and a contract the header gave as JSON as a contract
    file next to it, which ``simulate --contract-file`` reads)."""
    if run.unavailable:
        return Judgement(
            run.name,
            run.contract.name,
            UNKNOWN,
            len(run.events),
            0,
            reason=f"the run stopped on an infrastructure error: {run.error}",
            ended=False,
        )
    unknown = sorted(run.indeterminate)
    if len(unknown) > MOST_INDETERMINATE:
        lines = tuple(run.line_of(i) for i in unknown)
        return Judgement(
            run.name,
            run.contract.name,
            UNKNOWN,
            len(run.events),
            0,
            reason=f"{len(unknown)} indeterminate events, more than the {MOST_INDETERMINATE} "
            "the checker judges both ways",
            depends_on=lines,
            ended=bool(run.events) and isinstance(run.events[-1], t.End),
        )
    verdicts: list[tuple[tuple[int, ...], Judgement]] = []
    for size in range(len(unknown) + 1):
        for dropped in combinations(unknown, size):
            verdicts.append((dropped, _judge(run, set(dropped))))
    first = verdicts[0][1]
    outcomes = {j.verdict for _, j in verdicts}
    if len(outcomes) > 1:
        ways = "; ".join(
            f"{_label(run, dropped)}: {j.verdict}"
            + (f" ({', '.join(b.property for b in j.broken)})" if j.broken else "")
            for dropped, j in verdicts
        )
        return Judgement(
            run.name,
            run.contract.name,
            UNKNOWN,
            first.events,
            first.steps,
            first.broken,
            reason=f"the verdict depends on indeterminate events: {ways}",
            depends_on=tuple(run.line_of(i) for i in unknown),
            ended=first.ended,
        )
    if first.verdict == FAIL and out is not None and first.scenario is not None:
        keys = [b.key for b in first.broken if b.key is not None]
        whole = resumable(first.scenario)
        reduced = reduce_to_keys(whole, keys) if keys else whole
        path = reduced.write(out / f"{_slug(run.name)}.json")
        contract_file = _contract_file(run.contract, path.with_suffix(".contract.json"))
        first = evolve(
            first, scenario=reduced, scenario_file=str(path), contract_file=contract_file
        )
    return first


def _contract_file(the_contract: Contract, path: Path) -> str | None:
    """Where the contract is written for ``simulate --contract-file`` to replay the
    reduced scenario under it: a contract the header gave as JSON (a proposed one) has a
    name ``simulate --contract`` does not know. ``None`` for a known contract."""
    try:
        if contract(the_contract.name) == the_contract:
            return None
    except UnknownContractError:
        pass
    path.write_text(json.dumps(the_contract.to_json(), indent=2, ensure_ascii=False) + "\n")
    return str(path)


def _label(run: RecordedRun, dropped: tuple[int, ...]) -> str:
    if not dropped:
        return "if all happened"
    return "if line " + ", ".join(str(run.line_of(i)) for i in dropped) + " did not happen"


def _judge(run: RecordedRun, dropped: set[int]) -> Judgement:
    keep = [i for i in range(len(run.events)) if i not in dropped]
    events = [run.events[i] for i in keep]
    lines = [run.lines[i] for i in keep]
    steps = steps_of(run, events, lines, keep)
    scenario = scenario_of(run, steps, lines)
    expected = model_steps(scenario, run.contract)
    ended = bool(steps) and steps[-1][0].kind == "end"
    if not ended and run.error is None and steps:
        # the recording stops in its last step, maybe in the middle of it: the model's
        # step is judged up to as many events as were recorded
        last, its_events = expected[-1]
        expected[-1] = (last, its_events[: len(steps[-1][1])])
    observed = Observed(
        tuple((s, tuple(events[i] for i in members)) for s, members in steps), run.error
    )
    trace = t.Trace(run.agent, run.contract.basis, events)
    model_events = [e for _, es in expected for e in es]
    model_trace = t.Trace(run.agent, run.contract.basis, model_events)
    on_model = check_all(model_trace)
    # the properties are functions of the trace: a run equal to the model's, event for
    # event, has the model's verdicts
    on_run = on_model if model_events == events else check_all(trace)
    result = judge_observed(scenario, run.contract, expected, observed, None, (on_model, on_run))
    by_model = {v.property for v in on_model if not v.holds}
    verdicts = [v for v in on_run if not v.holds]
    before = histories_before(trace, {i for v in verdicts for i in v.witness})
    broken = tuple(_broken(v, events, lines, before, v.property in by_model) for v in verdicts)
    return Judgement(
        run.name,
        run.contract.name,
        _verdict(result),
        len(events),
        len(steps),
        broken,
        reason=result.reason,
        difference=result.difference,
        property=result.property,
        scenario=scenario,
        ended=ended,
    )


#: How a witness shows the end of a recording that stops before the end of input.
STOPS = "the recording stops after this line, before the end of input"


def _broken(
    v: Verdict,
    events: Sequence[t.Event],
    lines: Sequence[int],
    before: dict[int, dict[tuple[str, Any], list[tuple[str, str]]]],
    also_by_model: bool,
) -> Broken:
    """The broken property ``v`` with its witness: each event, its line, the key's
    accepted history before it. A property judged at the end of input
    (``equivalent-outcome``) names the index of the ``end`` event, which a recording
    that stops before the end of input does not have: one past its last event. That
    witness is shown as the place the recording stops, at its last line."""
    witness = [events[i] for i in v.witness if i < len(events)]
    key = next((getattr(e, "key") for e in witness if hasattr(e, "key")), None)  # noqa: B009
    name = (type(key).__name__, key)
    last = lines[-1] if lines else 1  # the header's line, for a recording without events
    return Broken(
        v.property,
        v.explanation,
        v.witness,
        tuple(lines[i] if i < len(events) else last for i in v.witness),
        tuple(describe(events[i]) if i < len(events) else STOPS for i in v.witness),
        key,
        tuple(getattr(e, "position") for e in witness if hasattr(e, "position")),  # noqa: B009
        tuple(
            _preceding(events[i], before.get(i, {}).get(name, [])) if i < len(events) else ()
            for i in v.witness
        ),
        also_by_model,
    )


def _preceding(event: t.Event, history: list[tuple[str, str]]) -> tuple[str, ...]:
    """The key's accepted inputs before ``event``'s position (all, for an event
    without one)."""
    position = getattr(event, "position", None)
    return tuple(identity for identity, _ in history[:position])


def _verdict(result: Result) -> str:
    assert result.verdict in (PASSED, FAILED)
    return PASS if result.verdict == PASSED else FAIL


# -- reducing a failure ---------------------------------------------------------------------


def reduce_to_keys(scenario: Scenario, keys: Sequence[Key]) -> Scenario:
    """``scenario`` with only the records of ``keys`` (their deliveries, and every
    checkpoint, crash and restore); a crash inside a dropped delivery stays a crash.
    Keys do not affect each other (key isolation), so the model runs these keys as it
    did in the whole scenario. When the result is not a valid scenario, the whole
    scenario is kept."""
    wanted = {(type(k).__name__, k) for k in keys}
    data = scenario.to_json()
    kept_ids: set[str] = set()
    for channel in data["channels"]:
        channel["records"] = [
            r for r in channel["records"] if (type(r["key"]).__name__, r["key"]) in wanted
        ]
        kept_ids.update(r["id"] for r in channel["records"])
    data["channels"] = [c for c in data["channels"] if c["records"]]
    schedule: list[dict[str, Any]] = []
    for step in scenario.schedule:
        if step.kind != "deliver" or step.record in kept_ids:
            schedule.append(step.to_json())
        elif step.crash_after is not None:
            schedule.append({"step": "crash"})
    data["schedule"] = schedule
    keys_text = ", ".join(key_text(k) for k in keys)
    data["name"] = f"{scenario.name}-reduced"
    data["description"] = f"The recorded run {scenario.name}, reduced to key {keys_text}."
    try:
        reduced = from_json(data, data["name"])
        check_schedule(reduced, data["name"])
    except ScenarioError:
        return scenario
    return reduced


def _slug(name: str) -> str:
    from replay_contract.model.files import slug

    return slug(f"{name}-reduced")
