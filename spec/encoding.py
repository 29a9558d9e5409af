"""The bounded encoding of the keyed operator under a contract.

One :class:`Machine` unrolls the operator of :mod:`replay_contract.model.operator` over a
fixed number of *micro-steps*. The scenario is a free variable: every record's channel,
key and replay behaviour (:class:`replay_contract.model.bounded.Shape`), and at every
micro-step where the operator is idle, the next move of the schedule (an optional
``checkpoint``, an optional ``crash``, then ``deliver`` of a channel's next record,
``restore`` or ``end``, with an optional ``crash_after``). A micro-step performs at most
one *heavy* operation: accepting an input (every action of the agent: lookup,
invalidation on a miss, tool calls, the saved completion, outputs) or a divergence
(invalidating the key's saved suffix). The advance loop of a waiting contract, the
restore of each key and the end of input take as many micro-steps as they need. The end
of an advance loop (the key's loop has nothing left to do; then comes what follows it:
idling, the next key's loop, the end of input's divergence of the next key, or the end
of the run) is not a micro-step of its own: it opens the next micro-step, before the
environment's move and that micro-step's iteration of the loop, unless it diverges (the
divergence is then the micro-step's heavy operation, and no iteration follows in it);
likewise the end of input's first key is iterated in the micro-step of ``end`` unless it
diverges. The end of a loop only reads and changes the state the loop left, so the run
and the order of its events stay the same, in fewer micro-steps; the check that a
chosen crash point was reached by the end of its macro-step is made there too. An epoch
whose last micro-step leaves a loop unfinished counts as too short for ``check_budget``
(conservatively).

Every rule of the :class:`~replay_contract.model.contracts.Contract` is read from the
contract value, never from its name, so a proposed contract is encoded the same way as
the published ones: ``match`` picks the fields a lookup compares, ``on_miss``,
``wait``, ``record_order``, ``give_up_after``, ``split_order``,
``durable_invalidation`` and ``invalidation_scope`` each switch one part of the
encoding.

The store keeps one *slot* per record, action and epoch (and one per record and epoch
for a standalone order entry): the micro-steps come in ``crashes + 1`` epochs (the
first, before any restore, needs fewer micro-steps than the others: :func:`budget` and
:func:`first_budget`), a restore happens only at the start of an epoch, and within one
epoch a record is accepted at most once (the channel offsets only move forward until
the next restore), so it writes each of its entries at most once. This loses no run of the
bound and keeps the store at ``inputs x (actions + 1) x (crashes + 1)`` slots, whatever
the number of micro-steps. A slot is present when its write happened and was not cut
off by a crash; it carries the tick of the write, which orders the store like the
model's log (the recovery marker is such a tick). A lookup
considers every slot of the record: present, at or after the recovery marker, not
voided by an invalidation made after it, same input version, action and (by the rule
``match``) position or reads; the latest epoch wins. Invalidations update the
``voided`` flag of the slots present when they happen, and are kept as a list of their
own only for the order in which keys first appear in the store.

Three constraints on the environment break symmetries without losing a run: an idle
micro-step that does nothing (padding) comes only at the end of an epoch, and an epoch
that ends with padding while the operator is up is followed by a crash and restore
(otherwise the next moves could as well fill the padding: the same run); a move that
delivers nothing names channel 0. A schedule of the model
(:class:`ScheduleEnv`) always has this form, so the tests that compare the machine
with the model cover them. Where only the last checkpoint before a restore can matter
(:func:`quiet_checkpoints`), ``verify`` also takes at most one checkpoint between two
restores and none in the last epoch (``one_checkpoint``); the tests that compare
``verify`` with the explorer cover that.

The machine's searches over records, a key's positions or the store's slots (whether
some holds, the first, the least, the latest match, how many) go through a domain,
:class:`~.logic.Indices` (``records``, ``positions``) or :class:`Slots`, given their body
as a function of one index or slot: here the body is called at each one and the search
is a chain of ``ite``s; a domain of symbolic size would call it once. So do the writes
to every record or position (``each``: the restore's expected order, the monitors'
outstanding inputs at a restore, the invalidation's voided flags), and the monitors'
searches over records (:mod:`.monitors`).

The machine is written against :mod:`.logic`: driven by a concrete schedule it is an
interpreter, and :func:`run_concrete` has it record the model's trace events as they
happen (:mod:`.events`, :meth:`Machine.trace`), which the tests compare with the model's
trace event by event; driven by Z3 variables it is the formula ``verify`` solves. A
symbolic run has no recorder, and the machine builds nothing for one: the formula is the
same with or without recording (a recorder is called only where the event's condition
is the Python value ``True``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3
from attrs import define, field

from replay_contract.model import fallback
from replay_contract.model.bounded import AGENTS, BoundLike
from replay_contract.model.contracts import Contract
from replay_contract.model.trace import Trace

from . import logic as lg
from .agentterms import Plan, output_term, write_term
from .cells import Cells
from .events import Recorder
from .logic import NONE, Sym
from .monitors import Monitors

# phases of the machine
IDLE, ADVANCE, DONE = 0, 1, 2
# what follows the advance loop of a key
AFTER_ARRIVAL, AFTER_RESTORE, AFTER_END, AFTER_NOTHING, AFTER_TIMEOUT = 0, 1, 2, 3, 4
# main steps of a move (``timeout`` only in a bound with ``timeouts``)
DELIVER, RESTORE, END, NOTHING, TIMEOUT = 0, 1, 2, 3, 4

ABSENT = 2**26
WAITING_ONLY = 2**25


@define
class Move:
    """The environment's choice at one micro-step (used only when the machine is idle)."""

    checkpoint: Sym
    crash: Sym
    main: Sym
    channel: Sym
    cut: Sym


@define
class Slot:
    """Where one record writes one entry (``kind`` and ``entry``) in one epoch."""

    index: int
    kind: str  # "completion" or "order"
    record: int
    epoch: int
    key: Sym
    entry: int = -1
    present: Sym = False
    position: Sym = 0
    version: Sym = 0
    reads: tuple[Sym, ...] = ()
    writes: dict[int, Sym] = field(factory=dict)
    output: Sym = NONE
    order: Sym = False
    voided: Sym = False
    prefix: Sym = NONE
    time: Sym = -1

    def write(self, guard: Sym, **values: Sym) -> None:
        """The write happens (and is kept) under ``guard``: the slot takes ``values``."""
        if lg._const(guard) is False:
            return
        self.present = lg.or_(self.present, guard)
        for name, value in values.items():
            old = getattr(self, name)
            if isinstance(old, dict):
                new: Sym = {f: lg.ite(guard, value[f], old[f]) for f in old}
            elif isinstance(old, tuple) and not lg.is_sym(old) and name == "reads":
                new = tuple(lg.ite(guard, a, b) for a, b in zip(value, old, strict=True))
            else:
                new = lg.ite(guard, value, old)
            setattr(self, name, new)


@define
class InvalidationMark:
    """A durable invalidation that may happen: for the first appearance of keys."""

    present: Sym
    key: Sym
    time: int


