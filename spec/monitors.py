"""The seven properties, translated into monitors over the events of the encoding.

:mod:`.properties` defines each property once, as a predicate over a finished trace.
Here each one is restated as a monitor: a little state that the encoding updates at
every event it produces (``deliver``, ``accept``, ``reuse``, ``tool``, ``save``,
``output``, ``invalidate``, ``checkpoint``, ``restore``, ``timeout``, ``end``), and a flag
that is set when the predicate would fail. Every update is guarded by the condition that the event
happens (and is not cut off by a crash), so the same code watches one concrete run or
every run of a bound at once.

The translation is checked against the predicates on the same runs: on every scenario
of a small bound and on random ones of larger bounds, the encoding run concretely
records the model's trace events (:mod:`.events`), equal to the model's event by event;
the flags its monitors set equal the properties that
:func:`replay_contract.spec.properties.check_all` finds broken on that trace
(``tests/spec/test_encoding.py``).

The monitors follow the *effective timeline* of the predicates: the accepted history
and the delivered inputs of each key belong to the operator's state (a checkpoint saves
them, a restore brings them back); what was saved, reused and called belongs to the
world.
"""

from __future__ import annotations

from collections.abc import Callable

from . import logic as lg
from .agentterms import Plan, history_term, run_input
from .cells import Cells
from .logic import NONE, Sym
from .properties import (
    BOUNDED_WAITING,
    COMPLETE_REUSE,
    DIVERGENCE_SAFEGUARD,
    EQUIVALENT_OUTCOME,
    KEY_ISOLATION,
    NO_LOST_INPUT,
    NO_STALE_REUSE,
    PROPERTIES,
)


def flag(name: str) -> str:
    return f"broken:{name}"


