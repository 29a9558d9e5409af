"""The environment the suite gives an implementation: tools, output sink, reports.

Everything an implementation does that can be observed from outside goes through here,
so the suite records it itself: every tool call (the suite runs the tool), every output
and every reported decision or durable write, in the order they happen.

The environment also decides where a step crashes. With ``crash_after`` N > 0 it raises
:class:`~.interface.Crashed` right after the N-th effect of the step (a tool call, or the
report of a durable write that already happened); with ``crash_after`` 0 it raises at
the first call of the step, before doing anything, so that the step leaves nothing but
its delivery. After a crash every further call of the step raises again and is
recorded as a breach of the protocol.
"""

from __future__ import annotations

from typing import Any

from replay_contract.model import trace as t
from replay_contract.model.agent import Path, call_tool
from replay_contract.model.topology import Key, Record

from .interface import Crashed

#: The events an implementation may report (the others the suite records itself).
REPORTABLE = (t.Accept, t.Wait, t.Reuse, t.GiveUp, t.Save, t.Order, t.Invalidate)


class SuiteEnvironment:
    """Records one run's events and raises :class:`Crashed` where a step must crash."""

    def __init__(self) -> None:
        self.events: list[t.Event] = []
        self.breaches: list[str] = []
        self._crash_after: int | None = None
        self._effects = 0
        self._crashed = False
        self._step = ""

    # -- driven by the runner --------------------------------------------------------

    def begin(self, step: str, crash_after: int | None = None) -> None:
        """Start a step that crashes after its ``crash_after``-th effect (if set)."""
        self._step, self._crash_after, self._effects, self._crashed = step, crash_after, 0, False

    def record(self, event: t.Event) -> None:
        """An event the suite itself observes (deliver, checkpoint, crash, ...)."""
        self.events.append(event)

    @property
    def crashed(self) -> bool:
        return self._crashed

    def breach(self, what: str) -> None:
        text = f"{self._step}: {what}"
        if text not in self.breaches:
            self.breaches.append(text)

    # -- the Environment protocol ----------------------------------------------------

    def tool(
        self, key: Key, position: int, record: Record, path: Path, tool: str, reads: tuple[Any, ...]
    ) -> str:
        self._enter(f"tool {tool}")
        path, reads = tuple(path), tuple(reads)
        result = call_tool(tool, record, path, reads)
        self.events.append(
            t.Tool(key, position, record.identity, record.digest, path, tool, result)
        )
        self._effect()
        return result

    def output(self, key: Key, identity: str, path: Path, value: str) -> None:
        self._enter("output")
        self.events.append(t.Output(key, identity, tuple(path), value))

    def report(self, event: t.Event) -> None:
        self._enter(f"report {getattr(event, 'kind', type(event).__name__)}")
        if not isinstance(event, REPORTABLE):
            self.breach(f"reported {type(event).__name__}, which only the suite records")
            return
        self.events.append(event)
        if t.is_effect(event):
            self._effect()

    # -- crash points ----------------------------------------------------------------

    def _enter(self, what: str) -> None:
        if self._crashed:
            self.breach(f"{what} after the environment raised Crashed")
            raise Crashed(self._step)
        if self._crash_after == 0:
            self._crashed = True
            raise Crashed(self._step)

    def _effect(self) -> None:
        self._effects += 1
        if self._crash_after is not None and self._effects >= self._crash_after:
            self._crashed = True
            raise Crashed(self._step)
