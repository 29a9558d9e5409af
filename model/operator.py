"""The keyed operator, one handler per step of the schedule vocabulary.

``deliver``, ``checkpoint``, ``crash``, ``restore``, ``timeout`` and ``end`` each take a
:class:`World` and return the next one; a refused step raises
:class:`~.errors.ScenarioError` and, the world being frozen, leaves it as it was.

Handling a delivery (or the drain that follows a restore) produces a sequence of trace
events; a crash inside the step keeps the events up to the chosen effect, with the
durable writes among them, and drops the rest (:func:`_commit`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import evolve, field, frozen

from . import keyed, recovery
from . import trace as t
from .agent import Agent, Path, call_tool
from .contracts import Contract
from .errors import ScenarioError
from .log import Log
from .store import (
    Entry,
    IndexedView,
    Invalidation,
    RecordedOrder,
    StoreView,
    view_of,
)
from .topology import Key, Record, Topology


@frozen
class KeyState:
    """What the operator keeps for one key (checkpointed keyed state)."""

    next_position: int = 0
    memory: Mapping[str, Any] = field(factory=dict)
    waiting: tuple[Record, ...] = ()
    expected: RecordedOrder = field(factory=RecordedOrder)
    diverge_at: int | None = None

    @property
    def recovering(self) -> bool:
        return bool(self.expected or self.waiting or self.diverge_at is not None)


@frozen
class Operator:
    """The operator's state: keyed state, source offsets, pending outputs.

    ``marker`` is the store position recovery reads from; ``volatile`` holds
    invalidations that were never written to the store (only a broken contract has
    them), each with the log length when it was made.
    """

    up: bool = True
    keys: Mapping[tuple[str, Key], KeyState] = field(factory=dict)
    offsets: Mapping[str, int] = field(factory=dict)
    pending: Log[t.Output] = field(factory=Log)
    marker: int = 0
    volatile: tuple[tuple[int, Invalidation], ...] = ()

    def key(self, key: Key) -> KeyState:
        return self.keys.get(_k(key), KeyState())


@frozen
class SavedCheckpoint:
    checkpoint: int
    operator: Operator


@frozen
class World:
    """Everything a run has: the operator, the store, the channels and the trace."""

    topology: Topology
    agent: Agent
    contract: Contract
    operator: Operator = field(factory=Operator)
    store: Log[Entry] = field(factory=Log)
    checkpoint: SavedCheckpoint = field(factory=lambda: SavedCheckpoint(0, Operator()))
    high_water: Mapping[str, int] = field(factory=dict)
    committed: Log[t.Output] = field(factory=Log)
    events: Log[t.Event] = field(factory=Log)
    ended: bool = False

    def next_record(self, channel: str) -> Record | None:
        """The record a channel delivers next, after any it lost on re-delivery."""
        offset = self.operator.offsets.get(channel, 0)
        high = self.high_water.get(channel, 0)
        records = self.topology.channel(channel).records
        for at in range(offset, len(records)):
            record = records[at]
            if record.offset < high and record.replay is not None and record.replay.lost:
                continue
            return record
        return None


def _k(key: Key) -> tuple[str, Key]:
    """Map key that never merges ``1`` and ``"1"`` (or ``True`` and ``1``)."""
    return (type(key).__name__, key)


# -- steps ------------------------------------------------------------------------------


def deliver(world: World, identity: str, crash_after: int | None = None) -> World:
    record = delivery(world, identity)
    replayed = record.offset < world.high_water.get(record.channel, 0)
    channel = world.topology.channel(record.channel)
    delivered = record.replayed() if replayed and not channel.replayable else record
    session = _Session(world)
    session.operator = evolve(
        session.operator, offsets={**world.operator.offsets, record.channel: record.offset + 1}
    )
    session.report(t.Deliver.of(delivered))
    recovery.arrive(session, delivered)
    high = {
        **world.high_water,
        record.channel: max(world.high_water.get(record.channel, 0), record.offset + 1),
    }
    return _commit(evolve(world, high_water=high), session, crash_after)


def checkpoint(world: World) -> World:
    """Snapshot the operator; the recovery marker is the first store entry that a
    restore from this checkpoint may still need (an entry of a position not yet
    accepted), so recovery never reads more than that."""
    require_up(world, "checkpoint")
    op = world.operator
    view = _Session(world).view()
    needed = view.needed(lambda key: op.key(key).next_position)
    op = evolve(op, pending=Log(), marker=len(world.store) if needed is None else needed)
    number = world.checkpoint.checkpoint + 1
    return evolve(
        world,
        operator=op,
        checkpoint=SavedCheckpoint(number, op),
        committed=world.committed + world.operator.pending,
        events=world.events.appended(t.Checkpoint(number)),
    )


def crash(world: World) -> World:
    require_up(world, "crash")
    return evolve(
        world,
        operator=evolve(world.operator, up=False, pending=Log()),
        events=world.events.appended(t.Crash()),
    )


def restore(world: World, crash_after: int | None = None) -> World:
    if world.operator.up:
        raise ScenarioError("restore: the operator is running (crash it first)")
    saved = world.checkpoint
    session = _Session(evolve(world, operator=saved.operator))
    session.report(t.Restore(saved.checkpoint))
    if world.contract.wait:
        keys = {_k(k): k for k in session.view().keys()}  # noqa: SIM118 (a StoreView)
        keys.update({_k(r.key): r.key for ks in saved.operator.keys.values() for r in ks.waiting})
        recovery.restore_order(session, keys.values())
    return _commit(world, session, crash_after)


def timeout(world: World) -> World:
    """Processing time passes the contract's wait bound: what waits is released or given
    up now (:func:`.recovery.timeout`); the ``timeout`` event closes the step."""
    require_up(world, "timeout")
    session = _Session(world)
    recovery.timeout(session)
    session.report(t.Timeout(len(session.events)))
    return _commit(world, session, None)


def end(world: World) -> World:
    """End of input: give up every recorded input still missing, flush, commit."""
    require_up(world, "end")
    session = _Session(world)
    recovery.end_of_input(session)
    decided = len(session.events)
    world = _commit(world, session, None)
    memory = tuple(
        (ks_key, tuple(sorted(world.operator.key(ks_key).memory.items())))
        for ks_key in _keys_in(world.operator)
    )
    return evolve(
        world,
        committed=world.committed + world.operator.pending,
        operator=evolve(world.operator, pending=Log()),
        ended=True,
        events=world.events.appended(t.End(memory, decided)),
    )


def delivery(world: World, identity: str) -> Record:
    """The record ``deliver identity`` brings: the operator must be up and the record
    the next one its channel delivers (each channel keeps its order)."""
    require_up(world, f"deliver {identity!r}")
    try:
        record = world.topology.record(identity)
    except KeyError:
        raise ScenarioError(f"deliver {identity!r}: no such record") from None
    expected = world.next_record(record.channel)
    if expected is None:
        raise ScenarioError(
            f"deliver {identity!r}: channel {record.channel!r} has nothing left to deliver"
        )
    if expected.identity != identity:
        raise ScenarioError(
            f"deliver {identity!r}: channel {record.channel!r} delivers "
            f"{expected.identity!r} next (each channel keeps its order)"
        )
    return record


def _keys_in(op: Operator) -> list[Key]:
    return [name[1] for name in op.keys]


def require_up(world: World, what: str) -> None:
    if world.ended:
        raise ScenarioError(f"{what}: the input has ended")
    if not world.operator.up:
        raise ScenarioError(f"{what}: the operator is down (restore it first)")


def _commit(world: World, session: _Session, crash_after: int | None) -> World:
    """The world after a step, or after a crash that falls after its N-th effect."""
    events, writes = session.events, session.writes
    if crash_after is None:
        return evolve(
            world,
            operator=session.finish(),
            store=world.store + tuple(e for _, e in writes),
            events=world.events + tuple(events),
        )
    effects = [i for i, e in enumerate(events) if t.is_effect(e)]
    if crash_after == 0:
        cut = 1  # right after the delivery (or restore) itself, before any effect
    elif crash_after <= len(effects):
        cut = effects[crash_after - 1] + 1
    else:
        cut = len(events)  # fewer effects than asked: the step completes, then the crash
    kept = tuple(events[:cut])
    store = world.store + tuple(e for i, e in writes if i < cut)
    down = evolve(world.operator, up=False, pending=Log())
    return evolve(world, operator=down, store=store, events=world.events + kept + (t.Crash(),))


# -- the host of the rules ---------------------------------------------------------------


class _Session:
    """The model as the host of the contract's rules (:class:`~.keyed.Host`) for one
    step: local, mutable scratch over the frozen world; nothing of it escapes but through
    :func:`_commit` (the keys it changed, frozen again by :meth:`finish`)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.contract = world.contract
        self.agent = world.agent
        self.operator = world.operator
        self.events: list[t.Event] = []
        self.writes: list[tuple[int, Entry]] = []  # (event index, entry)
        self.working: dict[tuple[str, Key], keyed.KeyState] = {}

    def state(self, key: Key) -> keyed.KeyState:
        name = _k(key)
        ks = self.working.get(name)
        if ks is None:
            saved = self.operator.key(key)
            ks = self.working[name] = keyed.KeyState(
                key,
                saved.next_position,
                dict(saved.memory),
                list(saved.waiting),
                saved.expected,  # immutable: shared, not copied
                saved.diverge_at,
            )
        return ks

    def known_keys(self) -> list[Key]:
        names = {**{name: None for name in self.operator.keys}, **dict.fromkeys(self.working)}
        return [name[1] for name in names]

    def finish(self) -> Operator:
        """The operator with the keys this step changed, frozen again."""
        changed = {
            name: KeyState(
                ks.next_position,
                dict(ks.memory),
                tuple(ks.waiting),
                ks.expected,
                ks.diverge_at,
            )
            for name, ks in self.working.items()
        }
        return evolve(self.operator, keys={**self.operator.keys, **changed})

    def report(self, event: t.Event) -> None:
        self.events.append(event)

    def write(self, entry: Entry) -> int:
        index = len(self.world.store) + len(self.writes)
        self.writes.append((len(self.events), entry))
        return index

    def invalidate_in_memory(self, inv: Invalidation) -> None:
        index = len(self.world.store) + len(self.writes)
        self.operator = evolve(self.operator, volatile=(*self.operator.volatile, (index, inv)))

    def tool(
        self, key: Key, position: int, record: Record, path: Path, tool: str, reads: tuple[Any, ...]
    ) -> Any:
        result = call_tool(tool, record, path, reads)
        self.report(t.Tool(key, position, record.identity, record.digest, path, tool, result))
        return result

    def output(self, key: Key, identity: str, path: Path, value: Any) -> None:
        out = t.Output(key, identity, path, value)
        self.report(out)
        self.operator = evolve(self.operator, pending=self.operator.pending.appended(out))

    def view(self) -> StoreView | IndexedView:
        return view_of(
            self.world.store,
            [e for _, e in self.writes],
            self.operator.marker,
            self.operator.volatile,
        )
