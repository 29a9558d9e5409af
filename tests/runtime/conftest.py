"""Fixtures of the runtime tests.

``kafka_bootstrap`` (the broker ``replay-contract services up kafka`` starts) comes from
``tests/conftest.py``. ``private_kafka`` starts a second broker of this session's own, in
a temporary state folder, through the same command: the fault tests stop and restart it,
which must not disturb the shared one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import run_services, services_json


class PrivateKafka:
    """A broker in its own state folder, stopped and started with the services command."""

    def __init__(self, state: Path) -> None:
        self.env = {**os.environ, "REPLAY_CONTRACT_STATE": str(state)}
        self.bootstrap = ""

    def up(self) -> str:
        info = services_json("up", "kafka", env=self.env)
        self.bootstrap = str(info["bootstrap"])
        return self.bootstrap

    def down(self) -> None:
        result = run_services("down", "kafka", env=self.env)
        assert result.returncode == 0, result.stderr


@pytest.fixture(scope="session")
def private_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateKafka]:
    broker = PrivateKafka(tmp_path_factory.mktemp("private-kafka"))
    broker.up()
    try:
        yield broker
    finally:
        broker.down()


def pids(env: dict[str, str], service: str) -> list[int]:
    """The pids of ``service`` as ``services status`` reports them (its state folder's)."""
    info = services_json("status", service, env=env)
    return [int(p) for p in info["pids"]]
