"""The host interface the contract's rules run against, and the keyed state they change.

The rules (:mod:`.reuse`, :mod:`.recovery`, :mod:`.fallback`) are written once. Two hosts
run them: the reference model's operator (:mod:`.operator`, over a frozen world) and the
Kafka/Fluss runtime (``replay_contract.runtime.operator``, over a real store). A host
gives the rules a key's state, a view of the store, durable writes, tool calls and
outputs, and hears every trace event; what is its own (I/O, the live store view, crash
handling) stays with it.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from attrs import define, field

from . import trace as t
from .agent import Agent, Path
from .contracts import Contract
from .store import Completion, Entry, Invalidation, Recorded
from .topology import Key, Record


class Expected:
    """The recorded positions a recovering key still expects, in position order.

    Besides the head (the next position to re-accept), the split-order rule asks for the
    first expected input of one channel that comes before a given offset of that channel
    and has not arrived. An index by channel answers that without a scan of everything
    still expected, so a recovery stays linear in the inputs it replays.
    """

    def __init__(self, items: Iterable[Recorded] = ()) -> None:
        self._items: deque[Recorded] = deque(items)
        self._live: set[int] = {r.position for r in self._items}
        self._by_channel: dict[str, list[tuple[int, int, Recorded]]] = {}
        for r in self._items:
            insort(self._by_channel.setdefault(r.channel, []), (r.offset, r.position, r))

    def __bool__(self) -> bool:
        return bool(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Recorded]:
        return iter(self._items)

    @property
    def head(self) -> Recorded:
        return self._items[0]

    def pop_head(self) -> Recorded:
        head = self._items.popleft()
        self._live.discard(head.position)
        return head

    def keep_before(self, position: int) -> None:
        """Drop every expected position from ``position`` on."""
        while self._items and self._items[-1].position >= position:
            self._live.discard(self._items.pop().position)

    def first_missing(self, channel: str, offset: int, arrived: set[str]) -> Recorded | None:
        """The expected input of ``channel`` first in position order whose offset is below
        ``offset`` and whose identity has not ``arrived``."""
        entries = self._by_channel.get(channel, [])
        while entries and entries[0][1] not in self._live:
            entries.pop(0)  # re-accepted or dropped: gone for good
        end = bisect_left(entries, (offset,))
        missing = [
            r
            for _, position, r in entries[:end]
            if position in self._live and r.identity not in arrived
        ]
        return min(missing, key=lambda r: r.position, default=None)


@define
class KeyState:
    """What the operator keeps for one key (checkpointed keyed state), as the rules
    change it during a step."""

    key: Key
    next_position: int = 0
    memory: dict[str, Any] = field(factory=dict)
    waiting: list[Record] = field(factory=list)
    expected: Expected = field(factory=Expected)
    diverge_at: int | None = None

    @property
    def recovering(self) -> bool:
        return bool(self.expected or self.waiting or self.diverge_at is not None)


class View(Protocol):
    """The queries the rules ask of the store (from the recovery marker on)."""

    def find(
        self,
        key: Key,
        path: Path,
        *,
        identity: str,
        digest: str,
        position: int | None = None,
        reads: tuple[Any, ...] | None = None,
    ) -> tuple[int, Completion] | None: ...

    def voided_by(self, inv: Invalidation) -> tuple[int, ...]: ...

    def keys(self) -> list[Key]: ...

    def recorded_order(self, key: Key, start: int) -> tuple[Recorded, ...]: ...


class Host(Protocol):
    """What the rules need of the operator that runs them."""

    @property
    def contract(self) -> Contract: ...

    @property
    def agent(self) -> Agent: ...

    def state(self, key: Key) -> KeyState:
        """The key's state, created empty on first use; the same object for the step."""
        ...

    def known_keys(self) -> list[Key]:
        """Every key with keyed state."""
        ...

    def view(self) -> View: ...

    def report(self, event: t.Event) -> None:
        """A trace event (after the effect it reports has happened)."""
        ...

    def write(self, entry: Entry) -> int:
        """Append ``entry`` to the store durably; its index in the log."""
        ...

    def invalidate_in_memory(self, inv: Invalidation) -> None:
        """Keep an invalidation in operator state only (a contract without durable
        invalidation)."""
        ...

    def tool(
        self, key: Key, position: int, record: Record, path: Path, tool: str, reads: tuple[Any, ...]
    ) -> Any:
        """Call a tool (and report it); its result."""
        ...

    def output(self, key: Key, identity: str, path: Path, value: Any) -> None:
        """Emit an output (and report it)."""
        ...
