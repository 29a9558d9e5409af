"""``replay-contract services up|down|status kafka`` against a real broker."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from replay_contract.services.common import Process, is_alive

from .conftest import run_services, services_json

pytestmark = pytest.mark.kafka


def test_a_message_goes_through_the_broker(kafka_bootstrap: str) -> None:
    topic = f"service-test-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)

    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(topic, key=b"agent-1", value=b"hello")
    assert producer.flush(30) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": f"group-{topic}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 60
        message = None
        while message is None and time.monotonic() < deadline:
            polled = consumer.poll(1.0)
            if polled is not None and polled.error() is None:
                message = polled
    finally:
        consumer.close()
    assert message is not None, "no message consumed within 60 s"
    assert (message.key(), message.value()) == (b"agent-1", b"hello")


def test_status_and_a_second_up_find_the_same_broker(kafka_bootstrap: str) -> None:
    status = services_json("status", "kafka")
    assert status["running"] is True
    assert status["bootstrap"] == kafka_bootstrap
    again = services_json("up", "kafka")
    assert again["already_running"] is True
    assert again["pids"] == status["pids"]


def test_up_status_down_of_a_separate_broker(kafka_bootstrap: str, tmp_path: Path) -> None:
    """A broker in its own state folder: resolved from the cache, then stopped for good."""
    env = {**os.environ, "REPLAY_CONTRACT_STATE": str(tmp_path)}
    started = run_services("up", "kafka", "--json", env=env)
    assert started.returncode == 0, started.stderr
    assert "resolved from cache" in started.stderr
    assert "resolving" not in started.stderr

    status = services_json("status", "kafka", env=env)
    assert status["running"] is True
    assert status["bootstrap"] != kafka_bootstrap
    metadata = AdminClient({"bootstrap.servers": status["bootstrap"]}).list_topics(timeout=30)
    assert list(metadata.brokers) == [1]
    (pid,) = status["pids"]

    stopped = services_json("down", "kafka", env=env)
    assert stopped["stopped"] == [pid]
    after = run_services("status", "kafka", "--json", env=env)
    assert after.returncode == 3
    assert '"running": false' in after.stdout
    assert not is_alive(Process(role="broker", pid=pid, started=None))
    assert services_json("down", "kafka", env=env)["stopped"] == []


@pytest.mark.parametrize("java_home", [None, "nowhere"])
def test_missing_java_is_one_clear_line(tmp_path: Path, java_home: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path / "empty-bin")
    env["REPLAY_CONTRACT_STATE"] = str(tmp_path / "state")
    if java_home is not None:
        env["JAVA_HOME"] = str(tmp_path / java_home)
    result = run_services("up", "kafka", env=env, timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("replay-contract services: error: ")
    assert ("JAVA_HOME" if java_home else "java not found") in line


def test_a_session_that_ends_without_teardown_still_stops_its_broker(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """The fixture's broker outlives a test process that ends with ``os._exit`` (as
    pytest-timeout's thread method does) only until the fixture's watchdog stops it."""
    env = {**os.environ, "REPLAY_CONTRACT_STATE": str(tmp_path)}
    child = (
        "import os, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n"
        "import servers\n"
        "fixture = servers._server('kafka')\n"
        "print(next(fixture), flush=True)\n"
        "os._exit(0)\n"
    )
    ended = subprocess.run(
        [sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=600
    )
    assert ended.returncode == 0, ended.stderr
    # a broker of its own was up when the child ended
    started = ended.stdout.strip()
    assert started.startswith("127.0.0.1:") and started != kafka_bootstrap, ended.stdout
    deadline = time.monotonic() + 120
    status = run_services("status", "kafka", "--json", env=env)
    while status.returncode == 0 and time.monotonic() < deadline:
        time.sleep(1)
        status = run_services("status", "kafka", "--json", env=env)
    assert status.returncode == 3, f"the broker still runs: {status.stdout}"
    assert '"running": false' in status.stdout
