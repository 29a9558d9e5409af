"""The keyed agent operator as a runtime, parameterised by a :class:`Contract` value.

It implements the conformance suite's
:class:`~replay_contract.conformance.interface.Implementation` protocol over any
:class:`~.store.Backend`. It is a host of the contract's rules
(:class:`replay_contract.model.keyed.Host`): the rules themselves
(:mod:`replay_contract.model.reuse`, :mod:`~replay_contract.model.recovery`,
:mod:`~replay_contract.model.fallback`) are the reference model's, the same code; what
is the runtime's own is real state:

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
from replay_contract.model import recovery
from replay_contract.model import trace as t
from replay_contract.model.agent import Agent, Path
from replay_contract.model.contracts import CONTRACTS, Contract
from replay_contract.model.keyed import KeyState
from replay_contract.model.store import Entry, Invalidation
from replay_contract.model.topology import Key, Record, Topology

from .state import CheckpointStorage, Snapshot
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
        self._guarded(lambda: recovery.arrive(self, record), f"deliver {record.identity!r}")

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
        self._guarded(lambda: recovery.end_of_input(self), "end")
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
    def agent(self) -> Agent:
        assert self._agent is not None, "the runtime is not open"
        return self._agent

    @property
    def env(self) -> Environment:
        assert self._env is not None, "the runtime is not open"
        return self._env

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
        keys = {key_name(k): k for k in self._view.keys()}  # noqa: SIM118 (a view)
        keys.update(
            {key_name(r.key): r.key for ks in list(self._keys.values()) for r in ks.waiting}
        )
        recovery.restore_order(self, keys.values())

    # -- the host of the contract's rules (replay_contract.model.keyed.Host) -------------

    def state(self, key: Key) -> KeyState:
        return self._key(key)

    def known_keys(self) -> list[Key]:
        return [ks.key for ks in self._keys.values()]

    def view(self) -> LiveView:
        return self._view

    def report(self, event: t.Event) -> None:
        self.env.report(event)

    def write(self, entry: Entry) -> int:
        (index,) = self._up("write").append([entry])
        self._view.add(index, entry)
        return index

    def invalidate_in_memory(self, inv: Invalidation) -> None:
        index = self._up("invalidate").end()
        self._volatile.append((index, inv))
        self._view.add_volatile(index, inv)

    def tool(
        self, key: Key, position: int, record: Record, path: Path, tool: str, reads: tuple[Any, ...]
    ) -> Any:
        return self.env.tool(key, position, record, path, tool, reads)

    def output(self, key: Key, identity: str, path: Path, value: Any) -> None:
        self.env.output(key, identity, path, value)
