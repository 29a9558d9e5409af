"""The real servers the tests need, started through the command a user runs.

``kafka_bootstrap`` and ``fluss_bootstrap`` run ``replay-contract services up NAME``
once per test session, in the repository root (so a server that a developer started is
reused and left running), and ``services down NAME`` at the end, only when this session
started the server. A server this session started is also watched by
``tests/watchdog.py``, which stops it if the session ends without its teardown (a
timeout that ends the process, a kill). ``tests/conftest.py`` makes both fixtures
visible to every test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_services(
    *args: str, env: Mapping[str, str] | None = None, timeout: float = 600.0
) -> subprocess.CompletedProcess[str]:
    """Run ``replay-contract services ARGS`` in the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "replay_contract", "services", *args],
        cwd=ROOT,
        env=dict(env) if env is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def services_json(*args: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The JSON info that ``services ARGS --json`` prints; fails the test on an error."""
    result = run_services(*args, "--json", env=env)
    if result.returncode not in (0, 3):
        pytest.fail(f"services {' '.join(args)} exited {result.returncode}: {result.stderr}")
    info: dict[str, Any] = json.loads(result.stdout)
    return info


def watch(command: list[str]) -> subprocess.Popen[bytes]:
    """A watchdog that runs ``command`` in the repository root once this process has
    ended, in a session of its own (a signal to this process group does not stop it)."""
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("watchdog.py")), str(os.getpid()), *command],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _server(name: str) -> Iterator[str]:
    info = services_json("up", name)
    if info.get("already_running"):
        yield str(info["bootstrap"])
        return
    watchdog = watch([sys.executable, "-m", "replay_contract", "services", "down", name])
    try:
        yield str(info["bootstrap"])
    finally:
        run_services("down", name)
        watchdog.kill()
        watchdog.wait()


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """``host:port`` of a running Kafka broker on 127.0.0.1."""
    yield from _server("kafka")


@pytest.fixture(scope="session")
def fluss_bootstrap() -> Iterator[str]:
    """``host:port`` of the coordinator of a running one-node Fluss cluster on 127.0.0.1."""
    yield from _server("fluss")
