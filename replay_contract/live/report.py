"""What a live run shows: ``simulate``'s fields, and the checker's verdict on its trace.

The figures are computed from the run's events exactly as ``simulate`` computes them
from the model's (:mod:`replay_contract.spec.summary`); the trace is judged by
:func:`replay_contract.conformance.check.check`, event for event against the reference
model replaying the same schedule, and by the six properties.
"""

from __future__ import annotations

from typing import Any

from replay_contract.conformance import tracefile
from replay_contract.conformance.check import Judgement, check
from replay_contract.model import trace as t
from replay_contract.spec.properties import check_all, repeated_tool_calls

from .driver import LiveRun


def committed(events: tuple[t.Event, ...]) -> list[t.Output]:
    """The outputs that stand: those a crash rolled back (emitted after the latest
    checkpoint before it) are not among them, as in the model."""
    done: list[t.Output] = []
    pending: list[t.Output] = []
    for e in events:
        if isinstance(e, t.Output):
            pending.append(e)
        elif isinstance(e, t.Checkpoint | t.End):
            done, pending = done + pending, []
        elif isinstance(e, t.Crash):
            pending = []
    return done


def judge(run: LiveRun) -> Judgement:
    path = run.folder / "trace.jsonl"
    with path.open("w", encoding="utf-8") as out:
        tracefile.write_lines(out, tracefile.header(run.scenario, run.contract), run.events)
    return check(tracefile.read(path), run.folder)


def summary(run: LiveRun) -> dict[str, Any]:
    events = run.events
    trace = t.Trace(run.scenario.agent, run.contract.basis, events)
    end = next(e for e in reversed(events) if isinstance(e, t.End))
    judgement = judge(run)
    return {
        "scenario": run.scenario.name,
        "contract": run.contract.name,
        "store": run.store,
        "tool_calls": sum(isinstance(e, t.Tool) for e in events),
        "repeated_tool_calls": len(repeated_tool_calls(trace)),
        "reused": sum(isinstance(e, t.Reuse) for e in events),
        "waited": sum(isinstance(e, t.Wait) for e in events),
        "invalidated": sum(isinstance(e, t.Invalidate) for e in events),
        "violations": [v.property for v in check_all(trace) if not v.holds],
        "final_memory": [{"key": k, "memory": dict(fields)} for k, fields in end.memory],
        "outputs": [{"key": o.key, "input": o.identity, "value": o.value} for o in committed(events)],
        "verdict": judgement.verdict,
        "difference": judgement.difference,
        "attempts": run.attempts,
        "seconds": round(run.seconds, 1),
        "trace": str(run.folder / "trace.jsonl"),
    }
