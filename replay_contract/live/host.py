"""The agent operator of the live job as a host of the contract's rules.

:class:`FlinkHost` gives the rules (:mod:`replay_contract.model.reuse`,
:mod:`~replay_contract.model.recovery`, :mod:`~replay_contract.model.fallback`) what the
Kafka/Fluss runtime (:mod:`replay_contract.runtime.operator`) gives them, with Flink's
keyed state in place of the runtime's snapshots:

- a key's :class:`~replay_contract.model.keyed.KeyState` (and the invalidations a
  contract keeps in memory only) is one Flink ``ValueState`` of the key, in the JSON form
  of the runtime's checkpoints; Flink checkpoints and restores it;
- after each (re)start the operator reads the store from its start into a
  :class:`~replay_contract.runtime.view.LiveView`; a key's recorded order is restored
  (:func:`~replay_contract.model.recovery.restore_order`) when the key is first seen in
  the attempt (Flink gives a function a key's state only while it handles that key): the
  driver sends every key a ``touch`` right after the restart, so that happens where the
  model restores it;
- durable writes go to the real store before they are reported; the agent operator's
  subtasks share one store log (as the runtime's single operator does) and take turns.

Every event is collected for the step and handed back to the caller, which appends them
to the events file outside the job (a tool call with its input and the values it read,
so that the driver makes the same call through the suite's environment).
"""

from __future__ import annotations

import json
from typing import Any

from replay_contract.model import recovery
from replay_contract.model import trace as t
from replay_contract.model.agent import Agent, Path, call_tool
from replay_contract.model.contracts import Contract, contract, contract_from_json
from replay_contract.model.keyed import KeyState
from replay_contract.model.scenario import from_json
from replay_contract.model.store import Entry, Invalidation
from replay_contract.model.topology import Key, Record
from replay_contract.runtime.state import (
    _invalidation,
    _invalidation_json,
    _key_state,
    _key_state_json,
    record_json,
    record_of,
)
from replay_contract.runtime.store import ActionStateStore
from replay_contract.runtime.view import KeyName, LiveView, key_name


def connect(config: dict[str, Any]) -> ActionStateStore:
    """A client of the run's store (the namespace the driver created)."""
    if config["store"] == "kafka":
        from replay_contract.runtime.kafka_store import KafkaStore

        return KafkaStore(config["bootstrap"], config["namespace"], 0, timeout=30.0)
    from replay_contract.runtime.fluss_store import FlussStore

    return FlussStore(config["bootstrap"], config["namespace"], timeout=30.0)


def contract_of(data: Any) -> Contract:
    return contract(data) if isinstance(data, str) else contract_from_json(data)


class FlinkHost:
    """One subtask's host of the rules (see the module docstring). ``state`` is the
    Flink ``ValueState`` of the key being handled."""

    def __init__(self, config: dict[str, Any], state: Any, attempt: int) -> None:
        scenario = from_json(config["scenario"], "live scenario")
        self._agent = scenario.agent
        self._contract = contract_of(config["contract"])
        self._state = state
        self.attempt = attempt
        self._config = config
        reader = connect(config)
        try:
            self._view = LiveView.build(reader.read(0), [])
        finally:
            reader.close()
        self._store: ActionStateStore | None = None
        self._touched: set[KeyName] = set()
        self._current: KeyState | None = None
        self._volatile: list[tuple[int, Invalidation]] = []
        self._events: list[dict[str, Any]] = []

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def _client(self) -> ActionStateStore:
        """A store client for this step. The subtasks of the agent operator share the
        store's log and take turns (the gates serialise the steps); a client learns where
        the log ends when it is made, so each step that writes makes its own."""
        if self._store is None:
            self._store = connect(self._config)
        return self._store

    # -- steps --------------------------------------------------------------------------

    def deliver(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        record = record_of(data)
        self._begin(record.key)
        self._events.append(t.event_to_json(t.Deliver.of(record)))
        recovery.arrive(self, record)
        return self._finish()

    def touch(self, key: Key) -> list[dict[str, Any]]:
        """After a restore: the key's recorded order restored (what the model does for
        every key at the restore itself)."""
        self._begin(key)
        return self._finish()

    def end(self, key: Key) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        self._begin(key)
        if self._current is None:
            return self._finish(), None
        recovery.end_of_input(self)
        memory = {"key": key, "memory": dict(self._current.memory)}
        return self._finish(), memory

    def _begin(self, key: Key) -> None:
        self.close()
        raw = self._state.value()
        self._events = []
        self._current, self._volatile = None, []
        if raw:
            data = json.loads(raw)
            self._current = _key_state(data["state"])
            self._volatile = [(i, _invalidation(d)) for i, d in data["volatile"]]
        name = key_name(key)
        if name in self._touched:
            return
        self._touched.add(name)
        for index, inv in self._volatile:
            self._view.add_volatile(index, inv)
        in_store = any(key_name(k) == name for k in self._view.keys())  # noqa: SIM118 (a view)
        waiting = self._current is not None and bool(self._current.waiting)
        if self.attempt > 0 and self._contract.wait and (in_store or waiting):
            recovery.restore_order(self, [key])

    def _finish(self) -> list[dict[str, Any]]:
        if self._current is not None:
            data = {
                "state": _key_state_json(self._current),
                "volatile": [[i, _invalidation_json(inv)] for i, inv in self._volatile],
            }
            self._state.update(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
        events, self._events = self._events, []
        return events

    # -- the host of the contract's rules (replay_contract.model.keyed.Host) -------------

    @property
    def contract(self) -> Contract:
        return self._contract

    @property
    def agent(self) -> Agent:
        return self._agent

    def state(self, key: Key) -> KeyState:
        if self._current is None:
            self._current = KeyState(key)
        return self._current

    def known_keys(self) -> list[Key]:
        return [] if self._current is None else [self._current.key]

    def view(self) -> LiveView:
        return self._view

    def report(self, event: t.Event) -> None:
        self._events.append(t.event_to_json(event))

    def write(self, entry: Entry) -> int:
        (index,) = self._client().append([entry])
        self._view.add(index, entry)
        return index

    def invalidate_in_memory(self, inv: Invalidation) -> None:
        index = self._client().end()
        self._volatile.append((index, inv))
        self._view.add_volatile(index, inv)

    def tool(
        self, key: Key, position: int, record: Record, path: Path, tool: str, reads: tuple[Any, ...]
    ) -> Any:
        path, reads = tuple(path), tuple(reads)
        result = call_tool(tool, record, path, reads)
        event = t.event_to_json(
            t.Tool(key, position, record.identity, record.digest, path, tool, result)
        )
        # what the driver needs to make the same call through the suite's environment
        event["call"] = {"record": record_json(record), "reads": list(reads)}
        self._events.append(event)
        return result

    def output(self, key: Key, identity: str, path: Path, value: Any) -> None:
        self._events.append(t.event_to_json(t.Output(key, identity, tuple(path), value)))
