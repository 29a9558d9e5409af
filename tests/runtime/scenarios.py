"""Scenarios the runtime tests build on top of the built-in catalogue."""

from __future__ import annotations

from typing import Any

from replay_contract.model.scenario import Scenario, check_schedule, from_json

#: Business keys that a careless encoding would merge or clobber.
AWKWARD_KEYS: list[Any] = [1, "1", "", "a|b:c", "s1:1", "é日本", "K\x00"]

AGENT = {
    "actions": [
        {
            "name": "respond",
            "reads": ["notes"],
            "writes": ["notes"],
            "tools": ["llm"],
            "output": True,
        }
    ]
}


def awkward_keys() -> Scenario:
    """Two inputs per awkward key, one on each of two replayable channels, and a third
    channel that is not replayable and changes the input of key ``"1"`` on re-delivery.
    After a crash the channels interleave the other way round: under ``ordered`` every
    key but ``"1"`` reuses everything, and ``"1"`` diverges alone."""
    up1 = [{"id": f"a{i}", "key": k, "payload": f"a-{i}"} for i, k in enumerate(AWKWARD_KEYS)]
    up2 = [{"id": f"b{i}", "key": k, "payload": f"b-{i}"} for i, k in enumerate(AWKWARD_KEYS)]
    odd = [{"id": "c0", "key": "1", "payload": "c", "replay": {"payload": "changed"}}]
    first = [r["id"] for pair in zip(up1, up2, strict=True) for r in pair]
    again = [r["id"] for pair in zip(up2, up1, strict=True) for r in pair]
    schedule = [
        {"step": "deliver", "record": "c0"},
        *({"step": "deliver", "record": r} for r in first),
        {"step": "crash"},
        {"step": "restore"},
        *({"step": "deliver", "record": r} for r in again),
        {"step": "deliver", "record": "c0"},
    ]
    data = {
        "name": "awkward-keys",
        "agent": AGENT,
        "channels": [
            {"name": "upstream-1", "records": up1},
            {"name": "upstream-2", "records": up2},
            {"name": "odd", "replayable": False, "records": odd},
        ],
        "schedule": schedule,
    }
    scenario = from_json(data, "awkward-keys")
    check_schedule(scenario, "awkward-keys")
    return scenario


def long_key(inputs: int, key: Any = "hot") -> tuple[Scenario, list[str]]:
    """``inputs`` inputs of one key from two channels; returns the scenario (delivering
    them all once) and the identities in the reversed interleaving."""
    up1 = [{"id": f"x{i}", "key": key, "payload": i} for i in range(0, inputs, 2)]
    up2 = [{"id": f"x{i}", "key": key, "payload": i} for i in range(1, inputs, 2)]
    order = [f"x{i}" for i in range(inputs)]
    data = {
        "name": f"long-key-{inputs}",
        "agent": AGENT,
        "channels": [
            {"name": "upstream-1", "records": up1},
            {"name": "upstream-2", "records": up2},
        ],
        "schedule": [{"step": "deliver", "record": r} for r in order],
    }
    again = [f"x{i ^ 1}" for i in range(inputs) if i ^ 1 < inputs]
    return from_json(data, "long-key"), again
