"""Scenarios: an agent, its upstream channels and a schedule of steps, as JSON.

::

    {
      "name": "changed-on-replay",
      "description": "B comes back changed after the crash.",
      "agent": {"actions": [{"name": "answer", "reads": ["notes"], "writes": ["notes"],
                             "tools": ["llm"], "output": true}]},
      "channels": [
        {"name": "upstream-1", "records": [{"id": "A", "key": "K", "payload": "a"}]},
        {"name": "upstream-2", "replayable": false,
         "records": [{"id": "B", "key": "K", "payload": "b",
                      "replay": {"payload": "b2"}}]}
      ],
      "schedule": [{"step": "deliver", "record": "A"}, {"step": "checkpoint"},
                   {"step": "deliver", "record": "B", "crash_after": 1},
                   {"step": "restore"}, {"step": "deliver", "record": "B"}]
    }

Steps: ``deliver`` (a record; each channel delivers its records in order, and again
from the checkpoint's offsets after a restore), ``checkpoint``, ``crash``, ``restore``
(from the last completed checkpoint), ``timeout`` (processing time passes the contract's
wait bound: every input waiting then is released or given up within the step) and
``end`` (end of input; implied at the end of the schedule). ``crash_after: N`` on
``deliver`` or ``restore`` crashes the operator after the N-th effect (tool call or
durable write) of that step, or at its end when it has fewer; ``0`` crashes right after
the delivery, before any effect.

A record of a channel with ``"replayable": false`` may carry ``"replay": "lost"`` (it
never comes back after a restore) or ``"replay": {"payload": ...}`` (it comes back
changed).

:func:`load` refuses a malformed scenario with a :class:`ScenarioError` whose one-line
message names the place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import evolve, frozen

from .agent import INPUT, Action, Agent
from .errors import ScenarioError
from .files import parse_json, read_text
from .topology import Channel, Record, Replay, Topology

if TYPE_CHECKING:
    from . import operator as op

STEP_KINDS = ("deliver", "checkpoint", "crash", "restore", "timeout", "end")
#: The largest integer key (by magnitude): 2**53 - 1, the integers that JSON readers of
#: every language (JavaScript's numbers too) hold exactly.
MAX_INT_KEY = 2**53 - 1


@frozen
class Step:
    kind: str
    record: str | None = None
    crash_after: int | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"step": self.kind}
        if self.record is not None:
            data["record"] = self.record
        if self.crash_after is not None:
            data["crash_after"] = self.crash_after
        return data

    def __str__(self) -> str:
        text = self.kind + (f" {self.record}" if self.record else "")
        return text + (f" (crash after {self.crash_after})" if self.crash_after is not None else "")


@frozen
class Scenario:
    name: str
    agent: Agent
    topology: Topology
    schedule: tuple[Step, ...]
    description: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "agent": {"actions": [_action_json(a) for a in self.agent.actions]},
            "channels": [_channel_json(c) for c in self.topology.channels],
            "schedule": [s.to_json() for s in self.schedule],
        }

    def with_schedule(self, schedule: tuple[Step, ...], name: str | None = None) -> Scenario:
        return Scenario(name or self.name, self.agent, self.topology, schedule, self.description)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n")
        return path


def _action_json(a: Action) -> dict[str, Any]:
    data: dict[str, Any] = {"name": a.name}
    if a.trigger != INPUT:
        data["trigger"] = a.trigger
    for name in ("reads", "writes", "tools", "emits"):
        if getattr(a, name):
            data[name] = list(getattr(a, name))
    if a.output:
        data["output"] = True
    return data


def _channel_json(c: Channel) -> dict[str, Any]:
    records = []
    for r in c.records:
        data: dict[str, Any] = {"id": r.identity, "key": r.key, "payload": r.payload}
        if r.replay is not None:
            data["replay"] = "lost" if r.replay.lost else {"payload": r.replay.payload}
        records.append(data)
    out: dict[str, Any] = {"name": c.name, "records": records}
    if not c.replayable:
        out["replayable"] = False
    return out


# -- parsing ----------------------------------------------------------------------------


def loads(text: str, source: str = "scenario") -> Scenario:
    """Parse and check a scenario; the schedule is dry-run so that every step can happen."""
    scenario = from_json(parse_json(text, source, ScenarioError), source)
    check_schedule(scenario, source)
    return scenario


def load(path: str | Path) -> Scenario:
    path = Path(path)
    return loads(read_text(path, ScenarioError), str(path))


def from_json(data: Any, source: str = "scenario") -> Scenario:
    obj = _Obj(data, source, {"name", "description", "agent", "channels", "schedule"})
    name = obj.name() if "name" in obj.data else Path(source).stem
    agent = _agent(obj.child("agent"))
    channels_data = obj.get("channels", list)
    channels = tuple(
        _channel(_Obj(c, f"{source}: channels[{i}]", {"name", "records", "replayable"}))
        for i, c in enumerate(channels_data)
    )
    if not channels:
        raise ScenarioError(f"{source}: channels: at least one channel is needed")
    _unique([c.name for c in channels], f"{source}: channels", "channel name")
    _unique([r.identity for c in channels for r in c.records], f"{source}: channels", "record id")
    schedule = tuple(
        _step(_Obj(s, f"{source}: schedule[{i}]", {"step", "record", "crash_after"}))
        for i, s in enumerate(obj.get("schedule", list))
    )
    return Scenario(
        name, agent, Topology(channels), schedule, obj.get("description", str, required=False) or ""
    )


def check_schedule(scenario: Scenario, source: str = "scenario") -> None:
    """Refuse up front a step that cannot happen, with the message the model gives.

    Whether a step can happen depends only on the environment (which record each
    channel delivers next, whether the operator is up, whether the input ended), never
    on the contract, so the check follows that bookkeeping alone, in one pass, with the
    operator's own rules (:func:`~.operator.delivery`, :func:`~.operator.require_up`).
    """
    from . import operator as op
    from .contracts import SEQNUM

    world = op.World(scenario.topology, scenario.agent, SEQNUM)
    for i, step in enumerate(scenario.schedule):
        try:
            world = _environment_step(world, step)
        except ScenarioError as exc:
            raise ScenarioError(f"{source}: schedule[{i}]: {exc}") from None
    if not world.ended and not world.operator.up:
        raise ScenarioError(
            f"{source}: the schedule ends with the operator down (add a restore step)"
        )


def _environment_step(world: op.World, step: Step) -> op.World:
    """What one step does to the environment's bookkeeping (see :func:`check_schedule`);
    a crash inside a step (``crash_after``) leaves the operator down."""
    from . import operator as op

    now = world.operator
    down = evolve(now, up=False)
    if step.kind == "restore":
        if now.up:
            raise ScenarioError("restore: the operator is running (crash it first)")
        return evolve(
            world, operator=down if step.crash_after is not None else world.checkpoint.operator
        )
    if step.kind == "deliver":
        assert step.record is not None
        record = op.delivery(world, step.record)
        offsets = {**now.offsets, record.channel: record.offset + 1}
        high = max(world.high_water.get(record.channel, 0), record.offset + 1)
        return evolve(
            world,
            operator=down if step.crash_after is not None else evolve(now, offsets=offsets),
            high_water={**world.high_water, record.channel: high},
        )
    op.require_up(world, step.kind)
    if step.kind == "checkpoint":
        return evolve(world, checkpoint=op.SavedCheckpoint(0, now))
    if step.kind == "crash":
        return evolve(world, operator=down)
    if step.kind == "timeout":
        return world
    return evolve(world, ended=True)


class _Obj:
    def __init__(self, data: Any, where: str, allowed: set[str]) -> None:
        if not isinstance(data, dict):
            raise ScenarioError(f"{where}: expected a JSON object")
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise ScenarioError(
                f"{where}: unknown field {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})"
            )
        self.data, self.where = data, where

    def get(self, name: str, kind: type, required: bool = True) -> Any:
        if name not in self.data:
            if required:
                raise ScenarioError(f"{self.where}: missing field {name!r}")
            return None
        value = self.data[name]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ScenarioError(
                f"{self.where}.{name}: expected {_kind(kind)}, got {json.dumps(value)[:40]}"
            )
        return value

    def name(self, field: str = "name") -> str:
        """A required, non-empty string (a name other parts of the scenario refer to)."""
        value: str = self.get(field, str)
        if not value.strip():
            raise ScenarioError(f"{self.where}.{field}: must not be empty")
        return value

    def strings(self, name: str) -> tuple[str, ...]:
        values = self.get(name, list, required=False) or []
        for i, v in enumerate(values):
            if not isinstance(v, str) or not v:
                raise ScenarioError(f"{self.where}.{name}[{i}]: expected a non-empty string")
        return tuple(values)

    def child(self, name: str) -> _Obj:
        allowed = {"actions"} if name == "agent" else set()
        return _Obj(self.get(name, dict), f"{self.where}: {name}", allowed)


def _kind(kind: type) -> str:
    return {
        str: "a string",
        int: "an integer",
        list: "a list",
        dict: "an object",
        bool: "true or false",
    }.get(kind, kind.__name__)


def _unique(values: list[str], where: str, what: str) -> None:
    seen: set[str] = set()
    for v in values:
        if v in seen:
            raise ScenarioError(f"{where}: {what} {v!r} appears twice")
        seen.add(v)


def _agent(obj: _Obj) -> Agent:
    actions = []
    for i, a in enumerate(obj.get("actions", list)):
        o = _Obj(
            a,
            f"{obj.where}.actions[{i}]",
            {"name", "trigger", "reads", "writes", "tools", "emits", "output"},
        )
        emits = o.strings("emits")
        _unique(list(emits), o.where + ".emits", "event")
        actions.append(
            Action(
                o.name(),
                o.name("trigger") if "trigger" in o.data else INPUT,
                o.strings("reads"),
                o.strings("writes"),
                o.strings("tools"),
                emits,
                bool(o.get("output", bool, False)),
            )
        )
    _unique([a.name for a in actions], obj.where + ".actions", "action name")
    emitted = {e for a in actions for e in a.emits}
    for i, a in enumerate(actions):
        if a.trigger != INPUT and a.trigger not in emitted:
            raise ScenarioError(f"{obj.where}.actions[{i}].trigger: no action emits {a.trigger!r}")
    _acyclic(actions, obj.where)
    return Agent(tuple(actions))


def _acyclic(actions: list[Action], where: str) -> None:
    by_trigger: dict[str, list[Action]] = {}
    for a in actions:
        by_trigger.setdefault(a.trigger, []).append(a)

    def visit(a: Action, stack: tuple[str, ...]) -> None:
        if a.name in stack:
            raise ScenarioError(
                f"{where}.actions: events form a cycle through {' > '.join((*stack, a.name))}"
            )
        for e in a.emits:
            for b in by_trigger.get(e, []):
                visit(b, (*stack, a.name))

    for a in actions:
        visit(a, ())


def _channel(obj: _Obj) -> Channel:
    name = obj.name()
    replayable = obj.get("replayable", bool, required=False)
    replayable = True if replayable is None else replayable
    records = []
    for i, r in enumerate(obj.get("records", list)):
        o = _Obj(r, f"{obj.where}.records[{i}]", {"id", "key", "payload", "replay"})
        identity = o.get("id", str)
        if not identity:
            raise ScenarioError(f"{o.where}.id: must not be empty")
        key = o.data.get("key")
        if "key" not in o.data:
            raise ScenarioError(f"{o.where}: missing field 'key'")
        if isinstance(key, bool) or not isinstance(key, str | int):
            raise ScenarioError(f"{o.where}.key: expected a string or an integer")
        if isinstance(key, int) and abs(key) > MAX_INT_KEY:
            raise ScenarioError(
                f"{o.where}.key: {key} is outside -{MAX_INT_KEY}..{MAX_INT_KEY}, the integers "
                "every JSON reader holds exactly"
            )
        if "payload" not in o.data:
            raise ScenarioError(f"{o.where}: missing field 'payload' (null when it has none)")
        replay = None
        if "replay" in o.data:
            if replayable:
                raise ScenarioError(
                    f"{o.where}.replay: only a channel that is not "
                    "replayable may lose or change a record"
                )
            value = o.data["replay"]
            if value == "lost":
                replay = Replay(lost=True)
            elif isinstance(value, dict) and set(value) == {"payload"}:
                replay = Replay(payload=value["payload"])
            else:
                raise ScenarioError(f'{o.where}.replay: expected "lost" or {{"payload": ...}}')
        records.append(Record(identity, key, o.data["payload"], name, i, replay))
    return Channel(name, tuple(records), replayable)


def _step(obj: _Obj) -> Step:
    kind = obj.get("step", str)
    if kind not in STEP_KINDS:
        raise ScenarioError(
            f"{obj.where}.step: unknown step {kind!r} (known: {', '.join(STEP_KINDS)})"
        )
    record = obj.get("record", str, required=kind == "deliver")
    if record is not None and kind != "deliver":
        raise ScenarioError(f"{obj.where}: only deliver names a record")
    crash_after = obj.get("crash_after", int, required=False)
    if crash_after is not None and kind not in ("deliver", "restore"):
        raise ScenarioError(f"{obj.where}: crash_after is for deliver and restore steps")
    if crash_after is not None and crash_after < 0:
        raise ScenarioError(f"{obj.where}.crash_after: must not be negative")
    return Step(kind, record, crash_after)
