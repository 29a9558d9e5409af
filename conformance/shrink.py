"""Shrinking a failing scenario to a smaller one that fails the same way.

Greedy, in the spirit of Hypothesis: try one simplification at a time — drop a schedule
step, crash earlier or not at all, drop a record, a channel or an action, make a source
replayable, drop a memory field, a tool or an output — and keep it whenever the smaller
scenario is still valid and still fails for the same reason. Candidates are edited as
scenario JSON and parsed again, so every kept scenario passes the model's own checks.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

from replay_contract.model.errors import ScenarioError
from replay_contract.model.scenario import Scenario, loads


def shrink(scenario: Scenario, fails: Callable[[Scenario], bool], budget: int = 200) -> Scenario:
    """The smallest scenario found (within ``budget`` tries) for which ``fails`` holds."""
    current, tries = scenario, 0
    improved = True
    while improved and tries < budget:
        improved = False
        for data in _candidates(current.to_json()):
            try:
                candidate = loads(json.dumps(data), current.name)
            except ScenarioError:
                continue
            tries += 1
            if fails(candidate):
                current, improved = candidate, True
                break
            if tries >= budget:
                break
    return current


def _candidates(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    schedule = data["schedule"]
    for i in reversed(range(len(schedule))):
        yield _with(data, _drop_step, i)
    for i, step in enumerate(schedule):
        if "crash_after" in step:
            yield _with(data, _no_crash, i)
            if step["crash_after"] > 0:
                yield _with(data, _crash_earlier, i)
    for c, channel in enumerate(data["channels"]):
        yield _with(data, _drop_channel, c)
        for r in reversed(range(len(channel["records"]))):
            yield _with(data, _drop_record, c, r)
        if channel.get("replayable") is False:
            yield _with(data, _replayable, c)
    actions = data["agent"]["actions"]
    for a in reversed(range(len(actions))):
        yield _with(data, _drop_action, a)
        for part in ("reads", "writes", "tools", "emits"):
            for v in reversed(range(len(actions[a].get(part, [])))):
                yield _with(data, _drop_part, a, part, v)
        if actions[a].get("output"):
            yield _with(data, _no_output, a)


def _with(data: dict[str, Any], edit: Callable[..., None], *args: Any) -> dict[str, Any]:
    out = copy.deepcopy(data)
    edit(out, *args)
    return out


def _drop_step(d: dict[str, Any], i: int) -> None:
    d["schedule"].pop(i)


def _no_crash(d: dict[str, Any], i: int) -> None:
    d["schedule"][i].pop("crash_after")


def _crash_earlier(d: dict[str, Any], i: int) -> None:
    d["schedule"][i]["crash_after"] -= 1


def _drop_action(d: dict[str, Any], a: int) -> None:
    d["agent"]["actions"].pop(a)


def _drop_part(d: dict[str, Any], a: int, part: str, v: int) -> None:
    d["agent"]["actions"][a][part].pop(v)


def _no_output(d: dict[str, Any], a: int) -> None:
    d["agent"]["actions"][a].pop("output")


def _drop_record(d: dict[str, Any], c: int, r: int) -> None:
    identity = d["channels"][c]["records"].pop(r)["id"]
    d["schedule"] = [s for s in d["schedule"] if s.get("record") != identity]


def _drop_channel(d: dict[str, Any], c: int) -> None:
    ids = {r["id"] for r in d["channels"].pop(c)["records"]}
    d["schedule"] = [s for s in d["schedule"] if s.get("record") not in ids]


def _replayable(d: dict[str, Any], c: int) -> None:
    channel = d["channels"][c]
    channel.pop("replayable")
    for r in channel["records"]:
        r.pop("replay", None)
