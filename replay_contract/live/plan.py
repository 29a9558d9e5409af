"""What a live run does in each attempt of the Flink job, from a scenario (pure).

A scenario's schedule splits at its crashes into *attempts*: attempt 0 is the job's first
execution, attempt ``n`` the execution Flink restarts after the ``n``-th injected failure
(from its latest completed checkpoint). Each attempt is a list of actions:

- ``deliver``: the record, as the reference model delivers it (a changed re-delivery
  carries the changed payload); ``first`` when the record was never written to its
  channel's partition before (the driver writes it just in time), else the source reads
  it again after Flink rewound it to the checkpoint's offsets;
- ``checkpoint``: the driver triggers one and waits until it completed;
- ``crash``: the driver injects a task failure.

:func:`plan` refuses, with the reason, a scenario that a live job cannot express
(:class:`Inexpressible`), instead of running something else.
"""

from __future__ import annotations

from typing import Any

from attrs import frozen

from replay_contract.model import trace as t
from replay_contract.model.contracts import Contract
from replay_contract.model.run import run_schedule
from replay_contract.model.scenario import Scenario
from replay_contract.model.topology import Record
from replay_contract.runtime.state import record_json


class Inexpressible(ValueError):
    """A scenario a live Flink job cannot express; the message is the reason."""


@frozen
class Action:
    kind: str  # "deliver", "checkpoint", "crash"
    record: Record | None = None
    first: bool = False


@frozen
class Attempt:
    number: int
    actions: tuple[Action, ...]

    @property
    def deliveries(self) -> tuple[Record, ...]:
        return tuple(a.record for a in self.actions if a.record is not None)


@frozen
class Plan:
    scenario: Scenario
    attempts: tuple[Attempt, ...]

    def to_json(self) -> dict[str, Any]:
        """What the gate in the job needs: per attempt, each delivery's turn and form."""
        return {
            "attempts": [[record_json(r) for r in attempt.deliveries] for attempt in self.attempts]
        }


def plan(scenario: Scenario, contract: Contract) -> Plan:
    """The attempts of ``scenario`` (see the module docstring)."""
    for step in scenario.schedule:
        if step.crash_after is not None:
            raise Inexpressible(
                f"step '{step}' crashes inside a step (after a tool call or write, before "
                "the next): a live job fails only between inputs"
            )
    # The records exactly as the model delivers them, in schedule order.
    world = run_schedule(scenario, contract)
    delivered = iter(
        Record(e.identity, e.key, e.payload, e.channel, e.offset)
        for e in world.events
        if isinstance(e, t.Deliver)
    )
    topology = scenario.topology
    written: dict[str, int] = {c.name: 0 for c in topology.channels}  # high water
    offsets = dict(written)  # the running attempt's next offset per channel
    saved = dict(offsets)  # the latest checkpoint's
    attempts: list[Attempt] = []
    actions: list[Action] = []
    for step in scenario.schedule:
        if step.kind == "deliver":
            record = next(delivered)
            first = record.offset >= written[record.channel]
            written[record.channel] = max(written[record.channel], record.offset + 1)
            offsets[record.channel] = record.offset + 1
            actions.append(Action("deliver", record, first))
        elif step.kind == "checkpoint":
            saved = dict(offsets)
            actions.append(Action("checkpoint"))
        elif step.kind == "crash":
            actions.append(Action("crash"))
            attempts.append(Attempt(len(attempts), tuple(actions)))
            actions = []
        elif step.kind == "restore":
            offsets = dict(saved)
        elif step.kind == "end":
            break
        else:
            raise Inexpressible(f"step '{step}' has no counterpart in the live job yet")
    attempts.append(Attempt(len(attempts), tuple(actions)))
    return Plan(scenario, tuple(attempts))
