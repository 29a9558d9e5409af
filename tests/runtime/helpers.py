"""Shared helpers of the runtime tests: judging a run, sweeping crash points, and driving
a runtime by hand."""

from __future__ import annotations

import random
from typing import Any

from replay_contract.conformance.channels import Channels
from replay_contract.conformance.environment import SuiteEnvironment
from replay_contract.conformance.generate import redeliver
from replay_contract.conformance.judge import PASSED, Result, judge
from replay_contract.conformance.reference import reference_steps
from replay_contract.model import trace as t
from replay_contract.model.contracts import Contract
from replay_contract.model.scenario import Scenario, Step
from replay_contract.model.trace import is_effect
from replay_contract.runtime.operator import CLAIMED, RuntimeOperator
from replay_contract.runtime.store import ActionStateStore, Backend, Namespace


def judged(backend: Backend, scenario: Scenario, contract: Contract) -> Result:
    """The conformance suite's verdict on the runtime over ``backend``; fails loudly."""
    result = judge(RuntimeOperator(backend, claims=(*CLAIMED, contract.name)), scenario, contract)
    assert result.verdict == PASSED, (
        f"{scenario.name} under {contract.name}: {result.reason}\n{result.report}"
    )
    return result


class _Watched:
    """A store client that, once closed, notes which of the entries it sent landed."""

    def __init__(self, store: ActionStateStore, namespace: Namespace) -> None:
        self.store, self.namespace = store, namespace
        self.sent: list[int] = []
        self.landed: set[int] = set()
        self.closed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def send(self, entries: Any) -> list[int]:
        ids = self.store.send(entries)
        self.sent.extend(ids)
        return ids

    def append(self, entries: Any) -> list[int]:
        ids = self.store.append(entries)
        self.sent.extend(ids)
        return ids

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.store.close()
        if self.sent:  # nobody wrote since: what lies under these ids is this client's
            reader = self.namespace.connect()
            try:
                log = dict(reader.read(min(self.sent)))
            finally:
                reader.close()
            self.landed = {i for i in self.sent if i in log}


class _WatchedNamespace:
    def __init__(self, namespace: Namespace) -> None:
        self.namespace, self.name = namespace, namespace.name

    def connect(self) -> ActionStateStore:
        return _Watched(self.namespace.connect(), self.namespace)  # type: ignore[return-value]

    def drop(self) -> None:
        self.namespace.drop()


class Watched:
    """A backend whose store clients note which of their entries landed (see
    :func:`pipelined_breaks`)."""

    def __init__(self, backend: Backend) -> None:
        self.backend, self.name = backend, backend.name

    def namespace(self) -> Namespace:
        return _WatchedNamespace(self.backend.namespace())

    def close(self) -> None:
        pass  # the backend belongs to the caller


def pipelined_breaks(
    backend: Backend, scenario: Scenario, contract: Contract
) -> tuple[list[str], int]:
    """The properties the pipelined runtime over ``backend`` breaks on ``scenario`` that
    the reference model keeps (it must not fail), and how many of the entries it sent
    never landed. Its reports come later than the model's step-by-step trace has them,
    so the run is judged by the properties, not event by event. A write in flight at a
    crash that landed was saved before the crash, though the crash kept its report from
    being made: its report joins the trace right before that crash."""
    from replay_contract.conformance.runner import observe
    from replay_contract.spec.properties import check_all

    impl = RuntimeOperator(Watched(backend), pipelined=True)
    run = observe(impl, scenario, contract)
    assert run.error is None, f"{scenario.name}: {run.error}"
    events: list[t.Event] = []
    crashes = iter(impl.in_flight_at_crashes)
    lost = 0
    for e in run.events:
        if isinstance(e, t.Crash):
            store, in_flight = next(crashes)
            landed = store.landed if isinstance(store, _Watched) else set()
            events.extend(report for i, report in in_flight if i in landed)
            lost += sum(i not in landed for i, _ in in_flight)
        events.append(e)
    expected = reference_steps(scenario, contract)
    model = t.Trace(scenario.agent, contract.basis, tuple(e for _, es in expected for e in es))
    actual = t.Trace(scenario.agent, contract.basis, tuple(events))
    kept = {v.property for v in check_all(model) if v.holds}
    broken = [
        f"{v.property}: {v.explanation}"
        for v in check_all(actual)
        if not v.holds and v.property in kept
    ]
    return broken, lost


def crash_points(scenario: Scenario, contract: Contract, seed: int = 0) -> list[Scenario]:
    """One variant per crash point of every ``deliver`` and ``restore`` step, also those
    after an earlier crash: the step crashes after its k-th effect (0: before any, up to
    one past its last: it completes, then the crash), the runtime is restored, and every
    record still to come is delivered in an interleaving drawn from ``seed``."""
    steps = reference_steps(scenario, contract)
    variants = []
    for i, (step, events) in enumerate(steps):
        if step.kind not in ("deliver", "restore") or step.crash_after is not None:
            continue
        effects = sum(is_effect(e) for e in events)
        for k in range(effects + 2):
            head = (*scenario.schedule[:i], Step(step.kind, step.record, k), Step("restore"))
            rng = random.Random(f"{seed}:{i}:{k}")
            variants.append(
                scenario.with_schedule(
                    redeliver(rng, scenario.topology, head), f"{scenario.name}@{i}.{k}"
                )
            )
    return variants


class Quiet:
    """An environment that answers tool calls and ignores outputs and reports."""

    def tool(self, key, position, record, path, tool, reads):  # type: ignore[no-untyped-def]
        return f"{tool}:{record.identity}"

    def output(self, key, identity, path, value):  # type: ignore[no-untyped-def]
        pass

    def report(self, event):  # type: ignore[no-untyped-def]
        pass


class ByHand:
    """Drives a runtime one delivery at a time, recording what the suite's runner would
    record, so that a fault test can stop the server between two deliveries."""

    def __init__(self, impl: RuntimeOperator, scenario: Scenario, contract: Contract) -> None:
        self.impl, self.scenario = impl, scenario
        self.env = SuiteEnvironment()
        self.channels = Channels(scenario.topology)
        impl.open(scenario.agent, scenario.topology, contract, self.env)

    def deliver(self, identity: str) -> None:
        record = self.channels.deliver(identity)
        self.env.record(t.Deliver.of(record))
        self.impl.deliver(record)
