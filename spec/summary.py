"""What a run of the model shows: the figures ``simulate`` reports, with the names of the
properties the run broke (checked here, by the specification, not by the model)."""

from __future__ import annotations

from typing import Any

from replay_contract.model import trace as t
from replay_contract.model.run import Run

from .properties import check_all, repeated_tool_calls


def summary(run: Run) -> dict[str, Any]:
    """``simulate --json``'s object for one run."""
    events = run.world.events
    verdicts = check_all(run.trace)
    end = next(e for e in reversed(events) if isinstance(e, t.End))
    return {
        "scenario": run.scenario.name,
        "contract": run.contract.name,
        "tool_calls": sum(isinstance(e, t.Tool) for e in events),
        "repeated_tool_calls": len(repeated_tool_calls(run.trace)),
        "reused": sum(isinstance(e, t.Reuse) for e in events),
        "waited": sum(isinstance(e, t.Wait) for e in events),
        "invalidated": sum(isinstance(e, t.Invalidate) for e in events),
        "violations": [v.property for v in verdicts if not v.holds],
        "final_memory": [{"key": k, "memory": dict(fields)} for k, fields in end.memory],
        "outputs": [
            {"key": o.key, "input": o.identity, "value": o.value} for o in run.world.committed
        ],
    }
