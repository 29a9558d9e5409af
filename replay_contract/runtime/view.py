"""The runtime's view of the store: the entries from the recovery marker on, indexed.

The reference model answers every lookup by scanning a
:class:`~replay_contract.model.store.StoreView`. A runtime cannot afford a scan per
action, so :class:`LiveView` keeps the same entries indexed per key and applies each
invalidation as it arrives: an invalidation voids only entries written before it, so
removing what it voids from the live set, in log order, leaves exactly the entries that
:meth:`StoreView.valid` yields. Every query answers what the model's view answers for the
same entries (``tests/runtime/test_view.py`` checks this against ``StoreView``).

*Volatile* invalidations (never written to the store; only a broken contract has them)
join the view at the log position where they were made, before a real entry of the same
id, as in the model.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

from replay_contract.model.agent import Path
from replay_contract.model.store import Completion, Entry, Invalidation, OrderEntry, Recorded
from replay_contract.model.topology import Key

Live: TypeAlias = Completion | OrderEntry
#: A key as a map key that never merges ``1`` and ``"1"``.
KeyName = tuple[str, Key]


def key_name(key: Key) -> KeyName:
    return (type(key).__name__, key)


class _KeyEntries:
    """The live (not voided) entries of one key, by position and by causal path."""

    def __init__(self) -> None:
        self.at: dict[int, list[tuple[int, Live]]] = {}
        self.positions: list[int] = []
        self.by_path: dict[tuple[Path, str, str], list[tuple[int, Completion]]] = {}

    def add(self, index: int, entry: Live) -> None:
        bucket = self.at.get(entry.position)
        if bucket is None:
            bucket = self.at[entry.position] = []
            insort(self.positions, entry.position)
        bucket.append((index, entry))
        if isinstance(entry, Completion):
            self.by_path.setdefault((entry.path, entry.identity, entry.digest), []).append(
                (index, entry)
            )

    def voided(self, inv: Invalidation) -> list[tuple[int, Live]]:
        start = bisect_left(self.positions, inv.position)
        return [(i, e) for p in self.positions[start:] for i, e in self.at[p] if inv.voids(e)]

    def invalidate(self, inv: Invalidation) -> None:
        for index, entry in self.voided(inv):
            bucket = self.at[entry.position]
            bucket.remove((index, entry))
            if not bucket:
                del self.at[entry.position]
                self.positions.remove(entry.position)
            if isinstance(entry, Completion):
                same = self.by_path[(entry.path, entry.identity, entry.digest)]
                same.remove((index, entry))

    def first_from(self, position: int) -> int | None:
        start = bisect_left(self.positions, position)
        return min((self.at[p][0][0] for p in self.positions[start:]), default=None)


class LiveView:
    """The store's entries with id at least the recovery marker, plus the volatile
    invalidations, answering the queries of :class:`~replay_contract.model.store.StoreView`.
    """

    def __init__(self) -> None:
        self.stream: list[tuple[int, Entry]] = []
        self._keys: dict[KeyName, _KeyEntries] = {}
        self._order: list[Key] = []

    @staticmethod
    def build(
        entries: Iterable[tuple[int, Entry]], volatile: Iterable[tuple[int, Invalidation]] = ()
    ) -> LiveView:
        """The view of ``entries`` (in id order) with the volatile invalidations merged in
        at their log positions."""
        view = LiveView()
        merged: list[tuple[int, Entry, bool]] = [(i, e, False) for i, e in entries]
        merged.extend((i, e, True) for i, e in volatile)
        merged.sort(key=lambda item: (item[0], not isinstance(item[1], Invalidation)))
        for index, entry, is_volatile in merged:
            view._apply(index, entry, keep=not is_volatile)
        return view

    def add(self, index: int, entry: Entry) -> None:
        """An entry just appended to the store at ``index``."""
        self._apply(index, entry, keep=True)

    def add_volatile(self, index: int, inv: Invalidation) -> None:
        """An invalidation made now, when the log ends at ``index``, but not written."""
        self._apply(index, inv, keep=False)

    def _apply(self, index: int, entry: Entry, keep: bool) -> None:
        if keep:
            self.stream.append((index, entry))
        name = key_name(entry.key)
        entries = self._keys.get(name)
        if entries is None:
            entries = self._keys[name] = _KeyEntries()
            self._order.append(entry.key)
        if isinstance(entry, Invalidation):
            entries.invalidate(entry)
        else:
            entries.add(index, entry)

    # -- the queries of StoreView ---------------------------------------------------------

    def keys(self) -> list[Key]:
        """Every key with an entry in the view, in order of first appearance."""
        return list(self._order)

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
        """The latest valid completion of ``path`` for this input, if any."""
        entries = self._keys.get(key_name(key))
        if entries is None:
            return None
        for index, c in reversed(entries.by_path.get((path, identity, digest), ())):
            if (position is None or c.position == position) and (reads is None or c.reads == reads):
                return index, c
        return None

    def voided_by(self, inv: Invalidation) -> tuple[int, ...]:
        """The valid completions of ``inv``'s key that ``inv`` would void now."""
        entries = self._keys.get(key_name(inv.key))
        if entries is None:
            return ()
        return tuple(sorted(i for i, e in entries.voided(inv) if isinstance(e, Completion)))

    def recorded_order(self, key: Key, start: int) -> tuple[Recorded, ...]:
        """The key's recorded positions from ``start`` on, while they are contiguous."""
        entries = self._keys.get(key_name(key))
        order: list[Recorded] = []
        position = start
        while entries is not None and position in entries.at:
            recorded = next(
                (
                    e
                    for _, e in reversed(entries.at[position])
                    if isinstance(e, OrderEntry) or e.order
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

    def needed(self, next_position: Callable[[Key], int]) -> int | None:
        """The smallest id of a valid entry whose position its key has not accepted yet
        (what a restore may still need), or ``None``."""
        firsts = (
            entries.first_from(next_position(key))
            for key, entries in zip(self._order, self._keys.values(), strict=True)
        )
        return min((f for f in firsts if f is not None), default=None)
