"""What a suite run reports: the summary table, the JSON document and JUnit XML."""

from __future__ import annotations

import shlex
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from attrs import frozen

from replay_contract.model.narrate import render

from .coverage import tally
from .judge import ERROR, FAILED, PASSED, SKIPPED, Result
from .runner import OPEN


@frozen
class SuiteRun:
    """A suite run's results; ``planned``: how many cases it was to run (more than it
    ran when ``stopped`` says why it stopped early: errors in a row, a deadline, Ctrl-C).
    """

    target: str
    contract: str
    seed: int
    results: tuple[Result, ...]
    seconds: float
    planned: int | None = None
    stopped: str | None = None

    def count(self, verdict: str) -> int:
        return sum(r.verdict == verdict for r in self.results)

    def rules(self) -> dict[str, int]:
        """For each rule of the contract: how many scenarios that ran exercised it."""
        from replay_contract.model.contracts import contract

        try:
            chosen = contract(self.contract)
        except Exception:
            return {}
        return tally(chosen, (r.rules for r in self.results if ran(r)))

    def stop_line(self) -> str | None:
        """Why the run stopped early and how many scenarios that left out, if it did."""
        if self.stopped is None:
            return None
        if self.planned is None:
            return f"{self.stopped}; the rest did not run"
        left = self.planned - len(self.results)
        if left <= 0:
            return self.stopped
        return f"{self.stopped}; {left} of the {self.planned} scenarios did not run"

    @property
    def ok(self) -> bool:
        """No failure, no error, and not stopped before its end."""
        return self.count(FAILED) == 0 and self.count(ERROR) == 0 and self.stopped is None


#: How a failure begins when the target failed at ``open``, before the scenario's first
#: step (judge.py's "error: " before the runner's place).
NOT_OPENED = f"error: {OPEN}: "


def ran(r: Result) -> bool:
    """Whether the target ran the scenario: it passed, or failed once it had opened it.
    Only those exercise the contract's rules: a scenario the target failed to open ran
    none of its steps."""
    return r.verdict == PASSED or (r.verdict == FAILED and not r.reason.startswith(NOT_OPENED))


def note(r: Result) -> str:
    """The last column of the summary: why it failed or was skipped, or where
    ``complete-reuse`` breaks in a passing run (as the model's does)."""
    if r.verdict != PASSED:
        return r.reason
    if r.complete_reuse:
        return f"complete-reuse breaks, as in the model: {r.complete_reuse}"
    return ""


def summary(run: SuiteRun, everything: bool = False, width: int = 110) -> str:
    """The summary table: every built-in scenario and sweep; generated ones only when
    they fail, are skipped or repeat tool calls, unless ``everything``."""
    rows = []
    for r in run.results:
        if not everything and r.verdict == PASSED and not r.repeated and r.seed is not None:
            continue
        text = note(r)
        rows.append(
            (
                r.name,
                r.verdict,
                f"{r.expected_tool_calls} / {r.tool_calls}",
                f"{r.expected_repeated} / {r.repeated}",
                text if len(text) <= width else text[: width - 3] + "...",
            )
        )
    head = (
        f"target {run.target}, contract {run.contract}, seed {run.seed}: "
        f"{run.count(PASSED)} passed, {run.count(FAILED)} failed, "
        + (f"{run.count(ERROR)} errors, " if run.count(ERROR) else "")
        + f"{run.count(SKIPPED)} skipped in {run.seconds:.1f}s"
    )
    stop = run.stop_line()
    if stop is not None:
        head += f"\n{stop}"
    head += "\n" + rules_line(run.rules())
    if not rows:
        return head
    table = render(
        (
            "scenario",
            "verdict",
            "tool calls exp/act",
            "repeated exp/act",
            "first difference / broken property",
        ),
        rows,
    )
    return f"{table}\n\n{head}"


