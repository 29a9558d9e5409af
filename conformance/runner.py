"""Driving an implementation through a scenario's schedule, step by step.

The runner plays the schedule against an :class:`~.interface.Implementation` the way the
reference model's operator plays it against a world: it delivers each record as its
channel delivers it (:mod:`.channels`), takes checkpoints, crashes the implementation
where the schedule says (through the :class:`~.environment.SuiteEnvironment`) and
restores it. What comes out is the observable trace, split by schedule step, with the
implementation's decisions between the suite's own events.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import frozen

from replay_contract.model import trace as t
from replay_contract.model.contracts import Contract
from replay_contract.model.scenario import Scenario, Step
from replay_contract.model.topology import Key

from .channels import Channels
from .environment import SuiteEnvironment
from .interface import Crashed, Implementation, TargetUnavailable

END = Step("end")

#: Where a run failed when the implementation could not open the scenario: an error
#: there begins with it (``open: ...``), and no step of the scenario ran.
OPEN = "open"


@frozen
class Observed:
    """One run of an implementation: each step with the events it produced.

    ``error`` says why the run stopped early (an exception of the implementation, or a
    breach of the protocol); the steps up to and including the failing one are kept.
    ``unavailable``: the implementation raised :class:`~.interface.TargetUnavailable`
    (an infrastructure error, not a verdict on the contract); ``error`` says where.
    """

    steps: tuple[tuple[Step, tuple[t.Event, ...]], ...]
    error: str | None = None
    unavailable: bool = False

    @property
    def events(self) -> tuple[t.Event, ...]:
        return tuple(e for _, events in self.steps for e in events)


def schedule(scenario: Scenario) -> tuple[Step, ...]:
    """The scenario's steps, with the implied ``end`` when the schedule lacks one."""
    steps = scenario.schedule
    return steps if steps and steps[-1].kind == "end" else (*steps, END)


def observe(impl: Implementation, scenario: Scenario, contract: Contract) -> Observed:
    """Play the whole schedule against ``impl`` (opened here and closed at the end)."""
    env = SuiteEnvironment()
    driver = _Driver(impl, scenario, env)
    steps: list[tuple[Step, tuple[t.Event, ...]]] = []
    error: str | None = None
    unavailable = False
    try:
        try:
            impl.open(scenario.agent, scenario.topology, contract, env)
        except TargetUnavailable as exc:
            error, unavailable = f"{OPEN}: {exc}", True
            raise
        for i, step in enumerate(schedule(scenario)):
            start = len(env.events)
            env.begin(f"schedule[{i}] {step}", step.crash_after)
            try:
                driver.apply(step)
            except TargetUnavailable as exc:
                error, unavailable = f"schedule[{i}] {step}: {exc}", True
            except Exception as exc:  # the implementation failed: report it, stop
                error = f"schedule[{i}] {step}: {_named(exc)}"
            if error is None and env.breaches:
                error = env.breaches[0]
            steps.append((step, tuple(env.events[start:])))
            if error is not None:
                break
    except Exception as exc:
        error = error or f"{OPEN}: {_named(exc)}"
    finally:
        try:
            impl.close()
        except TargetUnavailable as exc:
            if error is None:
                error, unavailable = f"close: {exc}", True
        except Exception as exc:
            error = error or f"close: {_named(exc)}"
    return Observed(tuple(steps), error, unavailable)


def _named(exc: BaseException) -> str:
    """An exception as one line: its type and message, or its type alone when it has
    none (a bare ``TimeoutError``)."""
    message = str(exc).strip()
    return f"{type(exc).__name__}: {message}" if message else f"{type(exc).__name__} (no message)"


class _Driver:
    def __init__(self, impl: Implementation, scenario: Scenario, env: SuiteEnvironment) -> None:
        self.impl, self.env = impl, env
        self.channels = Channels(scenario.topology)
        self.checkpoints = 0
        self.restorable = 0

    def apply(self, step: Step) -> None:
        if step.kind == "deliver":
            assert step.record is not None
            record = self.channels.deliver(step.record)
            self.env.record(t.Deliver.of(record))
            self._crashable(lambda: self.impl.deliver(record), step.crash_after)
        elif step.kind == "checkpoint":
            number = self.impl.checkpoint()
            self.checkpoints += 1
            if number != self.checkpoints:
                self.env.breach(f"checkpoint returned {number!r}, expected {self.checkpoints}")
            self.channels.checkpoint()
            self.restorable = self.checkpoints
            self.env.record(t.Checkpoint(self.checkpoints))
        elif step.kind == "crash":
            self.impl.crash()
            self.env.record(t.Crash())
        elif step.kind == "restore":
            self.env.record(t.Restore(self.restorable))
            self.channels.restore()
            self._crashable(self.impl.restore, step.crash_after)
        elif step.kind == "timeout":
            start = len(self.env.events)
            self.impl.wait_bound_passed()  # type: ignore[attr-defined]  # capabilities.timeout
            self.env.record(t.Timeout(len(self.env.events) - start))
        else:
            start = len(self.env.events)
            memory = self.impl.end()
            self.env.record(t.End(end_memory(memory), len(self.env.events) - start))

    def _crashable(self, call: Any, crash_after: int | None) -> None:
        """Run ``call``; crash where the environment says, or after it when the step
        has fewer effects than ``crash_after``."""
        try:
            call()
        except Crashed:
            if not self.env.crashed:
                raise
            self.env.record(t.Crash())
            return
        if crash_after is not None:
            self.impl.crash()
            self.env.record(t.Crash())


def end_memory(
    memory: Mapping[Key, Mapping[str, Any]],
) -> tuple[tuple[Key, tuple[tuple[str, Any], ...]], ...]:
    """The ``End`` event's memory: every key with its fields, sorted by field."""
    return tuple((key, tuple(sorted(dict(fields).items()))) for key, fields in memory.items())
