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
import time
from pathlib import Path
from typing import Any

from pyflink.datastream.functions import FlatMapFunction, KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor
from pyflink.common.typeinfo import Types

#: Seconds a gate waits for its turn before it fails the job (a stuck run).
TURN_TIMEOUT = 120.0


def turn_file(run: Path, attempt: int) -> Path:
    return run / f"turn-{attempt}"


def read_turn(run: Path, attempt: int) -> int:
    try:
        return int(turn_file(run, attempt).read_text() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def write_turn(run: Path, attempt: int, value: int) -> None:
    path = turn_file(run, attempt)
    partial = path.with_suffix(".partial")
    partial.write_text(str(value))
    os.replace(partial, path)


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


class Gate(FlatMapFunction):  # type: ignore[misc]
    """Forces the attempt's interleaving (see the module docstring)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def open(self, runtime_context: RuntimeContext) -> None:
        self.run = Path(self.config["run"])
        self.attempt = runtime_context.get_attempt_number()
        attempts = self.config["plan"]["attempts"]
        deliveries = attempts[self.attempt] if self.attempt < len(attempts) else []
        self.turns = {d["id"]: (turn, d) for turn, d in enumerate(deliveries)}

    def flat_map(self, value: str) -> Any:
        message = json.loads(value)
        kind = message["kind"]
        if kind == "crash":
            if message["attempt"] == self.attempt:
                raise InjectedFailure(f"replay-contract live: injected failure {self.attempt + 1}")
            return
        if kind == "end":
            if message["attempt"] == self.attempt:
                yield value
            return
        entry = self.turns.get(message["id"])
        if entry is None:
            return  # this attempt does not deliver it (an input that never returns)
        turn, record = entry
        deadline = time.monotonic() + TURN_TIMEOUT
        while read_turn(self.run, self.attempt) < turn:
            if time.monotonic() > deadline:
                raise RuntimeError(f"replay-contract live: {record['id']} waited for turn {turn}")
            time.sleep(0.002)
        yield json.dumps({"kind": "record", "k": message["k"], "record": record})


def key_of(value: str) -> str:
    return str(json.loads(value)["k"])


class AgentOperator(KeyedProcessFunction):  # type: ignore[misc]
    """The agent operator: a host of the contract's rules (see the module docstring)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def open(self, runtime_context: RuntimeContext) -> None:
        from replay_contract.live.host import FlinkHost

        self.run = Path(self.config["run"])
        self.attempt = runtime_context.get_attempt_number()
        state = runtime_context.get_state(ValueStateDescriptor("agent-key-state", Types.STRING()))
        self.host = FlinkHost(self.config, state, self.attempt)

    def close(self) -> None:
        host = getattr(self, "host", None)
        if host is not None:
            host.close()

    def process_element(self, value: str, ctx: KeyedProcessFunction.Context) -> Any:
        message = json.loads(value)
        if message["kind"] == "end":
            events, memory = self.host.end(message["key"])
            if memory is not None:
                append_lines(self.run / "memory.jsonl", [memory])
        else:
            events = self.host.deliver(message["record"])
        append_lines(self.run / "events.jsonl", events)
        write_turn(self.run, self.attempt, read_turn(self.run, self.attempt) + 1)
        return iter(())
