"""The Kafka-backed implementation: the operator runtime over a Kafka topic store.

:func:`implementation` is what the conformance suite's ``kafka`` target calls. The broker
is the one ``replay-contract services up kafka`` started (its address comes from
:func:`replay_contract.services.kafka.status`), or the one named by the environment
variable ``REPLAY_CONTRACT_KAFKA`` (``127.0.0.1:PORT``). Only loopback addresses are
accepted; a broker that does not answer is refused with one line.
"""

from __future__ import annotations

from typing import Any

from .address import server_address
from .kafka_store import KafkaBackend, loopback_only
from .operator import RuntimeOperator
from .store import StoreUnavailable

ENV = "REPLAY_CONTRACT_KAFKA"
PROBE_TIMEOUT = 5.0


class KafkaUnavailable(StoreUnavailable):
    """No reachable Kafka broker; the message says how to get one."""


def bootstrap_address() -> str:
    """The bootstrap address of the broker to use (see the module docstring)."""
    return loopback_only(server_address("kafka", ENV, KafkaUnavailable, "broker"))


def probe(address: str, timeout: float = PROBE_TIMEOUT) -> None:
    """Raise :class:`KafkaUnavailable` unless a broker at ``address`` answers."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    from .kafka_store import LOG

    config: dict[str, Any] = {
        "bootstrap.servers": address,
        "logger": LOG,
        "reconnect.backoff.max.ms": 500,
    }
    admin = AdminClient(config)
    try:
        admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise KafkaUnavailable(
            f"kafka at {address} is not reachable within {timeout:.0f} s "
            f"({exc.args[0].str()}); start it with "
            "`replay-contract services up kafka`"
        ) from None


def backend(address: str | None = None, *, timeout: float = 30.0) -> KafkaBackend:
    """Store topics on the reachable broker at ``address`` (by default, the one
    :func:`bootstrap_address` finds); the benchmark's ``kafka`` backend."""
    address = address or bootstrap_address()
    probe(address)
    return KafkaBackend(address, timeout=timeout)


def implementation() -> RuntimeOperator:
    """The Kafka-backed implementation the conformance suite's ``kafka`` target runs."""
    return RuntimeOperator(backend())
