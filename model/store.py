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

from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, pairwise
from typing import Any, overload

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


class RecordedOrder(Sequence[Recorded]):
    """The recorded positions a recovering key still expects, in position order.

    A recovery only ever drops the head (the input re-accepted) or a tail (from a
    position given up on), so each value is a slice of the order read from the store at
    the restore, and every slice shares that order's index by channel: the split-order
    rule's question (the first expected input of a channel, before an offset, that has
    not arrived) is then answered without a scan of everything still expected.
    """

    __slots__ = ("_by_channel", "_hi", "_items", "_lo")

    def __init__(self, items: Iterable[Recorded] = ()) -> None:
        self._items = tuple(items)
        self._lo, self._hi = 0, len(self._items)
        self._by_channel: dict[str, tuple[list[int], list[int], bool]] | None = None

    def _slice(self, lo: int, hi: int) -> RecordedOrder:
        view = RecordedOrder.__new__(RecordedOrder)
        view._items, view._lo, view._hi = self._items, lo, max(lo, hi)
        view._by_channel = self._index()
        return view

    def _index(self) -> dict[str, tuple[list[int], list[int], bool]]:
        """Per channel: the indexes of its inputs in the order, their offsets, and
        whether the offsets grow with the position (a channel delivers in order)."""
        if self._by_channel is None:
            by_channel: dict[str, tuple[list[int], list[int], bool]] = {}
            for i, r in enumerate(self._items):
                indexes, offsets, _ = by_channel.setdefault(r.channel, ([], [], True))
                indexes.append(i)
                offsets.append(r.offset)
            self._by_channel = {
                name: (indexes, offsets, all(a < b for a, b in pairwise(offsets)))
                for name, (indexes, offsets, _) in by_channel.items()
            }
        return self._by_channel

    def __len__(self) -> int:
        return self._hi - self._lo

    @overload
    def __getitem__(self, index: int) -> Recorded: ...

    @overload
    def __getitem__(self, index: slice) -> RecordedOrder: ...

    def __getitem__(self, index: int | slice) -> Recorded | RecordedOrder:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                raise ValueError("a recorded order is sliced with step 1")
            return self._slice(self._lo + start, self._lo + stop)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("recorded order index out of range")
        return self._items[self._lo + index]

    def __iter__(self) -> Iterator[Recorded]:
        return iter(self._items[self._lo : self._hi])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RecordedOrder):
            return tuple(self) == tuple(other)
        if isinstance(other, tuple):
            return tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"RecordedOrder({list(self)!r})"

    def before(self, position: int) -> RecordedOrder:
        """The positions before ``position``."""
        cut = self._lo
        while cut < self._hi and self._items[cut].position < position:
            cut += 1
        return self._slice(self._lo, cut)

    def first_missing(self, channel: str, offset: int, arrived: set[str]) -> Recorded | None:
        """The first expected input (in position order) of ``channel`` whose offset is
        below ``offset`` and whose identity has not ``arrived``."""
        found = self._index().get(channel)
        if found is None:
            return None
        indexes, offsets, in_order = found
        for at in range(bisect_left(indexes, self._lo), len(indexes)):
            i = indexes[at]
            if i >= self._hi:
                break
            if offsets[at] >= offset:
                if in_order:
                    break  # every later input of the channel has a larger offset
                continue
            if self._items[i].identity not in arrived:
                return self._items[i]
        return None


@frozen
class Lookup:
    """What a saved completion is looked up by (the contract's ``match``): the action's
    causal path and the input's identity and digest, and the input's ``position`` or
    the values the action ``reads`` when the contract matches on them."""

    path: Path
    identity: str
    digest: str
    position: int | None = None
    reads: tuple[Any, ...] | None = None

    def matches(self, c: Completion) -> bool:
        return (
            c.path == self.path
            and c.identity == self.identity
            and c.digest == self.digest
            and (self.position is None or c.position == self.position)
            and (self.reads is None or c.reads == self.reads)
        )


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

    def find(self, key: Key, lookup: Lookup) -> tuple[int, Completion] | None:
        """The latest valid completion of the key that ``lookup`` matches, if any."""
        found = None
        for index, c in self.completions(key):
            if lookup.matches(c):
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

    def needed(self, next_position: Callable[[Key], int]) -> int | None:
        """The smallest index of a valid entry whose position its key has not accepted
        yet (what a restore from a checkpoint taken now may still need), or ``None``."""
        return min((i for i, e in self.valid() if e.position >= next_position(e.key)), default=None)


