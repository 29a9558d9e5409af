"""Keyed state, checkpoints and the storage that keeps them.

The runtime's keyed state is the mutable one the contract's rules change
(:class:`~replay_contract.model.keyed.KeyState`, one per key). A checkpoint is a
snapshot of all of it, waiting inputs included, together with the store's recovery
marker and the volatile invalidations, serialised to JSON bytes: a restore decodes the
bytes into fresh objects, so nothing of the running state can leak through a crash.
:class:`CheckpointStorage` plays the durable checkpoint storage (it outlives the runtime's
in-memory state).

A checkpoint encodes again only the keys whose state may have changed since the last
one (the runtime names them; the others keep their encoding from the checkpoint before),
as an incremental snapshot does: with many keys and few inputs between checkpoints,
encoding every key at every checkpoint was most of the runtime's cost. The bytes are
those of a full encoding.
"""

from __future__ import annotations

import json
from typing import Any

from attrs import define

from replay_contract.model.keyed import KeyState
from replay_contract.model.store import Invalidation, Recorded, RecordedOrder
from replay_contract.model.topology import Record

from .view import KeyName, key_name

#: Version of the snapshot format.
SNAPSHOT_VERSION = 1


@define
class Snapshot:
    """One checkpoint: its number, the recovery marker, keyed state, volatile
    invalidations (each with the log position where it was made)."""

    number: int
    marker: int
    keys: dict[KeyName, KeyState]
    volatile: list[tuple[int, Invalidation]]

    def to_bytes(self, encoded: dict[KeyName, str] | None = None) -> bytes:
        """The snapshot's bytes; ``encoded`` holds the JSON text of keys whose state is
        known to equal it (the others are encoded now)."""
        encoded = encoded or {}
        keys = ",".join(
            encoded.get(name) or _dumps(_key_state_json(ks)) for name, ks in self.keys.items()
        )
        head = {"version": SNAPSHOT_VERSION, "number": self.number, "marker": self.marker}
        volatile = [[i, _invalidation_json(inv)] for i, inv in self.volatile]
        text = f'{_dumps(head)[:-1]},"keys":[{keys}],"volatile":{_dumps(volatile)}}}'
        return text.encode()

    @staticmethod
    def from_bytes(raw: bytes) -> Snapshot:
        data = json.loads(raw)
        if data.get("version") != SNAPSHOT_VERSION:
            raise ValueError(f"snapshot version {data.get('version')!r} is not {SNAPSHOT_VERSION}")
        states = [_key_state(d) for d in data["keys"]]
        return Snapshot(
            number=data["number"],
            marker=data["marker"],
            keys={key_name(ks.key): ks for ks in states},
            volatile=[(i, _invalidation(d)) for i, d in data["volatile"]],
        )


class CheckpointStorage:
    """Completed checkpoints, kept outside the runtime's in-memory state."""

    def __init__(self) -> None:
        self._latest: bytes | None = None
        #: The JSON text of each key's state in the latest snapshot.
        self._keys: dict[KeyName, str] = {}

    def save(self, snapshot: Snapshot, changed: set[KeyName] | None = None) -> None:
        """Keep ``snapshot`` as the latest. ``changed``: the keys whose state may differ
        from the latest snapshot's (every key of a state restored from it that was not
        touched since is the same); ``None``: any key may differ."""
        reuse = {} if changed is None else {n: t for n, t in self._keys.items() if n not in changed}
        self._keys = {
            name: reuse.get(name) or _dumps(_key_state_json(ks))
            for name, ks in snapshot.keys.items()
        }
        self._latest = snapshot.to_bytes(self._keys)

    def latest(self) -> Snapshot | None:
        return None if self._latest is None else Snapshot.from_bytes(self._latest)


# -- JSON forms -------------------------------------------------------------------------


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def record_json(r: Record) -> dict[str, Any]:
    """A record as JSON (the form keyed state and the live job keep it in)."""
    return {
        "id": r.identity,
        "key": r.key,
        "payload": r.payload,
        "channel": r.channel,
        "offset": r.offset,
    }


def record_of(d: dict[str, Any]) -> Record:
    return Record(d["id"], d["key"], d["payload"], d["channel"], d["offset"])


def _recorded_json(r: Recorded) -> list[Any]:
    return [r.position, r.identity, r.digest, r.channel, r.offset]


def _key_state_json(ks: KeyState) -> dict[str, Any]:
    return {
        "key": ks.key,
        "next": ks.next_position,
        "memory": ks.memory,
        "waiting": [record_json(r) for r in ks.waiting],
        "expected": [_recorded_json(r) for r in ks.expected],
        "diverge_at": ks.diverge_at,
    }


def _key_state(d: dict[str, Any]) -> KeyState:
    return KeyState(
        d["key"],
        d["next"],
        dict(d["memory"]),
        [record_of(r) for r in d["waiting"]],
        RecordedOrder(Recorded(*r) for r in d["expected"]),
        d["diverge_at"],
    )


def _invalidation_json(inv: Invalidation) -> dict[str, Any]:
    return {
        "key": inv.key,
        "position": inv.position,
        "keep": list(inv.keep) if inv.keep is not None else None,
    }


def _invalidation(d: dict[str, Any]) -> Invalidation:
    keep = d["keep"]
    return Invalidation(d["key"], d["position"], (keep[0], keep[1]) if keep else None)