class Monitors:
    def __init__(
        self, plan: Plan, inputs: int, keys: int, basis: str, op: Cells, world: Cells
    ) -> None:
        self.plan, self.inputs, self.keys, self.basis = plan, inputs, keys, basis
        #: the records, as the monitors' searches range over them
        self.records = lg.Indices(inputs)
        self.op, self.world = op, world
        fields = len(plan.fields)
        entries = len(plan.entries)
        # the effective timeline (saved by a checkpoint, brought back by a restore)
        op.array("history", keys, NONE)
        op.array("delivered", inputs, False)
        op.array("accepted", inputs, False)
        op.array("accepted-version", inputs, 0)
        op.matrix("failure-free", keys, max(fields, 1), NONE)
        op.array("outputs-equal", keys, True)
        # the world
        world.matrix("recorded", keys, inputs, -1)
        world.matrix("diverged", keys, inputs, -1)
        world.array("outstanding", inputs, False)
        world.array("outstanding-version", inputs, 0)
        world.array("unclean", keys, False)
        world.matrix("saved-once", inputs, 2 * max(entries, 1), False)
        world.array("repeated", inputs, False)
        for name in PROPERTIES:
            world.scalar(flag(name), False)
        self.failure_free_outputs: list[Sym] = []

    def broken(self, name: str) -> Sym:
        return self.world[flag(name)]

    def _break(self, name: str, cond: Sym) -> None:
        self.world.set(flag(name), lg.or_(self.world[flag(name)], cond))

    # -- events ----------------------------------------------------------------------

    def deliver(self, kept: Sym, record: Sym) -> None:
        self.op.put("delivered", record, True, kept)

    def accept(
        self, kept: Sym, key: Sym, position: Sym, record: Sym, version: Sym, time: int
    ) -> None:
        op, world = self.op, self.world
        prefix = op.at("history", key)
        op.put("history", key, history_term(prefix, record, version), kept)
        op.put("accepted", record, True, kept)
        op.put("accepted-version", record, version, kept)
        # equivalent-outcome: the failure-free run over the same history
        memory = [op.at("failure-free", key, f) for f in range(len(self.plan.fields))]
        after, outputs = run_input(self.plan, memory, record, version)
        for f, value in enumerate(after):
            op.put("failure-free", key, value, kept, f)
        self.failure_free_outputs = outputs
        # divergence-safeguard: a different input at a position accepted before
        code = lg.add(lg.add(record, record), version)
        before = world.at("recorded", key, position)
        diverges = lg.and_(kept, lg.ne(before, -1), lg.ne(before, code))
        world.put("diverged", key, time, diverges, position)
        world.put("recorded", key, code, kept, position)
        # complete-reuse: an input recorded before the restore comes back
        outstanding = world.at("outstanding", record)
        back = lg.and_(kept, outstanding)
        changed = lg.ne(world.at("outstanding-version", record), version)
        world.put("unclean", key, True, lg.and_(back, changed))
        world.put("outstanding", record, False, back)

    def reuse(
        self,
        kept: Sym,
        key: Sym,
        position: Sym,
        reads: tuple[Sym, ...],
        saved_prefix: Sym,
        saved_reads: tuple[Sym, ...],
        saved_time: Sym,
        prefix_now: Sym,
    ) -> None:
        # no-stale-reuse
        if self.basis == "reads":
            stale = lg.not_(
                lg.and_(*(lg.eq(a, b) for a, b in zip(saved_reads, reads, strict=True)))
            )
        else:
            stale = lg.ne(saved_prefix, prefix_now)
        self._break(NO_STALE_REUSE, lg.and_(kept, stale))
        # divergence-safeguard: a divergence at or before the position after the save
        # (the save is older than the latest such divergence, or than -1: never)
        later = [lg.lt(saved_time, -1)]
        for q in range(self.inputs):
            d = self.world.at("diverged", key, q)
            later.append(lg.and_(lg.le(q, position), lg.lt(saved_time, d)))
        self._break(DIVERGENCE_SAFEGUARD, lg.and_(kept, lg.or_(*later)))

    def tool(self, kept: Sym, record: Sym, version: Sym, entry: int) -> None:
        column = lg.add(lg.ite(lg.eq(version, 0), 0, len(self.plan.entries)), entry)
        again = self.world.at("saved-once", record, column)
        self.world.put("repeated", record, True, lg.and_(kept, again))

    def save(self, kept: Sym, record: Sym, version: Sym, entry: int) -> None:
        column = lg.add(lg.ite(lg.eq(version, 0), 0, len(self.plan.entries)), entry)
        self.world.put("saved-once", record, True, kept, column)

    def output(self, kept: Sym, key: Sym, entry: int, value: Sym) -> None:
        expected = self.failure_free_outputs[entry]
        self.op.put("outputs-equal", key, False, lg.and_(kept, lg.ne(value, expected)))

    def invalidate(self, kept: Sym, key: Sym, target: Sym, voids_some: Sym) -> None:
        # key-isolation: a divergence of one key voids completions of another
        self._break(KEY_ISOLATION, lg.and_(kept, lg.ne(key, target), voids_some))

    def timeout(self, happens: Sym, key_of: list[Sym]) -> None:
        """The ``timeout`` event: no input may still wait (bounded-waiting). What waits
        is the operator's keyed state, as the predicate's timeline has it. A key with a
        recorded input that has not come back is outside complete-reuse from now on."""
        waiting = self.records.some(lambda r: self.op.cell("waiting", r))
        self._break(BOUNDED_WAITING, lg.and_(happens, waiting))
        for r in range(self.inputs):
            left = lg.and_(happens, self.world.cell("outstanding", r))
            self.world.put("unclean", key_of[r], True, left)

    def restore(self, happens: Sym, saved: Cells) -> None:
        """Before the operator's state is replaced by the checkpoint's: the inputs
        accepted since the checkpoint are outstanding until they come back."""
        op, world = self.op, self.world

        def lost(r: Sym) -> None:
            dead = lg.and_(happens, op.at("accepted", r), lg.not_(saved.at("accepted", r)))
            world.put("outstanding", r, True, dead)
            world.put("outstanding-version", r, op.at("accepted-version", r), dead)

        self.records.each(lost)

    def end(self, happens: Sym, memory: list[list[Sym]], key_of: list[Sym]) -> None:
        op, world = self.op, self.world
        # no-lost-input: every delivered input accepted exactly once (at most once is
        # all a timeline can hold), none accepted without being delivered
        lost = self.records.some(lambda r: lg.ne(op.cell("delivered", r), op.cell("accepted", r)))
        self._break(NO_LOST_INPUT, lg.and_(happens, lost))
        # equivalent-outcome
        differs = []
        for k in range(self.keys):
            differs.append(lg.not_(op.cell("outputs-equal", k)))
            for f in range(len(self.plan.fields)):
                differs.append(lg.ne(memory[k][f], op.cell("failure-free", k, f)))
        self._break(EQUIVALENT_OUTCOME, lg.and_(happens, lg.or_(*differs)))
        # complete-reuse: a repeated call for a key whose recorded inputs all came back
        unclean = []

        def left_of(k: int) -> Callable[[Sym], Sym]:
            """Of a record: it is an outstanding input of key ``k``."""
            return lambda r: lg.and_(world.cell("outstanding", r), lg.eq(key_of[r], k))

        for k in range(self.keys):
            left = self.records.some(left_of(k))
            unclean.append(lg.or_(world.cell("unclean", k), left))
        repeats = self.records.some(
            lambda r: lg.and_(
                world.cell("repeated", r), lg.not_(lg.select(key_of[r], unclean, True))
            )
        )
        self._break(COMPLETE_REUSE, lg.and_(happens, repeats))