class Slots:
    """Some of the store's slots, in the order they are written (epoch, record, entry),
    as the machine's searches range over them. Like :class:`~.logic.Indices` for
    records, each search takes a *body*, a function of one slot. Which slots are in a
    set depends on their kind, entry and epoch (:meth:`where`; or on a field the
    contract never writes), never on their record, so that a store over a symbolic
    number of records can have the same sets."""

    def __init__(self, slots: list[Slot]) -> None:
        #: the slots themselves, for what only a concrete run reads (the recorder)
        self.slots = slots

    def where(self, keep: Callable[[Slot], bool]) -> Slots:
        return Slots([s for s in self.slots if keep(s)])

    def some(self, body: Callable[[Slot], Sym]) -> Sym:
        """Whether the body holds at some slot."""
        return lg.or_(*(body(s) for s in self.slots))

    def minimum(self, body: Callable[[Slot], tuple[Sym, Sym]], default: Sym) -> Sym:
        """The least value of the body's ``(condition, value)`` where the condition holds."""
        return lg.minimum([body(s) for s in self.slots], default)

    def latest(
        self, body: Callable[[Slot], tuple[Sym, tuple[Sym, ...]]], default: tuple[Sym, ...]
    ) -> tuple[Sym, tuple[Sym, ...]]:
        """Whether the body's condition holds at some slot, and the values of the last."""
        return lg.latest([body(s) for s in self.slots], default)

    def each(self, update: Callable[[Slot], None]) -> None:
        """A write to every slot (``update`` writes one)."""
        for s in self.slots:
            update(s)


@define
class Found:
    any: Sym
    writes: dict[int, Sym]
    output: Sym
    prefix: Sym
    reads: tuple[Sym, ...]
    time: Sym
    #: the slot found (-1: none); the encoding does not use it (a refinement check does)
    index: Sym = -1


@define
class Shape:
    """The record shape: channel, key and replay mode (0 same, 1 lost, 2 changed)."""

    channel: list[Sym]
    key: list[Sym]
    mode: list[Sym]


Env = Callable[[int, Sym], Move]
#: of a position of a key: whether the store records an input there, which, which version
Recorded = Callable[[Sym], tuple[Sym, Sym, Sym]]


