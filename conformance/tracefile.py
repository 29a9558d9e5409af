"""Recorded traces: a run written down as newline-delimited JSON, to be judged later.

The first line is a header with what judging the run needs::

    {"trace": "replay-contract-trace/1", "name": "nightly-recovery",
     "contract": "ordered",
     "agent": {"actions": [...]},
     "channels": [...]}

``contract`` is a contract's name or the contract as JSON (every rule spelled out, as
the process protocol's ``open`` sends it); ``agent`` and ``channels`` have the form they
have in a scenario file. ``channels`` may be left out: the channels and their records
are then read off the ``deliver`` events (a record delivered again with another payload
comes from a channel that is not replayable and changes it; a channel that loses a
record when it delivers again must be in the header).

Every further line is one event of the trace vocabulary (docs/protocol.md), in the
order it happened: what the environment did (``deliver``, ``checkpoint``, ``crash``,
``restore``, ``end``), what the operator decided and wrote, and its tool calls and
outputs. An effect whose outcome the recorder could not know (a store write that timed
out, a tool call that got no answer) carries ``"indeterminate": true``.

:func:`read` refuses a malformed line (not JSON, truncated, an unknown event, a member
missing or of the wrong type, a delivery the header's channels do not hold) with a
:class:`TraceError` that names the file, the line and the member; the events are decoded
by :mod:`.events`, as a ``process:`` program's reports are. :func:`write` writes a run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from attrs import field, frozen

from replay_contract.model import trace as t
from replay_contract.model.agent import Agent
from replay_contract.model.contracts import CONTRACTS, Contract, contract, contract_from_json
from replay_contract.model.errors import ScenarioError, UnknownContractError
from replay_contract.model.scenario import Scenario, Step, from_json
from replay_contract.model.topology import Topology, key_text, same_key

from .events import EventError, event_from_json

FORMAT = "replay-contract-trace/1"
_HEADER = {
    "trace",
    "name",
    "contract",
    "agent",
    "channels",
    "marks_crashes",
    "error",
    "unavailable",
}


class TraceError(ValueError):
    """A trace file that cannot be read; the message is one line naming the place."""


@frozen
class RecordedRun:
    """A recorded trace: the header's scenario parts and the events, each with the line
    it came from; ``indeterminate`` holds the indexes of the events so marked, and
    ``crash_after`` the ``crash_after`` of each crash a recorder marked as falling inside
    a step; ``marks_crashes`` says the recorder marks every such crash (the suite's
    runner knows its steps; another recorder need not). ``source`` names the file in the
    messages of a trace that cannot be judged; ``error`` says why the run stopped early,
    when its recorder knows (``unavailable``: an infrastructure error)."""

    name: str
    contract: Contract
    agent: Agent
    topology: Topology
    events: tuple[t.Event, ...]
    lines: tuple[int, ...]
    indeterminate: frozenset[int] = frozenset()
    crash_after: dict[int, int] = field(factory=dict, eq=False)
    marks_crashes: bool = False
    source: str = "trace"
    error: str | None = None
    unavailable: bool = False

    def line_of(self, index: int) -> int:
        return self.lines[index] if 0 <= index < len(self.lines) else 0


# -- writing ------------------------------------------------------------------------------


def header(scenario: Scenario, contract: Contract, name: str | None = None) -> dict[str, Any]:
    data = scenario.to_json()
    return {
        "trace": FORMAT,
        "name": name or scenario.name,
        "contract": contract.name
        if CONTRACTS.get(contract.name) == contract
        else contract.to_json(),
        "agent": data["agent"],
        "channels": data["channels"],
    }


def write_lines(
    out: TextIO, head: dict[str, Any], events: Iterable[t.Event | dict[str, Any]]
) -> None:
    out.write(json.dumps(head, ensure_ascii=False) + "\n")
    for event in events:
        data = event if isinstance(event, dict) else t.event_to_json(event)
        out.write(json.dumps(data, ensure_ascii=False) + "\n")


def write(
    path: Path,
    scenario: Scenario,
    contract: Contract,
    events: Iterable[t.Event],
    steps: Sequence[tuple[Step, Sequence[t.Event]]] | None = None,
    error: str | None = None,
    unavailable: bool = False,
) -> Path:
    """Write ``events``, a run of ``scenario`` under ``contract``, as a trace file. With
    the run's ``steps`` (the schedule steps and the events of each), a crash inside a
    step says so with the step's ``crash_after``. ``error``: why the run stopped early
    (``unavailable``: an infrastructure error), written in the header."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines: Iterable[t.Event | dict[str, Any]] = events
    if steps is not None:
        lines = [
            {**t.event_to_json(e), "crash_after": step.crash_after}
            if isinstance(e, t.Crash) and step.kind != "crash" and step.crash_after is not None
            else e
            for step, step_events in steps
            for e in step_events
        ]
    head = header(scenario, contract)
    if steps is not None:
        head["marks_crashes"] = True
    if error is not None:
        head["error"] = error
        if unavailable:
            head["unavailable"] = True
    with path.open("w", encoding="utf-8") as out:
        write_lines(out, head, lines)
    return path