# -- the same view, indexed -----------------------------------------------------------------
#
# :class:`StoreView` answers each query by scanning the log: clear, and quadratic over a
# run. :class:`LogIndex` keeps the same entries indexed per key and applies each
# invalidation as it is appended (an invalidation voids only entries written before it,
# so removing what it voids from the live set, in log order, leaves exactly the entries
# that :meth:`StoreView.valid` yields); :class:`IndexedView` reads it from a recovery
# marker on. An invalidation before the marker voids only entries before the marker, so
# one index over the whole log serves every marker. ``tests/model/test_store_index.py``
# checks every query against :class:`StoreView`.

_Live = Completion | OrderEntry
_KeyName = tuple[str, Key]


def _name(key: Key) -> _KeyName:
    return (type(key).__name__, key)


class KeyEntries:
    """The live (not voided) entries of one key, by position and by causal path, and the
    log index of every entry of the key (invalidations included). The model's
    :class:`IndexedView` and the runtime's live view (``replay_contract.runtime.view``)
    both answer their lookups from it; ``marker`` leaves out the entries before a
    recovery marker."""

    def __init__(self) -> None:
        self.at: dict[int, list[tuple[int, _Live]]] = {}
        self.positions: list[int] = []
        self.by_path: dict[tuple[Path, str, str], list[tuple[int, Completion]]] = {}
        self.indexes: list[int] = []

    def add(self, index: int, entry: _Live) -> None:
        bucket = self.at.get(entry.position)
        if bucket is None:
            bucket = self.at[entry.position] = []
            if self.positions and entry.position < self.positions[-1]:
                insort(self.positions, entry.position)
            else:
                self.positions.append(entry.position)
        bucket.append((index, entry))
        if isinstance(entry, Completion):
            self.by_path.setdefault((entry.path, entry.identity, entry.digest), []).append(
                (index, entry)
            )

    def voided(self, inv: Invalidation, marker: int = 0) -> list[tuple[int, _Live]]:
        start = bisect_left(self.positions, inv.position)
        return [
            (i, e)
            for p in self.positions[start:]
            for i, e in self.at[p]
            if i >= marker and inv.voids(e)
        ]

    def invalidate(self, inv: Invalidation) -> None:
        for index, entry in self.voided(inv):
            bucket = self.at[entry.position]
            bucket.remove((index, entry))
            if not bucket:
                del self.at[entry.position]
                self.positions.remove(entry.position)
            if isinstance(entry, Completion):
                self.by_path[(entry.path, entry.identity, entry.digest)].remove((index, entry))

    def first_from(self, position: int, marker: int = 0) -> int | None:
        start = bisect_left(self.positions, position)
        return min(
            (i for p in self.positions[start:] for i, _ in self.at[p] if i >= marker),
            default=None,
        )

    def find(self, lookup: Lookup, marker: int = 0) -> tuple[int, Completion] | None:
        """The latest live completion ``lookup`` matches."""
        for index, c in reversed(
            self.by_path.get((lookup.path, lookup.identity, lookup.digest), ())
        ):
            if index < marker:
                return None
            if lookup.matches(c):
                return index, c
        return None

    def recorded_from(self, start: int, marker: int = 0) -> tuple[Recorded, ...]:
        """The key's recorded positions from ``start`` on, while they are contiguous."""
        order: list[Recorded] = []
        position = start
        while position in self.at:
            recorded = next(
                (
                    e
                    for i, e in reversed(self.at[position])
                    if i >= marker and (isinstance(e, OrderEntry) or e.order)
                ),
                None,
            )
            if recorded is None:
                break
            order.append(
                Recorded(
                    recorded.position,
                    recorded.identity,
                    recorded.digest,
                    recorded.channel,
                    recorded.offset,
                )
            )
            position += 1
        return tuple(order)


