"""An agent as the encoding sees it: its plan, memory fields and the terms its actions
produce.

What an action writes and outputs is a term built from the action's place in the plan,
the input (its record and whether it came back changed) and the values it read; the
model's hash-based values are the concrete counterpart (:mod:`.logic`). Tool results are
a function of the same arguments, so they add nothing to a term.
"""

from __future__ import annotations

from attrs import frozen

from replay_contract.model.agent import Agent, Path

from . import logic as lg
from .logic import NONE, Sym

TAG_HISTORY = 1
TAG_PACK = 2
#: the field number of an action's output in its term's tag (a write's is the field's)
OUTPUT_FIELD = 31


@frozen
class Entry:
    """One action of the plan, at its causal path."""

    index: int
    path: Path
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    tools: tuple[str, ...]
    output: bool


@frozen
class Plan:
    fields: tuple[str, ...]
    entries: tuple[Entry, ...]

    @staticmethod
    def of(agent: Agent) -> Plan:
        plan = list(agent.plan())
        names = sorted({f for _, a in plan for f in (*a.reads, *a.writes)})
        entries = tuple(
            Entry(
                i,
                path,
                tuple(names.index(f) for f in a.reads),
                tuple(names.index(f) for f in a.writes),
                a.tools,
                a.output,
            )
            for i, (path, a) in enumerate(plan)
        )
        return Plan(tuple(names), entries)


def _pack(values: tuple[Sym, ...]) -> tuple[Sym, Sym]:
    if not values:
        return NONE, NONE
    if len(values) == 1:
        return values[0], NONE
    if len(values) == 2:
        return values[0], values[1]
    rest = _pack(values[1:])
    return values[0], lg.node(TAG_PACK, 0, 0, rest[0], rest[1])


def unpack(count: int, c: Sym, d: Sym) -> tuple[Sym, ...]:
    """The ``count`` values that :func:`_pack` packed into ``c`` and ``d`` (concrete
    terms only)."""
    if count <= 2:
        return (c, d)[:count]
    _, tag, _, _, rest_c, rest_d = d
    assert tag == TAG_PACK
    return (c, *unpack(count - 1, rest_c, rest_d))


def place(tag: int) -> tuple[int, int]:
    """The plan entry and the field (:data:`OUTPUT_FIELD` for the output) of a write's
    or an output's term, from its tag."""
    return divmod(tag - 100, 32)


def write_term(entry: Entry, field: int, record: Sym, version: Sym, reads: tuple[Sym, ...]) -> Sym:
    c, d = _pack(reads)
    return lg.node(100 + 32 * entry.index + field, record, version, c, d)


def output_term(entry: Entry, record: Sym, version: Sym, reads: tuple[Sym, ...]) -> Sym:
    c, d = _pack(reads)
    return lg.node(100 + 32 * entry.index + OUTPUT_FIELD, record, version, c, d)


def history_term(prefix: Sym, record: Sym, version: Sym) -> Sym:
    """The accepted history ``prefix`` followed by one input."""
    return lg.node(TAG_HISTORY, record, version, prefix, NONE)


def run_input(
    plan: Plan, memory: list[Sym], record: Sym, version: Sym
) -> tuple[list[Sym], list[Sym]]:
    """The failure-free run of one input: the memory after it and each entry's output
    (``NONE`` for an entry without output)."""
    mem = list(memory)
    outputs = []
    for entry in plan.entries:
        reads = tuple(mem[f] for f in entry.reads)
        writes = [write_term(entry, f, record, version, reads) for f in entry.writes]
        outputs.append(output_term(entry, record, version, reads) if entry.output else NONE)
        for f, value in zip(entry.writes, writes, strict=True):
            mem[f] = value
    return mem, outputs
