"""The host interface the contract's rules run against, and the keyed state they change.

The rules (:mod:`.reuse`, :mod:`.recovery`, :mod:`.fallback`) are written once. Two hosts
run them: the reference model's operator (:mod:`.operator`, over a frozen world) and the
Kafka/Fluss runtime (``replay_contract.runtime.operator``, over a real store). A host
gives the rules a key's state, a view of the store, durable writes, tool calls and
outputs, and hears every trace event; what is its own (I/O, the live store view, crash
handling) stays with it.
"""

from __future__ import annotations

from typing import Any, Protocol

from attrs import define, field

from . import trace as t
from .agent import Agent, Path
from .contracts import Contract
from .store import Completion, Entry, Invalidation, Lookup, Recorded, RecordedOrder
from .topology import Key, Record


@define
class KeyState:
    """What the operator keeps for one key (checkpointed keyed state), as the rules
    change it during a step."""

    key: Key
    next_position: int = 0
    memory: dict[str, Any] = field(factory=dict)
    waiting: list[Record] = field(factory=list)
    expected: RecordedOrder = field(factory=RecordedOrder)
    diverge_at: int | None = None

    @property
    def recovering(self) -> bool:
        return bool(self.expected or self.waiting or self.diverge_at is not None)


class View(Protocol):
    """The queries the rules ask of the store (from the recovery marker on)."""

    def find(self, key: Key, lookup: Lookup) -> tuple[int, Completion] | None: ...

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
