"""Shared helpers of the runtime tests: judging a run, sweeping crash points, and driving
a runtime by hand."""

from __future__ import annotations

import random

from replay_contract.conformance.channels import Channels
from replay_contract.conformance.environment import SuiteEnvironment
from replay_contract.conformance.judge import PASSED, Result, judge
from replay_contract.conformance.reference import reference_steps
from replay_contract.model import trace as t
from replay_contract.model.contracts import Contract
from replay_contract.model.scenario import Scenario, Step
from replay_contract.model.trace import is_effect
from replay_contract.runtime.operator import CLAIMED, RuntimeOperator
from replay_contract.runtime.store import Backend


def judged(backend: Backend, scenario: Scenario, contract: Contract) -> Result:
    """The conformance suite's verdict on the runtime over ``backend``; fails loudly."""
    result = judge(RuntimeOperator(backend, claims=(*CLAIMED, contract.name)), scenario, contract)
    assert result.verdict == PASSED, (
        f"{scenario.name} under {contract.name}: {result.reason}\n{result.report}"
    )
    return result


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
                scenario.with_schedule(_rest(rng, scenario, head), f"{scenario.name}@{i}.{k}")
            )
    return variants


def _rest(rng: random.Random, scenario: Scenario, head: tuple[Step, ...]) -> tuple[Step, ...]:
    channels = Channels(scenario.topology)
    for step in head:
        if step.kind == "deliver":
            assert step.record is not None
            channels.deliver(step.record)
        elif step.kind == "checkpoint":
            channels.checkpoint()
        elif step.kind == "restore":
            channels.restore()
    steps = list(head)
    while pending := channels.pending():
        nxt = channels.next_record(rng.choice(pending))
        assert nxt is not None
        steps.append(Step("deliver", channels.deliver(nxt.identity).identity))
    return tuple(steps)


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
