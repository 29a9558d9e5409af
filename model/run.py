"""Running a scenario under a contract, and what the run shows."""

from __future__ import annotations

from attrs import frozen

from . import operator as op
from . import trace as t
from .contracts import Contract
from .errors import ScenarioError
from .scenario import Scenario, Step


def apply(world: op.World, step: Step) -> op.World:
    """One schedule step."""
    if step.kind == "deliver":
        assert step.record is not None
        return op.deliver(world, step.record, step.crash_after)
    if step.kind == "checkpoint":
        return op.checkpoint(world)
    if step.kind == "crash":
        return op.crash(world)
    if step.kind == "restore":
        return op.restore(world, step.crash_after)
    if step.kind == "timeout":
        return op.timeout(world)
    return op.end(world)


def run_schedule(scenario: Scenario, contract: Contract, source: str | None = None) -> op.World:
    """The world after every step of the schedule, then ``end`` if it did not end."""
    world = op.World(scenario.topology, scenario.agent, contract)
    where = source or scenario.name
    for i, step in enumerate(scenario.schedule):
        try:
            world = apply(world, step)
        except ScenarioError as exc:
            raise ScenarioError(f"{where}: schedule[{i}]: {exc}") from None
    if not world.ended:
        if not world.operator.up:
            raise ScenarioError(
                f"{where}: the schedule ends with the operator down (add a restore step)"
            )
        world = op.end(world)
    return world


@frozen
class Run:
    """A finished run: its trace and the figures ``simulate`` reports."""

    scenario: Scenario
    contract: Contract
    world: op.World

    @property
    def trace(self) -> t.Trace:
        return t.Trace(self.scenario.agent, self.contract.basis, self.world.events)


def simulate(scenario: Scenario, contract: Contract) -> Run:
    return Run(scenario, contract, run_schedule(scenario, contract))
