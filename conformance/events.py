"""Trace events from JSON: the one decoder of the events a recorded trace holds
(:mod:`.tracefile`) and a ``process:`` program reports (:mod:`.process`).

Every member of the trace vocabulary has one rule, whatever event it is in: a ``key`` is
a string or an integer within +-(2^53 - 1), a ``position``, ``offset``, ``completion`` or
``checkpoint`` is a count (an integer, 0 or more), a ``path`` a non-empty list of names,
and so on (docs/protocol.md). A member that breaks its rule, or is missing, raises
:class:`EventError`, whose message names the member and what is wrong with it
(``position: expected a count (an integer, 0 or more), got "zero"``); the caller adds
where the event came from. A value the model cannot hold (a list as a key, text as a
position) never reaches the model or the properties.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from attrs import NOTHING, fields

from replay_contract.model import trace as t
from replay_contract.model.scenario import MAX_INT_KEY
from replay_contract.model.topology import Key


class EventError(ValueError):
    """A trace event or call member that cannot be decoded; the message is one line
    that starts with the member."""


class _Wrong(ValueError):
    """A value that breaks its member's rule; the message says what was expected."""


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


# -- the rules of the members ---------------------------------------------------------------


def key(value: Any) -> Key:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _Wrong("expected a string or an integer")
    if isinstance(value, int) and abs(value) > MAX_INT_KEY:
        raise _Wrong(f"expected an integer within -{MAX_INT_KEY}..{MAX_INT_KEY}")
    return value


def count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Wrong("expected a count (an integer, 0 or more)")
    return value


def text(value: Any) -> str:
    if not isinstance(value, str):
        raise _Wrong("expected a string")
    return value


def name(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _Wrong("expected a non-empty string")
    return value


def flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Wrong("expected true or false")
    return value


def path(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise _Wrong("expected a path (a non-empty list of names)")
    return tuple(value)


def values(value: Any) -> tuple[Any, ...]:
    if not isinstance(value, list):
        raise _Wrong("expected a list")
    return tuple(value)


def counts(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise _Wrong("expected a list of counts")
    try:
        return tuple(count(v) for v in value)
    except _Wrong:
        raise _Wrong("expected a list of counts (integers, 0 or more)") from None


def memory(value: Any) -> tuple[tuple[Key, tuple[tuple[str, Any], ...]], ...]:
    """Every key's memory: ``[[key, [[field, value], ...]], ...]``."""
    expected = "expected [[key, [[field, value], ...]], ...]"
    if not isinstance(value, list):
        raise _Wrong(expected)
    out = []
    for item in value:
        if not isinstance(item, list) or len(item) != 2 or not isinstance(item[1], list):
            raise _Wrong(expected)
        the_key = key(item[0])
        pairs = []
        for pair in item[1]:
            if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], str):
                raise _Wrong(expected)
            pairs.append((pair[0], pair[1]))
        out.append((the_key, tuple(pairs)))
    return tuple(out)


def anything(value: Any) -> Any:
    return value


#: The rule of each member of the trace vocabulary (docs/protocol.md).
RULES: dict[str, Callable[[Any], Any]] = {
    "identity": name,
    "key": key,
    "channel": name,
    "offset": count,
    "digest": text,
    "payload": anything,
    "awaiting": text,
    "position": count,
    "path": path,
    "tool": name,
    "result": text,
    "completion": count,
    "reads": values,
    "order": flag,
    "reason": text,
    "completions": counts,
    "durable": flag,
    "value": text,
    "checkpoint": count,
    "step_events": count,
    "memory": memory,
    "event": name,
}


def member(data: Mapping[str, Any], member_name: str, rule: str | None = None) -> Any:
    """``data[member_name]`` checked by the rule of ``rule`` (by default the member's
    own name); :class:`EventError` when it is missing or breaks the rule."""
    if member_name not in data:
        raise EventError(f"{member_name}: missing")
    value = data[member_name]
    try:
        return RULES[rule or member_name](value)
    except _Wrong as exc:
        raise EventError(f"{member_name}: {exc}, got {_shown(value)}") from None


# -- events ---------------------------------------------------------------------------------


def event_from_json(data: Mapping[str, Any]) -> t.Event:
    """The event ``data`` stands for, every member checked (see the module's docstring).
    Members the vocabulary does not know are ignored, as the protocol says."""
    kind = member(data, "event", "event")
    cls = t.EVENT_TYPES.get(kind)
    if cls is None:
        raise EventError(f"event: unknown trace event {kind!r} (known: {', '.join(t.EVENT_TYPES)})")
    args: dict[str, Any] = {}
    for field in fields(cls):
        if field.name not in data and field.default is not NOTHING:
            continue
        if field.name not in data:
            wanted = ", ".join(f.name for f in fields(cls) if f.default is NOTHING)
            raise EventError(f"{field.name}: missing ({kind} needs {wanted})")
        args[field.name] = member(data, field.name)
    event: t.Event = cls(**args)
    return event
