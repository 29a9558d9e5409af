"""``replay-contract services up|down|status fluss`` against a real one-node Fluss cluster.

The session's cluster comes from the ``fluss_bootstrap`` fixture (``tests/servers.py``);
each test talks to it with the pyfluss client, whose API is asynchronous.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from replay_contract.services.common import Process, is_alive

from .conftest import run_services, services_json

fluss = pytest.importorskip("fluss")

pytestmark = pytest.mark.fluss

#: Writes and reads retry while a server is away, so each call gets a bound.
CALL_TIMEOUT = 60.0


@asynccontextmanager
async def database(bootstrap: str) -> AsyncIterator[tuple[Any, str]]:
    """A connection and a fresh database in it, dropped with its tables afterwards."""
    connection = await bounded(
        fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
    )
    name = f"service_test_{uuid.uuid4().hex[:8]}"
    admin = connection.get_admin()
    try:
        await bounded(admin.create_database(name))
        yield connection, name
    finally:
        await bounded(admin.drop_database(name, ignore_if_not_exists=True, cascade=True))
        await bounded(connection.close())


def bounded(call: Any) -> Any:
    return asyncio.wait_for(call, CALL_TIMEOUT)


def test_primary_key_table_upsert_lookup_delete(fluss_bootstrap: str) -> None:
    async def scenario() -> None:
        async with database(fluss_bootstrap) as (connection, name):
            path = fluss.TablePath(name, "action_state")
            schema = fluss.Schema(
                pa.schema(
                    [
                        pa.field("state_key", pa.string()),
                        pa.field("seq", pa.int64()),
                        pa.field("payload", pa.binary()),
                    ]
                ),
                primary_keys=["state_key"],
            )
            admin = connection.get_admin()
            await bounded(admin.create_table(path, fluss.TableDescriptor(schema, bucket_count=2)))
            table = await bounded(connection.get_table(path))
            assert table.has_primary_key()

            writer = table.new_upsert().create_writer()
            for key, seq in [("agent-1", 1), ("agent-2", 1), ("agent-1", 2)]:
                writer.upsert({"state_key": key, "seq": seq, "payload": f"{key}@{seq}".encode()})
            await bounded(writer.flush())

            lookuper = table.new_lookup().create_lookuper()
            row = await bounded(lookuper.lookup({"state_key": "agent-1"}))
            assert row == {"state_key": "agent-1", "seq": 2, "payload": b"agent-1@2"}
            assert await bounded(lookuper.lookup(["agent-2"])) == {
                "state_key": "agent-2",
                "seq": 1,
                "payload": b"agent-2@1",
            }
            assert await bounded(lookuper.lookup({"state_key": "agent-3"})) is None

            await bounded(writer.delete({"state_key": "agent-2"}).wait())
            assert await bounded(lookuper.lookup({"state_key": "agent-2"})) is None

    asyncio.run(scenario())


def test_log_table_append_and_scan_in_order(fluss_bootstrap: str) -> None:
    async def scenario() -> None:
        async with database(fluss_bootstrap) as (connection, name):
            path = fluss.TablePath(name, "deliveries")
            schema = fluss.Schema(
                pa.schema([pa.field("key", pa.string()), pa.field("seq", pa.int64())])
            )
            admin = connection.get_admin()
            await bounded(admin.create_table(path, fluss.TableDescriptor(schema, bucket_count=1)))
            table = await bounded(connection.get_table(path))
            async with table.new_append().create_writer() as writer:
                for seq in range(5):
                    writer.append({"key": "agent-1", "seq": seq})
            latest = await bounded(admin.list_offsets(path, [0], fluss.OffsetSpec.latest()))
            assert latest == {0: 5}

            async def scan(start: int, count: int) -> list[tuple[int, int]]:
                scanner = await bounded(table.new_scan().create_log_scanner())
                scanner.subscribe(0, start)
                seen: list[tuple[int, int]] = []
                deadline = time.monotonic() + CALL_TIMEOUT
                while len(seen) < count and time.monotonic() < deadline:
                    for record in await scanner.poll(500):
                        assert record.change_type == fluss.ChangeType.AppendOnly
                        seen.append((record.offset, record.row["seq"]))
                return seen

            assert await bounded(scan(fluss.EARLIEST_OFFSET, 5)) == [(i, i) for i in range(5)]
            assert await bounded(scan(3, 2)) == [(3, 3), (4, 4)]

    asyncio.run(scenario())


def test_status_and_a_second_up_find_the_same_cluster(fluss_bootstrap: str) -> None:
    status = services_json("status", "fluss")
    assert status["running"] is True
    assert status["bootstrap"] == fluss_bootstrap
    assert sorted(status["roles"]) == ["coordinator", "tablet", "zookeeper"]
    assert len(status["pids"]) == 3
    again = services_json("up", "fluss")
    assert again["already_running"] is True
    assert again["pids"] == status["pids"]


def test_up_status_down_of_a_separate_cluster(fluss_bootstrap: str, tmp_path: Path) -> None:
    """A cluster in its own state folder: jars from the cache, then all three stopped."""
    env = {**os.environ, "REPLAY_CONTRACT_STATE": str(tmp_path)}
    started = run_services("up", "fluss", "--json", env=env)
    assert started.returncode == 0, started.stderr
    assert "resolved from cache" in started.stderr
    assert "resolving" not in started.stderr

    status = services_json("status", "fluss", env=env)
    assert status["running"] is True
    assert status["bootstrap"] != fluss_bootstrap
    for folder in status["data_dirs"].values():
        assert Path(folder).is_relative_to(tmp_path)

    async def nodes() -> list[str]:
        connection = await bounded(
            fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": status["bootstrap"]}))
        )
        try:
            found = await bounded(connection.get_admin().get_server_nodes())
            return sorted(node.server_type for node in found)
        finally:
            await bounded(connection.close())

    assert asyncio.run(nodes()) == ["CoordinatorServer", "TabletServer"]
    for pid in status["pids"]:  # scratch files (RocksDB's library) stay in the state folder
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        tmpdirs = [a for a in argv if a.startswith(b"-Djava.io.tmpdir=")]
        assert len(tmpdirs) == 1
        assert Path(tmpdirs[0].partition(b"=")[2].decode()).is_relative_to(tmp_path)

    stopped = services_json("down", "fluss", env=env)
    assert sorted(stopped["stopped"]) == sorted(status["pids"])
    after = run_services("status", "fluss", "--json", env=env)
    assert after.returncode == 3
    assert '"running": false' in after.stdout
    for pid in status["pids"]:
        assert not is_alive(Process(role="fluss", pid=pid, started=None))
    assert services_json("down", "fluss", env=env)["stopped"] == []