def rules_line(counts: dict[str, int]) -> str:
    """The rules the run exercised, with how many scenarios did, and those none did."""
    done = ", ".join(f"{name} {n}" for name, n in counts.items() if n)
    missing = [name for name, n in counts.items() if not n]
    return f"rules exercised: {done or 'none'}" + (
        f"; NOT exercised: {', '.join(missing)}" if missing else ""
    )


def to_json(run: SuiteRun) -> dict[str, Any]:
    return {
        "target": run.target,
        "contract": run.contract,
        "seed": run.seed,
        "passed": run.count(PASSED),
        "failed": run.count(FAILED),
        "errors": run.count(ERROR),
        "skipped": run.count(SKIPPED),
        "seconds": round(run.seconds, 3),
        "planned": run.planned,
        "stopped": run.stopped,
        "rules": run.rules(),
        "results": [result_json(r) for r in run.results],
    }


def result_json(r: Result) -> dict[str, Any]:
    return {
        "name": r.name,
        "seed": r.seed,
        "verdict": r.verdict,
        "property": r.property,
        "difference": r.difference,
        "reason": r.reason or None,
        "tool_calls": {"expected": r.expected_tool_calls, "actual": r.tool_calls},
        "repeated_tool_calls": {"expected": r.expected_repeated, "actual": r.repeated},
        "complete_reuse": r.complete_reuse or None,
        "scenario_file": r.scenario_file,
        "rules": list(r.rules),
    }


def junit(run: SuiteRun, path: Path) -> None:
    """JUnit XML: one test case per scenario, failures with their report."""
    suite = ET.Element(
        "testsuite",
        name=f"replay-contract conform {run.target}",
        tests=str(len(run.results)),
        failures=str(run.count(FAILED)),
        errors=str(run.count(ERROR)),
        skipped=str(run.count(SKIPPED)),
        time=f"{run.seconds:.3f}",
    )
    for r in run.results:
        case = ET.SubElement(
            suite, "testcase", classname=f"{run.target}.{run.contract}", name=r.name
        )
        if r.verdict == FAILED:
            failure = ET.SubElement(case, "failure", message=r.reason)
            failure.text = r.report + (
                f"\n\nscenario file: {r.scenario_file}" if r.scenario_file else ""
            )
        elif r.verdict == ERROR:
            error = ET.SubElement(case, "error", message=r.reason)
            error.text = r.reason
        elif r.verdict == SKIPPED:
            ET.SubElement(case, "skipped", message=r.reason)
    stop = run.stop_line()
    if stop is not None:
        ET.SubElement(suite, "system-err").text = stop
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


class Progress:
    """One status line on a terminal (rewritten in place), else a line per failure and
    one every tenth of the way."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total, self.done, self.failed, self.errors = total, 0, 0, 0
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()

    def update(self, r: Result) -> None:
        self.done += 1
        self.failed += r.verdict == FAILED
        self.errors += r.verdict == ERROR
        errors = f", {self.errors} errors" if self.errors else ""
        line = f"[{self.done}/{self.total}] {self.failed} failed{errors}  {r.name}: {r.verdict}"
        bad = r.verdict in (FAILED, ERROR)
        if self.tty:
            self.stream.write("\r\033[K" + line[:100])
            if bad:
                self.stream.write(f"\n  {r.reason[:160]}\n")
        elif bad or self.done % max(1, self.total // 10) == 0 or self.done == self.total:
            self.stream.write(line + (f"\n  {r.reason[:160]}" if bad else "") + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()


def failures(results: Sequence[Result], target: str, contract: str) -> str:
    """The full report of every failure, for the end of the text output."""
    return "\n\n".join(
        f"== {r.name} ({r.reason})\n{r.report}"
        + (
            f"\n\nreplay: {replay_command(target, contract, r.scenario_file)}"
            if r.scenario_file
            else ""
        )
        for r in results
        if r.verdict == FAILED
    )


def replay_command(target: str, contract: str, scenario_file: str) -> str:
    """The command that runs one written scenario again, alone."""
    return (
        f"replay-contract conform --target {shlex.quote(target)} --contract {contract} "
        f"--scenario {shlex.quote(scenario_file)} --examples 0 --no-sweep"
    )
