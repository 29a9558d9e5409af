"""The keyed agent operator as a runtime, parameterised by a :class:`Contract` value.

It implements the conformance suite's
:class:`~replay_contract.conformance.interface.Implementation` protocol over any
:class:`~.store.Backend`, and takes the same decisions as the reference model
(:mod:`replay_contract.model.operator`), rule for rule, with real state:

- mutable keyed state (:class:`~.state.KeyState`), waiting inputs included;
- a checkpoint is a snapshot of that state plus the store's recovery marker (the first
  entry a restore may still need);
- a restore decodes the last snapshot, opens a new store client and reads the store from
  the marker only (:class:`~.view.LiveView`);
- a crash drops every piece of in-memory state, store client included. A
  :class:`~replay_contract.conformance.interface.Crashed` raised by the environment, or a
  :class:`~.store.StoreError`, crashes the runtime the same way before it propagates.

Durable writes happen before they are reported, so the environment can crash the step
right after any of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from replay_contract.conformance.interface import Capabilities, Crashed, Environment
from replay_contract.model import trace as t
from replay_contract.model.agent import Agent, execute, read
from replay_contract.model.contracts import CONTRACTS, Contract
from replay_contract.model.store import Completion, Entry, Invalidation, OrderEntry
from replay_contract.model.topology import Key, Record, Topology

from .state import CheckpointStorage, Expected, KeyState, Snapshot
from .store import ActionStateStore, Backend, Namespace, StoreError, StoreStats
from .view import KeyName, LiveView, key_name

#: Every published contract; any other :class:`Contract` value (a mutant of the tests,
#: say) runs as well: claim its name with ``RuntimeOperator(..., claims=...)``.
CLAIMED = tuple(CONTRACTS)


class OperatorError(StoreError):
    """The runtime was driven outside its protocol (e.g. a step while it is down)."""


class RuntimeOperator:
    """The keyed operator over an action state store (see the module docstring)."""

    def __init__(
        self, backend: Backend, *, keep_namespaces: bool = False, claims: tuple[str, ...] = CLAIMED
    ) -> None:
        self.capabilities = Capabilities(
            contracts=claims, crash_points=True, non_replayable=True, rescaling=False
        )
        self.backend = backend
        self.keep_namespaces = keep_namespaces
        self.namespace: Namespace | None = None
        self._namespaces: list[Namespace] = []
        self._agent: Agent | None = None
        self._contract: Contract | None = None
        self._env: Environment | None = None
        self._checkpoints = CheckpointStorage()
        self._closed_stats = StoreStats()
        # in-memory state, all of it lost on a crash
        self._store: ActionStateStore | None = None
        self._keys: dict[KeyName, KeyState] = {}
        self._view = LiveView()
        self._marker = 0
        self._volatile: list[tuple[int, Invalidation]] = []
        self._number = 0

    # -- the Implementation protocol ------------------------------------------------------

    def open(self, agent: Agent, topology: Topology, contract: Contract, env: Environment) -> None:
        self._agent, self._contract, self._env = agent, contract, env
        self.namespace = self.backend.namespace()
        self._namespaces.append(self.namespace)
        self._checkpoints = CheckpointStorage()
        self._lose()
        self._store = self.namespace.connect()
        self._marker = self._store.end()
        self._checkpoints.save(Snapshot(0, self._marker, {}, []))

    def deliver(self, record: Record) -> None:
        self._guarded(lambda: self._arrive(record), f"deliver {record.identity!r}")

    def checkpoint(self) -> int:
        store = self._up("checkpoint")
        needed = self._view.needed(lambda key: self._key_or_new(key).next_position)
        self._marker = store.end() if needed is None else needed
        self._view = LiveView.build(
            ((i, e) for i, e in self._view.stream if i >= self._marker), self._volatile
        )
        self._number += 1
        self._checkpoints.save(Snapshot(self._number, self._marker, self._keys, self._volatile))
        return self._number

    def crash(self) -> None:
        self._lose()

    def restore(self) -> None:
        self._guarded(self._restore, "restore", require_up=False)

    def end(self) -> Mapping[Key, Mapping[str, Any]]:
        def finish() -> None:
            for ks in list(self._keys.values()):
                if ks.expected:
                    head = ks.expected.head
                    self._diverge(ks, head.position, head.identity, "end of input")
                self._advance(ks)

        self._guarded(finish, "end")
        return {ks.key: dict(ks.memory) for ks in self._keys.values()}

    def close(self) -> None:
        self._lose()
        if not self.keep_namespaces:
            for namespace in self._namespaces:
                namespace.drop()
        self._namespaces.clear()

    @property
    def stats(self) -> StoreStats:
        """What every store client of this runtime did so far, the current one included
        (for measurements; not part of the checkpointed state)."""
        total = StoreStats()
        total.add(self._closed_stats)
        if self._store is not None:
            total.add(self._store.stats)
        return total

    # -- state ----------------------------------------------------------------------------

    def _lose(self) -> None:
        """A crash: every piece of in-memory state goes, the store client too."""
        store, self._store = self._store, None
        if store is not None:
            self._closed_stats.add(store.stats)
            store.close()
        self._keys, self._view, self._volatile = {}, LiveView(), []
        self._marker = self._number = 0

    def _up(self, what: str) -> ActionStateStore:
        if self._store is None:
            raise OperatorError(f"{what}: the runtime is down (restore it first)")
        return self._store

    def _guarded(self, step: Callable[[], None], what: str, require_up: bool = True) -> None:
        if require_up:
            self._up(what)
        try:
            step()
        except (Crashed, StoreError):
            self._lose()
            raise

    def _key(self, key: Key) -> KeyState:
        name = key_name(key)
        ks = self._keys.get(name)
        if ks is None:
            ks = self._keys[name] = KeyState(key)
        return ks

    def _key_or_new(self, key: Key) -> KeyState:
        return self._keys.get(key_name(key)) or KeyState(key)

    @property
    def contract(self) -> Contract:
        assert self._contract is not None, "the runtime is not open"
        return self._contract

    @property
    def env(self) -> Environment:
        assert self._env is not None, "the runtime is not open"
        return self._env

    def _write(self, entry: Entry) -> int:
        (index,) = self._up("write").append([entry])
        self._view.add(index, entry)
        return index

    # -- restore --------------------------------------------------------------------------

    def _restore(self) -> None:
        self._lose()
        assert self.namespace is not None, "the runtime is not open"
        snapshot = self._checkpoints.latest()
        assert snapshot is not None
        store = self.namespace.connect()
        self._store = store
        try:
            entries = store.read(snapshot.marker)
        except BaseException:
            self._lose()
            raise
        self._number, self._marker = snapshot.number, snapshot.marker
        self._keys, self._volatile = snapshot.keys, snapshot.volatile
        self._view = LiveView.build(entries, self._volatile)
        if not self.contract.wait:
            return
        keys = {key_name(k): k for k in self._view.keys_seen()}
        keys.update(
            {key_name(r.key): r.key for ks in list(self._keys.values()) for r in ks.waiting}
        )
        states = [self._key(key) for key in keys.values()]
        for ks in states:
            ks.expected = Expected(self._view.recorded_order(ks.key, ks.next_position))
            ks.diverge_at = None
        for ks in states:
            self._advance(ks)

    # -- arrival, waiting and divergence ---------------------------------------------------

    def _arrive(self, record: Record) -> None:
        c = self.contract
        ks = self._key(record.key)
        if not (c.wait and ks.recovering):
            self._accept(ks, record, recorded=False)
            return
        if c.split_order:
            arrived = {w.identity for w in ks.waiting} | {record.identity}
            r = ks.expected.first_missing(record.channel, record.offset, arrived)
            if r is not None:
                self.env.report(
                    t.GiveUp(
                        record.key,
                        r.position,
                        r.identity,
                        f"a later record of channel {record.channel!r} arrived",
                    )
                )
                ks.expected.keep_before(r.position)
                ks.diverge_at = (
                    r.position if ks.diverge_at is None else min(ks.diverge_at, r.position)
                )
        ks.waiting.append(record)
        self._advance(ks)
        if any(w.identity == record.identity for w in ks.waiting):
            awaiting = ks.expected.head.identity if ks.expected else ""
            self.env.report(t.Wait(record.key, record.identity, awaiting))
            if len(ks.waiting) > c.give_up_after and ks.expected:
                head = ks.expected.head
                self._diverge(
                    ks, head.position, head.identity, f"more than {c.give_up_after} inputs waited"
                )
                self._advance(ks)

    def _advance(self, ks: KeyState) -> None:
        """Accept what the recorded order allows, then what waits once it is exhausted."""
        while True:
            if ks.expected:
                head = ks.expected.head
                match = next((w for w in ks.waiting if w.identity == head.identity), None)
                if match is None:
                    return
                if match.digest != head.digest:
                    self._diverge(ks, head.position, head.identity, "the input came back changed")
                    continue
                ks.expected.pop_head()
                ks.waiting = [w for w in ks.waiting if w is not match]
                self._accept(ks, match, recorded=True)
            elif ks.diverge_at is not None:
                self._diverge(ks, ks.diverge_at, "", "its recorded input is missing")
            else:
                waiting, ks.waiting = ks.waiting, []
                for record in waiting:
                    self._accept(ks, record, recorded=False)
                return

    def _diverge(self, ks: KeyState, position: int, missing: str, reason: str) -> None:
        """The key's history diverges: void its saved suffix from the next position."""
        if missing:
            self.env.report(t.GiveUp(ks.key, position, missing, reason))
        ks.expected, ks.diverge_at = Expected(), None
        self._invalidate(ks.key, Invalidation(ks.key, ks.next_position))

    def _invalidate(self, key: Key, inv: Invalidation) -> None:
        c = self.contract
        targets = self._view.keys_seen() if c.invalidation_scope == "all" else [key]
        voided = [
            self._view.voided_by(Invalidation(target, inv.position, inv.keep)) for target in targets
        ]
        for target, completions in zip(targets, voided, strict=True):
            one = Invalidation(target, inv.position, inv.keep)
            if c.durable_invalidation:
                self._write(one)
                self.env.report(t.Invalidate(key, inv.position, completions))
            else:
                index = self._up("invalidate").end()
                self._volatile.append((index, one))
                self._view.add_volatile(index, one)
                self.env.report(t.Invalidate(key, inv.position, completions, durable=False))

    # -- running the actions of one accepted input ----------------------------------------

    def _accept(self, ks: KeyState, record: Record, recorded: bool) -> None:
        c, env = self.contract, self.env
        assert self._agent is not None
        key, ident, dig = record.key, record.identity, record.digest
        position = ks.next_position
        memory = dict(ks.memory)
        ks.next_position += 1
        env.report(t.Accept(key, position, ident, dig))
        ordered = recorded or c.record_order == "no"
        if c.record_order == "before-first-tool-call" and not ordered:
            self._write(OrderEntry(key, position, ident, dig, record.channel, record.offset))
            env.report(t.Order(key, position, ident, dig))
            ordered = True
        for path, action in self._agent.plan():
            reads = read(memory, action)
            found = self._view.find(
                key,
                path,
                identity=ident,
                digest=dig,
                position=position if c.match == "position" else None,
                reads=reads if c.match == "reads" else None,
            )
            if found is not None:
                index, saved = found
                env.report(t.Reuse(key, position, ident, dig, path, index, reads))
                writes, outputs = saved.writes, saved.outputs
            else:
                if c.on_miss == "invalidate":
                    inv = Invalidation(key, position, keep=(ident, dig))
                    if self._view.voided_by(inv):
                        self._invalidate(key, inv)
                results = tuple(
                    (tool, env.tool(key, position, record, path, tool, reads))
                    for tool in action.tools
                )
                effects = execute(action, path, record, reads, results)
                writes, outputs = effects.writes, effects.outputs
                carries = c.record_order == "with-first-completion" and not ordered
                index = self._write(
                    Completion(
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
                )
                env.report(t.Save(key, position, ident, dig, path, index, reads, carries))
                ordered = ordered or carries
            memory.update(writes)
            for value in outputs:
                env.output(key, ident, path, value)
        if not ordered:
            self._write(OrderEntry(key, position, ident, dig, record.channel, record.offset))
            env.report(t.Order(key, position, ident, dig))
        ks.memory = memory