class Machine:
    def __init__(
        self,
        contract: Contract,
        agent: str,
        bound: BoundLike,
        shape: Shape,
        env: Env,
        epoch: int,
        first: int | None = None,
        one_checkpoint: bool = False,
        recorder: Recorder | None = None,
    ) -> None:
        self.contract = contract
        self.plan = Plan.of(AGENTS[agent])
        self.n, self.c, self.k, self.f = bound.inputs, bound.channels, bound.keys, bound.crashes
        #: the records and a key's positions, as the machine's searches range over them
        self.records = lg.Indices(self.n)
        self.positions = lg.Indices(self.n)
        #: how many ``timeout`` moves a run may make (:func:`timeout_macro`)
        self.timeouts: int = getattr(bound, "timeouts", 0)
        self.shape = shape
        self.env = env
        self.epoch = epoch
        # at most one checkpoint between two restores and none in the last epoch, where
        # that loses nothing (see :func:`quiet_checkpoints`)
        self.one_checkpoint = one_checkpoint and quiet_checkpoints(contract)
        # where each epoch starts; the first one (before any crash) may be shorter
        first = epoch if first is None else first
        self.starts = [0, *(first + e * epoch for e in range(bound.crashes + 1))]
        self.steps = self.starts.pop()
        self.after_epoch: list[tuple[Sym, Sym]] = []
        self.assumptions: list[Sym] = []
        self.slots = self.allocate(shape)
        self.marks: list[InvalidationMark] = []
        self.time = 0
        self.current = 0  # the epoch of the micro-step being built
        self.decode: list[dict[str, Sym]] = []
        self.reach: dict[str, Sym] = {
            n: False for n in ("crash", "restore", "reuse", "wait", "invalidation")
        }
        n, k = self.n, self.k
        fields = max(len(self.plan.fields), 1)
        op = self.op = Cells()
        op.array("next", k, 0)
        op.matrix("memory", k, fields, NONE)
        op.array("waiting", n, False)
        op.array("waiting-since", n, 0)
        op.array("waiting-version", n, 0)
        op.array("expected-end", k, 0)
        op.matrix("expected", k, n, -1)
        op.matrix("expected-version", k, n, 0)
        op.array("diverge-at", k, -1)
        op.array("offset", self.c, 0)
        op.scalar("marker", 0)
        op.array("volatile-voided", len(self.slots), False)
        op.array("volatile-rank", k, ABSENT)
        op.array("inserted", k, ABSENT)
        w = self.world = Cells()
        w.scalar("phase", IDLE)
        w.scalar("up", True)
        w.scalar("crashes", 0)
        w.scalar("effects", 0)
        w.scalar("cut", -1)
        w.scalar("key", 0)
        w.scalar("after", AFTER_NOTHING)
        w.scalar("after-arg", 0)
        w.array("high", self.c, 0)
        w.scalar("delivered", 0)
        w.array("order", k, 0)
        w.array("order-in", k, False)
        w.scalar("checkpointed", False)
        if self.timeouts:
            w.scalar("timeouts", 0)
        self.monitors = Monitors(self.plan, n, k, contract.basis, op, w)
        self.saved = op.copy()
        #: the model's trace events of a concrete run (:mod:`.events`), if recorded
        self.recorder = recorder

    #: The machine's state for :func:`.digest.digest`: what the facts about a state
    #: read. Not the record of the run (``decode``, ``after_epoch``, ``reach``: the
    #: unrolling reads them), nor what only a micro-step reads (``env``, the budgets
    #: but that of timeouts, whose loop the facts allow): a micro-step's effect is in
    #: the state it leaves.
    STATE = (
        "contract",
        "plan",
        "n",
        "c",
        "k",
        "f",
        "one_checkpoint",
        "timeouts",
        "starts",
        "shape",
        "records",
        "slots",
        "marks",
        "time",
        "op",
        "saved",
        "world",
        "monitors",
        "assumptions",
    )

    def __digest__(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.STATE)

    # -- helpers ---------------------------------------------------------------------

    def assume(self, cond: Sym) -> None:
        if lg._const(cond) is not True:
            self.assumptions.append(cond)

    def tick(self) -> int:
        self.time += 1
        return self.time

    def live(self) -> Sym:
        w = self.world
        return lg.or_(lg.lt(w["cut"], 0), lg.lt(w["effects"], w["cut"]))

    def effect(self, happens: Sym) -> Sym:
        """An effect (tool call or durable write) that happens under ``happens``: whether
        it is kept (not cut off by a crash); counts it."""
        kept = lg.and_(happens, self.live())
        self.world.set("effects", lg.add(self.world["effects"], lg.ite(happens, 1, 0)))
        return kept

    def key_of(self, record: Sym) -> Sym:
        return lg.select(record, self.shape.key, 0)

    def channel_of(self, record: Sym) -> Sym:
        return lg.select(record, self.shape.channel, 0)

    def mode_of(self, record: Sym) -> Sym:
        return lg.select(record, self.shape.mode, 0)

    def allocate(self, shape: Shape) -> list[Slot]:
        """Every slot of the store, epoch by epoch (the order in which they are written)."""
        slots: list[Slot] = []
        for epoch in range(self.f + 1):
            for r in range(self.n):
                for e in self.plan.entries:
                    slot = Slot(len(slots), "completion", r, epoch, shape.key[r], e.index)
                    slot.reads = tuple(NONE for _ in e.reads)
                    slot.writes = dict.fromkeys(e.writes, NONE)
                    slots.append(slot)
                if self.contract.record_order != "no":
                    slots.append(Slot(len(slots), "order", r, epoch, shape.key[r]))
        return slots

    def written(self, kind: str = "") -> Slots:
        """The slots that may have been written so far (epochs up to the current one)."""
        return Slots(self.slots).where(
            lambda s: s.epoch <= self.current and (not kind or s.kind == kind)
        )

    def settled(self, kind: str = "") -> Slots:
        """The slots written before this epoch. Within an epoch a key's position only
        grows, so a slot written in it lies before its key's position (or is the entry
        of the input being accepted): no invalidation of that key voids it and no
        checkpoint needs it."""
        return self.written(kind).where(lambda s: s.epoch < self.current)

    def slots_now(self, kind: str, entry: int = -1) -> Slots:
        """The slots of ``kind`` and ``entry`` that records write in this epoch."""
        return self.written(kind).where(lambda s: s.epoch == self.current and s.entry == entry)

    def write_record(self, guard: Sym, record: Sym, kind: str, entry: int, **values: Sym) -> None:
        """The slot of ``kind`` and ``entry`` of ``record`` in this epoch takes ``values``
        (under ``guard``): a write at a possibly symbolic index."""
        self.slots_now(kind, entry).each(
            lambda s: s.write(lg.and_(guard, lg.eq(record, s.record)), **values)
        )

    def voidable(self, kind: str = "") -> Slots:
        """The slots an invalidation may void: with scope ``key``, the settled ones."""
        if self.contract.invalidation_scope == "key":
            return self.settled(kind)
        return self.written(kind)

    def visible(self, s: Slot | InvalidationMark) -> Sym:
        return lg.le(self.op["marker"], s.time)

    def valid(self, s: Slot) -> Sym:
        return lg.and_(
            s.present,
            self.visible(s),
            lg.not_(s.voided),
            lg.not_(self.op.cell("volatile-voided", s.index)),
        )

    def waiting_of(self, key: Sym) -> Callable[[Sym], Sym]:
        """Of a record: it is a waiting input of ``key`` (in the state of now, whenever
        the function is called)."""
        op, key_of = self.op.copy(), self.shape.key
        return lambda r: lg.and_(op.cell("waiting", r), lg.eq(key_of[r], key))

    def waits(self, key: Sym) -> Sym:
        """Some input of ``key`` waits."""
        return self.records.some(self.waiting_of(key))

    def waiting_count(self, key: Sym) -> Sym:
        """How many inputs of ``key`` wait."""
        return self.records.count(self.waiting_of(key))

    def earliest_waiting(self, candidates: Callable[[Sym], Sym]) -> Sym:
        """The candidate that waits since the earliest tick (record 0 if none)."""
        op = self.op
        since = self.records.minimum(lambda r: (candidates(r), op.cell("waiting-since", r)), ABSENT)
        return self.records.first(
            lambda r: lg.and_(candidates(r), lg.eq(op.cell("waiting-since", r), since)), 0
        )

    def next_record(self, ch: int) -> Sym:
        """The record that channel ``ch`` delivers next (-1: none): the first at or after
        its offset, skipping the lost ones it delivered before."""
        shape, offset, high = self.shape, self.op.cell("offset", ch), self.world.cell("high", ch)
        return self.records.first(
            lambda r: lg.and_(
                lg.eq(shape.channel[r], ch),
                lg.le(offset, r),
                lg.not_(lg.and_(lg.lt(r, high), lg.eq(shape.mode[r], 1))),
            ),
            -1,
        )

    def recovering(self, key: Sym) -> Sym:
        op = self.op
        return lg.or_(
            lg.lt(op.at("next", key), op.at("expected-end", key)),
            self.waits(key),
            lg.le(0, op.at("diverge-at", key)),
        )

    def record_give_up(self, happens: Sym, key: Sym, reason: str) -> None:
        """The recorded input at ``key``'s next position is given up for ``reason``
        (recorded only: the divergence that follows is the machine's)."""
        if self.recorder and lg.and_(happens, self.live()) is True:
            position = self.op.at("next", key)
            missing = self.op.at("expected", key, position)
            self.recorder.give_up(key, position, missing, reason)

    def insert(self, key: Sym, guard: Sym, time: int) -> None:
        fresh = lg.and_(guard, lg.eq(self.op.at("inserted", key), ABSENT))
        self.op.put("inserted", key, time, fresh)

    # -- the store -------------------------------------------------------------------

    def voids(self, s: Slot, target: Sym, position: Sym, keep: tuple[Sym, Sym] | None) -> Sym:
        """Whether an invalidation of ``target`` from ``position`` voids slot ``s``."""
        base = lg.and_(lg.eq(s.key, target), lg.le(position, s.position))
        if keep is None:
            return base
        return lg.and_(
            base,
            lg.or_(
                lg.lt(position, s.position), lg.ne(s.record, keep[0]), lg.ne(s.version, keep[1])
            ),
        )

    def voids_some(self, target: Sym, position: Sym, keep: tuple[Sym, Sym] | None) -> Sym:
        return self.voidable("completion").some(
            lambda s: lg.and_(self.valid(s), self.voids(s, target, position, keep))
        )

    def view_ranks(self) -> list[Sym]:
        """Per key: where it first appears in the store's view (``ABSENT`` if not)."""
        ranks = []
        for k in range(self.k):

            def appears(s: Slot | InvalidationMark, k: int = k) -> tuple[Sym, Sym]:
                return lg.and_(s.present, self.visible(s), lg.eq(s.key, k)), _rank(s.time)

            in_slots = self.written().minimum(appears, self.op.cell("volatile-rank", k))
            ranks.append(lg.minimum([appears(mark) for mark in self.marks], in_slots))
        return ranks

    def ordered_keys(self, ranks: list[Sym]) -> list[tuple[Sym, Sym]]:
        """The keys by rank: ``(key, present)`` for each place, the present keys (rank
        below ``ABSENT``) first, a place without one ``(0, False)``. Sorted by a network
        of compare-exchanges (each place's rank is then at most the next one's, and every
        key is at some place, which a solver sees at once); of two equal ranks the lower
        key comes first."""
        places: list[tuple[Sym, Sym]] = [(rank, a) for a, rank in enumerate(ranks)]
        for last in range(self.k - 1, 0, -1):
            for i in range(last):
                (low_rank, low), (high_rank, high) = places[i], places[i + 1]
                swap = lg.lt(high_rank, low_rank)
                places[i] = (lg.ite(swap, high_rank, low_rank), lg.ite(swap, high, low))
                places[i + 1] = (lg.ite(swap, low_rank, high_rank), lg.ite(swap, low, high))
        out = []
        for rank, key in places:
            present = lg.lt(rank, ABSENT)
            out.append((lg.ite(present, key, 0), present))
        return out

    def find(
        self, key: Sym, entry: int, record: Sym, version: Sym, position: Sym, reads: tuple[Sym, ...]
    ) -> Found:
        """The latest valid slot of ``entry`` that the lookup of ``record`` matches."""
        match = self.contract.match
        fields = self.plan.entries[entry].writes

        def matches(s: Slot) -> tuple[Sym, tuple[Sym, ...]]:
            conds = [self.valid(s), lg.eq(record, s.record), lg.eq(s.version, version)]
            if match == "position":
                conds.append(lg.eq(s.position, position))
            if match == "reads":
                conds.extend(lg.eq(a, b) for a, b in zip(s.reads, reads, strict=True))
            values = (*(s.writes[f] for f in fields), s.output, s.prefix, *s.reads, s.time, s.index)
            return lg.and_(*conds), values

        # a record is accepted at most once per epoch and writes its slot of an entry
        # after looking it up: its slot of this epoch is not there yet
        earlier = self.written("completion").where(
            lambda s: s.entry == entry and s.epoch != self.current
        )
        none = (*[NONE] * (len(fields) + 2 + len(reads)), -1, -1)
        hit, values = earlier.latest(matches, none)
        w = len(fields)
        return Found(
            hit,
            dict(zip(fields, values[:w], strict=True)),
            values[w],
            values[w + 1],
            tuple(values[w + 2 : -2]),
            values[-2],
            values[-1],
        )

    def invalidate(
        self, happens: Sym, key: Sym, position: Sym, keep: tuple[Sym, Sym] | None
    ) -> None:
        c = self.contract
        if lg._const(happens) is False:
            return
        targets = (
            [(key, True)] if c.invalidation_scope == "key" else self.ordered_keys(self.view_ranks())
        )
        for target, present in targets:
            here = lg.and_(happens, present)
            some = self.voids_some(target, position, keep)
            earlier = self.voidable()
            voided = []
            if self.recorder and here is True:
                voided = [
                    s.index
                    for s in self.voidable("completion").slots
                    if self.valid(s) is True and self.voids(s, target, position, keep) is True
                ]
            time = self.tick()
            if c.durable_invalidation:
                kept = self.effect(here)
                self.marks.append(InvalidationMark(kept, target, time))

                def void(s: Slot, kept: Sym = kept, target: Sym = target) -> None:
                    voids = self.voids(s, target, position, keep)
                    s.voided = lg.or_(s.voided, lg.and_(kept, s.present, voids))

                earlier.each(void)
            else:
                kept = lg.and_(here, self.live())

                def void_volatile(s: Slot, here: Sym = here, target: Sym = target) -> None:
                    voids = self.voids(s, target, position, keep)
                    self.op.put("volatile-voided", s.index, True, lg.and_(here, s.present, voids))

                earlier.each(void_volatile)
                rank = 2 * time
                old = self.op.at("volatile-rank", target)
                self.op.put("volatile-rank", target, rank, lg.and_(here, lg.lt(rank, old)))
            self.reach["invalidation"] = lg.or_(self.reach["invalidation"], kept)
            self.monitors.invalidate(kept, key, target, some)
            if self.recorder and kept is True:
                self.recorder.invalidate(key, position, voided, c.durable_invalidation)

    def order_entry(self, happens: Sym, key: Sym, position: Sym, record: Sym, version: Sym) -> None:
        if lg._const(happens) is False:
            return
        kept = self.effect(happens)
        if self.recorder and kept is True:
            self.recorder.order(position, record, version)
        time = self.tick()
        self.write_record(kept, record, "order", -1, position=position, version=version, time=time)

    # -- heavy operations ------------------------------------------------------------

    def accept(self, happens: Sym, record: Sym, version: Sym, recorded: Sym) -> None:
        if lg._const(happens) is False:
            return
        c, op = self.contract, self.op
        key = self.key_of(record)
        position = op.at("next", key)
        prefix = op.at("history", key)
        kept = lg.and_(happens, self.live())
        self.monitors.accept(kept, key, position, record, version, self.tick())
        if self.recorder and kept is True:
            self.recorder.accept(position, record, version)
        op.put("next", key, lg.add(position, 1), happens)
        self.insert(key, happens, self.time)
        memory = [op.at("memory", key, f) for f in range(len(self.plan.fields))]
        ordered: Sym = lg.or_(recorded, c.record_order == "no")
        if c.record_order == "before-first-tool-call":
            self.order_entry(lg.and_(happens, lg.not_(ordered)), key, position, record, version)
            ordered = True
        for entry in self.plan.entries:
            reads = tuple(memory[f] for f in entry.reads)
            found = self.find(key, entry.index, record, version, position, reads)
            hit = lg.and_(happens, found.any)
            miss = lg.and_(happens, lg.not_(found.any))
            reused = lg.and_(hit, self.live())
            self.monitors.reuse(
                reused, key, position, reads, found.prefix, found.reads, found.time, prefix
            )
            if self.recorder and reused is True:
                self.recorder.reuse(position, record, version, entry.index, found.index, reads)
            self.reach["reuse"] = lg.or_(self.reach["reuse"], reused)
            self.tick()
            if c.on_miss == "invalidate":
                some = self.voids_some(key, position, (record, version))
                self.invalidate(lg.and_(miss, some), key, position, (record, version))
            for tool in entry.tools:
                called = self.effect(miss)
                self.monitors.tool(called, record, version, entry.index)
                if self.recorder and called is True:
                    self.recorder.tool(position, record, version, entry.index, tool, reads)
                self.tick()
            writes = {f: write_term(entry, f, record, version, reads) for f in entry.writes}
            output = output_term(entry, record, version, reads) if entry.output else NONE
            carries = lg.and_(c.record_order == "with-first-completion", lg.not_(ordered))
            saved = self.effect(miss)
            time = self.tick()
            self.write_record(
                saved,
                record,
                "completion",
                entry.index,
                position=position,
                version=version,
                reads=reads,
                writes=writes,
                output=output,
                order=carries,
                prefix=prefix,
                time=time,
            )
            self.monitors.save(saved, record, version, entry.index)
            if self.recorder and saved is True:
                slot = next(
                    s.index
                    for s in self.slots_now("completion", entry.index).slots
                    if s.record == record
                )
                self.recorder.save(position, record, version, entry.index, slot, reads, carries)
            ordered = lg.or_(ordered, lg.and_(lg.not_(found.any), carries))
            for f in entry.writes:
                memory[f] = lg.ite(found.any, found.writes[f], writes[f])
            if entry.output:
                value = lg.ite(found.any, found.output, output)
                emitted = lg.and_(happens, self.live())
                self.monitors.output(emitted, key, entry.index, value)
                if self.recorder and emitted is True:
                    self.recorder.output(record, version, entry.index, value)
                self.tick()
        if c.record_order != "no":
            self.order_entry(lg.and_(happens, lg.not_(ordered)), key, position, record, version)
        for f in range(len(self.plan.fields)):
            op.put("memory", key, memory[f], happens, f)

    def diverge(self, happens: Sym, key: Sym) -> None:
        if lg._const(happens) is False:
            return
        op = self.op
        position = op.at("next", key)
        op.put("expected-end", key, position, happens)
        op.put("diverge-at", key, -1, happens)
        self.invalidate(happens, key, position, None)

    # -- light operations ------------------------------------------------------------

    def checkpoint(self, happens: Sym) -> None:
        if lg._const(happens) is False:
            return
        op = self.op
        needed = self.settled().minimum(
            lambda s: (lg.and_(self.valid(s), lg.le(op.at("next", s.key), s.position)), s.time),
            self.time + 1,
        )
        op.set("marker", needed, happens)
        self.saved.assign(op, happens)
        self.tick()
        if self.recorder and happens is True:
            self.recorder.checkpoint()

    def recorded_order(self, key: int) -> Recorded:
        """Of a position: whether the store records an input of ``key`` there, which,
        which version (in the state of now, whenever the function is called)."""
        carriers = self.written().where(
            lambda s: s.kind == "order" or lg._const(s.order) is not False
        )
        valid = self.valid

        def at(q: Sym) -> tuple[Sym, Sym, Sym]:
            def carries(s: Slot) -> tuple[Sym, tuple[Sym, ...]]:
                order = s.order if s.kind == "completion" else True
                here = lg.and_(valid(s), order, lg.eq(s.key, key), lg.eq(s.position, q))
                return here, (s.record, s.version)

            has, (record, version) = carriers.latest(carries, (-1, 0))
            return has, record, version

        return at

    def restore(self, happens: Sym) -> None:
        if lg._const(happens) is False:
            return
        op, w = self.op, self.world
        self.monitors.restore(happens, self.saved)
        if self.recorder and happens is True:
            self.recorder.restore()
        self.reach["restore"] = lg.or_(self.reach["restore"], happens)
        op.assign(self.saved, happens)
        w.set("up", True, happens)
        w.set("checkpointed", False, happens)
        self.tick()
        if not self.contract.wait:
            return
        ranks = self.view_ranks()
        for k in range(self.k):
            ranks[k] = lg.ite(
                lg.lt(ranks[k], ABSENT),
                ranks[k],
                lg.ite(self.waits(k), lg.add(WAITING_ONLY, op.cell("inserted", k)), ABSENT),
            )
        for k in range(self.k):
            self.expect_recorded(k, lg.and_(happens, lg.lt(ranks[k], ABSENT)))
        order = self.ordered_keys(ranks)
        base = self.tick()
        for j, (key, present) in enumerate(order):
            self.insert(key, lg.and_(happens, present), base + j)
            w.put("order", j, key, happens)
            w.put("order-in", j, present, happens)
            self.tick()
        first_key, first_in = order[0]
        w.set("phase", lg.ite(first_in, ADVANCE, IDLE), happens)
        w.set("key", first_key, happens)
        w.set("after", AFTER_RESTORE, happens)
        w.set("after-arg", 1, happens)

    def expect_recorded(self, key: int, included: Sym) -> None:
        """The restore's scan of ``key`` (when ``included``): its expected order is the
        store's recorded order, up to the first position from its next one where none
        is recorded; no divergence is pending."""
        op = self.op
        start = op.cell("next", key)
        recorded = self.recorded_order(key)

        def missing(q: Sym) -> Sym:
            return lg.and_(lg.le(start, q), lg.not_(recorded(q)[0]))

        def expect(q: Sym) -> None:
            _, record, version = recorded(q)
            op.put("expected", key, record, included, q)
            op.put("expected-version", key, version, included, q)

        op.put("expected-end", key, self.positions.first(missing, self.positions.end), included)
        self.positions.each(expect)
        op.put("diverge-at", key, -1, included)

    def arrive_waiting(self, happens: Sym, record: Sym, version: Sym) -> None:
        """A delivered input of a recovering key joins the waiting inputs."""
        op, w = self.op, self.world
        key = self.key_of(record)
        if self.contract.split_order:
            start = op.at("next", key)
            end = op.at("expected-end", key)
            channel = self.channel_of(record)

            def gives_up_at(q: Sym) -> Sym:
                expected = op.at("expected", key, q)
                return lg.and_(
                    lg.le(start, q),
                    lg.lt(q, end),
                    lg.eq(self.channel_of(expected), channel),
                    lg.lt(expected, record),
                    lg.not_(op.at("waiting", expected)),
                )

            first = self.positions.first(gives_up_at, -1)
            gives_up = lg.and_(happens, lg.le(0, first))
            if self.recorder and lg.and_(gives_up, self.live()) is True:
                missing = op.at("expected", key, first)
                self.recorder.give_up_before(key, first, missing, record)
            op.put("expected-end", key, first, gives_up)
            old = op.at("diverge-at", key)
            op.put(
                "diverge-at",
                key,
                lg.ite(lg.or_(lg.lt(old, 0), lg.lt(first, old)), first, old),
                gives_up,
            )
        op.put("waiting", record, True, happens)
        op.put("waiting-since", record, self.tick(), happens)
        op.put("waiting-version", record, version, happens)
        w.set("phase", ADVANCE, happens)
        w.set("key", key, happens)
        w.set("after", AFTER_ARRIVAL, happens)
        w.set("after-arg", record, happens)

    def loop_state(self, active: Sym) -> dict[str, Sym]:
        """What one iteration of the advance loop of the current key does (when
        ``active``): take the head, take the earliest waiting input, diverge, or finish."""
        op, w = self.op, self.world
        k = w["key"]
        nxt = op.at("next", k)
        expecting = lg.lt(nxt, op.at("expected-end", k))
        head = op.at("expected", k, nxt)
        head_version = op.at("expected-version", k, nxt)
        head_waits = lg.and_(lg.le(0, head), op.at("waiting", head))
        same = lg.eq(op.at("waiting-version", head), head_version)
        pending_divergence = lg.le(0, op.at("diverge-at", k))
        candidates = self.waiting_of(k) if self.contract.wait else lambda r: False
        any_waiting = self.records.some(candidates)
        stuck = lg.and_(active, expecting, lg.not_(head_waits))
        rest = lg.and_(active, lg.not_(expecting), lg.not_(pending_divergence))
        return {
            "expecting": expecting,
            "head": head,
            "candidates": candidates,
            "take_head": lg.and_(active, expecting, head_waits, same),
            "changed_head": lg.and_(active, expecting, head_waits, lg.not_(same)),
            "late_divergence": lg.and_(active, lg.not_(expecting), pending_divergence),
            "take_waiting": lg.and_(rest, any_waiting),
            "finished": lg.or_(stuck, lg.and_(rest, lg.not_(any_waiting))),
        }

    def finish(self, loop: dict[str, Sym]) -> tuple[Sym, Sym]:
        """What follows a finished advance loop: whether it diverges (this micro-step's
        heavy operation, on the world's key) and whether the run is done."""
        c, op, w = self.contract, self.op, self.world
        finished, expecting = loop["finished"], loop["expecting"]
        after, arg = w["after"], w["after-arg"]
        post = lg.and_(finished, lg.eq(after, AFTER_ARRIVAL))
        still = lg.and_(post, op.at("waiting", arg))
        waited = lg.and_(still, self.live())
        self.reach["wait"] = lg.or_(self.reach["wait"], waited)
        if self.recorder and waited is True:
            self.recorder.wait(w["key"], arg, loop["head"] if expecting else -1)
        self.tick()
        waiting_count = self.waiting_count(w["key"])
        give_up = lg.and_(still, lg.lt(c.give_up_after, waiting_count), expecting)
        self.record_give_up(give_up, w["key"], fallback.more_waited(c.give_up_after))
        w.set("phase", lg.ite(give_up, ADVANCE, IDLE), post)
        w.set("after", AFTER_NOTHING, post)
        after_restore = lg.and_(finished, lg.eq(after, AFTER_RESTORE))
        nxt_key = w.at("order", arg) if self.k > 0 else 0
        nxt_in = lg.and_(lg.lt(arg, self.k), w.at("order-in", arg))
        w.set("phase", lg.ite(nxt_in, ADVANCE, IDLE), after_restore)
        w.set("key", nxt_key, after_restore)
        w.set("after-arg", lg.add(arg, 1), after_restore)
        nothing_after = lg.and_(finished, lg.eq(after, AFTER_NOTHING))
        w.set("phase", IDLE, nothing_after)
        end_div, done = self.dispatch_end(
            lg.and_(finished, lg.eq(after, AFTER_END)), arg, nxt_key, nxt_in
        )
        timeout_div: Sym = False
        if self.timeouts:
            timeout_div = self.dispatch_timeout(
                lg.and_(finished, lg.eq(after, AFTER_TIMEOUT)), arg, nxt_key, nxt_in
            )
        return lg.or_(give_up, end_div, timeout_div), done

    def advance_next(self, go: Sym, key: Sym, after: int, index: Sym) -> None:
        """The advance loop of ``key``, the one at ``index`` of the order, runs next (if
        ``go``); ``after`` it comes the key after it."""
        w = self.world
        w.set("phase", ADVANCE, go)
        w.set("key", key, go)
        w.set("after", after, go)
        w.set("after-arg", lg.add(index, 1), go)

    def dispatch_end(self, happens: Sym, index: Sym, key: Sym, present: Sym) -> tuple[Sym, Sym]:
        """At the end of input, the key at ``index`` of the order (if ``present``) gives
        up its missing recorded inputs (a divergence) and advances; else the run is done."""
        op, w = self.op, self.world
        go = lg.and_(happens, present)
        diverges = lg.and_(go, lg.lt(op.at("next", key), op.at("expected-end", key)))
        self.record_give_up(diverges, key, fallback.END_OF_INPUT)
        self.advance_next(go, key, AFTER_END, index)
        done = lg.and_(happens, lg.not_(present))
        w.set("phase", DONE, done)
        return diverges, done

    def dispatch_timeout(self, happens: Sym, index: Sym, key: Sym, present: Sym) -> Sym:
        """The wait bound passed (:func:`replay_contract.model.recovery.timeout`): the key at
        ``index`` of the order (if ``present``) gives up what its waiting inputs wait for,
        if any wait (a divergence), and advances; past the last key the step is over, and
        the ``timeout`` event lets ``bounded-waiting`` look at what still waits."""
        op, w = self.op, self.world
        go = lg.and_(happens, present)
        expecting = lg.lt(op.at("next", key), op.at("expected-end", key))
        diverges = lg.and_(go, expecting, self.waits(key))
        self.record_give_up(diverges, key, fallback.WAIT_BOUND_PASSED)
        self.advance_next(go, key, AFTER_TIMEOUT, index)
        over = lg.and_(happens, lg.not_(present))
        w.set("phase", IDLE, over)
        w.set("after", AFTER_NOTHING, over)
        self.monitors.timeout(over, self.shape.key)
        if self.recorder and over is True:
            self.recorder.timeout()
        return diverges

    def end_macro(self) -> None:
        """A crash after the chosen effect ends the step; a cut is reached by the end of
        its macro-step."""
        w = self.world
        macro_over = lg.or_(lg.eq(w["phase"], IDLE), lg.eq(w["phase"], DONE))
        cut = w["cut"]
        reached = lg.and_(lg.le(0, cut), lg.le(cut, w["effects"]))
        self.assume(lg.implies(lg.and_(macro_over, lg.le(0, cut)), reached))
        w.set("up", False, reached)
        w.set("phase", IDLE, reached)
        w.set("crashes", lg.add(w["crashes"], lg.ite(reached, 1, 0)))
        self.reach["crash"] = lg.or_(self.reach["crash"], reached)
        if self.recorder and reached is True:
            self.recorder.crash()
        w.set("cut", -1, lg.or_(reached, macro_over))

    # -- one micro-step ----------------------------------------------------------------

    def micro_step(self, t: int) -> None:
        c, op, w = self.contract, self.op, self.world
        self.current = self.epoch_of(t)
        pre_div: Sym = False
        pre_done: Sym = False
        if c.wait:
            # the end of the advance loop left by the previous micro-step, before its move
            active = lg.eq(w["phase"], ADVANCE)
            pre_div, pre_done = self.finish(self.loop_state(active))
            self.end_macro()
        idle = lg.eq(w["phase"], IDLE)
        move = self.env(t, idle)
        up = w["up"]
        boundary = t in self.boundaries
        nothing = lg.and_(
            lg.eq(move.main, NOTHING),
            lg.not_(move.checkpoint),
            lg.not_(move.crash),
            lg.eq(move.cut, -1),
            lg.eq(move.channel, 0),
        )
        self.assume(lg.implies(lg.not_(idle), nothing))
        # restores happen at epoch boundaries only; the operator idles while down
        if boundary:
            self.assume(
                lg.implies(
                    lg.and_(idle, lg.not_(up)),
                    lg.and_(
                        lg.eq(move.main, RESTORE), lg.not_(move.checkpoint), lg.not_(move.crash)
                    ),
                )
            )
            self.assume(
                lg.implies(
                    lg.and_(idle, up, move.crash),
                    lg.and_(lg.eq(move.main, RESTORE), lg.lt(w["crashes"], self.f)),
                )
            )
        else:
            self.assume(lg.implies(lg.not_(up), nothing))
            self.assume(lg.not_(move.crash))
            self.assume(lg.ne(move.main, RESTORE))
        self.assume(lg.implies(lg.and_(idle, up, lg.not_(move.crash)), lg.ne(move.main, RESTORE)))
        self.assume(lg.implies(lg.eq(move.main, NOTHING), nothing))
        self.assume(
            lg.and_(lg.le(0, move.main), lg.le(move.main, TIMEOUT if self.timeouts else NOTHING))
        )
        self.assume(lg.le(-1, move.cut))
        self.assume(lg.and_(lg.le(0, move.channel), lg.lt(move.channel, self.c)))
        self.assume(lg.implies(lg.ne(move.main, DELIVER), lg.eq(move.channel, 0)))
        info: dict[str, Sym] = {
            "idle": idle,
            "checkpoint": move.checkpoint,
            "crash": move.crash,
            "main": move.main,
            "cut": move.cut,
        }
        # checkpoint and plain crash
        checkpointing = lg.and_(idle, up, move.checkpoint)
        if without_checkpoint(self, self.current):
            checkpointing = False
        info["checkpoint"] = checkpointing  # what happened, for the decoded schedule
        if self.one_checkpoint:
            self.assume(lg.not_(lg.and_(checkpointing, w["checkpointed"])))
            w.set("checkpointed", True, checkpointing)
        self.checkpoint(checkpointing)
        crashed = lg.and_(idle, up, move.crash)
        w.set("up", False, crashed)
        w.set("crashes", lg.add(w["crashes"], lg.ite(crashed, 1, 0)))
        self.reach["crash"] = lg.or_(self.reach["crash"], crashed)
        if self.recorder and crashed is True:
            self.recorder.crash()
        if self.recorder and idle is True:
            self.recorder.step()
        delivering = lg.and_(idle, lg.eq(move.main, DELIVER))
        restoring = lg.and_(idle, lg.eq(move.main, RESTORE)) if boundary else False
        ending = lg.and_(idle, lg.eq(move.main, END))
        starts = lg.or_(delivering, restoring)
        self.assume(lg.implies(lg.le(0, move.cut), lg.and_(starts, lg.lt(w["crashes"], self.f))))
        w.set("effects", 0, starts)
        w.set("cut", move.cut, starts)
        # deliver: the next record of the channel
        nexts = [self.next_record(ch) for ch in range(self.c)]
        has_next = [lg.le(0, rec) for rec in nexts]
        record = lg.select(move.channel, nexts, -1)
        self.assume(lg.implies(delivering, lg.le(0, record)))
        high = lg.select(move.channel, [w.cell("high", ch) for ch in range(self.c)], 0)
        again = lg.lt(record, high)
        self.assume(lg.implies(lg.and_(delivering, lg.not_(again)), lg.eq(record, w["delivered"])))
        self.assume(lg.implies(ending, lg.not_(lg.or_(*has_next))))
        version = lg.ite(lg.and_(again, lg.eq(self.mode_of(record), 2)), 1, 0)
        if self.recorder and delivering is True:
            self.recorder.deliver(record, version)
        info["record"] = record
        op.put("offset", move.channel, lg.add(record, 1), delivering)
        w.put("high", move.channel, lg.add(record, 1), lg.and_(delivering, lg.not_(again)))
        w.set("delivered", lg.add(w["delivered"], 1), lg.and_(delivering, lg.not_(again)))
        self.monitors.deliver(delivering, record)
        self.tick()
        key = self.key_of(record)
        if c.wait and self.current > 0:
            # nothing recovers before the first restore
            waits = lg.and_(delivering, self.recovering(key))
            direct = lg.and_(delivering, lg.not_(waits))
            self.arrive_waiting(waits, record, version)
        else:
            direct = delivering
        # restore
        self.restore(restoring)
        done: Sym = False
        end_div: Sym = False
        if c.wait:
            # end of input: give up each key's missing recorded input, then advance it
            inserted = [op.cell("inserted", kk) for kk in range(self.k)]
            order = self.ordered_keys(inserted)
            for j, (kk, present) in enumerate(order):
                w.put("order", j, kk, ending)
                w.put("order-in", j, present, ending)
            end_div, done = self.dispatch_end(ending, 0, order[0][0], order[0][1])
        else:
            done = ending
            w.set("phase", DONE, done)
        timeout_div: Sym = False
        if self.timeouts:
            timeout_div = self.timeout_macro(idle, up, move)
        # the advance loop: one iteration, unless a divergence is already this step's
        # heavy operation
        heavy = lg.or_(pre_div, end_div, timeout_div)
        adv = lg.and_(lg.eq(w["phase"], ADVANCE), lg.not_(heavy)) if c.wait else False
        loop = self.loop_state(adv)
        take_head, take_waiting = loop["take_head"], loop["take_waiting"]
        self.record_give_up(loop["changed_head"], w["key"], fallback.CAME_BACK_CHANGED)
        first = self.earliest_waiting(loop["candidates"]) if c.wait else 0
        # the heavy operation of this micro-step
        accepting = lg.or_(direct, take_head, take_waiting)
        acc_record = lg.ite(direct, record, lg.ite(take_head, loop["head"], first))
        acc_version = lg.ite(direct, version, op.at("waiting-version", acc_record))
        op.put("waiting", acc_record, False, lg.or_(take_head, take_waiting))
        self.accept(accepting, acc_record, acc_version, take_head)
        diverging = lg.or_(loop["changed_head"], loop["late_divergence"], heavy)
        self.diverge(diverging, w["key"])
        self.end_macro()
        done = lg.or_(pre_done, done)
        self.monitors_end(done)
        info["padding"] = lg.and_(idle, lg.eq(move.main, NOTHING))
        if t not in self.starts:
            # padding only at the end of an epoch: an idle micro-step changes nothing, so
            # moving it after the epoch's other moves gives the same run (symmetry breaking)
            self.assume(lg.implies(self.decode[-1]["padding"], info["padding"]))
        elif t:
            # and only before a restore: an epoch that ends idle, up and with padding is not
            # followed by one that goes on without a restore, since moving the next moves
            # into the padding gives the same run
            self.assume(lg.implies(lg.and_(idle, up, self.decode[-1]["padding"]), move.crash))
        self.decode.append(info)
        if t + 1 in self.starts or t + 1 == self.steps:
            self.after_epoch.append((w["phase"], w["up"]))

    def timeout_macro(self, idle: Sym, up: Sym, move: Move) -> Sym:
        """The ``timeout`` move: at most ``timeouts`` of them, while the operator is up.
        A contract that waits and gives up on timeout goes through its keys as the end
        of input does (:meth:`dispatch_timeout`); any other contract does nothing, and
        the ``timeout`` event comes at once. Whether the first key diverges now."""
        c, op, w = self.contract, self.op, self.world
        timing = lg.and_(idle, lg.eq(move.main, TIMEOUT))
        self.assume(lg.implies(timing, up))
        w.set("timeouts", lg.add(w["timeouts"], lg.ite(timing, 1, 0)))
        self.assume(lg.le(w["timeouts"], self.timeouts))
        if not (c.wait and c.give_up_on_timeout):
            self.monitors.timeout(timing, self.shape.key)
            if self.recorder and timing is True:
                self.recorder.timeout()
            return False
        inserted = [op.cell("inserted", kk) for kk in range(self.k)]
        order = self.ordered_keys(inserted)
        for j, (kk, present) in enumerate(order):
            w.put("order", j, kk, timing)
            w.put("order-in", j, present, timing)
        return self.dispatch_timeout(timing, 0, order[0][0], order[0][1])

    def monitors_end(self, done: Sym) -> None:
        if lg._const(done) is False:
            return
        memory = [
            [self.op.cell("memory", k, f) for f in range(len(self.plan.fields))]
            for k in range(self.k)
        ]
        self.monitors.end(done, memory, self.shape.key)
        if self.recorder and done is True:
            inserted = sorted((self.op.cell("inserted", k), k) for k in range(self.k))
            self.recorder.end(memory, [k for rank, k in inserted if rank < ABSENT])

    def epoch_of(self, t: int) -> int:
        """The epoch micro-step ``t`` belongs to."""
        return max(e for e, start in enumerate(self.starts) if start <= t)

    def run(self) -> None:
        for t in range(self.steps):
            self.micro_step(t)

    @property
    def boundaries(self) -> set[int]:
        """The micro-steps where a restore may happen: the start of each epoch after the
        first (each crash is followed by a restore at the next boundary)."""
        return set(self.starts[1:])

    def saturated(self) -> Sym:
        """Some epoch used every micro-step without finishing its part of the run: the
        unrolling may be too short for some scenario of the bound."""
        out: Sym = False
        for e in range(self.f + 1):
            end = self.starts[e + 1] if e < self.f else self.steps
            steps = self.decode[self.starts[e] : end]
            busy = lg.and_(*(lg.not_(i["padding"]) for i in steps))
            phase, up = self.after_epoch[e]
            if e == self.f:
                spills = lg.ne(phase, DONE)
            else:
                following = self.decode[self.starts[e + 1]]
                goes_on = lg.or_(
                    lg.eq(following["main"], DELIVER),
                    lg.eq(following["main"], END),
                    lg.eq(following["main"], TIMEOUT),
                )
                spills = lg.and_(
                    up, lg.or_(lg.eq(phase, ADVANCE), lg.and_(lg.eq(phase, IDLE), goes_on))
                )
            out = lg.or_(out, lg.and_(busy, spills))
        return out

    @property
    def finished(self) -> Sym:
        return lg.eq(self.world["phase"], DONE)

    def trace(self) -> Trace:
        """The model's trace of the run, as recorded (a concrete run only)."""
        if self.recorder is None:
            raise ValueError("the machine ran without a recorder (a symbolic run)")
        return self.recorder.trace(self.contract.basis)


