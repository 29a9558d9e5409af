"""The functions of the live job; they run inside Flink's Python worker.

Two functions, both importing the project's runtime (the rules are
:mod:`replay_contract.model.reuse`, :mod:`~replay_contract.model.recovery` and
:mod:`~replay_contract.model.fallback`, the same code the reference model and the
Kafka/Fluss runtime run):

- :class:`Gate` follows each source subtask (one channel, one Kafka partition) and
  forces the interleaving the plan gives the running attempt: a record waits until the
  agent operator has taken every delivery before its turn; a record the attempt does not
  deliver (a lost input) is dropped; the driver's failure marker for this attempt fails
  the task (the injected failure).
- :class:`AgentOperator`, after ``keyBy``, is a host of the contract's rules
  (:class:`replay_contract.model.keyed.Host`): a key's state (position, memory, waiting
  inputs, expected order, in-memory invalidations) lives in Flink keyed state, so a Flink
  restore brings back what its checkpoint held; completions and order entries go to the
  real store. Every event of the trace, each tool invocation among them, is appended to a
  file outside the job, where the driver counts it.

The turn counter is a file per attempt in the run's folder (the agent operator writes
it, the gates read it): the processing of the scenario's deliveries is serialised, so the
events file is in the order they happened.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pyflink.common.typeinfo import Types
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ListStateDescriptor, ValueStateDescriptor


def turn_file(run: Path, attempt: int) -> Path:
    return run / f"turn-{attempt}"


def read_turn(run: Path, attempt: int) -> int:
    try:
        return int(turn_file(run, attempt).read_text() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def write_turn(run: Path, attempt: int, value: int) -> None:
    write_json(turn_file(run, attempt), value)


def append_lines(path: Path, lines: list[dict[str, Any]]) -> None:
    """Append JSON lines in one write (O_APPEND: writers never overwrite each other)."""
    if not lines:
        return
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


class InjectedFailure(RuntimeError):
    """The failure the schedule's ``crash`` injects."""


def release_file(run: Path, attempt: int) -> Path:
    return run / f"release-{attempt}"


def read_release(run: Path, attempt: int) -> dict[str, Any] | None:
    try:
        return dict(json.loads(release_file(run, attempt).read_text()))
    except (FileNotFoundError, ValueError):
        return None


def write_json(path: Path, value: Any) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(value))
    os.replace(partial, path)


def crash_file(run: Path, attempt: int) -> Path:
    return run / f"crash-{attempt}"


def mark_open(run: Path, what: str, attempt: int, subtask: int) -> None:
    (run / f"open-{attempt}-{what}-{subtask}").touch()


class Gate(KeyedProcessFunction):  # type: ignore[misc]
    """Forces the interleaving the driver asks for (see the module docstring).

    Keyed by channel, the gate keeps what arrives in Flink keyed state (a ``ListState``,
    so a checkpoint taken while records wait holds them, and a restore brings them
    back) and looks every few milliseconds (a processing-time timer) at the attempt's
    release file, where the driver names the next delivery: its turn, and the record as
    the channel delivers it, the end of input of a key, or a key to look at after a
    restore. The named record goes through; the records of the channel before it are
    lost (the channel skips them), and so is every record still waiting at the end of
    input. Nothing blocks, so checkpoint barriers pass the gate at any time. A failure
    marker of the running attempt, or its crash file, fails the task.
    """

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def open(self, runtime_context: RuntimeContext) -> None:
        self.run = Path(self.config["run"])
        self.attempt = runtime_context.get_attempt_number() + self.config.get("attempt_base", 0)
        mark_open(self.run, "gate", self.attempt, runtime_context.get_index_of_this_subtask())
        self.held = runtime_context.get_list_state(ListStateDescriptor("held", Types.STRING()))

    def _fail(self) -> None:
        raise InjectedFailure(f"replay-contract live: injected failure {self.attempt + 1}")

    def process_element(self, value: str, ctx: KeyedProcessFunction.Context) -> Any:
        message = json.loads(value)
        if message["kind"] == "crash":
            if message["attempt"] == self.attempt:
                self._fail()
            return
        self.held.add(value)
        yield from self._release()
        self._tick(ctx)

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Any:
        if crash_file(self.run, self.attempt).exists():
            self._fail()
        yield from self._release()
        self._tick(ctx)

    def _tick(self, ctx: Any) -> None:
        if list(self.held.get() or []):
            timers = ctx.timer_service()
            timers.register_processing_time_timer(timers.current_processing_time() + TICK_MS)

    def _release(self) -> Any:
        release = read_release(self.run, self.attempt)
        if release is None or release["turn"] != read_turn(self.run, self.attempt):
            return
        keep: list[str] = []
        out: list[str] = []
        named = release.get("record")
        for value in list(self.held.get() or []):
            message = json.loads(value)
            kind = message["kind"]
            if kind != "record":
                if message["attempt"] != self.attempt:
                    continue  # a marker of an earlier attempt (restored with the state)
                if release.get(kind) == message["key"]:
                    out.append(value)
                else:
                    keep.append(value)
            elif "end" in release:
                continue  # still waiting at the end of input: lost
            elif named is not None and named["channel"] == message["channel"]:
                if named["id"] == message["id"]:
                    out.append(json.dumps({"kind": "record", "k": message["k"], "record": named}))
                elif message["offset"] < named["offset"]:
                    continue  # its channel skips it: lost
                else:
                    keep.append(value)
            else:
                keep.append(value)
        if out:
            self.held.update(keep)
            yield from out


#: Milliseconds between two looks of a gate at the release file while records wait.
TICK_MS = 5


def channel_of(value: str) -> str:
    return str(json.loads(value)["channel"])


def key_of(value: str) -> str:
    return str(json.loads(value)["k"])


class AgentOperator(KeyedProcessFunction):  # type: ignore[misc]
    """The agent operator: a host of the contract's rules (see the module docstring)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def open(self, runtime_context: RuntimeContext) -> None:
        from replay_contract.live.host import FlinkHost

        self.run = Path(self.config["run"])
        self.attempt = runtime_context.get_attempt_number() + self.config.get("attempt_base", 0)
        mark_open(self.run, "agent", self.attempt, runtime_context.get_index_of_this_subtask())
        state = runtime_context.get_state(ValueStateDescriptor("agent-key-state", Types.STRING()))
        self.host = FlinkHost(self.config, state, self.attempt)

    def close(self) -> None:
        host = getattr(self, "host", None)
        if host is not None:
            host.close()

    def process_element(self, value: str, ctx: KeyedProcessFunction.Context) -> Any:
        message = json.loads(value)
        if message["kind"] == "touch":
            events = self.host.touch(message["key"])
        elif message["kind"] == "end":
            events, memory = self.host.end(message["key"])
            if memory is not None:
                append_lines(self.run / "memory.jsonl", [memory])
        else:
            events = self.host.deliver(message["record"])
        append_lines(self.run / "events.jsonl", events)
        write_turn(self.run, self.attempt, read_turn(self.run, self.attempt) + 1)
        return iter(())
