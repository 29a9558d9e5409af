"""The operator runtime over real Fluss tables against the reference model."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import fluss
import pytest

from replay_contract.conformance.runner import observe
from replay_contract.model.catalogue import builtin
from replay_contract.model.contracts import ORDERED, SEQNUM
from replay_contract.model.run import simulate
from replay_contract.model.store import Completion, Entry, OrderEntry
from replay_contract.model.topology import Record, same_key
from replay_contract.runtime import codec, fluss_backend
from replay_contract.runtime.fluss_backend import FlussBackend, FlussNamespace
from replay_contract.runtime.fluss_client import Loop, client_config
from replay_contract.runtime.fluss_store import LOG, TABLE_SCHEMA, WRITERS, FlussStore
from replay_contract.runtime.operator import RuntimeOperator
from replay_contract.runtime.store import RecordError

from .helpers import Quiet, judged
from .scenarios import AWKWARD_KEYS, awkward_keys

pytestmark = pytest.mark.fluss


@pytest.fixture(scope="module")
def backend(fluss_bootstrap: str) -> Iterator[FlussBackend]:
    backend = FlussBackend(fluss_bootstrap, timeout=30.0)
    yield backend
    backend.close()


@pytest.fixture
def namespace(backend: FlussBackend) -> Iterator[FlussNamespace]:
    namespace = backend.namespace()
    yield namespace
    namespace.drop()


def _connect(namespace: FlussNamespace) -> FlussStore:
    store = namespace.connect()
    assert isinstance(store, FlussStore)
    return store


def _entries(namespace: FlussNamespace, marker: int = 0) -> list[tuple[int, Entry]]:
    store = _connect(namespace)
    try:
        return store.read(marker)
    finally:
        store.close()


def _raw_rows(namespace: FlussNamespace, rows: list[dict[str, Any]]) -> None:
    """Append rows to the namespace's log as they are, behind the store's back."""
    loop = Loop("test")

    async def append() -> None:
        conn = await fluss.FlussConnection.create(client_config(namespace.backend.bootstrap))
        try:
            table = await conn.get_table(fluss.TablePath(namespace.database, LOG))
            writer = table.new_append().create_writer()
            for row in rows:
                writer.append(row)
            await writer.flush()
        finally:
            await conn.close()

    try:
        loop.run(append, 30.0, "appending raw rows")
    finally:
        loop.close()


def _row(generation: int, seq: int, at: int, entry: Entry) -> dict[str, Any]:
    return {
        "schema": TABLE_SCHEMA,
        "generation": generation,
        "seq": seq,
        "at": at,
        "record_key": codec.record_key(entry),
        "value": codec.encode(entry),
    }


class _Prepared:
    name = "prepared"

    def __init__(self, namespace: FlussNamespace) -> None:
        self._namespace = namespace

    def namespace(self) -> FlussNamespace:
        return self._namespace


# -- the model's decisions ----------------------------------------------------------------


@pytest.mark.parametrize("contract", [ORDERED, SEQNUM], ids=lambda c: c.name)
def test_entry_ids_equal_the_models_log_indexes_across_restores(backend, contract) -> None:  # type: ignore[no-untyped-def]
    scenario = builtin("repeated-crashes")
    impl = RuntimeOperator(backend, keep_namespaces=True)
    run = observe(impl, scenario, contract)
    assert run.error is None
    assert run.events == simulate(scenario, contract).world.events  # ids, outputs, all
    assert isinstance(impl.namespace, FlussNamespace)
    try:
        assert [e for _, e in _entries(impl.namespace)] == list(
            simulate(scenario, contract).world.store
        )
    finally:
        impl.namespace.drop()


# -- keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize("contract", [ORDERED, SEQNUM], ids=lambda c: c.name)
def test_awkward_keys_stay_apart_in_the_real_tables(backend, contract) -> None:  # type: ignore[no-untyped-def]
    scenario = awkward_keys()
    judged(backend, scenario, contract)  # includes the key-isolation property
    impl = RuntimeOperator(backend, keep_namespaces=True)
    run = observe(impl, scenario, contract)
    assert run.error is None
    namespace = impl.namespace
    assert isinstance(namespace, FlussNamespace)
    store = _connect(namespace)
    try:
        read = store.read(0)
        entries = [e for _, e in read]
        model = simulate(scenario, contract).world.store
        assert entries == list(model)
        for key in AWKWARD_KEYS:
            mine = [e for e in entries if same_key(e.key, key)]
            assert any(isinstance(e, Completion) for e in mine), f"nothing for {key!r}"
            assert {codec.business_key(e.key) for e in mine} == {codec.business_key(key)}
        # each completion under a record key of its own, none clobbered
        latest = {codec.record_key(e): (i, e) for i, e in read if isinstance(e, Completion)}
        assert len(latest) == sum(isinstance(e, Completion) for e in entries)
    finally:
        store.close()
        namespace.drop()


def test_keys_that_print_alike_read_back_apart(namespace) -> None:  # type: ignore[no-untyped-def]
    store = _connect(namespace)
    try:
        saved = [
            Completion(
                k, 0, "A", "d", ("respond",), (None,), (("notes", repr(k)),), (f"out-{k!r}",)
            )
            for k in AWKWARD_KEYS
        ]
        assert store.append(saved) == list(range(len(saved)))
        read = _connect(namespace)  # a new client: what it reads is what the server has
        try:
            got = read.read(0)
        finally:
            read.close()
        assert got == list(enumerate(saved))
        assert [type(e.key) for _, e in got] == [type(k) for k in AWKWARD_KEYS]
    finally:
        store.close()


# -- what a reader keeps ------------------------------------------------------------------


def test_rows_of_a_superseded_client_and_retried_copies_are_ignored(namespace) -> None:  # type: ignore[no-untyped-def]
    e = [OrderEntry("K", i, f"in-{i}", "d") for i in range(6)]
    first = _connect(namespace)
    assert first.append([e[0], e[1]]) == [0, 1]
    first.close()
    second = _connect(namespace)
    assert second.end() == 2  # registers
    assert second.generation == first.generation + 1
    assert second.append([e[2]]) == [2]
    # the first client's timed-out write lands now, then a retried copy of the second's
    _raw_rows(namespace, [_row(first.generation, 2, 2, e[5]), _row(second.generation, 0, 2, e[2])])
    assert second.append([e[3]]) == [3]
    second.close()
    # a write of the second client that lands before the next one registers counts
    _raw_rows(namespace, [_row(second.generation, 2, 4, e[4])])
    third = _connect(namespace)
    try:
        assert third.read(0) == [(0, e[0]), (1, e[1]), (2, e[2]), (3, e[3]), (4, e[4])]
        assert third.read(3) == [(3, e[3]), (4, e[4])]
        assert third.end() == 7  # the log's end when it registered: ids stay above offsets
    finally:
        third.close()


def test_tables_carry_their_layout_version(backend, namespace) -> None:  # type: ignore[no-untyped-def]
    loop = Loop("test")

    async def names() -> list[str]:
        conn = await fluss.FlussConnection.create(client_config(backend.bootstrap))
        try:
            return sorted(await conn.get_admin().list_tables(namespace.database))
        finally:
            await conn.close()

    try:
        assert loop.run(names, 30.0, "listing tables") == [
            f"log_v{TABLE_SCHEMA}",
            f"writers_v{TABLE_SCHEMA}",
        ]
    finally:
        loop.close()


class _OneTableNeverReady(FlussBackend):
    """A backend whose first readiness check of ``writers`` never answers, as when the
    coordinator registers a table without ever giving its bucket a leader."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap, timeout=30.0)
        self.stalled: list[Any] = []

    def _ready(self, path: fluss.TablePath) -> Callable[[], Coroutine[Any, Any, None]]:
        if path.table_name != WRITERS or self.stalled:
            return super()._ready(path)
        self.stalled.append(self._conn)

        async def never() -> None:
            await asyncio.sleep(3600)

        return never


