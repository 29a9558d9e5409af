"""The action state store in Fluss tables (pyfluss).

One namespace is one Fluss database (``rc_<hex>``) of two tables; a run gets a database
of its own, so runs and tests never see each other's rows. Every table name carries the
version of its layout (``_v1``) and every row a ``schema`` column.

``log_v1`` (log table, one bucket)
    every entry (completion, order entry, invalidation) in append order: the form that
    survives a crash and is read back in order. One bucket, because Fluss orders rows
    only within a bucket. A row holds the entry's record key and value (:mod:`.codec`),
    the client entry id ``(generation, seq)`` of the client that wrote it, and ``at``,
    the entry id that client gave it.
``writers_v1`` (primary-key table, key ``(lineage, generation)``)
    one row per store client: its generation (1, 2, ...) and ``start``, the end of the log
    when it registered.

Entry ids are assigned by the client, not read back from the server: a client registers
with ``start`` = the log end it sees, then numbers its entries ``start``, ``start + 1``,
... in append order. Fluss returns no offsets on write, and asking for them would cost a
round trip per append; the ids are instead chosen so that every entry's id is at most its
offset in ``log_v1`` and ids grow along the log, so ``read(marker)`` starts the scan at
offset ``marker`` and keeps the rows whose ``at`` is at least ``marker``.

Writes whose outcome is unknown
    A write that times out may still land later (pyfluss keeps retrying, and the server
    applies it when it comes back), and the flush of a writer that saw the server go may
    never return. Within one client, an attempt that takes longer than :data:`ATTEMPT`
    is abandoned and the same rows, with the same client entry ids, go out again on a new
    connection until the client's bound; a reader keeps the first row of each id. Once a
    client gave up (and the runtime restored with a new client), its rows must not appear
    behind the new client's back: a row of generation ``g`` at offset ``o`` counts only
    if no later generation registered with ``start <= o``. A row that landed before the
    new client registered is read by it (the save happened, then the crash); one that
    lands after is ignored by every reader. Registration reads all generations, so
    connecting costs two round trips; clients of one namespace never run concurrently.

A write counts as done only when each of its rows' handles says the server acknowledged
it: a writer's ``flush`` also returns normally after a batch that failed
(:func:`.fluss_client.acknowledged`).

Pipelined writes
    ``send`` numbers its entries and queues their rows in the client; the queued rows
    are handed to the log's writer together, as one Arrow batch, once :data:`BATCH` of
    them wait or the first waited :data:`LINGER` seconds (checked at every ``send`` and
    ``acknowledged``), and on ``flush``, and the runtime goes on while they are in
    flight. An entry is acknowledged once its log row is. A write that fails, or is not
    acknowledged within :data:`ATTEMPT`, is re-sent as above (same rows, same client
    entry ids) until the client's bound. A client closed (crashed) with rows queued or
    in flight: they landed or not, and a row that lands after a later client registered
    is ignored by every reader.

No point-lookup index
    The store keeps no table of completions by key: the runtime never reads its own
    writes back. It knows every entry it wrote and which are acknowledged, and indexes
    them per key in memory (:class:`~.view.LiveView`); the store is read only when a
    client opens after a restore, and then one scan of the log from the recovery marker
    rebuilds that index. An index table written next to the log cost a primary-key
    upsert per completion (tens of milliseconds a batch, against a few for the log) and
    held the log's throughput to a third of the runtime's own.

A row that cannot be decoded stops the read with :class:`~.store.RecordError` naming the
table, bucket and offset.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import time
import uuid
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import fluss
import pyarrow as pa
from attrs import define

from replay_contract.model.store import Entry

from . import codec
from .fluss_client import (
    ATTEMPT,
    CLOSE_TIMEOUT,
    RECONNECT_PAUSE,
    RETRY_PAUSE,
    Loop,
    T,
    acknowledged,
    client_config,
)
from .store import RecordError, StoreError, StoreStats, StoreUnavailable

#: Version of the table layout (in the table names and in every row's ``schema``).
TABLE_SCHEMA = 1
LOG = f"log_v{TABLE_SCHEMA}"
WRITERS = f"writers_v{TABLE_SCHEMA}"
LINEAGE = "log"
BUCKET = 0
POLL_MS = 100
#: Rows sent are written together once this many wait, or the first waited LINGER s.
BATCH = 512
LINGER = 0.02
#: How often, at most, the client looks whether writes in flight were acknowledged.
POLL_EVERY = 0.005

LOG_COLUMNS = pa.schema(
    [
        pa.field("schema", pa.int32()),
        pa.field("generation", pa.int64()),
        pa.field("seq", pa.int64()),
        pa.field("at", pa.int64()),
        pa.field("record_key", pa.binary()),
        pa.field("value", pa.binary()),
    ]
)
WRITER_COLUMNS = pa.schema(
    [
        pa.field("lineage", pa.string(), nullable=False),
        pa.field("generation", pa.int64(), nullable=False),
        pa.field("schema", pa.int32()),
        pa.field("start", pa.int64()),
        pa.field("client", pa.string()),
    ]
)


def tables() -> dict[str, fluss.TableDescriptor]:
    """The descriptors of a namespace's tables, by name."""
    return {
        LOG: fluss.TableDescriptor(fluss.Schema(LOG_COLUMNS), bucket_count=1),
        WRITERS: fluss.TableDescriptor(
            fluss.Schema(WRITER_COLUMNS, primary_keys=["lineage", "generation"]),
            bucket_count=1,
            bucket_keys=["lineage"],
        ),
    }


