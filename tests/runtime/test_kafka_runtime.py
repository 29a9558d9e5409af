"""The operator runtime over a real Kafka topic against the reference model."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from replay_contract.conformance.runner import observe
from replay_contract.model.catalogue import builtin
from replay_contract.model.contracts import ORDERED, SEQNUM
from replay_contract.model.run import simulate
from replay_contract.model.store import Completion, OrderEntry
from replay_contract.model.topology import Record, same_key
from replay_contract.runtime import codec
from replay_contract.runtime.kafka_store import LOG, KafkaBackend, KafkaNamespace
from replay_contract.runtime.operator import RuntimeOperator
from replay_contract.runtime.store import RecordError

from .helpers import Quiet, judged
from .scenarios import AWKWARD_KEYS, awkward_keys

pytestmark = pytest.mark.kafka


@pytest.fixture
def backend(kafka_bootstrap: str) -> KafkaBackend:
    return KafkaBackend(kafka_bootstrap, timeout=20.0)


def test_completion_ids_are_offsets_equal_to_the_models_log_indexes(backend) -> None:  # type: ignore[no-untyped-def]
    scenario = builtin("repeated-crashes")
    run = observe(RuntimeOperator(backend), scenario, ORDERED)
    assert run.error is None
    assert run.events == simulate(scenario, ORDERED).world.events


def test_a_timeout_releases_a_key_whose_lost_record_was_the_last_of_its_split(backend) -> None:  # type: ignore[no-untyped-def]
    result = judged(backend, builtin("lost-last-of-split-timeout"), ORDERED)
    assert (result.tool_calls, result.repeated) == (4, 1)


@pytest.mark.parametrize("contract", [ORDERED, SEQNUM], ids=lambda c: c.name)
def test_awkward_keys_stay_apart_in_the_real_topic(backend, contract) -> None:  # type: ignore[no-untyped-def]
    scenario = awkward_keys()
    judged(backend, scenario, contract)  # includes the key-isolation property
    impl = RuntimeOperator(backend, keep_namespaces=True)
    run = observe(impl, scenario, contract)
    assert run.error is None
    namespace = impl.namespace
    assert isinstance(namespace, KafkaNamespace)
    try:
        store = namespace.connect()
        entries = [e for _, e in store.read(0)]
        store.close()
    finally:
        namespace.drop()
    model = simulate(scenario, contract).world.store
    assert entries == list(model)
    for key in AWKWARD_KEYS:
        mine = [e for e in entries if same_key(e.key, key)]
        saved = [e for e in mine if isinstance(e, Completion)]
        assert saved, f"nothing saved for key {key!r}"
        assert {codec.business_key(e.key) for e in mine} == {codec.business_key(key)}


def test_the_topic_is_compacted(backend) -> None:  # type: ignore[no-untyped-def]
    namespace = backend.namespace()
    try:
        admin = AdminClient({"bootstrap.servers": backend.bootstrap})
        resource = ConfigResource("topic", namespace.topic)
        configs = admin.describe_configs([resource])[resource].result(20)
        assert configs["cleanup.policy"].value == "compact"
    finally:
        namespace.drop()


def test_an_undecodable_record_is_refused_with_its_place(backend) -> None:  # type: ignore[no-untyped-def]
    namespace = backend.namespace()
    try:
        store = namespace.connect()
        store.append([OrderEntry("K", 0, "A", "d"), OrderEntry("K", 1, "B", "d")])
        producer = Producer({"bootstrap.servers": backend.bootstrap, "logger": LOG})
        producer.produce(namespace.topic, key=b"s1:x", value=b"{not json", partition=0)
        assert producer.flush(20) == 0
        store.close()  # a client is its partition's only writer: a new one comes after
        store = namespace.connect()
        store.append([OrderEntry("K", 2, "C", "d")])
        store.close()
        reader = namespace.connect()
        with pytest.raises(RecordError) as caught:
            reader.read(0)
        message = str(caught.value)
        assert f"topic {namespace.topic} partition 0 offset 2" in message
        assert "\n" not in message
        assert reader.read(3) == [(3, OrderEntry("K", 2, "C", "d"))]  # past it: fine
        reader.close()
    finally:
        namespace.drop()


def test_a_restore_over_an_undecodable_record_fails_instead_of_skipping_it(backend) -> None:  # type: ignore[no-untyped-def]
    scenario = builtin("single-upstream")
    impl = RuntimeOperator(backend)
    run_env = Quiet()
    impl.open(scenario.agent, scenario.topology, ORDERED, run_env)
    try:
        first = scenario.topology.records[0]
        impl.deliver(first)
        assert isinstance(impl.namespace, KafkaNamespace)
        producer = Producer({"bootstrap.servers": backend.bootstrap, "logger": LOG})
        producer.produce(impl.namespace.topic, key=b"junk", value=b'{"schema": 7}', partition=0)
        assert producer.flush(20) == 0
        impl.crash()
        with pytest.raises(RecordError, match="schema version 7"):
            impl.restore()
        with pytest.raises(Exception, match="down"):
            impl.deliver(Record("z", first.key, None, first.channel, 9))
    finally:
        impl.close()


def test_recovery_reads_from_the_marker_not_the_topic(backend) -> None:  # type: ignore[no-untyped-def]
    namespace = backend.namespace()
    pad = namespace.connect()
    for batch in range(5):
        pad.append(
            [
                Completion(f"other-{i % 50}", i, f"p{i}", "d", ("respond",), (None,), (), ())
                for i in range(batch * 1000, batch * 1000 + 1000)
            ]
        )
    pad.close()

    class Prepared:
        name = "prepared"

        def namespace(self) -> KafkaNamespace:
            return namespace

    scenario = builtin("reversed-interleaving")
    impl = RuntimeOperator(Prepared())
    env = Quiet()
    impl.open(scenario.agent, scenario.topology, ORDERED, env)
    try:
        for record in scenario.topology.records:
            impl.deliver(record)
        impl.crash()
        before = impl.stats.reads
        impl.restore()
        assert impl.stats.reads - before == 4  # the four completions after the marker
    finally:
        impl.close()
