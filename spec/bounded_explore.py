"""The exhaustive explorer of a bound: every run of every scenario shape of the bound
(:mod:`replay_contract.model.bounded` enumerates them) through the model, every property
checked on each. It is the reference the symbolic encoding of ``verify`` is tested
against, and what ``python -m replay_contract.spec.bench`` compares Z3 with.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from attrs import frozen

from replay_contract.model import bounded
from replay_contract.model import trace as t
from replay_contract.model.contracts import Contract
from replay_contract.model.scenario import Scenario

from .properties import check_all


@frozen
class Found:
    """The first run of the explorer that breaks a property."""

    property: str
    scenario: Scenario
    explanation: str


@frozen
class Exploration:
    contract: str
    runs: int
    shapes: int
    findings: dict[str, Found]
    reached: frozenset[str]
    seconds: float
    #: Whether every run of the bound was explored (not cut short by a deadline).
    finished: bool = True

    def verdict(self, prop: str) -> str:
        if prop in self.findings:
            return "counterexample"
        return "proved" if self.finished else "unknown"


def explore(
    bound: bounded.BoundLike,
    contract: Contract,
    progress: Callable[[int, int], None] | None = None,
    deadline: float | None = None,
) -> Exploration:
    """Run every scenario of the bound through the model and check every property.

    With ``deadline`` (seconds), the exploration stops once that much time has passed
    and says it did not finish: a property it found no counterexample for is then
    ``unknown``, not ``proved``."""
    started = time.monotonic()
    findings: dict[str, Found] = {}
    reached: set[str] = set()
    count = shapes_seen = 0
    finished = True
    for shape in bounded.shapes(bound):
        shapes_seen += 1
        for node in bounded.runs(shape, contract, bound):
            if deadline is not None and time.monotonic() - started > deadline:
                finished = False
                break
            count += 1
            events = node.world.events
            for name, test in bounded.REACH.items():
                if name not in reached and any(test(e) for e in events):
                    reached.add(name)
            trace = t.Trace(node.world.agent, contract.basis, events)
            for verdict in check_all(trace):
                if not verdict.holds and verdict.property not in findings:
                    steps = tuple(s for s in node.steps if s.kind != "end")
                    findings[verdict.property] = Found(
                        verdict.property,
                        shape.scenario(steps, f"explored-{contract.name}-{verdict.property}"),
                        verdict.explanation,
                    )
        if progress is not None:
            progress(shapes_seen, count)
        if not finished:
            break
    return Exploration(
        contract.name,
        count,
        shapes_seen,
        findings,
        frozenset(reached),
        time.monotonic() - started,
        finished,
    )
