"""The reference model as an implementation under test (targets ``model`` and
``mutant:<name>``).

The model computes a whole step at once; this adapter replays the step's events into
the suite's environment one by one — tool calls through :meth:`Environment.tool`,
outputs through :meth:`Environment.output`, decisions and durable writes through
:meth:`Environment.report` — so the suite drives it exactly like any other
implementation. When the environment crashes the step after the k-th effect, the adapter
recomputes the step with the model's own ``crash_after=k``: the world it keeps is the
one the model reaches when it crashes there.

A mutant runs under a broken contract whatever contract the suite asks for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from replay_contract.model import operator as op
from replay_contract.model import trace as t
from replay_contract.model.agent import Agent
from replay_contract.model.contracts import ORDERED, Contract
from replay_contract.model.topology import Key, Record, Topology

from .environment import REPORTABLE
from .interface import Capabilities, Crashed, Environment

#: What the suite records itself; the adapter does not replay these.
_SUITE_EVENTS = (t.Deliver, t.Checkpoint, t.Crash, t.Restore, t.Timeout, t.End)


class ModelImplementation:
    """The reference model, stepped through the :class:`Implementation` protocol."""

    def __init__(
        self, contract: Contract | None = None, claims: tuple[str, ...] | None = None
    ) -> None:
        self.forced = contract
        claimed = (
            claims
            if claims is not None
            else ((ORDERED.name,) if contract is not None else _all_contracts())
        )
        self.capabilities = Capabilities(
            contracts=claimed, crash_points=True, non_replayable=True, rescaling=False, timeout=True
        )
        self._world: op.World | None = None
        self._env: Environment | None = None

    def open(self, agent: Agent, topology: Topology, contract: Contract, env: Environment) -> None:
        self._world = op.World(topology, agent, self.forced or contract)
        self._env = env

    @property
    def world(self) -> op.World:
        if self._world is None:
            raise RuntimeError("the implementation is not open")
        return self._world

    def deliver(self, record: Record) -> None:
        self._step(lambda w, n: op.deliver(w, record.identity, n))
        delivered = next(e for e in reversed(self.world.events) if isinstance(e, t.Deliver))
        if delivered.digest != record.digest:
            raise RuntimeError(
                f"the suite delivered {record.identity} with digest "
                f"{record.digest}, the model's channel with {delivered.digest}"
            )

    def checkpoint(self) -> int:
        self._world = op.checkpoint(self.world)
        return self.world.checkpoint.checkpoint

    def crash(self) -> None:
        if self.world.operator.up:
            self._world = op.crash(self.world)

    def restore(self) -> None:
        self._step(op.restore)

    def wait_bound_passed(self) -> None:
        self._step(lambda w, _: op.timeout(w))

    def end(self) -> Mapping[Key, Mapping[str, Any]]:
        self._step(lambda w, _: op.end(w))
        end = self.world.events[-1]
        assert isinstance(end, t.End)
        return {key: dict(fields) for key, fields in end.memory}

    def close(self) -> None:
        self._world, self._env = None, None

    def _step(self, handler: Callable[[op.World, int | None], op.World]) -> None:
        """Run one step in the model, then replay its events into the environment."""
        before = self.world
        after = handler(before, None)
        effects = 0
        events = after.events[len(before.events) :]
        for i, event in enumerate(events):
            try:
                effects += self._replay(event, events[i + 1 :])
            except Crashed:
                effects += int(t.is_effect(event))
                self._world = handler(before, effects)
                raise
        self._world = after

    def _replay(self, event: t.Event, rest: tuple[t.Event, ...]) -> int:
        """Hand one event to the environment; 1 when it is an effect."""
        env = self._env
        assert env is not None
        if isinstance(event, _SUITE_EVENTS):
            return 0
        if isinstance(event, t.Tool):
            record = self._record(event.identity, event.digest)
            result = env.tool(
                event.key, event.position, record, event.path, event.tool, _reads(event, rest)
            )
            if result != event.result:
                raise RuntimeError(
                    f"tool {event.tool} returned {result}, the model computed {event.result}"
                )
            return 1
        if isinstance(event, t.Output):
            env.output(event.key, event.identity, event.path, event.value)
            return 0
        assert isinstance(event, REPORTABLE)
        env.report(event)
        return int(t.is_effect(event))

    def _record(self, identity: str, digest: str) -> Record:
        record = self.world.topology.record(identity)
        if record.digest != digest:
            record = record.replayed()
        return record


def _reads(tool: t.Tool, rest: tuple[t.Event, ...]) -> tuple[Any, ...]:
    """The values the calling action read: the model records them on the save that
    follows the action's tool calls, not on the calls themselves."""
    for event in rest:
        if isinstance(event, t.Save) and (event.position, event.identity, event.path) == (
            tool.position,
            tool.identity,
            tool.path,
        ):
            return event.reads
    raise RuntimeError(f"no save follows the tool call of {tool.identity} {tool.path}")


def _all_contracts() -> tuple[str, ...]:
    from replay_contract.model.contracts import CONTRACTS

    return tuple(CONTRACTS)
