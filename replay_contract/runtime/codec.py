"""Store records: an injective key encoding and a versioned value schema.

Record keys
    A record key is a sequence of typed, length-prefixed fields: ``s<n>:<utf-8 bytes>`` for
    a string, ``i<n>:<decimal>`` for an integer, ``n`` for none. The form is decodable
    (:func:`decode_fields` inverts :func:`encode_fields`), hence injective: a business key
    holding the separator, the empty key, a non-ASCII key, and ``1`` next to ``"1"`` all
    get different bytes, and no prefix of one field sequence is another's.

    Which fields a record key has decides what log compaction may merge, so each kind of
    entry is keyed by every field that a lookup or an invalidation distinguishes:

    - a completion by business key, position, input identity and digest, causal path and
      the values it read. Two completions with the same record key are interchangeable
      for every query, and the later one is voided only when the earlier one is too, so
      keeping the later one alone changes no answer;
    - an order entry by business key, position, identity and digest (two inputs recorded
      at one position after a divergence never merge);
    - an invalidation by business key, position and the input it spares. A later
      invalidation with the same record key voids a superset of what the earlier one
      voided (the same predicate over a longer prefix of the log), so compaction keeps
      one that is at least as strong: an invalidation is never compacted away before
      what it voids.

    No record is ever a tombstone, so compaction only ever drops a record for a later one
    with the same key.

Record values
    UTF-8 JSON objects with ``"schema": 1`` and ``"kind"``; keys travel as JSON (an
    integer stays an integer). :func:`decode` checks the version, every field's type, and
    that the record key is the one the value implies.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from replay_contract.model.store import Completion, Entry, Invalidation, OrderEntry
from replay_contract.model.topology import Key, canonical

#: Version of the record value schema (and of the record key layout).
SCHEMA = 1
_KEY_TAG = f"rc{SCHEMA}"

Field = str | int | None


class DecodeError(ValueError):
    """A record that is not a valid store record; the message says what is wrong."""


# -- record keys ------------------------------------------------------------------------


def encode_fields(fields: Sequence[Field]) -> bytes:
    out: list[bytes] = []
    for f in fields:
        if f is None:
            out.append(b"n")
        elif type(f) is str:
            data = f.encode("utf-8")
            out.append(b"s%d:%s" % (len(data), data))
        elif type(f) is int or (isinstance(f, int) and not isinstance(f, bool)):
            text = str(f).encode()
            out.append(b"i%d:%s" % (len(text), text))
        elif isinstance(f, bool):
            raise TypeError("a bool is not a key field")
        elif isinstance(f, str):
            data = f.encode("utf-8")
            out.append(b"s%d:%s" % (len(data), data))
        else:
            raise TypeError(f"cannot encode {type(f).__name__} as a key field")
    return b"".join(out)


def decode_fields(raw: bytes) -> list[Field]:
    fields: list[Field] = []
    i = 0
    while i < len(raw):
        tag = raw[i : i + 1]
        if tag == b"n":
            fields.append(None)
            i += 1
            continue
        colon = raw.find(b":", i + 1)
        if tag not in (b"s", b"i") or colon < 0 or not raw[i + 1 : colon].isdigit():
            raise DecodeError(f"malformed record key at byte {i}")
        size = int(raw[i + 1 : colon])
        body = raw[colon + 1 : colon + 1 + size]
        if len(body) != size:
            raise DecodeError(f"record key field at byte {i} is cut short")
        try:
            fields.append(body.decode("utf-8") if tag == b"s" else int(body))
        except ValueError as exc:
            raise DecodeError(f"record key field at byte {i}: {exc}") from None
        i = colon + 1 + size
    return fields


def business_key(key: Key) -> bytes:
    """The injective bytes of a business key alone."""
    return encode_fields([key])


def record_key(entry: Entry) -> bytes:
    """The record key of an entry (see the module docstring for what it includes)."""
    if isinstance(entry, Completion):
        return encode_fields(
            [
                _KEY_TAG,
                "completion",
                entry.key,
                entry.position,
                entry.identity,
                entry.digest,
                canonical(list(entry.path)),
                canonical(list(entry.reads)),
            ]
        )
    if isinstance(entry, OrderEntry):
        return encode_fields(
            [_KEY_TAG, "order", entry.key, entry.position, entry.identity, entry.digest]
        )
    keep = entry.keep or (None, None)
    return encode_fields([_KEY_TAG, "invalidation", entry.key, entry.position, keep[0], keep[1]])


# -- record values ----------------------------------------------------------------------


def encode(entry: Entry) -> bytes:
    """The record value of an entry."""
    data: dict[str, Any] = {"schema": SCHEMA}
    if isinstance(entry, Completion):
        data.update(
            kind="completion",
            key=entry.key,
            position=entry.position,
            identity=entry.identity,
            digest=entry.digest,
            path=list(entry.path),
            reads=list(entry.reads),
            writes=[list(w) for w in entry.writes],
            outputs=list(entry.outputs),
            order=entry.order,
            channel=entry.channel,
            offset=entry.offset,
        )
    elif isinstance(entry, OrderEntry):
        data.update(
            kind="order",
            key=entry.key,
            position=entry.position,
            identity=entry.identity,
            digest=entry.digest,
            channel=entry.channel,
            offset=entry.offset,
        )
    else:
        data.update(
            kind="invalidation",
            key=entry.key,
            position=entry.position,
            keep=list(entry.keep) if entry.keep is not None else None,
        )
    text: str = canonical(data)
    return text.encode("utf-8")


def decode(key: bytes | None, value: bytes | None) -> Entry:
    """The entry a record holds; :class:`DecodeError` says why it is not one."""
    if value is None:
        raise DecodeError("the record has no value")
    try:
        data = json.loads(value.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DecodeError(f"the value is not UTF-8 JSON ({exc})") from None
    if not isinstance(data, dict):
        raise DecodeError("the value is not a JSON object")
    if data.get("schema") != SCHEMA:
        raise DecodeError(f"schema version {data.get('schema')!r} is not {SCHEMA}")
    get = _Fields(data)
    kind = get("kind", str)
    entry: Entry
    if kind == "completion":
        entry = Completion(
            get.key(),
            get("position", int),
            get("identity", str),
            get("digest", str),
            tuple(get.strings("path")),
            tuple(get("reads", list)),
            get.pairs("writes"),
            tuple(get.strings("outputs")),
            get("order", bool),
            get("channel", str),
            get("offset", int),
        )
    elif kind == "order":
        entry = OrderEntry(
            get.key(),
            get("position", int),
            get("identity", str),
            get("digest", str),
            get("channel", str),
            get("offset", int),
        )
    elif kind == "invalidation":
        keep = data.get("keep")
        if keep is not None and not (
            isinstance(keep, list) and len(keep) == 2 and all(isinstance(k, str) for k in keep)
        ):
            raise DecodeError("field 'keep' is neither null nor two strings")
        entry = Invalidation(
            get.key(), get("position", int), (keep[0], keep[1]) if keep is not None else None
        )
    else:
        raise DecodeError(f"unknown kind {kind!r}")
    if key != record_key(entry):
        raise DecodeError("the record key is not the one its value implies")
    return entry


class _Fields:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def __call__(self, name: str, kind: type) -> Any:
        value = self.data.get(name)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise DecodeError(f"field {name!r} is not {kind.__name__}: {value!r:.40}")
        return value

    def key(self) -> Key:
        value = self.data.get("key")
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise DecodeError(f"field 'key' is not a string or an integer: {value!r:.40}")
        return value

    def strings(self, name: str) -> list[str]:
        values: list[Any] = self(name, list)
        if not all(isinstance(v, str) for v in values):
            raise DecodeError(f"field {name!r} is not a list of strings")
        return values

    def pairs(self, name: str) -> tuple[tuple[str, Any], ...]:
        values: list[Any] = self(name, list)
        if not all(isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) for v in values):
            raise DecodeError(f"field {name!r} is not a list of [field, value] pairs")
        return tuple((v[0], v[1]) for v in values)