class LogIndex:
    """The live entries of a log, indexed; :meth:`add` appends the next entry."""

    def __init__(self) -> None:
        self.length = 0
        self.keys: dict[_KeyName, KeyEntries] = {}

    def add(self, entry: Entry) -> None:
        index, self.length = self.length, self.length + 1
        name = _name(entry.key)
        entries = self.keys.get(name)
        if entries is None:
            entries = self.keys[name] = KeyEntries()
        entries.indexes.append(index)
        if isinstance(entry, Invalidation):
            entries.invalidate(entry)
        else:
            entries.add(index, entry)


@frozen
class IndexedView:
    """What :class:`StoreView` answers for the log's entries from ``marker`` on, read
    from a :class:`LogIndex` of that log."""

    index: LogIndex
    marker: int

    def keys(self) -> list[Key]:
        firsts = []
        for (_, key), entries in self.index.keys.items():
            at = bisect_left(entries.indexes, self.marker)
            if at < len(entries.indexes):
                firsts.append((entries.indexes[at], key))
        return [key for _, key in sorted(firsts, key=lambda pair: pair[0])]

    def find(self, key: Key, lookup: Lookup) -> tuple[int, Completion] | None:
        entries = self.index.keys.get(_name(key))
        return None if entries is None else entries.find(lookup, self.marker)

    def voided_by(self, inv: Invalidation) -> tuple[int, ...]:
        entries = self.index.keys.get(_name(inv.key))
        if entries is None:
            return ()
        return tuple(
            sorted(i for i, e in entries.voided(inv, self.marker) if isinstance(e, Completion))
        )

    def recorded_order(self, key: Key, start: int) -> tuple[Recorded, ...]:
        entries = self.index.keys.get(_name(key))
        return () if entries is None else entries.recorded_from(start, self.marker)

    def needed(self, next_position: Callable[[Key], int]) -> int | None:
        firsts = (
            entries.first_from(next_position(key), self.marker)
            for (_, key), entries in self.index.keys.items()
        )
        return min((f for f in firsts if f is not None), default=None)


class _Indexes:
    """The index of the log a run last extended, so that each step of a run extends it
    instead of indexing the whole log again.

    The index covers ``log`` followed by ``tail``. A request for a log that begins with
    those entries extends the index with the rest; any other log (another branch of an
    exploration, a crash that cut the step's writes) is indexed from scratch.

    Whether a longer log begins with ``log`` is asked of its last entry only: the
    operator creates every entry in one step and appends it once, to the log of that
    step's world, so two logs holding the very same entry object at the same index agree
    on everything before it.
    """

    def __init__(self) -> None:
        self.log: Sequence[Entry] = ()
        self.tail: list[Entry] = []
        self.index = LogIndex()

    def view(self, log: Sequence[Entry], tail: list[Entry], marker: int) -> IndexedView:
        base, covered = len(self.log), len(self.log) + len(self.tail)
        extends = (
            len(log) + len(tail) >= covered
            and len(log) >= base
            and (log is self.log or base == 0 or log[base - 1] is self.log[-1])
            and list(chain(log[base:], tail))[: len(self.tail)] == self.tail
        )
        if not extends:
            self.index, covered = LogIndex(), 0
        for entry in chain(log[covered:], tail[max(0, covered - len(log)) :]):
            self.index.add(entry)
        self.log, self.tail = log, list(tail)
        return IndexedView(self.index, marker)


_INDEXES = _Indexes()


def view_of(
    log: Sequence[Entry],
    tail: list[Entry],
    marker: int,
    volatile: tuple[tuple[int, Invalidation], ...] = (),
) -> StoreView | IndexedView:
    """The view from ``marker`` on of the log ``log`` followed by ``tail``, with the
    volatile invalidations (each with the log length when it was made) merged in.

    Without volatile invalidations the view is read from an index the run keeps
    extending; with them (only a broken contract has them, and a restore may drop them)
    it is the scanning :class:`StoreView`.
    """
    if not volatile:
        return _INDEXES.view(log, tail, marker)
    entries: list[tuple[int, Entry]] = [(i, e) for i, e in enumerate((*log, *tail)) if i >= marker]
    entries.extend(volatile)
    entries.sort(key=lambda pair: (pair[0], not isinstance(pair[1], Invalidation)))
    return StoreView(tuple(entries))
