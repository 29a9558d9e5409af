"""Log compaction on a real broker changes no answer of the store.

The topic is configured to compact as soon as it can; the log holds what a run of the
runtime produces around a divergence: a completion and an order entry voided by an
invalidation and then written again with the same record key, the same invalidation made
twice, and entries of other keys. After the broker compacted the log, every query of the
view (as a restore builds it from any marker) answers as it did before.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from replay_contract.model.store import Completion, Entry, Invalidation, Lookup, OrderEntry
from replay_contract.runtime.kafka_store import TOPIC_CONFIG, KafkaBackend, KafkaNamespace
from replay_contract.runtime.view import LiveView

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

EAGER = {
    **TOPIC_CONFIG,
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.001",
    "min.compaction.lag.ms": "0",
    "delete.retention.ms": "0",
}


def completion(
    key: object,
    position: int,
    identity: str,
    reads: tuple[object, ...] = (None,),
    order: bool = False,
) -> Completion:
    return Completion(
        key,
        position,
        identity,
        "d-" + identity,
        ("respond",),
        reads,  # type: ignore[arg-type]
        (("notes", f"{identity}@{position}"),),
        (f"out-{identity}",),
        order,
    )


def log() -> list[Entry]:
    a0, b1 = completion("K", 0, "A", order=True), completion("K", 1, "B", ("x",), order=True)
    return [
        a0,
        b1,
        completion(1, 0, "A", order=True),
        completion("1", 0, "A", order=True),
        Invalidation("K", 1),  # B diverged at 1 ...
        completion("K", 1, "C", ("x",), order=True),
        Invalidation("K", 1, ("C", "d-C")),  # ... then C, which is kept
        OrderEntry("K", 2, "D", "d-D"),
        Invalidation("K", 1),  # the same divergence, made again
        b1,  # and B back at 1: same record key
        Invalidation("K", 2),
        OrderEntry("K", 2, "D", "d-D"),  # the same order entry again
        completion(1, 1, "B", order=True),
    ]


def answers(view: LiveView) -> list[object]:
    # the set of keys survives compaction; their order of first appearance need not
    out: list[object] = [sorted(repr(k) for k in view.keys())]  # noqa: SIM118
    for key in ("K", 1, "1"):
        for position in range(4):
            out.append(view.recorded_order(key, position))
            out.append(view.voided_by(Invalidation(key, position)))
            for identity in "ABCD":
                out.append(
                    view.find(key, Lookup(("respond",), identity, "d-" + identity, position))
                )
    for start in range(3):
        out.append(view.needed(lambda key, start=start: start))  # type: ignore[misc]
    return out


def test_compaction_changes_no_answer(kafka_bootstrap: str) -> None:
    backend = KafkaBackend(kafka_bootstrap, timeout=20.0)
    topic = f"replay-contract-compaction-{time.monotonic_ns() % 10**9}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=EAGER)])[topic].result(20)
    namespace = KafkaNamespace(backend, topic)
    try:
        store = namespace.connect()
        entries = log()
        ids = [store.append([e])[0] for e in entries]
        before = {
            m: answers(LiveView.build(list(zip(ids, entries, strict=True))[m:]))
            for m in range(len(entries))
        }
        deadline = time.monotonic() + 120
        compacted = list(zip(ids, entries, strict=True))
        while len(compacted) == len(entries):  # roll segments until the cleaner has run
            assert time.monotonic() < deadline, "the broker did not compact within 120 s"
            time.sleep(0.5)
            store.append([Invalidation("padding", 0)])  # same record key: compacts away
            compacted = [(i, e) for i, e in namespace.connect().read(0) if e.key != "padding"]
        store.close()
        assert len(compacted) < len(entries)
        for marker, expected in before.items():
            reader = namespace.connect()
            assert (
                answers(
                    LiveView.build(
                        [(i, e) for i, e in reader.read(ids[marker]) if e.key != "padding"]
                    )
                )
                == expected
            )
            reader.close()
    finally:
        namespace.drop()
