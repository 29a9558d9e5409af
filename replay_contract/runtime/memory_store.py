"""An in-memory action state store, for tests and as the baseline of the benchmark.

The :class:`MemoryLog` plays the server: it outlives every client, so a crash of the
runtime (which closes its client) loses nothing that was appended. An entry's id is its
index in the log, exactly as in the reference model.

``lag`` plays the time a write spends in flight: a client holds up to that many sent
entries before they reach the log (all of them on ``flush``). A client closed with
entries in flight loses them, as a crash of a real client may.
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

    def __init__(self, log: MemoryLog, lag: int = 0) -> None:
        self._log: MemoryLog | None = log
        self.lag = lag
        self._in_flight: list[Entry] = []
        self.stats = StoreStats()

    def _open_log(self) -> MemoryLog:
        if self._log is None or self._log.dropped:
            raise StoreError("memory store: the client is closed")
        return self._log

    def append(self, entries: Sequence[Entry]) -> list[int]:
        ids = self.send(entries)
        self.flush()
        return ids

    def send(self, entries: Sequence[Entry]) -> list[int]:
        start = self.end()
        self._in_flight.extend(entries)
        self.stats.writes += len(entries)
        self.stats.batches += 1
        if len(self._in_flight) > self.lag:
            self._land(len(self._in_flight) - self.lag)
        return list(range(start, start + len(entries)))

    def _land(self, count: int) -> None:
        log = self._open_log()
        log.entries.extend(self._in_flight[:count])
        del self._in_flight[:count]
        self.stats.round_trips += 1

    def acknowledged(self) -> int:
        return len(self._open_log().entries)

    def flush(self) -> None:
        if self._in_flight:
            self._land(len(self._in_flight))

    def read(self, marker: int) -> list[tuple[int, Entry]]:
        log = self._open_log()
        found = [(i, log.entries[i]) for i in range(max(marker, 0), len(log.entries))]
        self.stats.reads += len(found)
        self.stats.round_trips += 1
        return found

    def end(self) -> int:
        return len(self._open_log().entries) + len(self._in_flight)

    def close(self) -> None:
        self._log, self._in_flight = None, []


class MemoryNamespace:
    def __init__(self, name: str, lag: int = 0) -> None:
        self.name, self.lag = name, lag
        self.log = MemoryLog(name)

    def connect(self) -> ActionStateStore:
        if self.log.dropped:
            raise StoreError(f"memory store: namespace {self.name} was dropped")
        return MemoryStore(self.log, self.lag)

    def drop(self) -> None:
        self.log.dropped = True
        self.log.entries.clear()


class MemoryBackend:
    """Memory namespaces; ``lag`` entries of each client stay in flight (see above)."""

    name = "memory"

    def __init__(self, lag: int = 0) -> None:
        self.lag = lag

    def namespace(self) -> MemoryNamespace:
        return MemoryNamespace(f"memory-{next(_numbers)}", self.lag)

    def close(self) -> None:
        pass  # holds no client


def backend() -> MemoryBackend:
    """The benchmark's ``memory`` backend."""
    return MemoryBackend()
