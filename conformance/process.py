"""The ``process:<command>`` target: an implementation in another program.

The program speaks the line-oriented JSON protocol documented in ``docs/protocol.md``
on its standard input and output: it announces itself and its capabilities on its first
line; then the suite sends one request per line (``open``, ``deliver``, ``checkpoint``,
``crash``, ``restore``, ``timeout``, ``end``, ``close``) and, while handling a request, the program
calls back (``tool``, ``output``, ``report``, ``execute``), each call answered on one
line, until it ends the request with ``done``, ``crashed`` or ``error``. Its standard
error goes to a log file (in ``log_folder``, the suite's ``--out``, else a temporary
one) whose last line is shown when it fails; the log is kept only when an error message
named it, and removed otherwise when the target shuts down.

A program that exits, is killed or does not answer within ``timeout`` seconds raises
:class:`ProgramGone`, an infrastructure error (the verdict is ``error``, not
``failed``) that names its exit status or signal; the next ``open`` starts it again.
"""

from __future__ import annotations

import contextlib
import json
import queue
import shlex
import signal
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from replay_contract.model import trace as t
from replay_contract.model.agent import Agent, execute
from replay_contract.model.contracts import Contract
from replay_contract.model.scenario import Scenario
from replay_contract.model.topology import Key, Record, Topology

from .events import EventError, event_from_json, member
from .interface import Capabilities, Crashed, Environment, TargetUnavailable

PROTOCOL = "replay-contract/1"
TIMEOUT = 60.0


class ProtocolError(Exception):
    """The program broke the protocol (bad JSON, an unknown message, no answer)."""


class ProgramGone(ProtocolError, TargetUnavailable):
    """The program exited, was killed or stopped answering: no verdict on the contract."""


def exit_cause(status: int | None) -> str:
    """How a program ended, from its exit status (negative: the signal that killed it)."""
    if status is None:
        return "still runs"
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            return f"was killed by signal {-status}"
        return f"was killed by signal {-status} ({name})"
    return f"exited with status {status}"


def record_json(record: Record) -> dict[str, Any]:
    return {
        "id": record.identity,
        "key": record.key,
        "payload": record.payload,
        "channel": record.channel,
        "offset": record.offset,
        "digest": record.digest,
    }


def record_from_json(data: Any) -> Record:
    """A record the program sends back in a call, each member checked as a trace
    event's (:mod:`.events`)."""
    if not isinstance(data, dict):
        raise ProtocolError(f"expected a record object, got {json.dumps(data)[:60]}")
    try:
        return Record(
            member(data, "id", "identity"),
            member(data, "key"),
            data.get("payload"),
            member(data, "channel"),
            member(data, "offset"),
        )
    except EventError as exc:
        raise ProtocolError(f"record: {exc}") from None


