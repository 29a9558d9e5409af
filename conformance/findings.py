"""Findings: how an implementation under test differs from the reference model, by kind.

A *recorded run* runs the suite (the catalogue, its crash sweeps and generated scenarios)
against some targets under some contracts, sorts every failing scenario into a *kind* of
difference by its first difference from the model (:func:`classify`), keeps the smallest
scenario of each kind (shrunk further against the target), and writes it all to one JSON
file. ``replay-contract findings`` makes the record; ``docs/flink-agents.md`` is generated
from the one of the real Flink Agents runtime (``conformance/flink-agents/findings.json``),
and a test replays each finding's scenario to check that a fresh run still shows it.

Where the runtime and the documented baseline disagree, the difference is a finding: the
model is not bent to the runtime. What a kind means for a user is said in :data:`KINDS`.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from attrs import evolve, frozen

from replay_contract.model import trace as t
from replay_contract.model.contracts import Contract, contract
from replay_contract.model.scenario import Scenario, from_json

from .judge import ERROR, FAILED, PASSED, SKIPPED, Result, judge
from .runner import observe
from .shrink import shrink
from .suite import cases, shutdown
from .targets import resolve


@frozen
class Kind:
    """A kind of difference from the model, in a user's words."""

    id: str
    title: str
    impact: str


KINDS: dict[str, Kind] = {
    k.id: k
    for k in (
        Kind(
            "invalidation-spares-position",
            "A miss invalidates only later positions, and only in memory",
            "When an input comes back at another position, the results saved for the other "
            "inputs at its position stay reusable, and every invalidation is forgotten at "
            "the next restore: a second failure before the next checkpoint brings the "
            "invalidated results back.",
        ),
        Kind(
            "invalidation-not-durable",
            "Invalidations are kept in memory only",
            "A divergence drops the later saved results from the operator's view but writes "
            "nothing: after a second failure they are read back from the store.",
        ),
        Kind(
            "other-key-invalidated",
            "A miss for one key invalidates the saved results of other keys",
            "A divergence of one key makes other keys run their completed tool calls again "
            "after a restore (key isolation broken).",
        ),
        Kind(
            "multi-action-divergence",
            "An input that runs several actions is taken for a divergence",
            "With two or more actions per input, the first lookup after a restore finds "
            "several saved states at one position, calls it a divergence and drops every "
            "later result: completed tool calls run again even with one ordered input path.",
        ),
        Kind(
            "identity-per-jvm",
            "Saved results are not found after a restore in a new JVM",
            "The action's part of the state key hashes Java class objects, whose hash "
            "codes differ from one JVM to the next: after a TaskManager failover (or a "
            "restart with a new user class loader) nothing saved is reused and every "
            "completed tool call runs again.",
        ),
        Kind(
            "lost-reuse",
            "A saved completion the model reuses is run again",
            "Completed tool calls run again after a restore.",
        ),
        Kind(
            "stale-reuse",
            "A saved completion is reused where the model runs the action",
            "A result computed against another preceding history can be replayed: memory "
            "and outputs can be wrong.",
        ),
        Kind(
            "no-ordered-contract",
            "No waiting for the recorded order (ordered is not implemented)",
            "Inputs are accepted in arrival order and no position is recorded: under the "
            "ordered contract, reuse after a changed interleaving is lost.",
        ),
        Kind(
            "runtime-error",
            "The runtime fails the step",
            "The job fails (and, after a restart, may fail again at the same place).",
        ),
        Kind(
            "unclassified",
            "Another difference",
            "See the scenario's table.",
        ),
    )
}


def _plan_size(scenario: Scenario) -> int:
    return sum(1 for _ in scenario.agent.plan())


