"""An in-memory action state store, for tests and as the baseline of the benchmark.

The :class:`MemoryLog` plays the server: it outlives every client, so a crash of the
runtime (which closes its client) loses nothing that was appended. An entry's id is its
index in the log, exactly as in the reference model.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from attrs import define, field

from replay_contract.model.store import Entry

from .store import ActionStateStore, StoreError, StoreStats

_numbers = itertools.count(1)


@define
class MemoryLog:
    """The durable side: a list of entries that only grows."""

    name: str
    entries: list[Entry] = field(factory=list)
    dropped: bool = False


class MemoryStore:
    """A client of a :class:`MemoryLog`."""

    def __init__(self, log: MemoryLog) -> None:
        self._log: MemoryLog | None = log
        self.stats = StoreStats()

    def _open_log(self) -> MemoryLog:
        if self._log is None or self._log.dropped:
            raise StoreError("memory store: the client is closed")
        return self._log

    def append(self, entries: Sequence[Entry]) -> list[int]:
        log = self._open_log()
        start = len(log.entries)
        log.entries.extend(entries)
        self.stats.writes += len(entries)
        self.stats.batches += 1
        self.stats.round_trips += 1
        return list(range(start, start + len(entries)))

    def read(self, marker: int) -> list[tuple[int, Entry]]:
        log = self._open_log()
        found = [(i, log.entries[i]) for i in range(max(marker, 0), len(log.entries))]
        self.stats.reads += len(found)
        self.stats.round_trips += 1
        return found

    def end(self) -> int:
        return len(self._open_log().entries)

    def close(self) -> None:
        self._log = None


class MemoryNamespace:
    def __init__(self, name: str) -> None:
        self.name = name
        self.log = MemoryLog(name)

    def connect(self) -> ActionStateStore:
        if self.log.dropped:
            raise StoreError(f"memory store: namespace {self.name} was dropped")
        return MemoryStore(self.log)

    def drop(self) -> None:
        self.log.dropped = True
        self.log.entries.clear()


class MemoryBackend:
    name = "memory"

    def namespace(self) -> MemoryNamespace:
        return MemoryNamespace(f"memory-{next(_numbers)}")

    def close(self) -> None:
        pass  # holds no client


def backend() -> MemoryBackend:
    """The benchmark's ``memory`` backend."""
    return MemoryBackend()