class ProcessImplementation:
    """An implementation that runs as a subprocess speaking the JSON line protocol."""

    def __init__(
        self, command: str, timeout: float = TIMEOUT, log_folder: Path | None = None
    ) -> None:
        """Start ``command`` (split as a POSIX shell would; ``ValueError`` when it
        cannot be split, ``OSError`` when it cannot start, :class:`ProtocolError` when
        it does not announce itself)."""
        self.command, self.timeout = command, timeout
        self._argv = shlex.split(command)
        if not self._argv or not self._argv[0]:
            raise ValueError("no command given")
        #: Whether an error message named the log: then it is kept for the user.
        self._log_named = False
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._env: Environment | None = None
        self._agent: Agent | None = None
        self._stderr = tempfile.NamedTemporaryFile(  # noqa: SIM115 (open while the process runs)
            "w+",
            prefix="replay-process-",
            suffix=".log",
            delete=False,
            dir=log_folder,
        )
        try:
            hello = self._start()
            caps = hello.get("capabilities")
            if not isinstance(caps, dict) or "contracts" not in caps:
                raise ProtocolError("the first line lacks capabilities.contracts")
            if not isinstance(caps["contracts"], list):
                raise ProtocolError(
                    "capabilities.contracts: expected a list of contract names, got "
                    f"{json.dumps(caps['contracts'])[:40]}"
                )
        except ProtocolError as exc:
            self._kill()
            # What the program wrote on its standard error explains why it did not start.
            tail = "" if self._log_named else self._tail()
            self._close_log()
            raise ProtocolError(f"{exc}{tail}") from None
        except BaseException:
            self._kill()
            self._close_log()
            raise
        self.name = str(hello.get("name", command))
        self.capabilities = Capabilities(
            tuple(str(c) for c in caps["contracts"]),
            bool(caps.get("crash_points", False)),
            bool(caps.get("non_replayable", False)),
            bool(caps.get("rescaling", False)),
            bool(caps.get("timeout", False)),
        )

    # -- the process -----------------------------------------------------------------

    def _start(self) -> dict[str, Any]:
        self._proc = subprocess.Popen(
            self._argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )
        self._lines = queue.Queue()
        threading.Thread(target=self._pump, args=(self._proc, self._lines), daemon=True).start()
        hello = self._read()
        if hello.get("protocol") != PROTOCOL:
            raise ProtocolError(
                f"the first line must announce protocol {PROTOCOL!r}, got {json.dumps(hello)[:80]}"
            )
        return hello

    @staticmethod
    def _pump(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def _read(self) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            raise ProgramGone(
                f"the target did not answer within {self.timeout:g} s (--timeout){self._tail()}"
            ) from None
        if line is None:
            raise ProgramGone(f"the target {self._ended()}{self._tail()}")
        try:
            message = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ProtocolError(f"not a JSON line ({exc.msg}): {line.strip()[:80]}") from None
        if not isinstance(message, dict):
            raise ProtocolError(f"expected a JSON object: {line.strip()[:80]}")
        return message

    def _ended(self) -> str:
        """How the program ended (it closed its output): its exit status or signal."""
        proc = self._proc
        if proc is None:
            return "is not running"
        try:
            return exit_cause(proc.wait(timeout=2.0))
        except subprocess.TimeoutExpired:
            return "closed its standard output"

    def _send(self, message: Mapping[str, Any]) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.poll() is not None:
            raise ProgramGone(f"the target {self._ended()}{self._tail()}")
        try:
            proc.stdin.write(json.dumps(message, ensure_ascii=False) + "\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise ProgramGone(f"the target {self._ended()}{self._tail()}") from None

    def _tail(self) -> str:
        self._stderr.flush()
        self._stderr.seek(0)
        lines = [ln for ln in self._stderr.read().splitlines() if ln.strip()]
        self._stderr.seek(0, 2)
        if not lines:
            return ""
        self._log_named = True
        return f" (stderr: {lines[-1][:160]}; log {self._stderr.name})"

    # -- one request -----------------------------------------------------------------

    def _request(self, message: Mapping[str, Any]) -> Any:
        """Send a request, answer the program's calls, return what it is ``done`` with;
        raise :class:`Crashed` once the program acknowledges a crash. After a breach of
        the protocol the program is stopped; the next ``open`` starts it again."""
        try:
            return self._exchange(message)
        except ProtocolError:
            self._kill()
            raise

    def _exchange(self, message: Mapping[str, Any]) -> Any:
        self._send(message)
        crashed = False
        while True:
            reply = self._read()
            if "call" in reply:
                crashed = self._answer(reply) or crashed
            elif "done" in reply:
                if crashed:
                    raise ProtocolError("answered done after a crashed call")
                return reply["done"]
            elif reply.get("crashed") is True:
                raise Crashed(str(message.get("op")))
            elif "error" in reply:
                raise ProtocolError(f"the program failed: {reply['error']}")
            else:
                raise ProtocolError(f"unknown message {json.dumps(reply)[:80]}")

    def _answer(self, call: dict[str, Any]) -> bool:
        """Answer one call; ``True`` when the answer is that the step crashed."""
        try:
            self._send(self._dispatch(call))
        except Crashed:
            self._send({"crashed": True})
            return True
        return False

    def _dispatch(self, call: dict[str, Any]) -> dict[str, Any]:
        env = self._env
        if env is None:
            raise ProtocolError("a call outside an open scenario")
        kind = call["call"]
        try:
            if kind == "tool":
                return {
                    "result": env.tool(
                        member(call, "key"),
                        member(call, "position"),
                        record_from_json(call.get("record")),
                        member(call, "path"),
                        member(call, "tool"),
                        member(call, "reads") if "reads" in call else (),
                    )
                }
            if kind == "output":
                env.output(
                    member(call, "key"),
                    member(call, "identity"),
                    member(call, "path"),
                    member(call, "value"),
                )
                return {"ok": True}
            if kind == "report":
                env.report(_reported(call.get("event")))
                return {"ok": True}
            if kind == "execute":
                return self._execute(call)
        except EventError as exc:
            raise ProtocolError(f"bad {kind} call: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"bad {kind} call {json.dumps(call)[:80]}: {exc}") from None
        raise ProtocolError(f"unknown call {kind!r}")

    def _execute(self, call: dict[str, Any]) -> dict[str, Any]:
        """The agent's action semantics, as a service: what an action writes and emits."""
        assert self._agent is not None
        name = call["action"]
        action = next((a for a in self._agent.actions if a.name == name), None)
        if action is None:
            raise ProtocolError(f"execute: no action {name!r}")
        effects = execute(
            action,
            member(call, "path"),
            record_from_json(call.get("record")),
            member(call, "reads") if "reads" in call else (),
            tuple((str(a), str(b)) for a, b in call.get("tool_results", ())),
        )
        return {"writes": [list(w) for w in effects.writes], "outputs": list(effects.outputs)}

    # -- the Implementation protocol -------------------------------------------------

    def open(self, agent: Agent, topology: Topology, contract: Contract, env: Environment) -> None:
        if self._proc is None or self._proc.poll() is not None:
            self._start()
        self._env, self._agent = env, agent
        scenario = Scenario("", agent, topology, ()).to_json()
        self._request(
            {
                "op": "open",
                "agent": scenario["agent"],
                "channels": scenario["channels"],
                "contract": contract.to_json(),
            }
        )

    def deliver(self, record: Record) -> None:
        self._request({"op": "deliver", "record": record_json(record)})

    def checkpoint(self) -> int:
        done = self._request({"op": "checkpoint"})
        if not isinstance(done, dict) or not isinstance(done.get("checkpoint"), int):
            raise ProtocolError(f'checkpoint: expected {{"checkpoint": N}}, got {done!r}')
        return int(done["checkpoint"])

    def crash(self) -> None:
        self._request({"op": "crash"})

    def restore(self) -> None:
        self._request({"op": "restore"})

    def wait_bound_passed(self) -> None:
        self._request({"op": "timeout"})

    def end(self) -> Mapping[Key, Mapping[str, Any]]:
        done = self._request({"op": "end"})
        try:
            return {member(m, "key"): dict(m["memory"]) for m in done["memory"]}
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(
                f'end: expected {{"memory": [{{"key": ..., "memory": '
                f"{{...}}}}]}}, got {json.dumps(done)[:80]} ({exc})"
            ) from None

    def close(self) -> None:
        self._env = None
        if self._proc is not None and self._proc.poll() is None:
            self._request({"op": "close"})

    def shutdown(self) -> None:
        """Stop the program at the end of a suite: close its input, wait for it. Its
        standard error log is removed, unless an error message named it (a failure
        report points there)."""
        self._kill(grace=5.0)
        self._close_log()

    def keep_log(self) -> Path | None:
        """Keep the standard error log after the shutdown, if the program wrote
        anything there, and say where it is (for a suite that failed)."""
        self._stderr.flush()
        if self.log.exists() and self.log.stat().st_size > 0:
            self._log_named = True
            return self.log
        return None

    @property
    def log(self) -> Path:
        """The file the program's standard error goes to."""
        return Path(self._stderr.name)

    def _close_log(self) -> None:
        """Close the standard error log; remove it unless an error message named it."""
        self._stderr.close()
        if not self._log_named:
            with contextlib.suppress(OSError):
                self.log.unlink()

    def _kill(self, grace: float = 0.0) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(timeout=grace or 0.5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _reported(data: Any) -> t.Event:
    """The event of a ``report`` call, decoded as a recorded trace's are: a member of
    the wrong type is a breach of the protocol that names it."""
    if not isinstance(data, dict):
        raise ProtocolError(
            f"bad report call: event: expected an object, got {json.dumps(data)[:60]}"
        )
    try:
        return event_from_json(data)
    except EventError as exc:
        kind = data.get("event")
        what = f"{kind} event: " if isinstance(kind, str) and kind in t.EVENT_TYPES else ""
        raise ProtocolError(f"bad report call: {what}{exc}") from None
