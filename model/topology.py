"""Topologies: keys, records and the upstream channels that carry them."""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from typing import Any

from attrs import field, frozen

#: A business key: a string or an integer (never a bool or a float). ``1`` and ``"1"``
#: are different keys.
Key = str | int

#: A record payload: any JSON value.
Payload = Any


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_C_ENCODER = getattr(json.encoder, "c_make_encoder", None)
_C_STRING = getattr(json.encoder, "c_encode_basestring", None)


def canonical(value: Any) -> str:
    """Canonical JSON text of a value: the form every digest is taken over.

    The text of ``_CANONICAL.encode(value)``, made by the encoder that call builds (the
    C one, where there is one) without the call's own overhead: every input takes
    several digests, and the runtime's cost per input is what its throughput is."""
    if _C_ENCODER is None or _C_STRING is None:  # pragma: no cover (CPython has them)
        return _CANONICAL.encode(value)
    encode = _C_ENCODER({}, _CANONICAL.default, _C_STRING, None, ":", ",", True, False, True)
    return "".join(encode(value, 0))


def digest(value: Any, size: int = 12) -> str:
    """A short, deterministic digest of a JSON value."""
    return hashlib.sha256(canonical(value).encode()).hexdigest()[:size]


def key_text(key: Key) -> str:
    """How a key prints in tables: strings quoted only when they would read as numbers."""
    if isinstance(key, int):
        return str(key)
    return repr(key) if key.lstrip("-").isdigit() or key == "" else key


@frozen
class Replay:
    """What a non-replayable channel does with a record when it is delivered again.

    ``lost``: the record never comes back. Otherwise the record comes back with
    ``payload`` instead of its original payload.
    """

    lost: bool = False
    payload: Payload = None


@frozen
class Record:
    """One input record: its identity, business key and payload.

    ``channel`` and ``offset`` say where it sits upstream; a record's identity is unique
    within a scenario.
    """

    identity: str
    key: Key
    payload: Payload
    channel: str
    offset: int
    replay: Replay | None = None

    @cached_property
    def digest(self) -> str:
        """The digest of the input as delivered: identity and payload."""
        return digest([self.identity, self.payload])

    def replayed(self) -> Record:
        """The record as a non-replayable channel delivers it again."""
        if self.replay is None or self.replay.lost:
            return self
        return Record(self.identity, self.key, self.replay.payload, self.channel, self.offset)


@frozen
class Channel:
    """An upstream instance: an ordered list of records.

    A replayable channel re-delivers the same records in the same order after a restore.
    A channel that is not replayable may lose records or change them on re-delivery
    (see :class:`Replay`).
    """

    name: str
    records: tuple[Record, ...]
    replayable: bool = True


@frozen
class Topology:
    """The upstream channels of one keyed operator."""

    channels: tuple[Channel, ...]
    _by_name: dict[str, Channel] = field(init=False, eq=False, repr=False, hash=False)
    _by_identity: dict[str, Record] = field(init=False, eq=False, repr=False, hash=False)

    @_by_name.default
    def _index_channels(self) -> dict[str, Channel]:
        by_name: dict[str, Channel] = {}
        for channel in self.channels:
            by_name.setdefault(channel.name, channel)
        return by_name

    @_by_identity.default
    def _index_records(self) -> dict[str, Record]:
        by_identity: dict[str, Record] = {}
        for channel in self.channels:
            for record in channel.records:
                by_identity.setdefault(record.identity, record)
        return by_identity

    def channel(self, name: str) -> Channel:
        return self._by_name[name]

    def record(self, identity: str) -> Record:
        return self._by_identity[identity]

    @property
    def records(self) -> tuple[Record, ...]:
        return tuple(r for channel in self.channels for r in channel.records)

    @property
    def keys(self) -> tuple[Key, ...]:
        seen: list[Key] = []
        for record in self.records:
            if not any(same_key(record.key, k) for k in seen):
                seen.append(record.key)
        return tuple(seen)


def same_key(a: Key, b: Key) -> bool:
    """Key equality that never confuses ``1`` with ``"1"``."""
    return type(a) is type(b) and a == b