def _rank(time: Sym) -> Sym:
    """Where a durable write of tick ``time`` sorts among the store's entries: an odd
    number, so that an invalidation kept only in memory at that tick (``2 * time``)
    sorts after every write before it and before every write after it."""
    return lg.add(lg.add(time, time), 1)


# -- budgets -------------------------------------------------------------------------


def budget(contract: Contract, bound: BoundLike) -> int:
    """Micro-steps per epoch (between two restores), enough for every scenario of the
    bound: ``verify --check-budget`` proves it for a bound, the tests for small ones."""
    n, k = bound.inputs, bound.keys
    # a restore, every record, every timeout, the end of input
    moves = n + 2 + getattr(bound, "timeouts", 0)
    if not contract.wait:
        return moves
    # with waiting: an accept out of the advance loop per record, and one more
    # micro-step per key (the end of input's divergence of the key, or an iteration of
    # its loop that finds nothing to do); the end of a loop is folded into the next
    # micro-step (measured tight at small bounds by ``check_budget``: one micro-step
    # fewer is short); a timeout takes a micro-step per key too
    return moves + n + k * (1 + getattr(bound, "timeouts", 0))


def first_budget(contract: Contract, bound: BoundLike) -> int:
    """Micro-steps of the first epoch (before any crash), enough for every scenario of
    the bound. Nothing is recovering before the first restore, so nothing waits: every
    record is accepted as it is delivered, then the end of input; with waiting, the end
    of input also takes its micro-step per key."""
    n, k, timeouts = bound.inputs, bound.keys, getattr(bound, "timeouts", 0)
    return n + 1 + timeouts + (k * (1 + timeouts) if contract.wait else 0)


