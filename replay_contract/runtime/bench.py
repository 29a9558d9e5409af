"""Measurements of the operator runtime over a store backend.

Three measurements, each on fresh namespaces of the same backend (the same broker):

:func:`throughput`
    ``inputs`` inputs spread over ``keys`` keys and two channels, each with a payload of
    ``payload`` more characters, a checkpoint every :data:`CHECKPOINT_EVERY` inputs, no
    failure, writes pipelined (the runtime goes on while they are in flight; each
    checkpoint waits for them): inputs per second, CPU time per input (of the whole
    process, the store client's threads included: far less sensitive to other load on
    the machine than the wall clock), durable writes and round trips per input, for one
    contract. On the memory store it is the ceiling of the runtime itself.
:func:`recovery`
    one key gets ``replayed`` inputs from two channels after a checkpoint; the runtime
    crashes, restores, and the channels deliver those inputs again in the other
    interleaving. Reported: the restore (read from the marker, rebuild) and the replay,
    the entries read, and the tool calls repeated (``ordered`` reuses every completion,
    ``seqnum`` runs every one again).
``pad`` (of :func:`recovery`)
    the namespace first receives that many entries of other keys and of older inputs of
    the same key, before the checkpoint's marker: the restore must not read them.

The agent is the one of the catalogue's reversed interleaving: one action that reads and
writes the key's notes, calls one tool and emits one output. Tools cost nothing here, so
the figures are those of the runtime and its store.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from attrs import frozen

from replay_contract.model import trace as t
from replay_contract.model.agent import Action, Agent, Path, call_tool
from replay_contract.model.contracts import Contract
from replay_contract.model.store import Completion, Entry
from replay_contract.model.topology import Channel, Key, Record, Topology

from .operator import RuntimeOperator
from .store import Backend, Namespace

AGENT = Agent(
    (Action("respond", reads=("notes",), writes=("notes",), tools=("llm",), output=True),)
)
CHECKPOINT_EVERY = 100
PAD_BATCH = 2000
CHANNELS = ("upstream-1", "upstream-2")

Progress = Callable[[str], None]


class BenchEnvironment:
    """A suite environment that only counts: tools run, outputs go nowhere."""

    def __init__(self) -> None:
        self.tool_calls = 0
        self.reused = 0
        self.outputs = 0

    def tool(
        self, key: Key, position: int, record: Record, path: Path, tool: str, reads: tuple[Any, ...]
    ) -> str:
        self.tool_calls += 1
        return call_tool(tool, record, path, reads)

    def output(self, key: Key, identity: str, path: Path, value: str) -> None:
        self.outputs += 1

    def report(self, event: t.Event) -> None:
        if isinstance(event, t.Reuse):
            self.reused += 1


def workload(inputs: int, keys: int, payload: int = 0) -> list[Record]:
    """``inputs`` records over ``keys`` keys, alternating between two channels; with
    ``payload``, each carries that many more characters (which its completion's saved
    output and notes do not repeat: the record's digest covers them)."""
    offsets = [0, 0]
    records = []
    pad = "p" * payload
    for i in range(inputs):
        c = i % 2
        body: dict[str, Any] = {"n": i, "pad": pad} if payload else {"n": i}
        records.append(Record(f"in-{i}", f"key-{i % keys}", body, CHANNELS[c], offsets[c]))
        offsets[c] += 1
    return records


def _topology(records: list[Record]) -> Topology:
    return Topology(
        tuple(Channel(name, tuple(r for r in records if r.channel == name)) for name in CHANNELS)
    )


@frozen
class Throughput:
    contract: str
    inputs: int
    keys: int
    seconds: float
    writes: int
    round_trips: int
    payload: int = 0
    cpu_seconds: float = 0.0

    @property
    def per_second(self) -> float:
        return self.inputs / self.seconds if self.seconds > 0 else float("inf")

    @property
    def cpu_us_per_input(self) -> float:
        return self.cpu_seconds / self.inputs * 1e6

    def to_json(self) -> dict[str, Any]:
        return {
            "contract": self.contract,
            "inputs": self.inputs,
            "keys": self.keys,
            "payload": self.payload,
            "seconds": round(self.seconds, 4),
            "inputs_per_s": round(self.per_second, 1),
            "cpu_us_per_input": round(self.cpu_us_per_input, 2),
            "writes_per_input": round(self.writes / self.inputs, 3),
            "round_trips_per_input": round(self.round_trips / self.inputs, 3),
        }


def throughput(
    backend: Backend, contract: Contract, inputs: int, keys: int, payload: int = 0
) -> Throughput:
    """One run without failure, its writes pipelined; the clock stops once every write
    is acknowledged (the last checkpoint waits for them)."""
    records = workload(inputs, keys, payload)
    impl = RuntimeOperator(backend, pipelined=True)
    impl.open(AGENT, _topology(records), contract, BenchEnvironment())
    try:
        start_stats = impl.stats
        started, cpu_started = time.perf_counter(), time.process_time()
        for i, record in enumerate(records, 1):
            impl.deliver(record)
            if i % CHECKPOINT_EVERY == 0:
                impl.checkpoint()
        if len(records) % CHECKPOINT_EVERY:
            impl.checkpoint()  # every write acknowledged before the clock stops
        seconds = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu_started
        stats = impl.stats
    finally:
        impl.close()
    return Throughput(
        contract.name,
        inputs,
        keys,
        seconds,
        stats.writes - start_stats.writes,
        stats.round_trips - start_stats.round_trips,
        payload,
        cpu_seconds,
    )


@frozen
class Recovery:
    contract: str
    replayed: int
    pad: int
    restore_seconds: float
    replay_seconds: float
    entries_read: int
    tool_calls: int
    reused: int

    def to_json(self) -> dict[str, Any]:
        return {
            "contract": self.contract,
            "replayed": self.replayed,
            "entries_before_marker": self.pad,
            "restore_ms": round(self.restore_seconds * 1000, 2),
            "replay_ms": round(self.replay_seconds * 1000, 2),
            "recovery_ms": round((self.restore_seconds + self.replay_seconds) * 1000, 2),
            "entries_read": self.entries_read,
            "tool_calls_repeated": self.tool_calls,
            "reused": self.reused,
        }


class _Prepared:
    """A backend that hands out one namespace prepared beforehand."""

    name = "prepared"

    def __init__(self, namespace: Namespace) -> None:
        self._namespace = namespace

    def namespace(self) -> Namespace:
        return self._namespace

    def close(self) -> None:
        pass  # the namespace belongs to the caller


def pad_namespace(namespace: Namespace, entries: int, key: Key = "hot") -> None:
    """Fill ``namespace`` with ``entries`` completions: nine in ten of other keys, one in
    ten of older inputs of ``key``."""
    store = namespace.connect()
    try:
        for start in range(0, entries, PAD_BATCH):
            batch: list[Entry] = []
            for i in range(start, min(entries, start + PAD_BATCH)):
                owner: Key = key if i % 10 == 0 else f"other-{i % 97}"
                batch.append(
                    Completion(
                        owner,
                        i,
                        f"old-{i}",
                        "0" * 12,
                        ("respond",),
                        (None,),
                        (("notes", f"old-{i}"),),
                        (f"old-{i}",),
                    )
                )
            store.append(batch)
    finally:
        store.close()


def recovery(backend: Backend, contract: Contract, replayed: int, pad: int = 0) -> Recovery:
    namespace = backend.namespace()
    try:
        pad_namespace(namespace, pad)
        records = [
            Record(f"x{i}", "hot", {"n": i}, CHANNELS[i % 2], i // 2) for i in range(replayed)
        ]
        again = [records[i ^ 1] if i ^ 1 < replayed else records[i] for i in range(replayed)]
        env = BenchEnvironment()
        impl = RuntimeOperator(_Prepared(namespace), keep_namespaces=True)
        impl.open(AGENT, _topology(records), contract, env)
        try:
            impl.checkpoint()
            for record in records:
                impl.deliver(record)
            impl.crash()
            reads_before, calls_before, reused_before = impl.stats.reads, env.tool_calls, env.reused
            started = time.perf_counter()
            impl.restore()
            restored = time.perf_counter()
            for record in again:
                impl.deliver(record)
            finished = time.perf_counter()
            entries_read = impl.stats.reads - reads_before
        finally:
            impl.close()
    finally:
        namespace.drop()
    return Recovery(
        contract.name,
        replayed,
        pad,
        restored - started,
        finished - restored,
        entries_read,
        env.tool_calls - calls_before,
        env.reused - reused_before,
    )
