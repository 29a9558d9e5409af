"""The reference model's trace of a scenario, split by schedule step.

The model's :func:`~replay_contract.model.run.run_schedule` plays the same schedule one
step at a time; the events each step adds are the expected events of that step.
"""

from __future__ import annotations

from replay_contract.model import operator as op
from replay_contract.model import trace as t
from replay_contract.model.contracts import Contract
from replay_contract.model.run import apply
from replay_contract.model.scenario import Scenario, Step

from .runner import schedule


def reference_steps(
    scenario: Scenario, contract: Contract
) -> tuple[tuple[Step, tuple[t.Event, ...]], ...]:
    """Each step of the schedule (with the implied ``end``) and the events it adds."""
    world = op.World(scenario.topology, scenario.agent, contract)
    steps = []
    for step in schedule(scenario):
        before = len(world.events)
        world = apply(world, step)
        steps.append((step, world.events[before:]))
    return tuple(steps)