# -- drivers -------------------------------------------------------------------------


def symbolic_shape(bound: BoundLike, solver_assume: Callable[[Sym], None]) -> Shape:
    n = bound.inputs
    channel = [lg.int_var(f"channel_{r}") for r in range(n)]
    key = [lg.int_var(f"key_{r}") for r in range(n)]
    mode = [lg.int_var(f"mode_{r}") for r in range(n)]
    for r in range(n):
        solver_assume(z3.And(channel[r] >= 0, channel[r] < bound.channels))
        solver_assume(z3.And(key[r] >= 0, key[r] < bound.keys))
        solver_assume(z3.And(mode[r] >= 0, mode[r] <= 2))
    if n:
        solver_assume(channel[0] == 0)
        solver_assume(key[0] == 0)
    for r in range(1, n):
        solver_assume(z3.Or(*(channel[r] <= channel[q] + 1 for q in range(r))))
        solver_assume(z3.Or(*(key[r] <= key[q] + 1 for q in range(r))))
    changed = lg.count([lg.ne(m, 0) for m in mode])
    solver_assume(lg.lift_bool(lg.le(changed, bound.changes)))
    return Shape(list(channel), list(key), list(mode))


def without_checkpoint(m: Machine, epoch: int) -> bool:
    """Whether ``m`` takes no checkpoint in ``epoch``: the last one, when only the last
    checkpoint before a restore counts (``one_checkpoint``), since no restore follows."""
    return m.one_checkpoint and epoch == m.f


