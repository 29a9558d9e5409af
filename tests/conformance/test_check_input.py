"""``replay-contract check`` on recordings that stop early and on traces it must refuse:
a recording cut at any line is judged up to its last event; an event member of the
wrong type, or a delivery the header does not hold, is refused with one line naming the
file, the line and the member (exit status 2); a proposed contract in the header gives
a replay command that works. A ``process:`` program that reports such a member breaks
the protocol: the scenario fails with the member named, the run goes on."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from replay_contract.cli import main
from replay_contract.conformance.check import FAIL, PASS, STOPS, UNKNOWN, check
from replay_contract.conformance.tracefile import read, write
from replay_contract.model import catalogue
from replay_contract.model.contracts import ORDERED
from replay_contract.model.run import simulate
from replay_contract.model.scenario import load
from replay_contract.spec.summary import summary

from .conftest import HERE, by_name, conform

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
RECOVERY = (EXAMPLES / "recovery.ndjson").read_text().splitlines()
RAN_AGAIN = (EXAMPLES / "recovery-ran-again.ndjson").read_text().splitlines()


def cut(tmp_path: Path, lines: list[str], keep: int, name: str = "cut.ndjson") -> Path:
    """The first ``keep`` lines of a recording, as a file."""
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines[:keep]))
    return path


def refused(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """``check PATH``: exit status 2, one line on stderr, no traceback, nothing written."""
    out = tmp_path / "out"
    assert main(["check", str(path), "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert not out.exists() or not any(out.iterdir())
    return lines[0]


def refused_saying(
    lines: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[Path, str]:
    """A recording of ``lines`` refused by :func:`refused` with a line that names the
    file, then ``says``; the file and the line."""
    path = cut(tmp_path, lines, len(lines), "t.ndjson")
    line = refused(path, tmp_path, capsys)
    assert line.startswith(f"replay-contract check: error: {path}: {says}"), line
    return path, line


# -- a recording that stops before the end of input ------------------------------------------


# after a delivery, inside a step (between its effects), after a crash (the operator is
# down), after a restore, right before the end
@pytest.mark.parametrize("keep", [2, 4, 6, 7, 9, 16, 21, 22, 23, 24, 28, 29, 30, 40])
def test_a_recording_cut_at_any_line_is_judged_up_to_its_last_event(
    keep: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    j = check(read(cut(tmp_path, RECOVERY, keep)))
    assert j.verdict == PASS
    assert not j.ended
    assert j.events == keep - 1
    # what a cut leaves unfinished the model's run of the same steps leaves too
    assert all(b.also_by_model for b in j.broken)
    out = tmp_path / "out"
    assert main(["check", str(cut(tmp_path, RECOVERY, keep)), "--out", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "the recording stops before the end of input" in shown
    assert not out.exists() or not any(out.iterdir())  # no failure written


def test_the_end_of_a_cut_recording_is_the_witness_of_an_outcome_not_yet_committed(
    tmp_path: Path,
) -> None:
    """equivalent-outcome is judged where the ``end`` would be: a recording without one
    shows its last line, as the place the recording stops."""
    j = check(read(cut(tmp_path, RECOVERY, 40)))
    outcome = {b.property: b for b in j.broken}["equivalent-outcome"]
    assert outcome.lines == (40,)
    assert outcome.described == (STOPS,)
    assert outcome.histories == ((),)
    # the whole recording has its end: nothing is left uncommitted
    assert check(read(cut(tmp_path, RECOVERY, len(RECOVERY)))).broken == ()


@pytest.mark.parametrize(("keep", "verdict"), [(30, PASS), (31, FAIL), (32, FAIL)])
def test_a_cut_recording_fails_once_it_holds_the_wrong_event(
    keep: int, verdict: str, tmp_path: Path
) -> None:
    # line 31 of recovery-ran-again is B's tool call where ordered reuses
    j = check(read(cut(tmp_path, RAN_AGAIN, keep)), tmp_path / "out")
    assert j.verdict == verdict
    if verdict == FAIL:
        assert j.difference is not None and "expected reuse #2 for B" in j.difference


def test_a_failed_recording_that_stops_with_the_operator_down_gives_a_scenario_that_replays(
    tmp_path: Path,
) -> None:
    lines = [*RAN_AGAIN[:31], json.dumps({"event": "crash"})]
    j = check(read(cut(tmp_path, lines, len(lines))), tmp_path / "out")
    assert j.verdict == FAIL
    assert j.scenario_file is not None
    scenario = load(j.scenario_file)
    assert scenario.schedule[-2].crash_after == 1  # B's step crashed after its tool call
    assert scenario.schedule[-1].kind == "restore"  # the restore simulate needs
    assert summary(simulate(scenario, ORDERED))["violations"] == []


def test_a_recorded_run_that_stopped_on_an_error_is_judged_as_conform_judged_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The suite writes why a run stopped early in the header: a run cut by the target's
    error fails with it (conform's verdict) instead of passing as a cut recording; one
    cut by an infrastructure error is ``unknown`` (conform's ``error``)."""
    scenario = catalogue.builtin("reversed-interleaving")
    events = simulate(scenario, ORDERED).world.events[:3]
    error = "schedule[0] deliver A: ProtocolError: the program failed: boom"
    stopped = write(tmp_path / "stopped.ndjson", scenario, ORDERED, events, error=error)
    j = check(read(stopped))
    assert j.verdict == FAIL
    assert j.reason == f"error: {error}"
    gone = write(tmp_path / "gone.ndjson", scenario, ORDERED, events, error=error, unavailable=True)
    assert check(read(gone)).verdict == UNKNOWN
    assert main(["check", str(gone), "--out", str(tmp_path / "out")]) == 3
    assert "infrastructure error" in capsys.readouterr().out
    # without the error the same events are a recording that stops early
    assert check(read(write(tmp_path / "cut.ndjson", scenario, ORDERED, events))).verdict == PASS


