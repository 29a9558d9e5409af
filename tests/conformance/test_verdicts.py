"""Verdicts CI can trust: an error apart from a failure, a run that stops on an outage,
a deadline, Ctrl-C, and coverage that cannot be silently thin."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from replay_contract.cli import main
from replay_contract.conformance import suite
from replay_contract.conformance.coverage import rules
from replay_contract.conformance.generate import generate
from replay_contract.model.contracts import ORDERED

from .conftest import conform
from .test_bad_input import ONE_SCENARIO, orderly_with

HELLO = (
    '{"protocol": "replay-contract/1", "capabilities": {"contracts": ["ordered"], '
    '"crash_points": true, "non_replayable": true}}'
)


def program(tmp_path: Path, body: str) -> str:
    """A process target that announces itself, then runs ``body`` on each request."""
    path = tmp_path / "target.py"
    path.write_text(
        "import json, os, sys, time\nprint(" + repr(HELLO) + ", flush=True)\n"
        "for line in sys.stdin:\n"
        "    op = json.loads(line)['op']\n" + body + "\n"
        "    print(json.dumps({'done': None}), flush=True)\n"
    )
    return f"process:{sys.executable} {path}"


def test_a_killed_target_is_an_error_naming_the_signal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = program(tmp_path, "    if op == 'deliver': os.kill(os.getpid(), 9)")
    args = ["--target", target, *ONE_SCENARIO, "--out", str(tmp_path / "out")]
    status, doc = conform(capsys, *args, "--junit", str(tmp_path / "j.xml"))
    assert status == 3
    (result,) = doc["results"]
    assert result["verdict"] == "error" and result["property"] is None
    assert "the target was killed by signal 9 (SIGKILL)" in result["reason"]
    assert doc["errors"] == 1 and doc["failed"] == 0 and doc["passed"] == 0
    (case,) = ET.parse(tmp_path / "j.xml").getroot()
    (error,) = case
    assert error.tag == "error" and "killed by signal 9" in error.attrib["message"]
    # no scenario file: an error is not a counterexample
    assert not list((tmp_path / "out").rglob("*.json"))


def test_a_hanging_target_times_out_and_errors_in_a_row_stop_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = program(tmp_path, "    if op == 'deliver': time.sleep(60)")
    args = ["conform", "--target", target, "--examples", "5", "--no-sweep", "--seed", "1"]
    started = time.monotonic()
    status = main([*args, "--timeout", "0.5", "--max-errors", "2", "--out", str(tmp_path)])
    assert status == 3
    assert time.monotonic() - started < 30  # two timeouts of 0.5 s, not 60 s a scenario
    out, err = capsys.readouterr()
    assert "0 passed, 0 failed, 2 errors" in out
    (line,) = [ln for ln in err.splitlines() if ln.startswith("replay-contract conform:")]
    assert line.startswith("replay-contract conform: stopped after 2 errors in a row (the last:")
    assert "did not answer within 0.5 s" in line


def test_the_deadline_stops_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--target", "model", "--examples", "1000", "--seed", "1", "--out", str(tmp_path)]
    status, doc = conform(capsys, *args, "--deadline", "0.5")
    assert status == 3
    assert doc["stopped"].startswith("the deadline passed after ")
    assert doc["passed"] == len(doc["results"]) < doc["planned"]


def test_ctrl_c_keeps_a_partial_summary_and_junit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = suite.run_case
    calls = []

    def stopped_at_the_third(*args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(suite, "run_case", stopped_at_the_third)
    junit = tmp_path / "j.xml"
    args = ["conform", "--target", "model", "--seed", "1", "--out", str(tmp_path)]
    assert main([*args, "--junit", str(junit), "--verbose"]) == 130
    out, err = capsys.readouterr()
    assert "2 passed, 0 failed, 0 skipped" in out
    (line,) = [ln for ln in out.splitlines() if ln.startswith("interrupted (Ctrl-C)")]
    left, planned = (int(n) for n in re.findall(r"\d+", line))
    assert line == f"interrupted (Ctrl-C); {left} of the {planned} scenarios did not run"
    assert left == planned - 2
    assert "replay-contract conform: interrupted (Ctrl-C)" in err
    assert len(ET.parse(junit).getroot().findall("testcase")) == 2


def test_sigterm_stops_a_run_as_ctrl_c_does(tmp_path: Path) -> None:
    junit = tmp_path / "j.xml"
    command = [sys.executable, "-m", "replay_contract", "conform", "--target", "model"]
    options = ["--examples", "100000", "--seed", "1", "--out", str(tmp_path)]
    run = subprocess.Popen(
        [*command, *options, "--junit", str(junit)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(8)  # past the start: scenarios are running
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 130, err
    assert "interrupted (SIGTERM)" in out
    ran = len(ET.parse(junit).getroot().findall("testcase"))
    assert 0 < ran < 100000


def test_generated_scenarios_stay_within_the_capabilities() -> None:
    crashes = 0
    for seed in range(200):
        s = generate(seed, crash_points=False, non_replayable=False)
        assert all(step.crash_after is None for step in s.schedule)
        assert all(c.replayable for c in s.topology.channels)
        crashes += any(step.kind == "crash" for step in s.schedule)
        # a target with every capability gets the scenario of old
        assert generate(seed).to_json() == generate(seed, True, True).to_json()
    assert crashes > 50


def test_a_thin_run_fails_when_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = orderly_with(tmp_path, crash_points=False, non_replayable=False)
    args = ["--target", target, "--examples", "10", "--seed", "1", "--out", str(tmp_path)]
    status, doc = conform(capsys, *args)
    assert status == 0 and doc["skipped"] > 0
    generated = [r for r in doc["results"] if r["seed"] is not None]
    assert len(generated) == 10 and all(r["verdict"] == "passed" for r in generated)
    status, doc = conform(capsys, *args, "--fail-on-skip")
    assert status == 1
    status, doc = conform(capsys, *args, "--min-scenarios", str(doc["passed"] + 1))
    assert status == 1
    status, doc = conform(capsys, *args, "--min-scenarios", str(doc["passed"]))
    assert status == 0


def test_every_rule_of_ordered_is_exercised_by_the_default_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """By the catalogue and its sweeps alone (whatever the seed of the generated ones),
    and by a default run."""
    names = {r.name for r in rules(ORDERED)}
    assert {"wait", "give_up_after", "split_order", "end-of-input"} <= names
    for examples in ("0", "100"):
        args = ["--target", "model", "--examples", examples, "--out", str(tmp_path)]
        status, doc = conform(capsys, *args)
        assert status == 0
        assert set(doc["rules"]) == names
        assert all(doc["rules"].values()), doc["rules"]


def test_the_summary_names_the_rules_not_exercised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["conform", "--target", "model", *ONE_SCENARIO, "--out", str(tmp_path)]
    assert main(args) == 0
    out = capsys.readouterr().out
    (line,) = [ln for ln in out.splitlines() if ln.startswith("rules exercised:")]
    assert "wait 1" in line and "NOT exercised: " in line and "give_up_after" in line


FOUR = ["reversed-interleaving", "single-upstream", "stateful-chain", "checkpoint-while-waiting"]


def _scenarios(names: list[str]) -> list[str]:
    return [*(a for n in names for a in ("--scenario", n)), "--examples", "0", "--no-sweep"]


def test_scenarios_the_target_failed_to_open_exercise_no_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = program(tmp_path, "    print('garbage', flush=True)")
    args = ["--target", target, *_scenarios(FOUR), "--out", str(tmp_path / "out")]
    status, doc = conform(capsys, *args)
    assert status == 1
    assert {r["verdict"] for r in doc["results"]} == {"failed"}
    assert all(r["reason"].startswith("error: open: ") for r in doc["results"])
    assert all(r["rules"] for r in doc["results"])  # what the model's runs would exercise
    assert set(doc["rules"].values()) == {0}
    assert main(["conform", *args]) == 1
    out = capsys.readouterr().out
    assert "rules exercised: none; NOT exercised: match, wait, record_order" in out


@pytest.mark.parametrize(("scenarios", "left"), [(FOUR[:3], 0), (FOUR, 1)])
def test_errors_in_a_row_stop_only_a_run_with_scenarios_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scenarios: list[str], left: int
) -> None:
    target = program(tmp_path, "    sys.exit(4)")
    args = ["conform", "--target", target, *_scenarios(scenarios), "--out", str(tmp_path)]
    assert main([*args, "--junit", str(tmp_path / "j.xml")]) == 3
    out, err = capsys.readouterr()
    assert "0 passed, 0 failed, 3 errors" in out
    stopped = [ln for ln in (out + err).splitlines() if "errors in a row" in ln]
    system_err = ET.parse(tmp_path / "j.xml").getroot().find("system-err")
    if not left:  # the third error was the last scenario: nothing was stopped
        assert stopped == [] and system_err is None
        return
    (summary, line) = stopped
    assert summary.startswith("stopped after 3 errors in a row (the last: open: the target")
    assert summary.endswith("; 1 of the 4 scenarios did not run")
    assert line.startswith("replay-contract conform: stopped after 3 errors in a row")
    assert system_err is not None and system_err.text == summary


def test_a_target_without_a_give_up_bound_fails_the_default_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, doc = conform(
        capsys, "--target", "mutant:ordered-no-give-up-bound", "--out", str(tmp_path)
    )
    assert status == 1
    failed = {r["name"] for r in doc["results"] if r["verdict"] == "failed"}
    assert "give-up-after-bound" in failed


def test_generated_cases_are_built_only_when_reached() -> None:
    """A million generated scenarios cost nothing until the run reaches them."""
    todo = suite.cases(10**9, 0, ORDERED, sweep=False)
    assert len(todo) == len(todo.fixed) + 10**9
    started = time.monotonic()
    first = [case for _, case in zip(range(len(todo.fixed) + 3), todo, strict=False)]
    assert time.monotonic() - started < 5
    assert [c.name for c in first[-3:]] == ["generated-0", "generated-1", "generated-2"]


def test_an_exception_without_a_message_is_named() -> None:
    from replay_contract.conformance.judge import judge
    from replay_contract.conformance.model_target import ModelImplementation
    from replay_contract.model.catalogue import builtin
    from replay_contract.model.topology import Record

    class Silent(ModelImplementation):
        def deliver(self, record: Record) -> None:
            raise TimeoutError

    result = judge(Silent(), builtin("single-upstream"), ORDERED)
    assert result.verdict == "failed"
    assert result.reason.endswith(": TimeoutError (no message)"), result.reason
