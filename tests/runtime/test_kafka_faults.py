"""Faults against a real broker: stopped and restarted in the middle of a run.

These tests use a broker of their own (``private_kafka``), stopped and started through
``replay-contract services down|up kafka``, so the shared broker is never disturbed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from replay_contract.conformance.compare import first_difference
from replay_contract.conformance.reference import reference_steps
from replay_contract.conformance.runner import end_memory, observe
from replay_contract.model import trace as t
from replay_contract.model.catalogue import builtin
from replay_contract.model.contracts import ORDERED, SEQNUM
from replay_contract.model.run import simulate
from replay_contract.model.scenario import Step
from replay_contract.runtime.kafka_store import KafkaBackend, KafkaNamespace
from replay_contract.runtime.operator import OperatorError, RuntimeOperator
from replay_contract.runtime.store import StoreUnavailable

from .conftest import PrivateKafka
from .helpers import ByHand

pytestmark = pytest.mark.kafka


class _Outage:
    """Delegates to the runtime; stops the broker just before delivering ``before`` and
    starts it again ``after`` seconds later, while that delivery waits for its write."""

    def __init__(
        self, impl: RuntimeOperator, broker: PrivateKafka, before: str, after: float
    ) -> None:
        self.impl, self.broker, self.before, self.after = impl, broker, before, after
        self.restarted: threading.Thread | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.impl, name)

    def deliver(self, record: Any) -> None:
        if record.identity == self.before and self.restarted is None:
            self.broker.down()
            self.restarted = threading.Timer(self.after, self.broker.up)
            self.restarted.start()
        self.impl.deliver(record)


def _topic_entries(namespace: KafkaNamespace) -> list[Any]:
    store = namespace.connect()
    try:
        return [e for _, e in store.read(0)]
    finally:
        store.close()


@pytest.fixture
def broker(private_kafka: PrivateKafka) -> Iterator[PrivateKafka]:
    yield private_kafka
    private_kafka.up()  # whatever a test left behind, the next one gets a running broker


@pytest.mark.parametrize("contract", [ORDERED, SEQNUM], ids=lambda c: c.name)
def test_a_broker_restart_within_the_bound_goes_unnoticed(
    broker: PrivateKafka, contract: Any
) -> None:
    scenario = builtin("reversed-interleaving")
    impl = RuntimeOperator(KafkaBackend(broker.bootstrap, timeout=90.0), keep_namespaces=True)
    outage = _Outage(impl, broker, before="C", after=1.0)
    run = observe(outage, scenario, contract)  # type: ignore[arg-type]
    assert outage.restarted is not None
    outage.restarted.join()
    assert broker.bootstrap == impl.backend.bootstrap, "the restarted broker moved"  # type: ignore[attr-defined]
    assert run.error is None, run.error
    assert first_difference(reference_steps(scenario, contract), run.steps) is None
    assert isinstance(impl.namespace, KafkaNamespace)
    try:  # every saved completion exactly once: the topic holds what the model's store holds
        assert _topic_entries(impl.namespace) == list(simulate(scenario, contract).world.store)
    finally:
        impl.namespace.drop()


def test_a_broker_down_past_the_bound_fails_clearly_then_recovers(broker: PrivateKafka) -> None:
    scenario = builtin("reversed-interleaving")
    impl = RuntimeOperator(KafkaBackend(broker.bootstrap, timeout=3.0), keep_namespaces=True)
    hand = ByHand(impl, scenario, ORDERED)
    env, channels, deliver = hand.env, hand.channels, hand.deliver

    deliver("A")
    deliver("B")
    broker.down()
    with pytest.raises(StoreUnavailable) as failed:
        deliver("C")  # its tool call runs, the save cannot be acknowledged
    message = str(failed.value)
    assert f"kafka at {broker.bootstrap}" in message and "within 3 s" in message
    assert "\n" not in message
    env.record(t.Crash())
    with pytest.raises(OperatorError, match="down"):
        impl.deliver(scenario.topology.record("D"))
    env.record(t.Restore(0))
    channels.restore()
    with pytest.raises(StoreUnavailable):
        impl.restore()  # still no broker: the read gives up within the bound too
    env.events.pop()
    address = broker.bootstrap
    assert broker.up() == address, "the restarted broker moved to another port"
    env.record(t.Restore(0))
    impl.restore()
    for identity in ("B", "A", "C", "D"):
        deliver(identity)
    env.record(t.End(end_memory(impl.end())))

    # the same run in the model: the delivery of C crashes after its tool call
    equivalent = scenario.with_schedule(
        (
            Step("deliver", "A"),
            Step("deliver", "B"),
            Step("deliver", "C", 1),
            Step("restore"),
            Step("deliver", "B"),
            Step("deliver", "A"),
            Step("deliver", "C"),
            Step("deliver", "D"),
        )
    )
    expected = [e for _, events in reference_steps(equivalent, ORDERED) for e in events]
    assert env.events == expected  # completion ids too: offsets in a topic of our own
    assert isinstance(impl.namespace, KafkaNamespace)
    try:
        assert _topic_entries(impl.namespace) == list(simulate(equivalent, ORDERED).world.store)
    finally:
        impl.close()
        impl.namespace.drop()
