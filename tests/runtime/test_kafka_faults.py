"""Faults against a real broker: stopped and restarted in the middle of a run.

These tests use a broker of their own (``private_kafka``), stopped and started through
``replay-contract services down|up kafka``, so the shared broker is never disturbed.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

from replay_contract.conformance.compare import first_difference
from replay_contract.conformance.reference import reference_steps
from replay_contract.conformance.runner import end_memory, observe
from replay_contract.model import trace as t
from replay_contract.model.catalogue import builtin
from replay_contract.model.contracts import ORDERED, SEQNUM
from replay_contract.model.run import simulate
from replay_contract.model.scenario import Step
from replay_contract.model.topology import Record
from replay_contract.runtime.kafka_store import KafkaBackend, KafkaNamespace
from replay_contract.runtime.operator import OperatorError, RuntimeOperator
from replay_contract.runtime.store import StoreUnavailable

from .conftest import PrivateKafka, pids
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


# -- pipelined writes: failures surface, nothing is lost -------------------------------


class _Counting:
    """An environment that runs tools and keeps the saves and reuses reported."""

    def __init__(self) -> None:
        self.saved: list[tuple[int, str]] = []
        self.reused: list[tuple[int, str]] = []

    def tool(self, key, position, record, path, tool, reads):  # type: ignore[no-untyped-def]
        return f"{tool}:{record.identity}"

    def output(self, key, identity, path, value):  # type: ignore[no-untyped-def]
        pass

    def report(self, event: t.Event) -> None:
        if isinstance(event, t.Save):
            self.saved.append((event.completion, event.identity))
        elif isinstance(event, t.Reuse):
            self.reused.append((event.completion, event.identity))


def _pipelined(backend: KafkaBackend, records: int, payload: str = "") -> tuple[Any, ...]:
    from replay_contract.runtime import bench

    recs = [
        Record(r.identity, r.key, {"n": r.payload["n"], "pad": payload}, r.channel, r.offset)
        for r in bench.workload(records, 4)
    ]
    impl = RuntimeOperator(backend, pipelined=True, keep_namespaces=True)
    env = _Counting()
    impl.open(bench.AGENT, bench._topology(recs), ORDERED, env)  # type: ignore[arg-type]
    return impl, env, recs


def _every_save_is_in_the_topic(impl: RuntimeOperator, env: _Counting) -> None:
    assert isinstance(impl.namespace, KafkaNamespace)
    entries = dict(enumerate(_topic_entries(impl.namespace)))
    for completion, identity in env.saved + env.reused:
        assert getattr(entries.get(completion), "identity", None) == identity


def test_a_frozen_broker_fails_the_pipelined_runtime_clearly_and_loses_nothing(
    broker: PrivateKafka,
) -> None:
    impl, env, recs = _pipelined(KafkaBackend(broker.bootstrap, timeout=3.0), 40)
    frozen = pids(broker.env, "kafka")
    try:
        for record in recs[:20]:
            impl.deliver(record)
        impl.checkpoint()
        assert len(env.saved) == 20
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        started = time.monotonic()
        with pytest.raises(StoreUnavailable) as failed:
            for record in recs[20:]:
                impl.deliver(record)  # goes on while its writes wait for the broker
            impl.checkpoint()  # waits for them: they time out
        assert time.monotonic() - started < 15.0
        message = str(failed.value)
        assert f"kafka at {broker.bootstrap}" in message and "\n" not in message
        assert "within 3 s" in message, message
        assert len(env.saved) == 20  # nothing reported saved on an unacknowledged write
        with pytest.raises(OperatorError, match="down"):
            impl.deliver(recs[20])
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
    time.sleep(2.0)  # whatever the broker still had on its sockets lands now
    impl.restore()
    for record in recs[20:]:
        impl.deliver(record)
    impl.end()
    try:
        # every input saved, or reused from a write that landed after all: none lost
        assert {i for _, i in env.saved + env.reused} == {r.identity for r in recs}
        _every_save_is_in_the_topic(impl, env)
    finally:
        impl.close()
        assert impl.namespace is not None
        impl.namespace.drop()


def test_a_write_the_broker_refuses_is_an_error_not_a_loss(broker: PrivateKafka) -> None:
    backend = KafkaBackend(broker.bootstrap, timeout=5.0)
    impl, env, recs = _pipelined(backend, 8, payload="x" * 2000)
    try:
        assert isinstance(impl.namespace, KafkaNamespace)
        small = ConfigResource(
            ConfigResource.Type.TOPIC,
            impl.namespace.topic,
            incremental_configs=[
                ConfigEntry(
                    "max.message.bytes", "1024", incremental_operation=AlterConfigOpType.SET
                )
            ],
        )
        for done in backend.admin.incremental_alter_configs([small]).values():
            done.result(10)
        with pytest.raises(StoreUnavailable) as failed:
            for record in recs:
                impl.deliver(record)
            impl.checkpoint()
        message = str(failed.value)
        assert "\n" not in message and impl.namespace.topic in message
        assert "too large" in message.lower() or "MSG_SIZE_TOO_LARGE" in message, message
        assert env.saved == []  # the refused writes were never reported saved
        assert _topic_entries(impl.namespace) == []
    finally:
        impl.close()
        assert impl.namespace is not None
        impl.namespace.drop()
