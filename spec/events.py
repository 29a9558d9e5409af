"""The model's trace events, as the machine run concretely produces them.

A :class:`Recorder` is handed to the :class:`~.encoding.Machine` of one scenario of a
bound; the machine calls it where an event of :mod:`replay_contract.model.trace` happens
and is kept (not cut off by a crash), with its own concrete values: record and key
numbers, positions, slots, terms. The recorder turns them into the model's values
without restating the model:

- a record number and version name the scenario's :class:`~replay_contract.model.topology.Record`
  (:meth:`~replay_contract.model.bounded.Shape.scenario`), as its channel delivers it
  again when the version is 1 (the changed payload);
- a term of :mod:`.agentterms` is *evaluated* by the model's agent: the action at the
  term's place in the plan runs (:func:`~replay_contract.model.agent.call_tool`,
  :func:`~replay_contract.model.agent.execute`) on that record and on the values its
  reads evaluate to;
- what only the model's log knows, the recorder counts as the log does: a completion is
  the index of its write among the durable writes kept so far, a checkpoint is numbered
  from 1 and a restore names the last one, ``step_events`` counts the events of the
  ``timeout`` or ``end`` step before its own.

Symbolic runs pass no recorder; the machine then reads none of the values it would give.
The tests compare the recorded events with the model's, event by event
(``tests/spec/test_encoding.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from replay_contract.model import trace as t
from replay_contract.model.agent import Effects, call_tool, execute
from replay_contract.model.bounded import Shape, record_name
from replay_contract.model.fallback import later_record_arrived
from replay_contract.model.scenario import Step
from replay_contract.model.topology import Key, Record

from .agentterms import OUTPUT_FIELD, Plan, place, unpack
from .logic import NONE, Sym


class Recorder:
    """The trace events of one concrete run of the machine over ``shape``."""

    def __init__(self, shape: Shape, steps: Sequence[Step] = ()) -> None:
        scenario = shape.scenario(steps)
        self.agent = scenario.agent
        self.plan = Plan.of(self.agent)
        self.actions = list(self.agent.plan())
        self.records = [scenario.topology.record(record_name(r)) for r in range(shape.inputs)]
        self.keys: dict[int, Key] = {
            k: rec.key for k, rec in zip(shape.key, self.records, strict=True)
        }
        self.events: list[t.Event] = []
        self.checkpoints = 0
        #: durable writes kept so far: the log index of the next one
        self.written = 0
        #: the log index of the completion each slot holds
        self.completions: dict[int, int] = {}
        #: where the events of the current step begin
        self.start = 0
        self._values: dict[Sym, Any] = {}

    # -- values --------------------------------------------------------------------

    def input(self, record: Sym, version: Sym) -> Record:
        """The record as delivered: the original, or as changed on re-delivery."""
        original = self.records[record]
        return original.replayed() if version == 1 else original

    def value(self, term: Sym) -> Any:
        """The model's value that ``term`` stands for (``None`` for ``NONE``)."""
        if term == NONE:
            return None
        found = self._values.get(term)
        if found is None:
            _, tag, record, version, c, d = term
            index, field = place(tag)
            entry = self.plan.entries[index]
            reads = tuple(self.value(x) for x in unpack(len(entry.reads), c, d))
            effects = self.run(entry.index, self.input(record, version), reads)
            if field == OUTPUT_FIELD:
                found = effects.outputs[0]
            else:
                found = dict(effects.writes)[self.plan.fields[field]]
            self._values[term] = found
        return found

    def run(self, entry: int, record: Record, reads: tuple[Any, ...]) -> Effects:
        """What the action at ``entry`` of the plan does with ``record`` and ``reads``."""
        path, action = self.actions[entry]
        results = tuple((tool, call_tool(tool, record, path, reads)) for tool in action.tools)
        return execute(action, path, record, reads, results)

    def values(self, terms: Sequence[Sym]) -> tuple[Any, ...]:
        return tuple(self.value(x) for x in terms)

    def add(self, event: t.Event) -> None:
        self.events.append(event)

    # -- the environment's steps -----------------------------------------------------

    def step(self) -> None:
        """A move of the environment begins (after its checkpoint and crash)."""
        self.start = len(self.events)

    def deliver(self, record: Sym, version: Sym) -> None:
        self.add(t.Deliver.of(self.input(record, version)))

    def checkpoint(self) -> None:
        self.checkpoints += 1
        self.add(t.Checkpoint(self.checkpoints))

    def crash(self) -> None:
        self.add(t.Crash())

    def restore(self) -> None:
        self.add(t.Restore(self.checkpoints))

    def timeout(self) -> None:
        self.add(t.Timeout(len(self.events) - self.start))

    def end(self, memory: Sequence[Sequence[Sym]], held: Sequence[int]) -> None:
        """End of input: the keys the operator holds, in the order it came to hold them
        (``held``), each with its memory (a field never written is left out)."""
        rows = tuple(
            (
                self.keys[k],
                tuple(
                    (name, self.value(v))
                    for name, v in zip(self.plan.fields, memory[k], strict=True)
                    if v != NONE
                ),
            )
            for k in held
        )
        self.add(t.End(rows, len(self.events) - self.start))

    # -- the operator's decisions and effects ----------------------------------------

    def accept(self, position: Sym, record: Sym, version: Sym) -> None:
        r = self.input(record, version)
        self.add(t.Accept(r.key, position, r.identity, r.digest))

    def order(self, position: Sym, record: Sym, version: Sym) -> None:
        r = self.input(record, version)
        self.written += 1
        self.add(t.Order(r.key, position, r.identity, r.digest))

    def reuse(
        self, position: Sym, record: Sym, version: Sym, entry: int, slot: Sym, reads: Sequence[Sym]
    ) -> None:
        r = self.input(record, version)
        path = self.actions[entry][0]
        completion, values = self.completions[slot], self.values(reads)
        self.add(t.Reuse(r.key, position, r.identity, r.digest, path, completion, values))

    def tool(
        self, position: Sym, record: Sym, version: Sym, entry: int, tool: str, reads: Sequence[Sym]
    ) -> None:
        r = self.input(record, version)
        path = self.actions[entry][0]
        result = call_tool(tool, r, path, self.values(reads))
        self.add(t.Tool(r.key, position, r.identity, r.digest, path, tool, result))

    def save(
        self,
        position: Sym,
        record: Sym,
        version: Sym,
        entry: int,
        slot: int,
        reads: Sequence[Sym],
        order: Sym,
    ) -> None:
        r = self.input(record, version)
        path = self.actions[entry][0]
        completion = self.completions[slot] = self.written
        self.written += 1
        values = self.values(reads)
        self.add(t.Save(r.key, position, r.identity, r.digest, path, completion, values, order))

    def output(self, record: Sym, version: Sym, entry: int, value: Sym) -> None:
        r = self.input(record, version)
        path = self.actions[entry][0]
        self.add(t.Output(r.key, r.identity, path, self.value(value)))

    def invalidate(self, key: Sym, position: Sym, slots: Sequence[int], durable: bool) -> None:
        """An invalidation by ``key`` (of whichever key it targets) that voids the
        completions held in ``slots``."""
        completions = tuple(sorted(self.completions[s] for s in slots))
        if durable:
            self.written += 1
        self.add(t.Invalidate(self.keys[key], position, completions, durable))

    def give_up(self, key: Sym, position: Sym, missing: Sym, reason: str) -> None:
        self.add(t.GiveUp(self.keys[key], position, self.records[missing].identity, reason))

    def give_up_before(self, key: Sym, position: Sym, missing: Sym, record: Sym) -> None:
        """Split order: a later record of the missing input's channel arrived."""
        reason = later_record_arrived(self.records[record].channel)
        self.give_up(key, position, missing, reason)

    def wait(self, key: Sym, record: Sym, awaiting: Sym) -> None:
        """``record`` waits; ``awaiting`` is the record at the head of the expected
        order, -1 if none."""
        head = self.records[awaiting].identity if awaiting >= 0 else ""
        self.add(t.Wait(self.keys[key], self.records[record].identity, head))

    # -- the result ------------------------------------------------------------------

    def trace(self, basis: str) -> t.Trace:
        return t.Trace(self.agent, basis, tuple(self.events))
