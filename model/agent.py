"""Agents: actions, the key's memory, tools, and the causal identity of a completion.

An input triggers every action that listens to ``input``; an action may emit follow-up
events that trigger further actions for the same input. The causal path of an action
(which action, triggered by which event, from which earlier action) is the identity of
its completion inside one input.

Actions are deterministic: what an action writes, emits as output and passes to its
tools is a function of the input and of the memory fields it reads. Tools are the
external work the contract counts; their results are a function of their arguments.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from attrs import frozen

from .topology import Record, digest

#: The event every top-level input raises.
INPUT = "input"

#: The causal path of an action inside one input: action names and the events between
#: them, starting with an action triggered by ``input``.
Path = tuple[str, ...]

#: The memory of one key: field name to value.
Memory = Mapping[str, Any]


@frozen
class Action:
    """One action of the agent."""

    name: str
    trigger: str = INPUT
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    emits: tuple[str, ...] = ()
    output: bool = False


@frozen
class Agent:
    """The actions run for every input of every key."""

    actions: tuple[Action, ...]

    def triggered_by(self, event: str) -> tuple[Action, ...]:
        return tuple(a for a in self.actions if a.trigger == event)

    def plan(self) -> Iterator[tuple[Path, Action]]:
        """Every action an input runs, with its causal path, in execution order.

        Actions run breadth first: first those triggered by the input, in declaration
        order, then those triggered by the events they emit, in emission order.
        """
        queue: list[tuple[Path, Action]] = [((a.name,), a) for a in self.triggered_by(INPUT)]
        while queue:
            path, action = queue.pop(0)
            yield path, action
            for event in action.emits:
                queue.extend(((*path, event, b.name), b) for b in self.triggered_by(event))


@frozen
class Effects:
    """What executing one action produced: tool results, memory writes and outputs."""

    tool_results: tuple[tuple[str, str], ...]
    writes: tuple[tuple[str, str], ...]
    outputs: tuple[str, ...]


def read(memory: Memory, action: Action) -> tuple[Any, ...]:
    """The values of the fields an action reads (``None`` for a field never written)."""
    return tuple(memory.get(f) for f in action.reads)


def call_tool(tool: str, record: Record, path: Path, reads: tuple[Any, ...]) -> str:
    """The result of one tool call, a function of its arguments."""
    return f"{tool}:{digest(['tool', tool, record.identity, record.payload, path, reads], 6)}"


def execute(
    action: Action,
    path: Path,
    record: Record,
    reads: tuple[Any, ...],
    tool_results: tuple[tuple[str, str], ...],
) -> Effects:
    """The effects of one action, given what it read and what its tools returned."""
    basis = [
        action.name,
        record.identity,
        record.payload,
        list(path),
        list(reads),
        [list(t) for t in tool_results],
    ]
    writes = tuple((f, f"{action.name}:{digest(['write', f, *basis], 6)}") for f in action.writes)
    outputs = (f"{action.name}:{digest(['output', *basis], 6)}",) if action.output else ()
    return Effects(tool_results, writes, outputs)


def run_without_failure(
    agent: Agent, memory: Memory, record: Record
) -> tuple[dict[str, Any], list[str]]:
    """Run every action of one input with no store and no crash.

    Returns the key's memory afterwards and the outputs, in order. This is the
    failure-free semantics that ``equivalent-outcome`` compares a run against.
    """
    mem = dict(memory)
    outputs: list[str] = []
    for path, action in agent.plan():
        reads = read(mem, action)
        results = tuple((t, call_tool(t, record, path, reads)) for t in action.tools)
        effects = execute(action, path, record, reads, results)
        mem.update(effects.writes)
        outputs.extend(effects.outputs)
    return mem, outputs