def classify(result: Result, scenario: Scenario, contract: Contract, target: str) -> str:
    """The kind of a failed result, from its first difference from the model."""
    if result.reason.startswith("error:"):
        return "runtime-error"
    diff = result.first
    if diff is None:
        return "stale-reuse" if result.property == "no-stale-reuse" else "unclassified"
    exp = diff.expected[diff.event] if diff.event < len(diff.expected) else None
    act = diff.actual[diff.event] if diff.event < len(diff.actual) else None
    delivered = next((e for e in diff.actual if isinstance(e, t.Deliver)), None)
    if contract.wait and (
        isinstance(exp, t.Wait | t.GiveUp | t.Order)
        or (isinstance(exp, t.Save) and exp.order)
        or (isinstance(exp, t.Accept) and isinstance(act, t.Accept))
    ):
        return "no-ordered-contract"
    if isinstance(act, t.Invalidate) and delivered is not None and act.key != delivered.key:
        return "other-key-invalidated"
    if isinstance(act, t.Reuse) and not isinstance(exp, t.Reuse):
        return "stale-reuse"
    if isinstance(exp, t.Invalidate):
        if isinstance(act, t.Invalidate) and set(act.completions) == set(exp.completions):
            return "invalidation-not-durable" if act.durable != exp.durable else "unclassified"
        return "invalidation-spares-position"
    if isinstance(exp, t.Reuse) and not isinstance(act, t.Reuse):
        if target.endswith(":fresh-jvm"):
            return "identity-per-jvm"
        return "multi-action-divergence" if _plan_size(scenario) > 1 else "lost-reuse"
    return "unclassified"


@frozen
class Plan:
    """One run of a recorded run: a target, a contract, and how much to run."""

    target: str
    contract: str
    examples: int
    sweep: bool = True


#: The recorded run of the Flink Agents findings (``replay-contract findings``): every
#: plan on Kafka; on Fluss, where a scenario takes several times as long, the crash
#: sweeps under ``seqnum`` and the catalogue alone otherwise.
FLINK_AGENTS_PLANS = (
    Plan("flink-agents:fluss", "seqnum", 0),
    Plan("flink-agents:kafka", "seqnum", 20),
    Plan("flink-agents:kafka", "ordered", 10),
    Plan("flink-agents:kafka:fresh-jvm", "seqnum", 0, sweep=False),
    Plan("flink-agents:fluss", "ordered", 0, sweep=False),
    Plan("flink-agents:fluss:fresh-jvm", "seqnum", 0, sweep=False),
)
RECORD = Path(__file__).resolve().parent / "flink-agents" / "findings.json"


def _size(scenario: Scenario) -> tuple[int, int, int]:
    records = sum(len(c.records) for c in scenario.topology.channels)
    return (len(scenario.schedule), records, _plan_size(scenario))


def run_plan(
    plan: Plan, seed: int, progress: Callable[[str], None]
) -> tuple[dict[str, Any], list[tuple[str, Scenario, Result]]]:
    """Run one plan; return its summary and its failures with their kinds."""
    c = contract(plan.contract)
    impl = resolve(plan.target)
    started = time.monotonic()
    failures: list[tuple[str, Scenario, Result]] = []
    counts = {PASSED: 0, FAILED: 0, SKIPPED: 0, ERROR: 0}
    kinds: dict[str, int] = {}
    try:
        todo = cases(plan.examples, seed, c, sweep=plan.sweep)
        for i, case in enumerate(todo, 1):
            scenario = case.build()
            result = judge(impl, scenario, c, case.seed)
            counts[result.verdict] += 1
            if result.verdict == FAILED:
                kind = classify(result, scenario, c, plan.target)
                kinds[kind] = kinds.get(kind, 0) + 1
                failures.append((kind, scenario, result))
            said = f" ({kind})" if result.verdict == FAILED else ""
            progress(
                f"{plan.target} {plan.contract} [{i}/{len(todo)}] {case.name}: "
                f"{result.verdict}{said}"
            )
    finally:
        shutdown(impl)
    seconds = time.monotonic() - started
    ran = counts[PASSED] + counts[FAILED]
    summary = {
        "target": plan.target,
        "contract": plan.contract,
        "seed": seed,
        "examples": plan.examples,
        "sweep": plan.sweep,
        **counts,
        "seconds": round(seconds, 1),
        "seconds_per_scenario": round(seconds / ran, 2) if ran else None,
        "kinds": dict(sorted(kinds.items())),
    }
    return summary, failures


def _smallest(
    kind: str, plan: Plan, failures: Sequence[tuple[str, Scenario, Result]], budget: int
) -> tuple[Scenario, Result, tuple[t.Event, ...]]:
    """The smallest failing scenario of ``kind``, shrunk further while it keeps the kind."""
    scenario, found = min(
        ((s, r) for k, s, r in failures if k == kind), key=lambda sr: _size(sr[0])
    )
    if kind == "runtime-error":
        budget = 0  # an error of the runtime need not come back on every run: keep it whole
    c = contract(plan.contract)
    impl = resolve(plan.target)
    try:

        def same(candidate: Scenario) -> bool:
            # The same kind, and still calling tools when the original did: a user reads
            # a finding by the tool calls it repeats.
            r = judge(impl, candidate, c)
            return (
                r.verdict == FAILED
                and classify(r, candidate, c, plan.target) == kind
                and (r.tool_calls > 0 or found.tool_calls == 0)
            )

        small = shrink(scenario, same, budget=budget) if budget > 0 else scenario
        scenario = small.with_schedule(small.schedule, kind)
        result = judge(impl, scenario, c)
        observed = observe(impl, scenario, c)
    finally:
        shutdown(impl)
    if result.verdict != FAILED or classify(result, scenario, c, plan.target) != kind:
        # It did not come back: say so, and keep what the run that found it saw.
        return scenario, evolve(found, name=kind, scenario_file="not reproduced"), observed.events
    return scenario, result, observed.events


