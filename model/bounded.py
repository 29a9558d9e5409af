"""Every scenario of a bound, and the exhaustive explorer over them.

A bound (``inputs``, ``channels``, ``keys``, ``crashes``, ``changes`` and a set of
agents) stands for a finite set of scenarios:

- a *shape*: for each of the ``inputs`` records, its channel and its key (channels and
  keys named in order of first appearance, so that renaming gives nothing new), whether
  a non-replayable channel loses or changes it on re-delivery (at most ``changes``
  records do), and one agent of :data:`AGENTS`;
- a *schedule* made of *moves*. A move is an optional ``checkpoint``, then an optional
  plain ``crash``, then one main step: ``deliver`` (the next record of a channel),
  ``restore`` (only after a crash) or ``end`` (only when every channel is drained). A
  ``deliver`` or ``restore`` may crash after any of its effects (``crash_after`` from 0 to
  the number of effects). At most ``crashes`` crashes happen in all.

Records are numbered in the order of their first delivery, so records delivered for
the first time come in that order; re-deliveries after a restore interleave freely,
each channel keeping its order. The symbolic encoding of :mod:`replay_contract.spec`
ranges over exactly these scenarios; :func:`explore` runs each of them through the
model and the properties, and is the reference the encoding is checked against.
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Callable, Iterator, Sequence
from typing import Literal, Protocol

from attrs import field, frozen

from . import operator as op
from . import trace as t
from .agent import Action, Agent
from .contracts import Contract
from .scenario import Scenario, Step
from .topology import Channel, Record, Replay, Topology

#: The agents a bound ranges over. ``stateful``: one action reads and writes the key's
#: memory and calls a tool. ``chain``: an action answers from the memory and, on its
#: follow-up event, a second action records a new value there; the second reads
#: nothing, so a read-set lookup can reuse it whatever came before.
AGENTS: dict[str, Agent] = {
    "stateful": Agent(
        (Action("respond", reads=("notes",), writes=("notes",), tools=("llm",), output=True),)
    ),
    "chain": Agent(
        (
            Action("answer", reads=("notes",), tools=("llm",), output=True, emits=("answered",)),
            Action("record", trigger="answered", writes=("notes",), tools=("classify",)),
        )
    ),
}

Mode = Literal["same", "lost", "changed"]
MODES: tuple[Mode, ...] = ("same", "lost", "changed")

KEY_NAMES = ("K", "J", "L", "M", "N", "P", "Q", "R")


def record_name(index: int) -> str:
    letters = string.ascii_uppercase
    return letters[index] if index < 26 else f"R{index}"


def channel_name(index: int) -> str:
    return f"upstream-{index + 1}"


def key_name(index: int) -> str:
    return KEY_NAMES[index] if index < len(KEY_NAMES) else f"K{index}"


@frozen
class Shape:
    """The fixed part of a bounded scenario: records, channels, keys, replay, agent."""

    channel: tuple[int, ...]
    key: tuple[int, ...]
    mode: tuple[Mode, ...]
    agent: str

    @property
    def inputs(self) -> int:
        return len(self.channel)

    def replayable(self, channel: int) -> bool:
        return all(
            m == "same" for c, m in zip(self.channel, self.mode, strict=True) if c == channel
        )

    def topology(self) -> Topology:
        channels = []
        for c in range(max(self.channel) + 1):
            records: list[Record] = []
            for r in (i for i, ch in enumerate(self.channel) if ch == c):
                name = record_name(r)
                mode = self.mode[r]
                replay = (
                    None
                    if mode == "same"
                    else (
                        Replay(lost=True)
                        if mode == "lost"
                        else Replay(payload=f"{name.lower()}-changed")
                    )
                )
                records.append(
                    Record(
                        name,
                        key_name(self.key[r]),
                        f"{name.lower()}-payload",
                        channel_name(c),
                        len(records),
                        replay,
                    )
                )
            channels.append(Channel(channel_name(c), tuple(records), self.replayable(c)))
        return Topology(tuple(channels))

    def scenario(
        self, schedule: Sequence[Step], name: str = "bounded", description: str = ""
    ) -> Scenario:
        return Scenario(name, AGENTS[self.agent], self.topology(), tuple(schedule), description)


class BoundLike(Protocol):
    @property
    def inputs(self) -> int: ...
    @property
    def channels(self) -> int: ...
    @property
    def keys(self) -> int: ...
    @property
    def crashes(self) -> int: ...
    @property
    def changes(self) -> int: ...
    @property
    def agents(self) -> tuple[str, ...]: ...


def growth(length: int, most: int) -> Iterator[tuple[int, ...]]:
    """Restricted growth strings: labels in order of first appearance, at most ``most``."""

    def extend(prefix: tuple[int, ...], top: int) -> Iterator[tuple[int, ...]]:
        if len(prefix) == length:
            yield prefix
            return
        for label in range(min(top + 2, most)):
            yield from extend((*prefix, label), max(top, label))

    if length == 0:
        yield ()
        return
    yield from extend((0,), 0)


def modes(length: int, most: int) -> Iterator[tuple[Mode, ...]]:
    for changed in range(min(most, length) + 1):
        for where in itertools.combinations(range(length), changed):
            for kinds in itertools.product(("lost", "changed"), repeat=changed):
                mode: list[Mode] = ["same"] * length
                for r, kind in zip(where, kinds, strict=True):
                    mode[r] = "lost" if kind == "lost" else "changed"
                yield tuple(mode)


def shapes(bound: BoundLike) -> Iterator[Shape]:
    """Every shape of the bound."""
    for agent in bound.agents:
        for channel in growth(bound.inputs, bound.channels):
            for key in growth(bound.inputs, bound.keys):
                for mode in modes(bound.inputs, bound.changes):
                    yield Shape(channel, key, mode, agent)


# -- schedules ---------------------------------------------------------------------------


@frozen
class Node:
    """A point of the schedule tree: the world so far and the steps that led there."""

    world: op.World
    steps: tuple[Step, ...] = ()
    crashes: int = 0
    reached: frozenset[str] = field(factory=frozenset)


def _effects(before: op.World, after: op.World) -> int:
    return sum(t.is_effect(e) for e in after.events[len(before.events) :])


def _delivered(world: op.World) -> int:
    return sum(world.high_water.values())


def _drained(world: op.World) -> bool:
    return all(world.next_record(c.name) is None for c in world.topology.channels)


def _main_steps(node: Node, index: dict[str, int], bound: BoundLike) -> Iterator[Node]:
    """The main steps of a move from ``node`` (cut variants included)."""
    world = node.world
    if not world.operator.up:
        yield from _with_cuts(node, Step("restore"), bound)
        return
    for channel in world.topology.channels:
        record = world.next_record(channel.name)
        if record is None:
            continue
        new = record.offset >= world.high_water.get(channel.name, 0)
        if new and index[record.identity] != _delivered(world):
            continue  # first deliveries come in record order
        yield from _with_cuts(node, Step("deliver", record.identity), bound)
    if _drained(world):
        yield Node(op.end(world), (*node.steps, Step("end")), node.crashes, node.reached)


def _with_cuts(node: Node, step: Step, bound: BoundLike) -> Iterator[Node]:
    from .run import apply

    whole = apply(node.world, step)
    yield Node(whole, (*node.steps, step), node.crashes, node.reached)
    if node.crashes < bound.crashes:
        for n in range(_effects(node.world, whole) + 1):
            cut = Step(step.kind, step.record, n)
            yield Node(apply(node.world, cut), (*node.steps, cut), node.crashes + 1, node.reached)


def moves(node: Node, index: dict[str, int], bound: BoundLike) -> Iterator[Node]:
    """Every move from ``node``."""
    world = node.world
    if not world.operator.up:
        yield from _main_steps(node, index, bound)
        return
    for checkpoint in (False, True):
        start = node
        if checkpoint:
            start = Node(
                op.checkpoint(world), (*node.steps, Step("checkpoint")), node.crashes, node.reached
            )
        yield from _main_steps(start, index, bound)
        if start.crashes < bound.crashes:
            crashed = Node(
                op.crash(start.world),
                (*start.steps, Step("crash")),
                start.crashes + 1,
                start.reached,
            )
            yield from _main_steps(crashed, index, bound)


def runs(shape: Shape, contract: Contract, bound: BoundLike) -> Iterator[Node]:
    """Every finished run of one shape under one contract (depth first)."""
    scenario = shape.scenario(())
    index = {record_name(r): r for r in range(shape.inputs)}
    stack = [Node(op.World(scenario.topology, scenario.agent, contract))]
    while stack:
        node = stack.pop()
        if node.world.ended:
            yield node
            continue
        stack.extend(moves(node, index, bound))


# -- the explorer ------------------------------------------------------------------------

#: What a reachability check looks for, as a predicate over one event of a trace.
REACH: dict[str, Callable[[t.Event], bool]] = {
    "crash": lambda e: isinstance(e, t.Crash),
    "restore": lambda e: isinstance(e, t.Restore),
    "reuse": lambda e: isinstance(e, t.Reuse),
    "wait": lambda e: isinstance(e, t.Wait),
    "invalidation": lambda e: isinstance(e, t.Invalidate),
}


def random_run(
    shape: Shape, contract: Contract, bound: BoundLike, choose: Callable[[int], int]
) -> Node:
    """One finished run of ``shape``: at each point, ``choose(n)`` picks one of the ``n``
    possible moves (a random walk of the schedule tree)."""
    scenario = shape.scenario(())
    index = {record_name(r): r for r in range(shape.inputs)}
    node = Node(op.World(scenario.topology, scenario.agent, contract))
    while not node.world.ended:
        options = list(moves(node, index, bound))
        node = options[choose(len(options))]
    return node