def quiet_checkpoints(contract: Contract) -> bool:
    """Whether only the last checkpoint before a restore can matter: lookups by
    position, invalidations of one key only.

    A checkpoint changes the state a restore brings back and the store's recovery
    marker, which hides entries before their key's position; under such a contract no
    later lookup or invalidation looks there before the next restore, and a later
    checkpoint computes the same marker whether or not the earlier one hid them. So a
    checkpoint in the last epoch (no restore follows it) changes nothing, and of several
    checkpoints between two restores only the last one counts: the same run without the
    others breaks the same properties."""
    return contract.match == "position" and contract.invalidation_scope == "key"


def symbolic_env(t: int, idle: Sym) -> Move:
    return Move(
        z3.Bool(f"t{t}_checkpoint"),
        z3.Bool(f"t{t}_crash"),
        lg.int_var(f"t{t}_main"),
        lg.int_var(f"t{t}_channel"),
        lg.int_var(f"t{t}_cut"),
    )


class ScheduleEnv:
    """Feeds a concrete schedule (a list of moves) to the machine, idling until the
    next epoch boundary (one of the machine's ``boundaries``) before a restore."""

    def __init__(self, moves: list[Move]) -> None:
        self.moves = list(moves)
        self.boundaries: set[int] = set()
        self.used = 0
        #: the move given at each micro-step where the machine was idle
        self.given: dict[int, Move] = {}

    def __call__(self, t: int, idle: Sym) -> Move:
        move = Move(False, False, NOTHING, 0, -1)
        if (
            idle is True
            and self.used < len(self.moves)
            and (self.moves[self.used].main != RESTORE or t in self.boundaries)
        ):
            move = self.moves[self.used]
            self.used += 1
        if idle is True:
            self.given[t] = move
        return move


