"""The observable trace of a run.

A trace is the sequence of events a run leaves: what the environment did (``deliver``,
``checkpoint``, ``crash``, ``restore``, ``timeout``, ``end``), what the operator decided
(``accept``, ``wait``, ``reuse``, ``give-up``, ``invalidate``) and its external and durable
effects (``tool``, ``save``, ``order``, ``output``). The properties of the contract are
predicates over this sequence; an implementation under test reports the same events.

Events that are durable writes or external calls are *effects*: a crash can fall after
any of them (``crash_after`` in a schedule counts them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from attrs import asdict, frozen

from .agent import Agent, Path
from .topology import Key, Record


@frozen
class Deliver:
    """A record reached the operator from its channel."""

    kind: ClassVar[str] = "deliver"
    identity: str
    key: Key
    channel: str
    offset: int
    digest: str
    payload: Any

    @classmethod
    def of(cls, record: Record) -> Deliver:
        """The delivery of ``record`` (as it arrives: changed or not)."""
        return cls(
            record.identity,
            record.key,
            record.channel,
            record.offset,
            record.digest,
            record.payload,
        )


@frozen
class Wait:
    """An input was held in keyed state until its recorded predecessor is re-accepted."""

    kind: ClassVar[str] = "wait"
    key: Key
    identity: str
    awaiting: str


@frozen
class Accept:
    """An input was accepted into its key's history at a position."""

    kind: ClassVar[str] = "accept"
    key: Key
    position: int
    identity: str
    digest: str


@frozen
class Tool:
    """A tool was called (external work)."""

    kind: ClassVar[str] = "tool"
    key: Key
    position: int
    identity: str
    digest: str
    path: Path
    tool: str
    result: str


@frozen
class Save:
    """A completion was written durably; ``order`` when the write also records the
    input's position."""

    kind: ClassVar[str] = "save"
    key: Key
    position: int
    identity: str
    digest: str
    path: Path
    completion: int
    reads: tuple[Any, ...]
    order: bool = False


@frozen
class Order:
    """An input's position was written durably on its own."""

    kind: ClassVar[str] = "order"
    key: Key
    position: int
    identity: str
    digest: str


@frozen
class Reuse:
    """A saved completion was served from the store instead of running the action."""

    kind: ClassVar[str] = "reuse"
    key: Key
    position: int
    identity: str
    digest: str
    path: Path
    completion: int
    reads: tuple[Any, ...]


@frozen
class GiveUp:
    """A recorded input was given up: the key diverges at its position."""

    kind: ClassVar[str] = "give-up"
    key: Key
    position: int
    identity: str
    reason: str


@frozen
class Invalidate:
    """Saved entries were invalidated; ``completions`` lists the completions voided."""

    kind: ClassVar[str] = "invalidate"
    key: Key
    position: int
    completions: tuple[int, ...]
    durable: bool = True


@frozen
class Output:
    """An action emitted an output (committed with the next checkpoint)."""

    kind: ClassVar[str] = "output"
    key: Key
    identity: str
    path: Path
    value: str


@frozen
class Checkpoint:
    kind: ClassVar[str] = "checkpoint"
    checkpoint: int


@frozen
class Crash:
    kind: ClassVar[str] = "crash"


@frozen
class Restore:
    kind: ClassVar[str] = "restore"
    checkpoint: int


@frozen
class Timeout:
    """Processing time passed the contract's wait bound, and the operator has acted on
    it: reported at the end of the ``timeout`` step, after what it released or gave up,
    when no input may wait any more. ``step_events`` counts the events of the step before
    this one, so that a trace file says where the step began."""

    kind: ClassVar[str] = "timeout"
    step_events: int = 0


@frozen
class End:
    """End of input; ``memory`` is the final memory of every key. Reported last, after
    what the end of input decided (a recorded input given up, what waited for it run
    again); ``step_events`` counts those events, so that a trace file says where the
    step began."""

    kind: ClassVar[str] = "end"
    memory: tuple[tuple[Key, tuple[tuple[str, Any], ...]], ...]
    step_events: int = 0


Event = (
    Deliver
    | Wait
    | Accept
    | Tool
    | Save
    | Order
    | Reuse
    | GiveUp
    | Invalidate
    | Output
    | Checkpoint
    | Crash
    | Restore
    | Timeout
    | End
)

EVENT_TYPES: dict[str, type[Any]] = {
    cls.kind: cls
    for cls in (
        Deliver,
        Wait,
        Accept,
        Tool,
        Save,
        Order,
        Reuse,
        GiveUp,
        Invalidate,
        Output,
        Checkpoint,
        Crash,
        Restore,
        Timeout,
        End,
    )
}

#: Events after which a crash can fall: durable writes and external calls.
EFFECTS = (Tool, Save, Order, Invalidate)


def is_effect(event: Event) -> bool:
    return isinstance(event, EFFECTS) and not (isinstance(event, Invalidate) and not event.durable)


@frozen
class Trace:
    """A run's events, with what the properties need to judge them.

    ``basis`` is what the contract compares before a reuse: ``history`` (the key's
    preceding accepted inputs) or ``reads`` (the values the action reads).
    """

    agent: Agent
    basis: str
    events: Sequence[Event]


def event_to_json(event: Event) -> dict[str, Any]:
    data = {"event": event.kind}
    for name, value in asdict(event, recurse=False).items():
        data[name] = _plain(value)
    return data


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value