@define
class _Rows:
    """Consecutive rows of one client: entry ids from ``at`` on, client entry ids
    ``(generation, seq)``, ``(generation, seq + 1)``, ..., kept by column."""

    generation: int
    seq: int
    at: int
    keys: list[bytes]
    values: list[bytes]

    @property
    def end(self) -> int:
        """The entry id after the last row."""
        return self.at + len(self.keys)

    def batch(self) -> pa.RecordBatch:
        n = len(self.keys)
        return pa.RecordBatch.from_arrays(
            [
                pa.array([TABLE_SCHEMA] * n, pa.int32()),
                pa.array([self.generation] * n, pa.int64()),
                pa.array(range(self.seq, self.seq + n), pa.int64()),
                pa.array(range(self.at, self.at + n), pa.int64()),
                pa.array(self.keys, pa.binary()),
                pa.array(self.values, pa.binary()),
            ],
            schema=LOG_COLUMNS,
        )

    @staticmethod
    def joined(parts: list[_Rows]) -> _Rows:
        """Consecutive ``parts`` as one."""
        first = parts[0]
        return _Rows(
            first.generation,
            first.seq,
            first.at,
            [k for p in parts for k in p.keys],
            [v for p in parts for v in p.values],
        )


@define
class _InFlight:
    """Rows handed to the log's writer; acknowledged up to their end once ``task`` is
    done."""

    rows: _Rows
    task: asyncio.Task[None]


@define
class _Tables:
    """What a store client opened on its connection."""

    conn: fluss.FlussConnection
    log: fluss.FlussTable
    writers: fluss.FlussTable
    log_writer: fluss.AppendWriter

    async def close(self) -> None:
        await self.conn.close()