# -- members of the wrong type, deliveries the header does not hold --------------------------


def changed(line: int, **members: Any) -> list[str]:
    """recovery.ndjson with ``members`` of line ``line`` (1-based) replaced."""
    lines = list(RECOVERY)
    data = json.loads(lines[line - 1])
    data.update(members)
    lines[line - 1] = json.dumps(data)
    return lines


def without(line: int, member: str) -> list[str]:
    lines = list(RECOVERY)
    data = json.loads(lines[line - 1])
    del data[member]
    lines[line - 1] = json.dumps(data)
    return lines


COUNT = "expected a count (an integer, 0 or more), got"
KEY = "expected a string or an integer, got"
MEMORY = "expected [[key, [[field, value], ...]], ...]"


@pytest.mark.parametrize(
    ("lines", "says"),
    [
        (changed(3, position="zero"), f'line 3: position: {COUNT} "zero"'),
        (changed(2, key=None), f"line 2: key: {KEY} null"),
        (changed(2, key=[1]), f"line 2: key: {KEY} [1]"),
        (changed(2, key=True), f"line 2: key: {KEY} true"),
        (changed(2, key=2**60), "line 2: key: expected an integer within"),
        (changed(2, offset="zero"), f'line 2: offset: {COUNT} "zero"'),
        (changed(2, offset=-3), f"line 2: offset: {COUNT} -3"),
        (changed(23, checkpoint="x"), f'line 23: checkpoint: {COUNT} "x"'),
        (changed(4, path="respond"), "line 4: path: expected a path (a non-empty list of names)"),
        (changed(4, tool=7), "line 4: tool: expected a non-empty string, got 7"),
        (changed(5, order="yes"), 'line 5: order: expected true or false, got "yes"'),
        (changed(5, reads="x"), 'line 5: reads: expected a list, got "x"'),
        (changed(41, memory={"K": {}}), f"line 41: memory: {MEMORY}"),
        (without(3, "position"), "line 3: position: missing (accept needs key, position, "),
        (without(2, "event"), "line 2: event: missing"),
        (changed(2, event="teleport"), "line 2: event: unknown trace event 'teleport'"),
        (changed(2, channel="nope"), "line 2: channel: 'nope' is not a channel of the header"),
        (
            changed(2, channel="upstream-2"),
            "line 2: channel: record 'A' is on channel 'upstream-1'",
        ),
        (changed(2, offset=1), "line 2: offset: record 'A' is at offset 0 of its channel, not 1"),
        (changed(2, key="L"), "line 2: key: record 'A' has key K, not L"),
        (changed(2, identity="Z"), "line 2: identity: no record 'Z' in the header's channels"),
    ],
)
def test_a_member_of_the_wrong_type_is_refused_with_its_file_line_and_name(
    lines: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused_saying(lines, says, tmp_path, capsys)


# -- the header's messages ----------------------------------------------------------------


def with_header(**members: Any) -> list[str]:
    head = json.loads(RECOVERY[0])
    for name, value in members.items():
        if value is None:
            del head[name]
        else:
            head[name] = value
    return [json.dumps(head), *RECOVERY[1:]]


@pytest.mark.parametrize(
    ("lines", "says"),
    [
        (with_header(agent=None), "line 1: agent: missing"),
        (with_header(agent=[]), "line 1: agent: expected an object, got []"),
        (with_header(channels={}), "line 1: channels: expected a list, got {}"),
        (with_header(contract=None), "line 1: contract: missing"),
        (with_header(contract=3), "line 1: contract: expected a contract name or object, got 3"),
        (with_header(contract={"wiat": 1}), "line 1: contract.wiat: unknown field"),
        (
            with_header(contract={"based_on": "x"}),
            "line 1: contract.based_on: unknown contract 'x'",
        ),
        (with_header(contract="bogus"), "line 1: contract: unknown contract 'bogus'"),
        (with_header(error=3), "line 1: error: expected a string"),
    ],
)
def test_a_bad_header_member_is_named_once(
    lines: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, line = refused_saying(lines, says, tmp_path, capsys)
    assert line.count(str(path)) == 1


def test_a_delivery_out_of_order_names_the_file_not_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = changed(2, identity="C", offset=1)
    path = cut(tmp_path, lines, len(lines), "t-order.ndjson")
    line = refused(path, tmp_path, capsys)
    assert line == (
        f"replay-contract check: error: {path}: line 2: deliver 'C': channel 'upstream-1' "
        "delivers 'A' next (each channel keeps its order)"
    )


# -- a proposed contract in the header --------------------------------------------------------


def test_a_proposed_contract_is_written_so_that_the_replay_command_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proposed = {"based_on": "ordered", "name": "my-variant", "give_up_after": 3}
    head = json.loads(RAN_AGAIN[0])
    head["contract"] = proposed
    path = cut(tmp_path, [json.dumps(head), *RAN_AGAIN[1:]], len(RAN_AGAIN))
    out = tmp_path / "out"
    assert main(["check", str(path), "--out", str(out)]) == 1
    shown = capsys.readouterr().out
    command = shown.split("(replay it: ", 1)[1].split(")\n", 1)[0].rstrip(")")
    args = shlex.split(command)
    assert args[:2] == ["replay-contract", "simulate"]
    assert "--contract-file" in args and "--contract" not in args
    contract_file = Path(args[args.index("--contract-file") + 1])
    assert contract_file.parent == out
    assert json.loads(contract_file.read_text())["give_up_after"] == 3
    assert main([*args[1:], "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["contract"] == "my-variant"
    assert replayed["violations"] == []


def test_a_known_contract_is_replayed_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = cut(tmp_path, RAN_AGAIN, len(RAN_AGAIN))
    out = tmp_path / "out"
    assert main(["check", str(path), "--out", str(out)]) == 1
    shown = capsys.readouterr().out
    assert "--contract ordered)" in shown
    assert not list(out.glob("*.contract.json"))


# -- a process: program that reports a member of the wrong type ------------------------------


def reporting(tmp_path: Path, **members: Any) -> str:
    """``orderly.py`` with ``members`` replaced in the first ``accept`` it reports (in
    its first run only: the suite starts it again after a breach of the protocol)."""
    path, done = tmp_path / "misreport.py", tmp_path / "misreported"
    path.write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        "import orderly\n"
        "send = orderly.send\n"
        "def misreport(message):\n"
        "    event = message.get('event')\n"
        "    accept = isinstance(event, dict) and event.get('event') == 'accept'\n"
        f"    if accept and not os.path.exists({str(done)!r}):\n"
        f"        event.update({members!r})\n"
        f"        open({str(done)!r}, 'w').close()\n"
        "    send(message)\n"
        "orderly.send = misreport\n"
        "raise SystemExit(orderly.main())\n"
    )
    return f"process:{sys.executable} {path}"


@pytest.mark.parametrize(
    ("members", "says"),
    [
        ({"key": [1]}, "key: expected a string or an integer, got [1]"),
        ({"key": None}, "key: expected a string or an integer, got null"),
        ({"position": "zero"}, 'position: expected a count (an integer, 0 or more), got "zero"'),
    ],
)
def test_a_program_that_reports_a_member_of_the_wrong_type_fails_the_scenario(
    members: dict[str, Any], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, doc = conform(
        capsys,
        "--target",
        reporting(tmp_path, **members),
        "--scenario",
        "reversed-interleaving",
        "--scenario",
        "two-keys-interleaved",
        "--examples",
        "0",
        "--no-sweep",
        "--out",
        str(tmp_path / "out"),
    )
    assert status == 1
    results = by_name(doc)
    first = results["reversed-interleaving"]
    assert first["verdict"] == "failed"
    assert f"bad report call: accept event: {says}" in first["reason"]
    # the program is started again: the next scenario runs (and the misreport is spent)
    assert results["two-keys-interleaved"]["verdict"] == "passed"
