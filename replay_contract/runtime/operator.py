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

Pipelined writes (``pipelined=True``): the runtime goes on to the next action and the
next input while its writes are in flight (:meth:`~.store.ActionStateStore.send`), and
reports each durable write (``Save``, ``Order``, ``Invalidate``) once the store
acknowledged it, in write order: later than the step that made it, never earlier than
it is durable. Nothing is reused on the strength of a write not yet acknowledged (the
runtime waits for it first); an order entry the contract wants before a tool call, and
an invalidation (a divergence, before the tool calls that follow it), are waited for.
A checkpoint and ``end`` wait until every write sent is acknowledged: a checkpoint is
complete when it returns (the sources take it so), and its snapshot must not name a
position whose entry could still be lost. A crash with writes in flight is the
contract's in-flight case: each of them is durable or lost, and the restore reads those
that landed. Reports then come later than the reference model's step-by-step trace has
them, so the conformance targets run unpipelined (each write waited for).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping
from typing import Any

from replay_contract.conformance.interface import Capabilities, Crashed, Environment
from replay_contract.model import recovery
from replay_contract.model import trace as t
from replay_contract.model.agent import Agent, Path
from replay_contract.model.contracts import CONTRACTS, Contract
from replay_contract.model.keyed import KeyState
from replay_contract.model.store import Entry, Invalidation, OrderEntry
from replay_contract.model.topology import Key, Record, Topology

from .state import CheckpointStorage, Snapshot
from .store import ActionStateStore, Backend, Namespace, StoreError, StoreStats
from .view import KeyName, LiveView, key_name

#: Every published contract; any other :class:`Contract` value (a mutant of the tests,
#: say) runs as well: claim its name with ``RuntimeOperator(..., claims=...)``.
CLAIMED = tuple(CONTRACTS)


def _reports_write(event: t.Event) -> bool:
    """Whether ``event`` reports a durable write (made once it is acknowledged)."""
    return isinstance(event, t.Save | t.Order) or (
        isinstance(event, t.Invalidate) and event.durable
    )


class OperatorError(StoreError):
    """The runtime was driven outside its protocol (e.g. a step while it is down)."""


#: Seconds :meth:`RuntimeOperator.health` waits for the store's server to accept a
#: connection.
HEALTH_TIMEOUT = 2.0


