"""The keyed operator, one handler per step of the schedule vocabulary.

``deliver``, ``checkpoint``, ``crash``, ``restore`` and ``end`` each take a
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

from . import trace as t
from .agent import Agent, call_tool, execute, read
from .contracts import Contract
from .errors import ScenarioError
from .log import Log
from .store import (
    Completion,
    Entry,
    IndexedView,
    Invalidation,
    OrderEntry,
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
    history: Log[tuple[str, str]] = field(factory=Log)
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
    session.emit(t.Deliver.of(delivered))
    session.arrive(delivered)
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
    session.emit(t.Restore(saved.checkpoint))
    if world.contract.wait:
        view = session.view()
        keys = {_k(k): k for k in view.keys()}  # noqa: SIM118 (a StoreView, not a dict)
        keys.update({_k(r.key): r.key for ks in saved.operator.keys.values() for r in ks.waiting})
        for key in keys.values():
            ks = session.key(key)
            expected = RecordedOrder(view.recorded_order(key, ks.next_position))
            session.put(key, evolve(ks, expected=expected, diverge_at=None))
        for key in keys.values():
            session.advance(key)
    return _commit(world, session, crash_after)


def end(world: World) -> World:
    """End of input: give up every recorded input still missing, flush, commit."""
    require_up(world, "end")
    session = _Session(world)
    for key in [ks_key for ks_key in _keys_in(world.operator)]:
        ks = session.key(key)
        if ks.expected:
            head = ks.expected[0]
            session.diverge(key, head.position, head.identity, "end of input")
        session.advance(key)
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
        events=world.events.appended(t.End(memory)),
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
            operator=session.operator,
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


# -- handling inputs ---------------------------------------------------------------------


class _Session:
    """Local, mutable scratch for one step; nothing of it escapes but through _commit."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.contract = world.contract
        self.agent = world.agent
        self.operator = world.operator
        self.events: list[t.Event] = []
        self.writes: list[tuple[int, Entry]] = []  # (event index, entry)

    # state access
    def key(self, key: Key) -> KeyState:
        return self.operator.key(key)

    def put(self, key: Key, ks: KeyState) -> None:
        self.operator = evolve(self.operator, keys={**self.operator.keys, _k(key): ks})

    def emit(self, event: t.Event) -> None:
        self.events.append(event)

    def log_length(self) -> int:
        return len(self.world.store) + len(self.writes)

    def write(self, entry: Entry, event: t.Event) -> None:
        self.writes.append((len(self.events), entry))
        self.emit(event)

    def view(self) -> StoreView | IndexedView:
        return view_of(
            self.world.store,
            [e for _, e in self.writes],
            self.operator.marker,
            self.operator.volatile,
        )

    # arrival, waiting and divergence
    def arrive(self, record: Record) -> None:
        ks = self.key(record.key)
        if not (self.contract.wait and ks.recovering):
            self.accept(record, recorded=False)
            return
        if self.contract.split_order:
            arrived = {w.identity for w in ks.waiting} | {record.identity}
            r = ks.expected.first_missing(record.channel, record.offset, arrived)
            if r is not None:
                self.emit(
                    t.GiveUp(
                        record.key,
                        r.position,
                        r.identity,
                        f"a later record of channel {record.channel!r} arrived",
                    )
                )
                ks = evolve(
                    ks,
                    expected=ks.expected.before(r.position),
                    diverge_at=r.position
                    if ks.diverge_at is None
                    else min(ks.diverge_at, r.position),
                )
        self.put(record.key, evolve(ks, waiting=(*ks.waiting, record)))
        self.advance(record.key)
        ks = self.key(record.key)
        if any(w.identity == record.identity for w in ks.waiting):
            awaiting = ks.expected[0].identity if ks.expected else ""
            self.emit(t.Wait(record.key, record.identity, awaiting))
            if len(ks.waiting) > self.contract.give_up_after and ks.expected:
                head = ks.expected[0]
                self.diverge(
                    record.key,
                    head.position,
                    head.identity,
                    f"more than {self.contract.give_up_after} inputs waited",
                )
                self.advance(record.key)

    def advance(self, key: Key) -> None:
        """Accept what the recorded order allows, then what waits once it is exhausted."""
        while True:
            ks = self.key(key)
            if ks.expected:
                head = ks.expected[0]
                match = next((w for w in ks.waiting if w.identity == head.identity), None)
                if match is None:
                    return
                if match.digest != head.digest:
                    self.diverge(key, head.position, head.identity, "the input came back changed")
                    continue
                self.put(
                    key,
                    evolve(
                        ks,
                        expected=ks.expected[1:],
                        waiting=tuple(w for w in ks.waiting if w is not match),
                    ),
                )
                self.accept(match, recorded=True)
            elif ks.diverge_at is not None:
                missing = ks.diverge_at
                self.diverge(key, missing, "", "its recorded input is missing")
            else:
                waiting = ks.waiting
                self.put(key, evolve(ks, waiting=()))
                for record in waiting:
                    self.accept(record, recorded=False)
                return

    def diverge(self, key: Key, position: int, missing: str, reason: str) -> None:
        """The key's history diverges at ``position``: void its saved suffix."""
        if missing:
            self.emit(t.GiveUp(key, position, missing, reason))
        ks = self.key(key)
        self.put(key, evolve(ks, expected=RecordedOrder(), diverge_at=None))
        self.invalidate(key, Invalidation(key, ks.next_position))

    def invalidate(self, key: Key, inv: Invalidation) -> None:
        every = self.contract.invalidation_scope == "all"
        view = self.view()
        targets = view.keys() if every else [key]
        for target in targets:
            one = Invalidation(target, inv.position, inv.keep)
            voided = view.voided_by(one)
            if self.contract.durable_invalidation:
                self.write(one, t.Invalidate(key, inv.position, voided))
            else:
                self.operator = evolve(
                    self.operator, volatile=(*self.operator.volatile, (self.log_length(), one))
                )
                self.emit(t.Invalidate(key, inv.position, voided, durable=False))

    # running the actions of one accepted input
    def accept(self, record: Record, recorded: bool) -> None:
        c = self.contract
        ks = self.key(record.key)
        position = ks.next_position
        memory = dict(ks.memory)
        self.put(
            record.key,
            evolve(
                ks,
                next_position=position + 1,
                history=ks.history.appended((record.identity, record.digest)),
            ),
        )
        key, ident, dig = record.key, record.identity, record.digest
        self.emit(t.Accept(key, position, ident, dig))
        ordered = recorded or c.record_order == "no"
        if c.record_order == "before-first-tool-call" and not ordered:
            self.write(
                OrderEntry(key, position, ident, dig, record.channel, record.offset),
                t.Order(key, position, ident, dig),
            )
            ordered = True
        for path, action in self.agent.plan():
            reads = read(memory, action)
            found = self.view().find(
                key,
                path,
                identity=ident,
                digest=dig,
                position=position if c.match == "position" else None,
                reads=reads if c.match == "reads" else None,
            )
            if found is not None:
                index, saved = found
                self.emit(t.Reuse(key, position, ident, dig, path, index, reads))
                writes, outputs = saved.writes, saved.outputs
            else:
                if c.on_miss == "invalidate":
                    inv = Invalidation(key, position, keep=(ident, dig))
                    if self.view().voided_by(inv):
                        self.invalidate(key, inv)
                results = tuple(
                    (tool, call_tool(tool, record, path, reads)) for tool in action.tools
                )
                for tool, result in results:
                    self.emit(t.Tool(key, position, ident, dig, path, tool, result))
                effects = execute(action, path, record, reads, results)
                writes, outputs = effects.writes, effects.outputs
                carries = c.record_order == "with-first-completion" and not ordered
                entry = Completion(
                    key,
                    position,
                    ident,
                    dig,
                    path,
                    reads,
                    writes,
                    outputs,
                    carries,
                    record.channel,
                    record.offset,
                )
                self.write(
                    entry,
                    t.Save(key, position, ident, dig, path, self.log_length(), reads, carries),
                )
                ordered = ordered or carries
            memory.update(writes)
            for value in outputs:
                out = t.Output(key, ident, path, value)
                self.emit(out)
                self.operator = evolve(self.operator, pending=self.operator.pending.appended(out))
        if not ordered:
            self.write(
                OrderEntry(key, position, ident, dig, record.channel, record.offset),
                t.Order(key, position, ident, dig),
            )
        self.put(key, evolve(self.key(key), memory=memory))
