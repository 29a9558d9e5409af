"""A live run judged as a conformance target, with ``simulate``'s fields.

:func:`run` plays a scenario against the ``flink:<store>`` target through the suite's
own :func:`~replay_contract.conformance.judge.judge` (event for event against the
reference model, and the six properties), writes the run down as a trace file, and
computes ``simulate``'s figures from that trace exactly as ``simulate`` computes them
from the model's (:mod:`replay_contract.spec.summary`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from replay_contract.conformance import tracefile
from replay_contract.conformance.judge import ERROR, SKIPPED, judge
from replay_contract.errors import CommandError
from replay_contract.model import trace as t
from replay_contract.model.contracts import Contract
from replay_contract.model.scenario import Scenario
from replay_contract.spec.properties import check_all, repeated_tool_calls

from .driver import LiveError, LiveFlink


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


def figures(scenario: Scenario, contract: Contract, events: tuple[t.Event, ...]) -> dict[str, Any]:
    """``simulate --json``'s fields for a run's events."""
    trace = t.Trace(scenario.agent, contract.basis, events)
    end = next((e for e in reversed(events) if isinstance(e, t.End)), t.End(()))
    return {
        "scenario": scenario.name,
        "contract": contract.name,
        "tool_calls": sum(isinstance(e, t.Tool) for e in events),
        "repeated_tool_calls": len(repeated_tool_calls(trace)),
        "reused": sum(isinstance(e, t.Reuse) for e in events),
        "waited": sum(isinstance(e, t.Wait) for e in events),
        "invalidated": sum(isinstance(e, t.Invalidate) for e in events),
        "violations": [v.property for v in check_all(trace) if not v.holds],
        "final_memory": [{"key": k, "memory": dict(fields)} for k, fields in end.memory],
        "outputs": [
            {"key": o.key, "input": o.identity, "value": o.value} for o in committed(events)
        ],
    }


def run(
    scenario: Scenario,
    contract: Contract,
    store: str = "kafka",
    *,
    parallelism: int = 2,
    folder: Path | None = None,
) -> dict[str, Any]:
    """Run ``scenario`` live and judge it (see the module docstring); a scenario a live
    job cannot express is refused with the reason (:class:`CommandError`)."""
    target = LiveFlink(store, parallelism=parallelism, folder=folder)
    started = time.monotonic()
    record = target.base / f"{scenario.name}-{contract.name}-{store}.trace.jsonl"
    result = judge(target, scenario, contract, record=record)
    if result.verdict == SKIPPED:
        raise CommandError(f"{scenario.name} under {contract.name}: {result.reason}")
    if result.verdict == ERROR:
        raise LiveError(result.reason)
    events = tracefile.read(record).events
    return {
        **figures(scenario, contract, events),
        "store": store,
        "verdict": result.verdict,
        "reason": result.reason,
        "seconds": round(time.monotonic() - started, 1),
        "trace": str(record),
    }
