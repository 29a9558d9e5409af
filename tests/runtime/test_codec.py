"""Store records: injective keys, versioned values, clear refusals."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replay_contract.model.store import Completion, Invalidation, OrderEntry
from replay_contract.runtime import codec

AWKWARD_KEYS = ["K", "", "a:b", "s1:a", "n", "i1:1", "1", 1, 0, -1, "é", "日本", "K\x00", " "]
FIELDS = st.one_of(st.none(), st.text(), st.integers())


@given(st.lists(FIELDS))
def test_key_fields_decode_back(fields: list[object]) -> None:
    assert codec.decode_fields(codec.encode_fields(fields)) == fields  # type: ignore[arg-type]


@given(st.lists(FIELDS), st.lists(FIELDS))
def test_key_fields_are_injective(a: list[object], b: list[object]) -> None:
    same = [(type(x), x) for x in a] == [(type(y), y) for y in b]
    assert (codec.encode_fields(a) == codec.encode_fields(b)) == same  # type: ignore[arg-type]


def test_awkward_business_keys_get_distinct_record_keys() -> None:
    keys = {codec.business_key(k) for k in AWKWARD_KEYS}
    assert len(keys) == len(AWKWARD_KEYS)
    completions = {
        codec.record_key(Completion(k, 0, "A", "d", ("p",), (), (), ())) for k in AWKWARD_KEYS
    }
    assert len(completions) == len(AWKWARD_KEYS)


def test_a_bool_is_not_a_key() -> None:
    with pytest.raises(TypeError):
        codec.encode_fields([True])


@pytest.mark.parametrize(
    "entry",
    [
        Completion(
            1, 3, "A", "d", ("p", "e", "q"), (None, "x"), (("f", "v"),), ("out",), True, "c", 7
        ),
        Completion("1", 3, "A", "d", ("p",), (), (), ()),
        OrderEntry("é|x", 0, "B", "d2", "c", 1),
        Invalidation("", 2),
        Invalidation(1, 2, ("A", "d")),
    ],
)
def test_entries_round_trip(entry: object) -> None:
    decoded = codec.decode(codec.record_key(entry), codec.encode(entry))  # type: ignore[arg-type]
    assert decoded == entry
    assert type(decoded.key) is type(entry.key)  # type: ignore[attr-defined]


def test_every_record_carries_the_schema_version() -> None:
    value = json.loads(codec.encode(OrderEntry("K", 0, "A", "d")))
    assert value["schema"] == codec.SCHEMA


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (b"\xff\xfe", "not UTF-8 JSON"),
        (b"[1]", "not a JSON object"),
        (b'{"schema": 99, "kind": "order"}', "schema version 99"),
        (b'{"schema": 1, "kind": "nothing"}', "unknown kind"),
        (b'{"schema": 1, "kind": "order", "key": true, "position": 0}', "field 'key'"),
        (
            b'{"schema": 1, "kind": "order", "key": "K", "position": "0", "identity": "A"}',
            "field 'position'",
        ),
        (None, "no value"),
    ],
)
def test_undecodable_values_are_refused(value: bytes | None, message: str) -> None:
    with pytest.raises(codec.DecodeError, match=message):
        codec.decode(b"", value)


def test_a_record_key_that_does_not_match_its_value_is_refused() -> None:
    a, b = OrderEntry("K", 0, "A", "d"), OrderEntry("K", 1, "A", "d")
    with pytest.raises(codec.DecodeError, match="record key"):
        codec.decode(codec.record_key(a), codec.encode(b))
