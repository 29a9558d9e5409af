"""Fixtures of the runtime tests.

``kafka_bootstrap`` is the session fixture of ``tests/services/conftest.py`` (a broker
started through ``replay-contract services up kafka``), shared here without a copy.
``private_kafka`` starts a second broker of this session's own, in a temporary state
folder, through the same command: the fault tests stop and restart it, which must not
disturb the shared one.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _services_conftest():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "replay_contract_tests_services_conftest", ROOT / "tests" / "services" / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


services = _services_conftest()
kafka_bootstrap = services.kafka_bootstrap


class PrivateKafka:
    """A broker in its own state folder, stopped and started with the services command."""

    def __init__(self, state: Path) -> None:
        self.env = {**os.environ, "REPLAY_CONTRACT_STATE": str(state)}
        self.bootstrap = ""

    def up(self) -> str:
        info = services.services_json("up", "kafka", env=self.env)
        self.bootstrap = str(info["bootstrap"])
        return self.bootstrap

    def down(self) -> None:
        result = services.run_services("down", "kafka", env=self.env)
        assert result.returncode == 0, result.stderr


@pytest.fixture(scope="session")
def private_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateKafka]:
    broker = PrivateKafka(tmp_path_factory.mktemp("private-kafka"))
    broker.up()
    try:
        yield broker
    finally:
        broker.down()
