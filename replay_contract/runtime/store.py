"""The action state store as the runtime sees it: one durable, ordered log per namespace.

A backend (in-memory, Kafka, Fluss) plugs into the operator runtime through three small
protocols and nothing else:

:class:`ActionStateStore`
    a client of one namespace's log. ``append`` writes entries durably, in order, and
    returns their ids; ``send`` queues entries in order and returns their ids at once,
    ``acknowledged`` says how far the log is durable and ``flush`` waits until all of it
    is (pipelined writes, see below); ``read`` returns every entry from a recovery marker
    to the end; ``end`` is the id the next entry will get; ``close`` releases the client.
:class:`Namespace`
    one run's log (a Kafka topic partition, a set of Fluss tables). ``connect`` opens a
    new client; the runtime opens one at ``open`` and one after every restore, so that a
    crash really loses every client-side buffer. ``drop`` deletes the namespace.
:class:`Backend`
    where namespaces come from: ``namespace()`` creates a fresh, empty one.

Entry ids are the positions of entries in their log: integers that grow in append order
(gaps are allowed, e.g. after Kafka compaction). A *recovery marker* is an id: a read
from it yields exactly the entries whose id is at least the marker. The runtime keeps no
other handle on the store, so the checkpoint holds one integer for it.

The entries are the model's values (:class:`~replay_contract.model.store.Completion`,
:class:`~replay_contract.model.store.OrderEntry`,
:class:`~replay_contract.model.store.Invalidation`); a store must give back entries equal
to those it was given (tuples stay tuples, ``1`` stays distinct from ``"1"``).

Pipelined writes: ``send`` gives each entry its id when it is queued, in order, before
the server has it; an entry is *acknowledged* once it and every entry before it are
durable, and ``acknowledged()`` is the id below which every sent entry is. One client
writes one namespace at a time, in one order, so a later entry never becomes durable
while an earlier one is lost: acknowledgement is a prefix of the log. A write the server
rejects, or that is not acknowledged within the store's bound (retries included),
raises :class:`StoreUnavailable` from the next call; nothing is dropped in silence. A
client that closes with entries sent but not acknowledged waits for them (within its
bound) or drops them, so none lands behind the back of a client opened after it: they
are the in-flight writes of a crash, durable or lost, and a new client reads whatever
of them landed.

Failures raise :class:`StoreError` subclasses with a one-line message; the runtime treats
one as a crash (it drops its in-memory state) and lets it propagate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from attrs import define

from replay_contract.errors import RecordError as RecordError
from replay_contract.errors import StoreError as StoreError
from replay_contract.errors import StoreUnavailable as StoreUnavailable
from replay_contract.model.store import Entry


@define
class StoreStats:
    """What a store client did: entries written, entries read, and round trips.

    ``round_trips`` counts requests the client waited for (an acknowledged batch of
    writes, a fetch, an offset query); ``batches`` counts the ``append`` calls.
    """

    writes: int = 0
    batches: int = 0
    reads: int = 0
    round_trips: int = 0

    def add(self, other: StoreStats) -> None:
        self.writes += other.writes
        self.batches += other.batches
        self.reads += other.reads
        self.round_trips += other.round_trips


class ActionStateStore(Protocol):
    """A client of one namespace's durable, ordered log of entries."""

    stats: StoreStats

    def append(self, entries: Sequence[Entry]) -> list[int]:
        """Write ``entries`` durably, in this order, as one batch (one round trip where
        the server allows it); return their ids once every one is durable. Raises
        :class:`StoreUnavailable` after the store's bounded retries."""
        ...

    def send(self, entries: Sequence[Entry]) -> list[int]:
        """Queue ``entries`` for writing, in this order, after every entry sent before;
        return their ids without waiting for the server. Raises
        :class:`StoreUnavailable` when an earlier write failed."""
        ...

    def acknowledged(self) -> int:
        """The id below which every entry sent so far is durable (without waiting).
        Raises :class:`StoreUnavailable` when a write failed."""
        ...

    def flush(self) -> None:
        """Wait until every entry sent so far is durable. Raises
        :class:`StoreUnavailable` when one is refused or not acknowledged within the
        store's bound (retries included)."""
        ...

    def read(self, marker: int) -> list[tuple[int, Entry]]:
        """Every entry whose id is at least ``marker``, with its id, in id order. An
        entry that cannot be decoded raises :class:`RecordError`; none is skipped."""
        ...

    def end(self) -> int:
        """The id the next appended entry will get (the end of the log)."""
        ...

    def close(self) -> None:
        """Release the client (idempotent). Durable entries stay."""
        ...


class Namespace(Protocol):
    """One run's log."""

    name: str

    def connect(self) -> ActionStateStore:
        """A new client of this namespace's log."""
        ...

    def drop(self) -> None:
        """Delete the log and everything in it (idempotent)."""
        ...


class Backend(Protocol):
    """Where namespaces come from."""

    name: str

    def namespace(self) -> Namespace:
        """A fresh, empty namespace that no other run uses."""
        ...

    def close(self) -> None:
        """Release the clients the backend holds (idempotent); namespaces stay."""
        ...
