"""What an implementation under test provides, and what the suite provides to it.

An implementation is any object with the methods of :class:`Implementation` (no base
class to inherit). The suite drives it step by step with the schedule vocabulary of
scenarios and gives it an :class:`Environment`: the tools, the output sink and a place
to report its decisions. The suite itself records every tool call and every output, so
an implementation cannot under-report its external work.

The decisions an implementation reports are trace events of
:mod:`replay_contract.model.trace`: ``Accept``, ``Wait``, ``Reuse``, ``Save``,
``Order``, ``Invalidate`` and ``GiveUp``. The suite adds ``Deliver``, ``Tool``,
``Output``, ``Checkpoint``, ``Crash``, ``Restore``, ``Timeout`` and ``End`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from attrs import field, frozen

from replay_contract.errors import TargetUnavailable as TargetUnavailable
from replay_contract.model import trace as t
from replay_contract.model.agent import Agent, Path
from replay_contract.model.contracts import Contract
from replay_contract.model.scenario import Scenario
from replay_contract.model.topology import Key, Record, Topology


@frozen
class Capabilities:
    """What an implementation claims; the suite skips, with the reason, what it lacks.

    ``contracts``: the contract names it implements. ``crash_points``: it can crash
    after the N-th effect of a step (between a tool call and the save of its
    completion, say), not only between steps. ``non_replayable``: it handles sources
    that lose or change records on re-delivery. ``rescaling``: it can restore with a
    different parallelism. ``timeout``: it runs the ``timeout`` step (processing time
    passes the contract's wait bound) through a ``wait_bound_passed()`` method; a target
    without it skips the scenarios that have the step.
    """

    contracts: tuple[str, ...]
    crash_points: bool = True
    non_replayable: bool = True
    rescaling: bool = False
    timeout: bool = False
    #: Why the target cannot express a given scenario under a contract (a one-line
    #: reason), or ``None`` when it can: for what the flags above do not cover (the
    #: live Flink target cannot place a checkpoint between records its restarted source
    #: has already emitted, say). The suite skips such a scenario with the reason.
    expresses: Callable[[Scenario, Contract], str | None] | None = field(default=None, eq=False)


class Crashed(Exception):
    """Raised by the environment when a step reaches the effect it must crash after.

    An implementation lets it propagate out of :meth:`Implementation.deliver` or
    :meth:`Implementation.restore`: its in-memory state is then lost, as in a real
    crash. The suite does not call :meth:`Implementation.crash` after it; its next call
    is :meth:`Implementation.restore` (or :meth:`Implementation.close`).

    ``crash_after`` N > 0 raises right after the N-th effect of the step (the tool was
    called, the write is durable). ``crash_after`` 0 raises at the step's first call to
    the environment, whatever it is, before doing it; so report the step's first
    decision (``Accept``, ``Wait``, ``GiveUp``) before its first durable write. Any call
    after a ``Crashed`` within the same step raises again and fails the scenario.
    """


class Environment(Protocol):
    """What the suite gives an implementation."""

    def tool(
        self, key: Key, position: int, record: Record, path: Path, tool: str, reads: tuple[Any, ...]
    ) -> str:
        """Call a tool (external work). Counts as an effect."""

    def output(self, key: Key, identity: str, path: Path, value: str) -> None:
        """Emit an output to the sink (committed at the next checkpoint)."""

    def report(self, event: t.Event) -> None:
        """Report a decision (Accept, Wait, Reuse, GiveUp) or a durable write that
        already happened (Save, Order, Invalidate). Reporting a durable write counts as
        an effect; the environment raises :class:`Crashed` after it when the step must
        crash there."""


@runtime_checkable
class Implementation(Protocol):
    """An implementation of the keyed operator under some contract."""

    capabilities: Capabilities

    def open(self, agent: Agent, topology: Topology, contract: Contract, env: Environment) -> None:
        """Start empty: no state, an empty store (checkpoint 0 is this state)."""

    def deliver(self, record: Record) -> None:
        """Handle one record as its channel delivers it (payload as re-delivered)."""

    def checkpoint(self) -> int:
        """Take a checkpoint and return its number (1, 2, ...)."""

    def crash(self) -> None:
        """Lose every piece of in-memory state; keep what is durable."""

    def restore(self) -> None:
        """Restore from the last completed checkpoint (then drain what recovery
        allows)."""

    def end(self) -> Mapping[Key, Mapping[str, Any]]:
        """End of input: give up what is still missing, flush, and return every key's
        final memory."""

    # An implementation that claims ``capabilities.timeout`` also has
    # ``wait_bound_passed() -> None``: processing time passed the contract's wait bound;
    # release or give up, within the call, every input that waits (the ``timeout`` step).

    def close(self) -> None:
        """Release what this scenario used (topics, tables, connections). The suite
        opens the same object again for the next scenario; an implementation that keeps
        something running across scenarios (a subprocess) may have an optional
        ``shutdown()`` method, which the suite calls once at the end."""


#: Builds an implementation; a target name maps to one of these.
Factory = Callable[[], Implementation]
