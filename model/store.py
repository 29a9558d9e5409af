"""The action state store: a log of durable entries and the view that reads it.

Three kinds of entry:

- a :class:`Completion` of one action for one input (what it wrote to memory and
  emitted as output, and the values it read); when ``order`` is set, the same write
  also records the input's position in its key's accepted history;
- an :class:`OrderEntry`, the position of an input recorded on its own;
- an :class:`Invalidation`, which voids the entries of one key written before it at
  or after a position (``keep`` spares the entries of one input at that position).

The log only grows; a later invalidation voids earlier entries, never later ones, so
an invalidation that is durable survives any number of crashes. The model's store is a
frozen tuple; the Kafka and Fluss stores keep the same entries on a real server and
build the same :class:`StoreView` from them on recovery.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from attrs import frozen

from .agent import Path
from .topology import Key, same_key


@frozen
class Completion:
    key: Key
    position: int
    identity: str
    digest: str
    path: Path
    reads: tuple[Any, ...]
    writes: tuple[tuple[str, Any], ...]
    outputs: tuple[str, ...]
    order: bool = False
    channel: str = ""
    offset: int = -1


@frozen
class OrderEntry:
    key: Key
    position: int
    identity: str
    digest: str
    channel: str = ""
    offset: int = -1


@frozen
class Invalidation:
    key: Key
    position: int
    keep: tuple[str, str] | None = None

    def voids(self, entry: Completion | OrderEntry) -> bool:
        if not same_key(entry.key, self.key) or entry.position < self.position:
            return False
        if entry.position > self.position or self.keep is None:
            return True
        return (entry.identity, entry.digest) != self.keep


Entry = Completion | OrderEntry | Invalidation


@frozen
class Recorded:
    """A position of a key's accepted history as the store recorded it."""

    position: int
    identity: str
    digest: str
    channel: str
    offset: int


@frozen
class StoreView:
    """The store's entries from a recovery marker on, indexed by log position.

    Each entry is paired with its index in the log, which is also the identity of a
    completion in a trace.
    """

    entries: tuple[tuple[int, Entry], ...] = ()

    @staticmethod
    def of(log: Iterable[Entry], start: int = 0) -> StoreView:
        return StoreView(tuple((i, e) for i, e in enumerate(log) if i >= start))

    def appended(self, index: int, entry: Entry) -> StoreView:
        return StoreView((*self.entries, (index, entry)))

    def valid(self) -> Iterator[tuple[int, Completion | OrderEntry]]:
        """Entries no later invalidation voids, in log order."""
        invalidations: list[tuple[int, Invalidation]] = []
        for index, entry in reversed(self.entries):
            if isinstance(entry, Invalidation):
                invalidations.append((index, entry))
        for index, entry in self.entries:
            if isinstance(entry, Invalidation):
                continue
            if any(j > index and inv.voids(entry) for j, inv in invalidations):
                continue
            yield index, entry

    def completions(self, key: Key) -> list[tuple[int, Completion]]:
        return [
            (i, e) for i, e in self.valid() if isinstance(e, Completion) and same_key(e.key, key)
        ]

    def find(
        self,
        key: Key,
        path: Path,
        *,
        identity: str,
        digest: str,
        position: int | None = None,
        reads: tuple[Any, ...] | None = None,
    ) -> tuple[int, Completion] | None:
        """The latest valid completion of ``path`` for this input, if any.

        ``position`` restricts the match to that position; ``reads`` to completions
        that read those values.
        """
        found = None
        for index, c in self.completions(key):
            if (
                c.path == path
                and c.identity == identity
                and c.digest == digest
                and (position is None or c.position == position)
                and (reads is None or c.reads == reads)
            ):
                found = (index, c)
        return found

    def recorded_order(self, key: Key, start: int) -> tuple[Recorded, ...]:
        """The key's recorded positions from ``start`` on, while they are contiguous."""
        by_position: dict[int, Recorded] = {}
        for _, e in self.valid():
            if not same_key(e.key, key):
                continue
            if isinstance(e, OrderEntry) or (isinstance(e, Completion) and e.order):
                by_position[e.position] = Recorded(
                    e.position, e.identity, e.digest, e.channel, e.offset
                )
        order = []
        position = start
        while position in by_position:
            order.append(by_position[position])
            position += 1
        return tuple(order)

    def keys(self) -> list[Key]:
        keys: list[Key] = []
        for _, e in self.entries:
            if not any(same_key(e.key, k) for k in keys):
                keys.append(e.key)
        return keys

    def voided_by(self, inv: Invalidation, every_key: bool = False) -> tuple[int, ...]:
        """Completions that ``inv`` would void now (of every key when ``every_key``)."""
        voided = []
        for index, entry in self.valid():
            if not isinstance(entry, Completion):
                continue
            probe = Invalidation(entry.key, inv.position, inv.keep) if every_key else inv
            if probe.voids(entry):
                voided.append(index)
        return tuple(voided)