def test_a_table_that_never_gets_ready_is_made_again_on_a_new_connection(
    fluss_bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fluss_backend, "TABLE_READY", 2.0)
    backend = _OneTableNeverReady(fluss_bootstrap)
    try:
        namespace = backend.namespace()
        try:
            # the connection that waited on the stalled table was closed, not reused:
            # pyfluss keeps a timed-out lookup queued for as long as its connection lives
            assert backend.stalled and backend.stalled[0] is not None
            assert backend._conn is not backend.stalled[0]
            store = _connect(namespace)
            try:
                entry = OrderEntry("K", 0, "A", "d")
                store.append([entry])
                assert [e for _, e in store.read(0)] == [entry]
            finally:
                store.close()
        finally:
            namespace.drop()
    finally:
        backend.close()


# -- rows that do not decode --------------------------------------------------------------


def test_an_undecodable_row_is_refused_with_its_place(namespace) -> None:  # type: ignore[no-untyped-def]
    store = _connect(namespace)
    store.append([OrderEntry("K", 0, "A", "d"), OrderEntry("K", 1, "B", "d")])
    assert store.generation == 1
    junk = {**_row(store.generation, 2, 2, OrderEntry("K", 2, "X", "d")), "value": b"{not json"}
    _raw_rows(namespace, [junk])
    store.close()
    reader = _connect(namespace)
    try:
        with pytest.raises(RecordError) as caught:
            reader.read(0)
    finally:
        reader.close()
    message = str(caught.value)
    assert f"fluss table {namespace.database}.{LOG} bucket 0 offset 2" in message
    assert "not UTF-8 JSON" in message and "\n" not in message


