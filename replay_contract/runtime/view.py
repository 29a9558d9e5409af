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

from collections.abc import Callable, Iterable

from replay_contract.model.store import (
    Completion,
    Entry,
    Invalidation,
    KeyEntries,
    Lookup,
    Recorded,
)
from replay_contract.model.topology import Key

#: A key as a map key that never merges ``1`` and ``"1"``.
KeyName = tuple[str, Key]


def key_name(key: Key) -> KeyName:
    return (type(key).__name__, key)


class LiveView:
    """The store's entries with id at least the recovery marker, plus the volatile
    invalidations, answering the queries of :class:`~replay_contract.model.store.StoreView`.
    """

    def __init__(self) -> None:
        self.stream: list[tuple[int, Entry]] = []
        self._keys: dict[KeyName, KeyEntries] = {}
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
            entries = self._keys[name] = KeyEntries()
            self._order.append(entry.key)
        if isinstance(entry, Invalidation):
            entries.invalidate(entry)
        else:
            entries.add(index, entry)

    # -- the queries of StoreView ---------------------------------------------------------

    def keys(self) -> list[Key]:
        """Every key with an entry in the view, in order of first appearance."""
        return list(self._order)

    def find(self, key: Key, lookup: Lookup) -> tuple[int, Completion] | None:
        """The latest valid completion of the key that ``lookup`` matches, if any."""
        entries = self._keys.get(key_name(key))
        return None if entries is None else entries.find(lookup)

    def voided_by(self, inv: Invalidation) -> tuple[int, ...]:
        """The valid completions of ``inv``'s key that ``inv`` would void now."""
        entries = self._keys.get(key_name(inv.key))
        if entries is None:
            return ()
        return tuple(sorted(i for i, e in entries.voided(inv) if isinstance(e, Completion)))

    def recorded_order(self, key: Key, start: int) -> tuple[Recorded, ...]:
        """The key's recorded positions from ``start`` on, while they are contiguous."""
        entries = self._keys.get(key_name(key))
        return () if entries is None else entries.recorded_from(start)

    def needed(self, next_position: Callable[[Key], int]) -> int | None:
        """The smallest id of a valid entry whose position its key has not accepted yet
        (what a restore may still need), or ``None``."""
        firsts = (
            entries.first_from(next_position(key))
            for key, entries in zip(self._order, self._keys.values(), strict=True)
        )
        return min((f for f in firsts if f is not None), default=None)
