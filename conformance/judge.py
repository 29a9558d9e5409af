"""Judging one scenario: run it, compare with the reference model, check the properties.

A scenario passes when the implementation's normalised trace equals the reference
model's under the same contract, step for step, and when the implementation breaks no
property that the reference model keeps on that scenario. (Under ``seqnum`` the model
itself breaks ``complete-reuse`` on reversed interleavings: the implementation is then
expected to break it in the same place, and the result says where.) A scenario that
needs a capability the implementation lacks is skipped with the reason. A run that an
infrastructure error cut short (:class:`~.interface.TargetUnavailable`) gets the verdict
``error``, with the cause, and is neither passed nor failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attrs import evolve, frozen

from replay_contract.model import trace as t
from replay_contract.model.contracts import Contract
from replay_contract.model.narrate import table
from replay_contract.model.scenario import Scenario, Step
from replay_contract.spec.properties import (
    COMPLETE_REUSE,
    Verdict,
    check_all,
    repeated_tool_calls,
)

from . import tracefile
from .compare import Difference, first_difference
from .coverage import exercised
from .interface import Capabilities, Implementation
from .reference import reference_steps
from .runner import Observed, observe

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
#: The implementation could not be driven to the end for a reason outside the contract
#: (its server went away, its process exited): no verdict on the contract.
ERROR = "error"


@frozen
class Result:
    """The verdict on one scenario, with the figures the summary shows.

    ``reason``: why it was skipped or failed — the broken property (``property``), the
    first difference (``difference``) or the implementation's error. ``expected_*`` are
    the reference model's figures, ``tool_calls`` and ``repeated`` the implementation's.
    ``complete_reuse``: where the implementation's run breaks ``complete-reuse``, if it
    does (the model's ``seqnum`` does too, on purpose). ``rules``: the rules of the
    contract the reference model's run exercised (:mod:`.coverage`).
    """

    name: str
    verdict: str
    seed: int | None = None
    reason: str = ""
    property: str | None = None
    difference: str | None = None
    expected_tool_calls: int = 0
    tool_calls: int = 0
    expected_repeated: int = 0
    repeated: int = 0
    complete_reuse: str = ""
    report: str = ""
    scenario_file: str | None = None
    first: Difference | None = None
    rules: tuple[str, ...] = ()


def unclaimed(caps: Capabilities, contract: Contract, verb: str = "implements") -> str | None:
    """``implements ..., not CONTRACT`` when the target does not claim ``contract``: then
    it can run nothing under it."""
    if contract.name in caps.contracts:
        return None
    return f"{verb} {', '.join(caps.contracts) or 'no contract'}, not {contract.name}"


def skip_reason(caps: Capabilities, scenario: Scenario, contract: Contract) -> str | None:
    """Why the target cannot run this scenario under this contract, if it cannot."""
    unclaimed_reason = unclaimed(caps, contract, "claims")
    if unclaimed_reason is not None:
        return f"the target {unclaimed_reason}"
    if not caps.crash_points and any(s.crash_after is not None for s in scenario.schedule):
        return "needs a crash inside a step (crash_after); the target crashes only between steps"
    if not caps.non_replayable and any(not c.replayable for c in scenario.topology.channels):
        return "needs a source that is not replayable; the target does not support one"
    if not caps.timeout and any(s.kind == "timeout" for s in scenario.schedule):
        return (
            "needs a timeout step (the wait bound passing); the target does not declare "
            "the timeout capability"
        )
    if caps.expresses is not None:
        return caps.expresses(scenario, contract)
    return None


def judge(
    impl: Implementation,
    scenario: Scenario,
    contract: Contract,
    seed: int | None = None,
    record: Path | None = None,
) -> Result:
    """Run ``scenario`` against ``impl`` under ``contract`` and judge the run; with
    ``record``, the run is also written there as a trace file (``replay-contract check``
    judges it the same way)."""
    reason = skip_reason(impl.capabilities, scenario, contract)
    if reason is not None:
        return Result(scenario.name, SKIPPED, seed, reason)
    expected = reference_steps(scenario, contract)
    observed = observe(impl, scenario, contract)
    if record is not None:
        tracefile.write(
            record,
            scenario,
            contract,
            observed.events,
            observed.steps,
            observed.error,
            observed.unavailable,
        )
    if observed.unavailable:
        assert observed.error is not None
        return Result(scenario.name, ERROR, seed, observed.error)
    return judge_observed(scenario, contract, expected, observed, seed)


def judge_observed(
    scenario: Scenario,
    contract: Contract,
    expected: Sequence[tuple[Step, Sequence[t.Event]]],
    observed: Observed,
    seed: int | None = None,
    verdicts: tuple[list[Verdict], list[Verdict]] | None = None,
) -> Result:
    """Judge an implementation's run of ``scenario`` (``observed``) against the
    reference model's (``expected``), as :func:`judge` does: the conformance suite and
    ``replay-contract check`` judge with this one function. ``verdicts`` are the
    properties' verdicts on the two traces, when the caller has them already."""
    rules = exercised(contract, tuple(e for _, es in expected for e in es))
    exp_trace = t.Trace(scenario.agent, contract.basis, tuple(e for _, es in expected for e in es))
    act_trace = t.Trace(scenario.agent, contract.basis, observed.events)
    exp_list, act_verdicts = verdicts or (check_all(exp_trace), check_all(act_trace))
    exp_verdicts = {v.property: v for v in exp_list}
    broken = [v for v in act_verdicts if not v.holds and exp_verdicts[v.property].holds]
    cr = next(v for v in act_verdicts if v.property == COMPLETE_REUSE)
    diff = first_difference(expected, observed.steps)
    passed = Result(
        scenario.name,
        PASSED,
        seed,
        expected_tool_calls=sum(isinstance(e, t.Tool) for e in exp_trace.events),
        tool_calls=sum(isinstance(e, t.Tool) for e in act_trace.events),
        expected_repeated=len(repeated_tool_calls(exp_trace)),
        repeated=len(repeated_tool_calls(act_trace)),
        complete_reuse=""
        if cr.holds
        else f"{_step_of(observed, cr.witness[-1])}: {cr.explanation}",
        rules=rules,
    )
    if observed.error is None and diff is None and not broken:
        return passed
    if observed.error is not None:
        reason = f"error: {observed.error}"
    elif broken:
        reason = f"{broken[0].property}: {broken[0].explanation}"
    else:
        assert diff is not None
        reason = f"first difference: {diff.summary()}"
    return evolve(
        passed,
        verdict=FAILED,
        reason=reason,
        property=broken[0].property if broken else None,
        difference=diff.summary() if diff is not None else None,
        first=diff,
        report=failure_report(
            scenario,
            contract,
            diff,
            act_trace,
            [v for v in act_verdicts if not v.holds],
            observed.error,
        ),
    )


def _step_of(observed: Observed, event: int) -> str:
    """The schedule step an event of the observed trace belongs to."""
    seen = 0
    for i, (step, events) in enumerate(observed.steps):
        seen += len(events)
        if event < seen:
            return f"step {i} ({step})"
    return "the end"


def failure_report(
    scenario: Scenario,
    contract: Contract,
    diff: Difference | None,
    trace: t.Trace,
    broken: list[Verdict],
    error: str | None,
) -> str:
    """The readable report of a failed scenario: the first difference as a table, the
    properties the implementation broke, and its run as the model narrates runs."""
    parts = [f"scenario {scenario.name} under {contract.name}"]
    if error is not None:
        parts.append(f"the implementation failed: {error}")
    if diff is not None:
        parts.append(diff.table())
    for v in broken:
        parts.append(f"broken: {v.property}: {v.explanation}")
    witnesses: dict[str, Sequence[int]] = {v.property: v.witness for v in broken}
    parts.append("the implementation's run:\n" + table(trace, witnesses))
    return "\n\n".join(parts)