# -- reading ------------------------------------------------------------------------------


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _object(text: str, where: str) -> dict[str, Any]:
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise TraceError(f"{where}: not a JSON object ({_first(exc)}); truncated?") from None
    if not isinstance(data, dict):
        raise TraceError(f"{where}: expected a JSON object")
    return data


def _first(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def read(path: str | Path) -> RecordedRun:
    """Read a trace file (see the module's docstring)."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            raw = f.read()
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise TraceError(f"{path}: line {line}: not UTF-8") from None
    return loads(text, str(path))


def loads(text: str, source: str = "trace") -> RecordedRun:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    elif lines and text:
        # the last line lacks its newline: a writer that stopped in the middle of it
        _object(lines[-1], f"{source}: line {len(lines)}")
    if not lines:
        raise TraceError(f"{source}: empty (expected a header line)")
    head = _object(lines[0], f"{source}: line 1")
    unknown = sorted(set(head) - _HEADER)
    if head.get("trace") != FORMAT:
        raise TraceError(f'{source}: line 1: not a trace header (expected "trace": "{FORMAT}")')
    if unknown:
        raise TraceError(f"{source}: line 1: unknown member {unknown[0]!r}")
    name = head.get("name", Path(source).stem)
    if not isinstance(name, str) or not name:
        raise TraceError(f"{source}: line 1: name: expected a non-empty text")
    the_contract = _contract(head, f"{source}: line 1: contract")
    marks = head.get("marks_crashes", False)
    if not isinstance(marks, bool):
        raise TraceError(f"{source}: line 1: marks_crashes: expected true or false")
    error = head.get("error")
    if error is not None and not isinstance(error, str):
        raise TraceError(f"{source}: line 1: error: expected a string")
    unavailable = head.get("unavailable", False)
    if not isinstance(unavailable, bool) or (unavailable and error is None):
        raise TraceError(f"{source}: line 1: unavailable: expected true or false, with an error")
    events: list[t.Event] = []
    numbers: list[int] = []
    unknown_outcome: set[int] = set()
    crash_after: dict[int, int] = {}
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            raise TraceError(f"{source}: line {number}: empty line")
        data = _object(line, f"{source}: line {number}")
        marked = data.pop("indeterminate", False)
        if not isinstance(marked, bool):
            raise TraceError(f"{source}: line {number}: indeterminate: expected true or false")
        inside = data.pop("crash_after", None) if data.get("event") == "crash" else None
        if inside is not None:
            if not isinstance(inside, int) or isinstance(inside, bool) or inside < 0:
                raise TraceError(f"{source}: line {number}: crash_after: expected a count")
            crash_after[len(events)] = inside
        try:
            event = event_from_json(data)
        except EventError as exc:
            raise TraceError(f"{source}: line {number}: {exc}") from None
        if marked:
            if not isinstance(event, (t.Tool, t.Save, t.Order, t.Invalidate)):
                raise TraceError(
                    f"{source}: line {number}: only an effect (tool, save, order, "
                    f"invalidate) can be indeterminate, not {event.kind}"
                )
            unknown_outcome.add(len(events))
        events.append(event)
        numbers.append(number)
    if "agent" not in head:
        raise TraceError(f"{source}: line 1: agent: missing")
    for member, kind, what in (("agent", dict, "an object"), ("channels", list, "a list")):
        if member in head and not isinstance(head[member], kind):
            got = json.dumps(head[member], ensure_ascii=False)[:40]
            raise TraceError(f"{source}: line 1: {member}: expected {what}, got {got}")
    scenario_part = {
        "name": name,
        "agent": head["agent"],
        "channels": head["channels"] if "channels" in head else _channels_of(events, source),
        "schedule": [],
    }
    try:
        scenario = from_json(scenario_part, f"{source}: line 1")
    except ScenarioError as exc:
        raise TraceError(str(exc)) from None
    _check_deliveries(scenario.topology, events, numbers, source)
    return RecordedRun(
        name,
        the_contract,
        scenario.agent,
        scenario.topology,
        tuple(events),
        tuple(numbers),
        frozenset(unknown_outcome),
        crash_after,
        marks is True,
        source,
        error,
        unavailable,
    )


def _contract(head: dict[str, Any], where: str) -> Contract:
    """The header's contract: a name, or the contract as JSON. The model's messages
    about a contract given as JSON name the member already (``where.wait: ...``)."""
    if "contract" not in head:
        raise TraceError(f"{where}: missing")
    data = head["contract"]
    try:
        if isinstance(data, str):
            return contract(data)
        if isinstance(data, dict):
            named = CONTRACTS.get(str(data.get("name")))
            if named is not None and named.to_json() == data:
                return named
            return contract_from_json(data, where)
    except UnknownContractError as exc:
        text = str(exc)
        if text.startswith(where):
            raise TraceError(text) from None
        member = "" if isinstance(data, str) else ".based_on"
        raise TraceError(f"{where}{member}: {text}") from None
    got = json.dumps(data, ensure_ascii=False)[:40]
    raise TraceError(f"{where}: expected a contract name or object, got {got}")


def _check_deliveries(
    topology: Topology, events: Sequence[t.Event], numbers: Sequence[int], source: str
) -> None:
    """Refuse a ``deliver`` that the header's channels do not hold: a record or a
    channel it does not declare, or a record delivered on another channel, at another
    offset or with another key than the header gives it (its payload may differ: a
    channel that is not replayable changes a record it delivers again)."""
    channels = {c.name for c in topology.channels}
    for event, number in zip(events, numbers, strict=True):
        if not isinstance(event, t.Deliver):
            continue
        where = f"{source}: line {number}"
        if event.channel not in channels:
            raise TraceError(
                f"{where}: channel: {event.channel!r} is not a channel of the header "
                f"(it has {', '.join(repr(c.name) for c in topology.channels)})"
            )
        try:
            record = topology.record(event.identity)
        except KeyError:
            raise TraceError(
                f"{where}: identity: no record {event.identity!r} in the header's channels"
            ) from None
        if record.channel != event.channel:
            raise TraceError(
                f"{where}: channel: record {record.identity!r} is on channel "
                f"{record.channel!r}, not {event.channel!r}"
            )
        if record.offset != event.offset:
            raise TraceError(
                f"{where}: offset: record {record.identity!r} is at offset {record.offset} "
                f"of its channel, not {event.offset}"
            )
        if not same_key(record.key, event.key):
            raise TraceError(
                f"{where}: key: record {record.identity!r} has key {key_text(record.key)}, "
                f"not {key_text(event.key)}"
            )


def _channels_of(events: list[t.Event], source: str) -> list[dict[str, Any]]:
    """The channels as the deliveries show them (see the module's docstring)."""
    channels: dict[str, dict[int, dict[str, Any]]] = {}
    replayable: dict[str, bool] = {}
    for e in events:
        if not isinstance(e, t.Deliver):
            continue
        records = channels.setdefault(e.channel, {})
        replayable.setdefault(e.channel, True)
        first = records.get(e.offset)
        if first is None:
            records[e.offset] = {"id": e.identity, "key": e.key, "payload": e.payload}
        elif first["payload"] != e.payload and "replay" not in first:
            first["replay"] = {"payload": e.payload}
            replayable[e.channel] = False
    out = []
    for name, records in channels.items():
        offsets = sorted(records)
        if offsets != list(range(len(offsets))):
            missing = next(i for i in range(len(offsets) + 1) if i not in records)
            raise TraceError(
                f"{source}: the header has no channels and channel {name!r} never delivers "
                f"offset {missing}: add the channels to the header"
            )
        channel: dict[str, Any] = {"name": name, "records": [records[o] for o in offsets]}
        if not replayable[name]:
            channel["replayable"] = False
        out.append(channel)
    return out
