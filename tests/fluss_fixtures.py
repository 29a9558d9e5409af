"""Pytest plugin: a session-wide Fluss cluster, started through the command a user runs.

``fluss_bootstrap`` runs ``replay-contract services up fluss --json`` once per test session
in the repository root (so a cluster that ``.ci/run`` or a developer started is reused) and
``services down fluss`` at the end, only if this session started the cluster. It yields the
``host:port`` that a pyfluss client bootstraps from. Load it with
``pytest_plugins = ["fluss_fixtures"]`` (or ``-p``) where ``tests/`` is importable.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _services(*args: str, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replay_contract", "services", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="session")
def fluss_bootstrap() -> Iterator[str]:
    """``host:port`` of the coordinator of a running one-node Fluss cluster on 127.0.0.1."""
    result = _services("up", "fluss", "--json")
    if result.returncode != 0:
        pytest.fail(f"services up fluss exited {result.returncode}: {result.stderr}")
    info: dict[str, Any] = json.loads(result.stdout)
    try:
        yield str(info["bootstrap"])
    finally:
        if not info["already_running"]:
            _services("down", "fluss")
