"""The action state store in a Kafka topic (confluent-kafka).

One namespace is one partition of a compacted topic; a run gets a topic of its own
(``replay-contract-<hex>``), so runs and tests never see each other's records. Entry ids
are partition offsets: recovery seeks straight to the checkpoint's marker and reads to the
high watermark, whatever the topic holds before the marker or in other partitions.

Writes go through one idempotent producer with ``acks=all`` to one partition, so records
land in the order they were sent, without gaps or duplicates, and are acknowledged in
that order. ``send`` produces without waiting and gives each entry the offset it will
get (the client is the partition's only writer: the end of the log when it started, plus
what it sent since); each delivery report is checked against that offset, and a record
that lands anywhere else is a failure, not a renumbering. The producer batches what is
sent while earlier batches are in flight (``linger.ms``). ``append`` sends and waits
(one round trip); ``flush`` waits for everything sent. Delivery, retries included, is
bounded by ``timeout`` (``message.timeout.ms``); a record refused by the broker (too
large, topic gone) or not acknowledged within the bound makes the client fail: what it
still holds is purged and :class:`~.store.StoreUnavailable` is raised from the next
call, so a stalled write can never land behind the back of a runtime that has been
restored since. Within the bound the idempotent producer retries without duplicates,
which is what lets a broker restart in the middle of a run go unnoticed. ``close``
waits (within the bound) for records still in flight before it drops the producer.

Record keys and values are those of :mod:`.codec`; a record that does not decode stops
the read with :class:`~.store.RecordError` naming topic, partition and offset.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from replay_contract.model.store import Entry

from . import codec
from .store import ActionStateStore, RecordError, StoreError, StoreStats, StoreUnavailable

#: librdkafka logs through this logger (not straight to stderr).
LOG = logging.getLogger("replay_contract.runtime.kafka")
LOG.addHandler(logging.NullHandler())
LOG.propagate = False

#: Records a client sends ahead of the last acknowledged one before ``send`` waits.
IN_FLIGHT = 20000
#: How long the producer holds a record to batch it with those sent after it.
LINGER_MS = 2
#: Records sent while the producer has some in flight are handed to it this many at once.
BATCH = 64

#: Topic configuration: compacted, no time or size retention (see :mod:`.codec` for why
#: compaction keeps every answer the same).
TOPIC_CONFIG = {"cleanup.policy": "compact", "min.insync.replicas": "1"}


LOOPBACK = "127.0.0.1"


def loopback_only(address: str) -> str:
    """``address`` when it is ``127.0.0.1:PORT``; anything else is refused in one line."""
    host, _, port = address.rpartition(":")
    if host != LOOPBACK or not port.isdigit():
        raise StoreError(
            f"kafka: refusing bootstrap address {address!r}: only {LOOPBACK}:PORT is allowed"
        )
    return address


def _client_config(bootstrap: str, timeout: float) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "client.id": "replay-contract",
        "socket.timeout.ms": int(min(timeout, 30.0) * 1000),
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "logger": LOG,
    }


class KafkaStore:
    """A client of one partition of a store topic (see the module docstring)."""

    def __init__(
        self, bootstrap: str, topic: str, partition: int = 0, *, timeout: float = 30.0
    ) -> None:
        self.bootstrap, self.topic, self.partition = loopback_only(bootstrap), topic, partition
        self.timeout = timeout
        self.stats = StoreStats()
        self._producer: Producer | None = None
        self._consumer: Consumer | None = None
        self._end: int | None = None
        self._acked = 0
        self._pushed = 0  # end of what the producer was handed; later ones are buffered
        self._buffer: list[dict[str, Any]] = []
        self._failure: str | None = None
        self._broken: str | None = None
        self._closed = False
        # The idempotent producer needs a producer id before its first write; asking for
        # it now lets that round trip overlap with whatever the runtime does first.
        self._producer_client()

    # -- clients --------------------------------------------------------------------------

    def _check(self) -> None:
        if self._closed:
            raise StoreError(f"kafka topic {self.topic}: the client is closed")
        if self._broken is not None:
            raise StoreUnavailable(
                f"kafka topic {self.topic}: the client failed earlier "
                f"({self._broken}); restore the runtime"
            )

    def _producer_client(self) -> Producer:
        if self._producer is None:
            self._producer = Producer(
                {
                    **_client_config(self.bootstrap, self.timeout),
                    "enable.idempotence": True,
                    "acks": "all",
                    "linger.ms": LINGER_MS,
                    "message.timeout.ms": int(self.timeout * 1000),
                    "retry.backoff.ms": 50,
                    "retry.backoff.max.ms": 500,
                }
            )
        return self._producer

    def _consumer_client(self) -> Consumer:
        if self._consumer is None:
            self._consumer = Consumer(
                {
                    **_client_config(self.bootstrap, self.timeout),
                    "group.id": f"replay-contract-reader-{uuid.uuid4().hex[:8]}",
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    "auto.offset.reset": "error",
                    "enable.partition.eof": True,
                    "fetch.wait.max.ms": 10,
                    "isolation.level": "read_committed",
                }
            )
        return self._consumer

    def _fail(self, message: str) -> StoreUnavailable:
        """Give up on this client: drop whatever it still holds, remember why."""
        self._broken, self._buffer = message, []
        if self._producer is not None:
            self._producer.purge(in_queue=True, in_flight=True, blocking=False)
            self._producer.flush(0)
        return StoreUnavailable(message)

    # -- the ActionStateStore protocol ----------------------------------------------------

    def append(self, entries: Sequence[Entry]) -> list[int]:
        ids = self.send(entries)
        self.flush()
        return ids

    def send(self, entries: Sequence[Entry]) -> list[int]:
        self._check()
        start = self.end()
        if start - self._acked > IN_FLIGHT:
            self.flush()
        self._buffer.extend({"key": codec.record_key(e), "value": codec.encode(e)} for e in entries)
        self._end = start + len(entries)
        self.stats.writes += len(entries)
        self.stats.batches += 1
        self._push_if_due(poll=False)  # acknowledged() polls
        return list(range(start, start + len(entries)))

    def _push_if_due(self, poll: bool = True) -> None:
        """Hand the buffered records to the producer when enough have come, or when the
        producer has nothing in flight (so that the pipe never idles); ``poll`` serves
        the delivery reports that came."""
        if self._buffer and (len(self._buffer) >= BATCH or self._acked == self._pushed):
            self._push()
        elif poll and self._producer is not None:
            self._producer.poll(0)

    def _push(self) -> None:
        producer = self._producer_client()
        batch, self._buffer = self._buffer, []
        try:
            queued = producer.produce_batch(
                self.topic, batch, partition=self.partition, on_delivery=self._delivered
            )
        except (KafkaException, BufferError, TypeError) as exc:
            raise self._fail(
                f"kafka at {self.bootstrap}: cannot produce to topic {self.topic}: {exc}"
            ) from None
        if queued != len(batch):
            why = next((m["_error"] for m in batch if "_error" in m), "not queued")
            raise self._fail(
                f"kafka at {self.bootstrap}: cannot produce to topic {self.topic}: "
                f"{len(batch) - queued} of {len(batch)} record(s) refused by the client ({why})"
            )
        self._pushed += len(batch)
        producer.poll(0)

    def _delivered(self, err: KafkaError | None, msg: Any) -> None:
        """The delivery report of one record; they come in the order of sending."""
        if self._failure is not None:
            return
        offset = self._acked
        if err is not None:
            what = (
                f"was not acknowledged within {self.timeout:.0f} s"
                if err.code() == KafkaError._MSG_TIMED_OUT
                else "was refused"
            )
            self._failure = (
                f"the record of offset {offset} for topic {self.topic} {what} ({err.str()})"
            )
        elif msg.offset() != offset:
            self._failure = (
                f"topic {self.topic} partition {self.partition}: a record sent for "
                f"offset {offset} landed at offset {msg.offset()} (another writer?)"
            )
        else:
            self._acked = offset + 1

    def acknowledged(self) -> int:
        self._check()
        if self._acked < (self._end or 0):
            self._push_if_due()
        self._raise_failure()
        return self._acked

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._fail(f"kafka at {self.bootstrap}: {self._failure}")

    def flush(self) -> None:
        self._check()
        if self._acked >= (self._end or 0):
            self._raise_failure()
            return
        if self._buffer:
            self._push()
        assert self._producer is not None
        remaining = self._producer.flush(self.timeout + 5.0)
        self.stats.round_trips += 1
        self._raise_failure()
        if remaining or self._acked < (self._end or 0):
            raise self._fail(
                f"kafka at {self.bootstrap}: writing to topic {self.topic} failed within "
                f"{self.timeout:.0f} s ({(self._end or 0) - self._acked} record(s) not "
                "acknowledged)"
            )

    def read(self, marker: int) -> list[tuple[int, Entry]]:
        self._check()
        low, high = self._watermarks()
        if self._end is None or self._acked == self._end:  # nothing in flight
            self._end = self._acked = self._pushed = high
        if marker >= high:
            return []
        if marker < low:
            raise StoreError(
                f"kafka topic {self.topic} partition {self.partition}: the "
                f"recovery marker {marker} is below the log start {low}"
            )
        consumer = self._consumer_client()
        consumer.assign([TopicPartition(self.topic, self.partition, marker)])
        found: list[tuple[int, Entry]] = []
        deadline = time.monotonic() + self.timeout
        try:
            while not found or found[-1][0] + 1 < high:
                if time.monotonic() > deadline:
                    raise self._fail(
                        f"kafka at {self.bootstrap}: reading topic {self.topic} "
                        f"partition {self.partition} from offset {marker} did "
                        f"not reach offset {high} within {self.timeout:.0f} s"
                    )
                batch = consumer.consume(num_messages=5000, timeout=0.05)
                if batch:
                    self.stats.round_trips += 1
                if self._take(batch, found, high):
                    break
        finally:
            consumer.unassign()
        self.stats.reads += len(found)
        return found

    def _take(self, batch: list[Any], found: list[tuple[int, Entry]], high: int) -> bool:
        """Decode a fetched batch into ``found``; True at the end of the partition."""
        at_end = False
        for msg in batch:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    at_end = True
                    continue
                raise self._fail(
                    f"kafka at {self.bootstrap}: reading topic {self.topic} "
                    f"partition {self.partition}: {err.str()}"
                )
            offset = msg.offset()
            if offset >= high:
                continue
            try:
                entry = codec.decode(msg.key(), msg.value())
            except codec.DecodeError as exc:
                raise RecordError(
                    f"kafka topic {self.topic} partition {msg.partition()} "
                    f"offset {offset}: cannot decode the record: {exc}"
                ) from None
            found.append((offset, entry))
        return at_end

    def _watermarks(self) -> tuple[int, int]:
        consumer = self._consumer_client()
        tp = TopicPartition(self.topic, self.partition)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                low, high = consumer.get_watermark_offsets(tp, timeout=min(5.0, self.timeout))
                self.stats.round_trips += 1
                return int(low), int(high)
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    raise self._fail(
                        f"kafka at {self.bootstrap}: cannot get the offsets of "
                        f"topic {self.topic} partition {self.partition} within "
                        f"{self.timeout:.0f} s ({exc.args[0].str()})"
                    ) from None
                time.sleep(0.1)

    def end(self) -> int:
        self._check()
        if self._end is None:
            self._end = self._acked = self._pushed = self._watermarks()[1]
        return self._end

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._buffer = []  # never handed to the producer: lost with the crash
        if self._producer is not None:
            if self._broken is None and self._acked < self._pushed:
                # in flight at a crash: durable or lost before any later client starts
                self._producer.flush(self.timeout)
            self._producer.purge(in_queue=True, in_flight=True, blocking=False)
            self._producer.flush(0)
            self._producer = None
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


class KafkaNamespace:
    """One partition of a store topic."""

    def __init__(self, backend: KafkaBackend, topic: str, partition: int = 0) -> None:
        self.backend, self.topic, self.partition = backend, topic, partition
        self.name = f"{topic}[{partition}]"

    def connect(self) -> ActionStateStore:
        return KafkaStore(
            self.backend.bootstrap, self.topic, self.partition, timeout=self.backend.timeout
        )

    def drop(self) -> None:
        self.backend.delete_topic(self.topic)


class KafkaBackend:
    """Store topics on one broker; ``namespace()`` creates a new topic per run."""

    name = "kafka"

    def __init__(
        self,
        bootstrap: str,
        *,
        timeout: float = 30.0,
        partitions: int = 1,
        prefix: str = "replay-contract",
    ) -> None:
        self.bootstrap, self.timeout = loopback_only(bootstrap), timeout
        self.partitions, self.prefix = partitions, prefix
        self._admin: AdminClient | None = None

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient(_client_config(self.bootstrap, self.timeout))
        return self._admin

    def close(self) -> None:
        """Drop the admin client (confluent-kafka has no explicit close); topics stay.
        A later call opens a new one."""
        self._admin = None

    def namespace(self) -> KafkaNamespace:
        topic = f"{self.prefix}-{uuid.uuid4().hex[:12]}"
        self.create_topic(topic)
        return KafkaNamespace(self, topic)

    def create_topic(self, topic: str) -> None:
        new = NewTopic(
            topic, num_partitions=self.partitions, replication_factor=1, config=TOPIC_CONFIG
        )
        try:
            self.admin.create_topics([new], operation_timeout=self.timeout)[topic].result(
                self.timeout
            )
        except KafkaException as exc:
            raise StoreUnavailable(
                f"kafka at {self.bootstrap}: cannot create topic {topic}: {exc.args[0].str()}"
            ) from None

    def delete_topic(self, topic: str) -> None:
        """Delete ``topic``; a broker that is gone by now leaves it behind, silently."""
        with contextlib.suppress(KafkaException, TimeoutError):
            self.admin.delete_topics([topic], operation_timeout=5.0)[topic].result(10.0)