class RuntimeOperator:
    """The keyed operator over an action state store (see the module docstring)."""

    def __init__(
        self,
        backend: Backend,
        *,
        keep_namespaces: bool = False,
        claims: tuple[str, ...] = CLAIMED,
        pipelined: bool = False,
    ) -> None:
        self.capabilities = Capabilities(
            contracts=claims, crash_points=True, non_replayable=True, rescaling=False, timeout=True
        )
        self.backend = backend
        self.keep_namespaces = keep_namespaces
        self.pipelined = pipelined
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
        #: The keys the rules were handed since the latest checkpoint (or restore): the
        #: only ones whose state may differ from the latest snapshot's.
        self._touched: set[KeyName] = set()
        self._view = LiveView()
        self._marker = 0
        self._volatile: list[tuple[int, Invalidation]] = []
        self._number = 0
        self._unreported: list[tuple[int, t.Event]] = []
        #: The write whose report comes next, and whether to wait for it (pipelined).
        self._sent: tuple[int, bool] | None = None
        #: For each crash so far, the store client then open and the writes then in
        #: flight (entry id, report never made), for tests; not state.
        self.in_flight_at_crashes: list[
            tuple[ActionStateStore | None, list[tuple[int, t.Event]]]
        ] = []

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
        number = 0

        def take() -> None:
            nonlocal number
            number = self._checkpoint()

        self._guarded(take, "checkpoint")
        return number

    def _checkpoint(self) -> int:
        store = self._up("checkpoint")
        self._settle(wait=True)  # a checkpoint covers only acknowledged writes
        needed = self._view.needed(lambda key: self._key_or_new(key).next_position)
        self._marker = store.end() if needed is None else needed
        self._view = LiveView.build(
            ((i, e) for i, e in self._view.stream if i >= self._marker), self._volatile
        )
        self._number += 1
        snapshot = Snapshot(self._number, self._marker, self._keys, self._volatile)
        self._checkpoints.save(snapshot, self._touched)
        self._touched = set()
        return self._number

    def crash(self) -> None:
        self._crash()

    def restore(self) -> None:
        self._guarded(self._restore, "restore", require_up=False)

    def wait_bound_passed(self) -> None:
        """Processing time passed the contract's wait bound (the ``timeout`` step)."""
        self._guarded(lambda: recovery.timeout(self), "timeout")

    def end(self) -> Mapping[Key, Mapping[str, Any]]:
        def finish() -> None:
            recovery.end_of_input(self)
            self._settle(wait=True)

        self._guarded(finish, "end")
        return {ks.key: dict(ks.memory) for ks in self._keys.values()}

    def close(self) -> None:
        self._lose()
        if not self.keep_namespaces:
            for namespace in self._namespaces:
                namespace.drop()
        self._namespaces.clear()

    def health(self) -> str | None:
        """``None`` while the store's server answers on its address, else one line
        saying it went away (the suite then judges a failure an infrastructure error)."""
        address = getattr(self.backend, "bootstrap", None)
        if not isinstance(address, str):
            return None
        host, _, port = address.split(",")[0].rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=HEALTH_TIMEOUT):
                return None
        except (OSError, ValueError) as exc:
            return f"the {self.backend.name} server at {address} went away ({exc})"

    @property
    def timeout(self) -> float | None:
        """The seconds the store waits for its server (``conform --timeout`` sets it)."""
        value = getattr(self.backend, "timeout", None)
        return float(value) if isinstance(value, int | float) else None

    @timeout.setter
    def timeout(self, seconds: float | None) -> None:
        if seconds is not None and hasattr(self.backend, "timeout"):
            self.backend.timeout = seconds

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

    def _crash(self) -> None:
        """A crash: the reports of the writes still in flight are never made. Each of
        those writes is durable or lost (:attr:`in_flight_at_crashes` keeps them)."""
        self.in_flight_at_crashes.append((self._store, list(self._unreported)))
        self._lose()

    def _lose(self) -> None:
        """A crash: every piece of in-memory state goes, the store client too."""
        store, self._store = self._store, None
        if store is not None:
            self._closed_stats.add(store.stats)
            store.close()
        self._keys, self._view, self._volatile = {}, LiveView(), []
        self._touched = set()
        self._marker = self._number = 0
        self._unreported = []
        self._sent = None

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
            self._crash()
            raise

    def _key(self, key: Key) -> KeyState:
        name = key_name(key)
        self._touched.add(name)  # the rules may change what they are handed
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

    def _settle(self, wait: bool = False, upto: int | None = None) -> None:
        """Report the writes the store acknowledged, in write order; with ``wait``, or
        when the write ``upto`` names is not acknowledged yet, wait for all first."""
        if not self._unreported:
            return
        store = self._up("write")
        acked = store.acknowledged()
        if wait or (upto is not None and upto >= acked):
            store.flush()
            acked = store.acknowledged()
        done = 0
        for index, _ in self._unreported:
            if index >= acked:
                break
            done += 1
        reports, self._unreported = self._unreported[:done], self._unreported[done:]
        for _, event in reports:
            self.env.report(event)

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
        if self.pipelined and self._sent is not None and _reports_write(event):
            # the report of the write just sent: made once the store acknowledged it
            (index, wait), self._sent = self._sent, None
            self._unreported.append((index, event))
            self._settle(wait=wait)
            return
        if isinstance(event, t.Reuse):
            self._settle(upto=event.completion)  # reuse only what is durable
        self.env.report(event)

    def write(self, entry: Entry) -> int:
        store = self._up("write")
        if not self.pipelined:
            (index,) = store.append([entry])
            self._view.add(index, entry)
            return index
        (index,) = store.send([entry])
        self._view.add(index, entry)
        # Durable before the tool calls that follow (waited for once its report is
        # queued): a divergence's invalidation (a crash sweep with writes in flight finds
        # the reuse of a voided completion otherwise), an order entry the contract wants
        # before the first tool call.
        wait = isinstance(entry, Invalidation) or (
            isinstance(entry, OrderEntry) and self.contract.record_order == "before-first-tool-call"
        )
        self._sent = (index, wait)
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
