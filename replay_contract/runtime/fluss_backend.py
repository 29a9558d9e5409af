"""Fluss databases as store namespaces: one database of store tables per run.

:class:`FlussBackend` creates a database and its tables (:func:`.fluss_store.tables`) for
each :meth:`~FlussBackend.namespace`, and drops it again; :class:`FlussNamespace` opens
:class:`~.fluss_store.FlussStore` clients of its database.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import time
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

import fluss

from .fluss_client import ATTEMPT, CLOSE_TIMEOUT, RETRY_PAUSE, Loop, client_config
from .fluss_store import BUCKET, LINEAGE, LOG, WRITERS, FlussStore, tables
from .store import ActionStateStore, StoreError, StoreUnavailable

#: How long a new table may take to get a leader, and how often it is created at most.
TABLE_READY = 10.0
TABLE_TRIES = 3


class FlussNamespace:
    """One database of store tables."""

    def __init__(self, backend: FlussBackend, database: str) -> None:
        self.backend, self.database = backend, database
        self.name = database

    def connect(self) -> ActionStateStore:
        return FlussStore(self.backend.bootstrap, self.database, timeout=self.backend.timeout)

    def drop(self) -> None:
        self.backend.drop_database(self.database)


class FlussBackend:
    """Store databases on one cluster; ``namespace()`` creates a new database per run."""

    name = "fluss"

    def __init__(self, bootstrap: str, *, timeout: float = 30.0, prefix: str = "rc") -> None:
        self.bootstrap, self.timeout, self.prefix = bootstrap, timeout, prefix
        self.where = f"fluss at {bootstrap}"
        self._loop = Loop(self.where)
        self._conn: fluss.FlussConnection | None = None
        atexit.register(self.close)  # closed before the interpreter exits: see fluss_client

    def _admin(self) -> Callable[[], Coroutine[Any, Any, fluss.FlussAdmin]]:
        async def admin() -> fluss.FlussAdmin:
            if self._conn is None:
                self._conn = await fluss.FlussConnection.create(client_config(self.bootstrap))
            return self._conn.get_admin()

        return admin

    def namespace(self) -> FlussNamespace:
        database = f"{self.prefix}_{uuid.uuid4().hex[:12]}"
        self.create_database(database)
        return FlussNamespace(self, database)

    def create_database(self, database: str) -> None:
        """Create ``database`` and its tables, one table at a time, each ready (its bucket
        has a leader) before the next. The coordinator of Fluss 0.9.1 now and then
        registers a new table without ever assigning its bucket a leader (about one table
        in 1,000 to 2,000 while databases are created and dropped in a loop); such a table
        is dropped and created again, on a new connection (see :meth:`_reset`)."""
        admin = self._admin()
        deadline = time.monotonic() + self.timeout

        async def create() -> None:
            await (await admin()).create_database(database, ignore_if_exists=True)

        self._loop.retrying(create, deadline, f"creating database {database}", self.timeout)
        for table, descriptor in tables().items():
            path = fluss.TablePath(database, table)
            for attempt in range(1, TABLE_TRIES + 1):
                self._create_table(path, descriptor, deadline)
                try:
                    self._loop.retrying(
                        self._ready(path),
                        min(deadline, time.monotonic() + TABLE_READY),
                        f"waiting for table {database}.{table}",
                        TABLE_READY,
                        ATTEMPT,
                    )
                    break
                except StoreUnavailable:
                    self._reset()
                    if attempt == TABLE_TRIES or time.monotonic() >= deadline:
                        raise
                    self._drop_table(path, deadline)

    def _create_table(
        self, path: fluss.TablePath, descriptor: fluss.TableDescriptor, deadline: float
    ) -> None:
        admin = self._admin()

        async def create() -> None:
            await (await admin()).create_table(path, descriptor, ignore_if_exists=True)

        self._loop.retrying(
            create, deadline, f"creating table {path.table_path_str()}", self.timeout
        )

    def _reset(self) -> None:
        """Close the connection; the next call opens a new one. A lookup that timed out
        stays queued in pyfluss's connection, and one on a table id whose bucket has no
        known leader is retried for as long as the connection lives. After a table that
        never got ready was created again, that was a metadata request for its path
        about five times a second, each a failed ZooKeeper read on the tablet server once
        the test database was dropped, until the end of the run (seen twice in full test
        runs, which then went at about half speed)."""
        conn, self._conn = self._conn, None
        if conn is not None:

            async def close() -> None:
                await conn.close()

            with contextlib.suppress(StoreError, fluss.FlussError):
                self._loop.run(close, CLOSE_TIMEOUT, "closing the connection")

    def _drop_table(self, path: fluss.TablePath, deadline: float) -> None:
        admin = self._admin()

        async def drop() -> None:
            await (await admin()).drop_table(path, ignore_if_not_exists=True)
            while await (await admin()).table_exists(path):
                await asyncio.sleep(RETRY_PAUSE)

        self._loop.retrying(drop, deadline, f"dropping table {path.table_path_str()}", self.timeout)

    def _ready(self, path: fluss.TablePath) -> Callable[[], Coroutine[Any, Any, None]]:
        """A check that answers once the table's bucket has a leader: the log answers for
        its end, the writers' table (a primary-key table) a lookup."""
        admin = self._admin()

        async def ready() -> None:
            a = await admin()
            assert self._conn is not None
            if path.table_name == LOG:
                await a.list_offsets(path, [BUCKET], fluss.OffsetSpec.latest())
                return
            assert path.table_name == WRITERS, path.table_name
            table = await self._conn.get_table(path)
            await (
                table.new_lookup()
                .lookup_by(["lineage"])
                .create_lookuper()
                .lookup({"lineage": LINEAGE})
            )

        return ready

    def drop_database(self, database: str) -> None:
        """Drop ``database``; a cluster that is gone by now leaves it behind, silently."""
        admin = self._admin()

        async def drop() -> None:
            a = await admin()
            await a.drop_database(database, ignore_if_not_exists=True, cascade=True)

        with contextlib.suppress(StoreError, fluss.FlussError):
            self._loop.run(drop, min(self.timeout, 10.0), f"dropping database {database}")

    def close(self) -> None:
        """Release the admin connection (idempotent); databases stay."""
        atexit.unregister(self.close)
        conn, self._conn = self._conn, None
        self._loop.close(conn.close if conn is not None else None)