def record(
    plans: Sequence[Plan],
    out: Path,
    *,
    seed: int = 0,
    shrink_budget: int = 15,
    workers: int = 2,
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Run every plan (``workers`` at a time), keep one scenario per kind and write the
    recorded run to ``out`` with the scenario files beside it (``findings/<kind>.json``)."""
    from replay_contract.docs_gen import sequence_diagram_of

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(lambda p: run_plan(p, seed, progress), plans))
    findings: list[dict[str, Any]] = []
    folder = out.parent / "findings"
    smallest: list[Scenario] = []
    seen: dict[str, list[str]] = {}
    for plan, (summary, _) in zip(plans, done, strict=True):
        for kind in summary["kinds"]:
            seen.setdefault(kind, []).append(f"{plan.target} ({plan.contract})")
    for kind, where in seen.items():
        plan, failures = next(
            (p, f) for p, (s, f) in zip(plans, done, strict=True) if kind in s["kinds"]
        )
        progress(f"finding {kind}: shrinking on {plan.target} under {plan.contract}")
        scenario, result, events = _smallest(kind, plan, failures, shrink_budget)
        smallest.append(scenario)
        path = folder / f"{kind}.json"
        info = KINDS[kind]
        reasons = sorted(
            {
                r.reason[:240]
                for _, failures in done
                for k, _, r in failures
                if k == kind == "runtime-error"
            }
        )
        findings.append(
            {
                "kind": kind,
                "title": info.title,
                "impact": info.impact,
                "seen_in": where,
                "target": plan.target,
                "contract": plan.contract,
                "scenario_file": str(path.relative_to(out.parent)),
                "reproduced": result.scenario_file != "not reproduced",
                "errors": reasons,
                "property": result.property,
                "difference": result.difference or result.reason,
                "tool_calls": {"expected": result.expected_tool_calls, "actual": result.tool_calls},
                "repeated_tool_calls": {
                    "expected": result.expected_repeated,
                    "actual": result.repeated,
                },
                "report": result.report,
                "diagram": sequence_diagram_of(scenario, events),
            }
        )
    doc = {
        "implementation": _label(plans),
        "servers": servers(),
        "recorded": time.strftime("%Y-%m-%d", time.gmtime()),
        "cores": os.cpu_count(),
        "seed": seed,
        "seconds": round(time.monotonic() - started, 1),
        "runs": [summary for summary, _ in done],
        "findings": findings,
    }
    # The scenario files of an earlier record go with it: only this record's stay.
    shutil.rmtree(folder, ignore_errors=True)
    for scenario in smallest:
        scenario.write(folder / f"{scenario.name}.json")
    out.write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def servers() -> dict[str, str]:
    """The servers the targets ran against, as ``services up`` starts them."""
    from replay_contract.services.fluss import FLUSS_VERSION
    from replay_contract.services.kafka import KAFKA_VERSION

    return {
        "kafka": f"Apache Kafka {KAFKA_VERSION}, one KRaft node on 127.0.0.1",
        "fluss": f"Apache Fluss {FLUSS_VERSION}: ZooKeeper, a CoordinatorServer and a "
        "TabletServer on 127.0.0.1",
    }


def _label(plans: Sequence[Plan]) -> str:
    if any(p.target.startswith("flink-agents") for p in plans):
        from . import flink_agents

        return str(flink_agents.build(progress=False)["label"])
    return ", ".join(sorted({p.target for p in plans}))


def load(path: Path = RECORD) -> dict[str, Any]:
    """A recorded run."""
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def finding_scenario(finding: dict[str, Any], record_file: Path = RECORD) -> Scenario:
    """The scenario file of one finding of a recorded run (relative to the record)."""
    path = record_file.parent / finding["scenario_file"]
    return from_json(json.loads(path.read_text()), str(path))