class FlussStore:
    """A client of one namespace's tables (see the module docstring)."""

    def __init__(self, bootstrap: str, database: str, *, timeout: float = 30.0) -> None:
        self.bootstrap, self.database, self.timeout = bootstrap, database, timeout
        self.stats = StoreStats()
        self.where = f"fluss at {bootstrap}"
        self._loop = Loop(self.where)
        self._tables: _Tables | None = None
        self._stale = False
        self._registered = False
        self._known: dict[int, int] = {}
        #: Rows of the log this client fetched, counted or not (what a read cost).
        self.rows_scanned = 0
        self.generation = 0
        self._seq = 0
        self._end = 0
        self._acked = 0
        #: Rows sent but not yet written, and since when the first waits.
        self._queued: _Rows | None = None
        self._queued_since = 0.0
        self._in_flight: list[_InFlight] = []
        self._polled = 0.0
        self._broken: str | None = None
        self._closed = False
        atexit.register(self.close)  # closed before the interpreter exits: see fluss_client

    def _path(self, table: str) -> fluss.TablePath:
        return fluss.TablePath(self.database, table)

    def _name(self, table: str) -> str:
        return f"{self.database}.{table}"

    # -- connecting and registering -------------------------------------------------------

    def _check(self) -> None:
        if self._closed:
            raise StoreError(f"fluss table {self._name(LOG)}: the client is closed")
        if self._broken is not None:
            raise StoreUnavailable(
                f"{self.where}: the client failed earlier ({self._broken}); restore the runtime"
            )
        if not self._registered:
            self._guard(self._register)

    def _guard(self, step: Callable[[], T]) -> T:
        """Run ``step``; a failure leaves the client broken (the runtime restores)."""
        try:
            return step()
        except StoreUnavailable as exc:
            self._broken = str(exc).removeprefix(f"{self.where}: ")
            raise

    def _retrying(
        self, make: Callable[[], Coroutine[Any, Any, T]], deadline: float, what: str
    ) -> T:
        """``make()`` in bounded attempts until ``deadline``, each retry on a new
        connection: one that saw the server go may hang or keep answering "table not
        found" long after the server is back. Writes may run twice too: a retry re-sends
        the same client entry ids, which readers dedupe."""

        def again(timed_out: bool) -> None:
            self._stale = True
            if not timed_out:
                time.sleep(RECONNECT_PAUSE - RETRY_PAUSE)

        return self._loop.retrying(make, deadline, what, self.timeout, ATTEMPT, again)

    async def _open(self) -> _Tables:
        """The connection, tables and writers; opened anew after a failed attempt."""
        if self._stale and self._tables is not None:
            old, self._tables = self._tables, None
            with contextlib.suppress(Exception):
                await asyncio.wait_for(old.close(), CLOSE_TIMEOUT)
        self._stale = False
        if self._tables is None:
            conn = await fluss.FlussConnection.create(client_config(self.bootstrap))
            log = await conn.get_table(self._path(LOG))
            writers = await conn.get_table(self._path(WRITERS))
            self._tables = _Tables(conn, log, writers, log.new_append().create_writer())
        return self._tables

    def _register(self) -> None:
        """Connect, then register as the next generation, starting at the log's end."""
        deadline = time.monotonic() + self.timeout

        self._retrying(self._open, deadline, f"connecting to database {self.database}")
        generations, start = self._retrying(
            self._generations_and_end,
            deadline,
            f"reading tables {self._name(WRITERS)} and {self._name(LOG)}",
        )
        self.stats.round_trips += 2
        generation = max(generations, default=0) + 1
        row = {
            "lineage": LINEAGE,
            "generation": generation,
            "schema": TABLE_SCHEMA,
            "start": start,
            "client": uuid.uuid4().hex,
        }

        async def upsert() -> None:
            writer = (await self._open()).writers.new_upsert().create_writer()
            await acknowledged([writer.upsert(row)], writer)

        self._retrying(upsert, deadline, f"registering in table {self._name(WRITERS)}")
        self.stats.round_trips += 1
        self.generation, self._end, self._seq, self._acked = generation, start, 0, start
        self._registered = True
        # No other client of this namespace registers while this one runs.
        self._known = {**generations, generation: start}

    async def _generations_and_end(self) -> tuple[dict[int, int], int]:
        """Every registered generation with its ``start``, and the end of the log."""
        tables = await self._open()
        lookuper = tables.writers.new_lookup().lookup_by(["lineage"]).create_lookuper()
        rows, offsets = await asyncio.gather(
            lookuper.lookup({"lineage": LINEAGE}),
            tables.conn.get_admin().list_offsets(
                self._path(LOG), [BUCKET], fluss.OffsetSpec.latest()
            ),
        )
        found: dict[int, int] = {}
        for row in rows:
            generation, start = row.get("generation"), row.get("start")
            if (
                row.get("schema") != TABLE_SCHEMA
                or not isinstance(generation, int)
                or not isinstance(start, int)
            ):
                raise RecordError(
                    f"fluss table {self._name(WRITERS)} bucket {BUCKET}: "
                    f"cannot decode the row {row!r:.80}"
                )
            found[generation] = start
        return found, int(offsets[BUCKET])

    def _log_end(self, deadline: float) -> int:
        async def latest() -> dict[int, int]:
            return (
                await (await self._open())
                .conn.get_admin()
                .list_offsets(self._path(LOG), [BUCKET], fluss.OffsetSpec.latest())
            )

        offsets = self._retrying(latest, deadline, f"asking for the end of table {self._name(LOG)}")
        self.stats.round_trips += 1
        return int(offsets[BUCKET])

    # -- the ActionStateStore protocol ----------------------------------------------------

    def append(self, entries: Sequence[Entry]) -> list[int]:
        ids = self.send(entries)
        self.flush()
        return ids

    def send(self, entries: Sequence[Entry]) -> list[int]:
        self._check()
        if not entries:
            return []
        ids = list(range(self._end, self._end + len(entries)))
        queued = self._queued
        if queued is None:
            queued = self._queued = _Rows(self.generation, self._seq, self._end, [], [])
            self._queued_since = time.monotonic()
        queued.keys.extend(codec.record_key(e) for e in entries)
        queued.values.extend(codec.encode(e) for e in entries)
        self.stats.batches += 1
        self.stats.writes += len(entries)
        self._end += len(entries)
        self._seq += len(entries)
        self._flush_if_due()
        return ids

    def _flush_if_due(self) -> None:
        """Start writing the queued rows when enough wait, or the first waited long
        enough; note the writes in flight that completed."""
        if self._queued is not None and (
            len(self._queued.keys) >= BATCH or time.monotonic() - self._queued_since >= LINGER
        ):
            self._guard(self._start_queued)
        if self._in_flight and time.monotonic() - self._polled >= POLL_EVERY:
            self._loop.poll()  # costs a switch to pyfluss's threads: not on every call
            self._polled = time.monotonic()
            self._guard(self._take_done)

    def acknowledged(self) -> int:
        self._check()
        self._flush_if_due()
        return self._acked

    def flush(self) -> None:
        self._check()
        if self._queued is not None:
            self._guard(self._start_queued)
        if self._in_flight:
            self._guard(self._wait_in_flight)

    def _start_queued(self) -> None:
        """Hand the queued rows to the log's writer as one Arrow batch, without waiting
        for the server: a task waits for their acknowledgement."""
        rows, self._queued = self._queued, None
        assert rows is not None
        if self._tables is None:
            self._retrying(self._open, time.monotonic() + self.timeout, "connecting")
        tables = self._tables
        assert tables is not None
        logged = [tables.log_writer.write_arrow_batch(rows.batch())]

        async def landed() -> None:
            await acknowledged(logged, tables.log_writer)

        task = self._loop.start(landed)
        self._in_flight.append(_InFlight(rows, task))
        self.stats.round_trips += 1

    def _take_done(self) -> None:
        """Acknowledge the writes in flight that landed, in order; a failed one is
        written again (with every one after it) within the client's bound."""
        while self._in_flight and self._in_flight[0].task.done():
            group = self._in_flight[0]
            if group.task.cancelled() or group.task.exception() is not None:
                self._rewrite_in_flight()
                return
            self._in_flight.pop(0)
            self._acked = group.rows.end

    def _wait_in_flight(self) -> None:
        tasks = [g.task for g in self._in_flight]

        async def every() -> None:
            await asyncio.wait(tasks)

        with contextlib.suppress(StoreUnavailable):  # those unfinished are written again
            self._loop.run(every, ATTEMPT, "waiting for writes in flight")
        if all(t.done() for t in tasks):
            self._take_done()
        if self._in_flight:
            self._rewrite_in_flight()

    def _rewrite_in_flight(self) -> None:
        """Write every row in flight again, on a new connection, within the client's
        bound: the same client entry ids, which readers dedupe."""
        groups, self._in_flight = self._in_flight, []
        for g in groups:
            g.task.cancel()
        rows = _Rows.joined([g.rows for g in groups])
        self._stale = True

        async def write() -> None:
            tables = await self._open()  # anew after an attempt that failed
            handles = [tables.log_writer.write_arrow_batch(rows.batch())]
            await acknowledged(handles, tables.log_writer)

        self._retrying(
            write,
            time.monotonic() + self.timeout,
            f"writing {len(rows.keys)} row(s) to table {self._name(LOG)}",
        )
        self.stats.round_trips += 1
        self._acked = rows.end

    def read(self, marker: int) -> list[tuple[int, Entry]]:
        self._check()
        return self._guard(lambda: self._read(marker))

    def _read(self, marker: int) -> list[tuple[int, Entry]]:
        deadline = time.monotonic() + self.timeout
        generations = self._known
        high = self._log_end(deadline)
        if marker >= high:
            return []
        cutoff = _cutoffs(generations)
        rows = self._scan(max(marker, 0), high, deadline)
        self.rows_scanned += len(rows)
        found: list[tuple[int, Entry]] = []
        seen: set[tuple[int, int]] = set()
        for offset, row in rows:
            generation, seq, at = self._ids(offset, row, generations)
            if offset >= cutoff.get(generation, high) or (generation, seq) in seen or at < marker:
                continue  # landed after a later client registered; a retried copy; older
            seen.add((generation, seq))
            if found and at <= found[-1][0]:
                raise self._record_error(offset, f"entry id {at} does not follow {found[-1][0]}")
            found.append((at, self._entry(offset, row)))
        self.stats.reads += len(found)
        return found

    def _scan(self, start: int, high: int, deadline: float) -> list[tuple[int, dict[str, Any]]]:
        """Every row of the log from offset ``start`` to ``high`` (exclusive)."""

        async def scan() -> list[tuple[int, dict[str, Any]]]:
            scanner = await (await self._open()).log.new_scan().create_log_scanner()
            scanner.subscribe(BUCKET, start)
            got: list[tuple[int, dict[str, Any]]] = []
            while not got or got[-1][0] + 1 < high:
                batch = await scanner.poll(POLL_MS)
                if batch.count():
                    self.stats.round_trips += 1
                got.extend((r.offset, r.row) for r in batch if r.offset < high)
            return got

        return self._retrying(
            scan,
            deadline,
            f"reading table {self._name(LOG)} bucket {BUCKET} from offset {start} to {high}",
        )

    def _ids(
        self, offset: int, row: dict[str, Any], generations: dict[int, int]
    ) -> tuple[int, int, int]:
        if row.get("schema") != TABLE_SCHEMA:
            raise self._record_error(
                offset, f"table schema version {row.get('schema')!r} is not {TABLE_SCHEMA}"
            )
        generation, seq, at = (row.get(name) for name in ("generation", "seq", "at"))
        if not (isinstance(generation, int) and isinstance(seq, int) and isinstance(at, int)):
            raise self._record_error(offset, "generation, seq or at is missing")
        if generation not in generations:
            raise self._record_error(offset, f"generation {generation} never registered")
        return generation, seq, at

    def _entry(self, offset: int, row: dict[str, Any]) -> Entry:
        key, value = row.get("record_key"), row.get("value")
        try:
            if not isinstance(key, bytes) or not isinstance(value, bytes):
                raise codec.DecodeError("record_key or value is not bytes")
            return codec.decode(key, value)
        except codec.DecodeError as exc:
            raise self._record_error(offset, str(exc)) from None

    def _record_error(self, offset: int, why: str) -> RecordError:
        return RecordError(
            f"fluss table {self._name(LOG)} bucket {BUCKET} offset {offset}: "
            f"cannot decode the row: {why}"
        )

    def end(self) -> int:
        self._check()
        return self._end

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        # rows in flight land or not; those that land after a later client registered
        # are ignored by every reader (see the module docstring)
        for group in self._in_flight:
            group.task.cancel()
        self._in_flight, self._queued = [], None
        tables, self._tables = self._tables, None
        self._loop.close(tables.close if tables is not None else None)


def _cutoffs(generations: dict[int, int]) -> dict[int, int]:
    """For each generation, the first offset at which its rows no longer count: the
    smallest ``start`` of any later generation."""
    cutoff: dict[int, int] = {}
    later: int | None = None
    for generation in sorted(generations, reverse=True):
        if later is not None:
            cutoff[generation] = later
        start = generations[generation]
        later = start if later is None else min(later, start)
    return cutoff