def test_a_row_of_another_layout_version_is_refused(namespace) -> None:  # type: ignore[no-untyped-def]
    store = _connect(namespace)
    store.append([OrderEntry("K", 0, "A", "d")])
    _raw_rows(
        namespace, [{**_row(store.generation, 1, 1, OrderEntry("K", 1, "B", "d")), "schema": 7}]
    )
    store.close()
    reader = _connect(namespace)
    try:
        with pytest.raises(RecordError, match=r"offset 1: .*table schema version 7 is not 1"):
            reader.read(0)
        assert reader.read(2) == []  # past it: nothing else there
    finally:
        reader.close()


def test_a_restore_over_an_undecodable_row_fails_instead_of_skipping_it(backend) -> None:  # type: ignore[no-untyped-def]
    scenario = builtin("single-upstream")
    impl = RuntimeOperator(backend)
    impl.open(scenario.agent, scenario.topology, ORDERED, Quiet())
    try:
        first = scenario.topology.records[0]
        impl.deliver(first)
        assert isinstance(impl.namespace, FlussNamespace)
        generation = impl._store.generation  # type: ignore[union-attr]
        _raw_rows(
            impl.namespace,
            [{**_row(generation, 99, 99, OrderEntry("K", 9, "J", "d")), "record_key": b"junk"}],
        )
        impl.crash()
        with pytest.raises(RecordError, match="record key is not the one its value implies"):
            impl.restore()
        with pytest.raises(Exception, match="down"):
            impl.deliver(Record("z", first.key, None, first.channel, 9))
    finally:
        impl.close()


# -- recovery reads from the marker -------------------------------------------------------


def test_recovery_reads_from_the_marker_not_the_table(namespace) -> None:  # type: ignore[no-untyped-def]
    pad = _connect(namespace)
    for batch in range(5):
        pad.append(
            [
                Completion(f"other-{i % 50}", i, f"p{i}", "d", ("respond",), (None,), (), ())
                for i in range(batch * 1000, batch * 1000 + 1000)
            ]
        )
    pad.close()
    scenario = builtin("reversed-interleaving")
    impl = RuntimeOperator(_Prepared(namespace), keep_namespaces=True)
    impl.open(scenario.agent, scenario.topology, ORDERED, Quiet())
    try:
        for record in scenario.topology.records:
            impl.deliver(record)
        impl.crash()
        before = impl.stats.reads
        impl.restore()
        assert impl.stats.reads - before == 4  # the four completions after the marker
        store = impl._store
        assert isinstance(store, FlussStore)
        assert store.rows_scanned == 4  # and nothing of the 5000 rows before it was fetched
    finally:
        impl.close()


# -- the benchmark ------------------------------------------------------------------------


def test_bench_on_the_real_cluster(fluss_bootstrap: str) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "replay_contract",
            "bench",
            "--backend",
            "fluss",
            "--inputs",
            "60",
            "--keys",
            "4",
            "--repeat",
            "1",
            "--replayed",
            "6,20",
            "--pad",
            "0,300",
            "--by-keys",
            "2",
            "--payloads",
            "100",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "REPLAY_CONTRACT_FLUSS": fluss_bootstrap},
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)["backends"]["fluss"]
    for row in figures["throughput"]:
        assert row["writes_per_input"] == 1.0  # the order rides with the first completion
        # pipelined: one request to the log for many inputs' entries
        assert 0 < row["round_trips_per_input"] < 1.0
    for row in figures["recovery_by_replayed"]:
        assert row["entries_read"] == row["replayed"]
        repeated = 0 if row["contract"] == ORDERED.name else row["replayed"]
        assert row["tool_calls_repeated"] == repeated
    assert [r["entries_read"] for r in figures["recovery_by_entries_before_marker"]] == [20, 20]
    assert "fluss: recovery" in result.stderr  # progress


_SHORT_LIVED = """\
import sys
from replay_contract.model.store import Completion
from replay_contract.runtime.fluss_backend import FlussBackend

backend = FlussBackend(sys.argv[1], timeout=30.0)
namespace = backend.namespace()
store = namespace.connect()
store.append([Completion("k", 0, "x0", "0" * 12, ("respond",), (None,), (), ("out",))])
assert [entry for _, entry in store.read(0)]
store.close()
namespace.drop()
backend.close()
print("done", flush=True)
"""


def test_processes_that_used_fluss_exit_cleanly(fluss_bootstrap: str) -> None:
    """pyfluss completes a call from a native thread that may still need the GIL when the
    main thread reaches shutdown; without the wait at exit (fluss_client.EXIT_GRACE) about
    one such process in 15 died of SIGABRT or SIGBUS after its work was done."""
    codes = []
    for _ in range(25):
        result = subprocess.run(
            [sys.executable, "-c", _SHORT_LIVED, fluss_bootstrap],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert "done" in result.stdout, result.stderr
        codes.append(result.returncode)
    assert codes == [0] * 25