def run_concrete(
    contract: Contract,
    bound: BoundLike,
    shape: Any,
    steps: Any,
    epoch: int | None = None,
    first: int | None = None,
    one_checkpoint: bool = False,
) -> Machine:
    """The machine driven by one scenario of the bound (a
    :class:`replay_contract.model.bounded.Shape` and its schedule); its ``env`` is the
    :class:`ScheduleEnv`, with the moves it gave."""
    from replay_contract.model.bounded import record_name

    channel_of = {record_name(r): shape.channel[r] for r in range(shape.inputs)}
    epoch = epoch or budget(contract, bound)
    first = first or first_budget(contract, bound)
    env = ScheduleEnv(moves_of(steps, channel_of))
    machine = Machine(
        contract,
        shape.agent,
        bound,
        concrete_shape(shape.channel, shape.key, shape.mode),
        env,
        epoch,
        first,
        one_checkpoint=one_checkpoint,
        recorder=Recorder(shape, steps),
    )
    env.boundaries = machine.boundaries
    machine.run()
    return machine


def concrete_shape(channel: tuple[int, ...], key: tuple[int, ...], mode: tuple[str, ...]) -> Shape:
    codes = {"same": 0, "lost": 1, "changed": 2}
    return Shape(list(channel), list(key), [codes[m] for m in mode])


def moves_of(steps: Any, channel_of: dict[str, int]) -> list[Move]:
    """The moves of a schedule in the grammar of :mod:`replay_contract.model.bounded`."""
    moves: list[Move] = []
    checkpoint = crash = False
    for step in steps:
        if step.kind == "checkpoint":
            checkpoint = True
        elif step.kind == "crash":
            crash = True
        else:
            main = {"deliver": DELIVER, "restore": RESTORE, "end": END, "timeout": TIMEOUT}[
                step.kind
            ]
            cut = -1 if step.crash_after is None else step.crash_after
            ch = channel_of[step.record] if step.record else 0
            moves.append(Move(checkpoint, crash, main, ch, cut))
            checkpoint = crash = False
    if not moves or moves[-1].main != END:
        moves.append(Move(checkpoint, crash, END, 0, -1))
    return moves
