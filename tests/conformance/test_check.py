"""``replay-contract check``: a recorded trace is judged as the conformance suite judges
the same run; one changed event is caught with the right property and witness; an
indeterminate effect the verdict depends on gives ``unknown``; a malformed line is named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay_contract.cli import main
from replay_contract.conformance.check import FAIL, PASS, UNKNOWN, check
from replay_contract.conformance.judge import judge
from replay_contract.conformance.model_target import ModelImplementation
from replay_contract.conformance.tracefile import TraceError, loads, read, write
from replay_contract.model import catalogue
from replay_contract.model.contracts import CONTRACTS, ORDERED, SEQNUM, Contract
from replay_contract.model.run import simulate
from replay_contract.model.scenario import Scenario, Step, load
from replay_contract.spec.summary import summary


def recorded(scenario: Scenario, contract: Contract) -> list[dict[str, Any]]:
    """The model's run of ``scenario`` as trace lines (header first)."""
    text = _text(scenario, contract, simulate(scenario, contract).world.events)
    return [json.loads(line) for line in text.splitlines()]


def _text(scenario: Scenario, contract: Contract, events: Any) -> str:
    import io

    from replay_contract.conformance.tracefile import header, write_lines

    out = io.StringIO()
    write_lines(out, header(scenario, contract), events)
    return out.getvalue()


def judged(lines: list[dict[str, Any]], out: Path | None = None) -> Any:
    return check(loads("".join(json.dumps(line) + "\n" for line in lines), "run"), out)


def index_of(lines: list[dict[str, Any]], event: str, identity: str, after: str = "") -> int:
    """The line index of the first ``event`` of ``identity`` (after the first ``after``)."""
    start = next((i for i, e in enumerate(lines) if e.get("event") == after), 0) if after else 0
    return next(
        i
        for i, e in enumerate(lines)
        if i > start and e.get("event") == event and e.get("identity") == identity
    )


def test_a_timeout_counts_its_events_so_check_tells_when_a_key_gave_up(tmp_path: Path) -> None:
    """``timeout`` reports its event last; the event counts the decisions before it, so
    a recorded run says which step gave up: ordered's run passes, and a variant that gives
    up at once (at the delivery, before the timeout) has the same events in the same order
    but fails, at the step where it differs."""
    from replay_contract.model.mutants import MUTANTS

    scenario = catalogue.builtin("lost-last-of-split-timeout")
    ordered = write(
        tmp_path / "ordered.ndjson", scenario, ORDERED, simulate(scenario, ORDERED).world.events
    )
    assert check(read(ordered)).verdict == PASS
    impatient = simulate(scenario, MUTANTS["ordered-impatient"]).world.events
    early = write(tmp_path / "early.ndjson", scenario, ORDERED, impatient)
    j = check(read(early))
    assert j.verdict == FAIL
    assert j.difference is not None and "deliver B" in j.difference


@pytest.mark.parametrize(
    ("name", "contract"),
    [(n, c) for c in (SEQNUM, ORDERED) for n in catalogue.names()],
    ids=lambda v: v.name if isinstance(v, Contract) else v,
)
def test_the_models_runs_are_judged_as_conformance_judges_them(
    name: str, contract: Contract, tmp_path: Path
) -> None:
    scenario = catalogue.builtin(name)
    suite = judge(ModelImplementation(), scenario, contract)
    path = write(
        tmp_path / "run.ndjson", scenario, contract, simulate(scenario, contract).world.events
    )
    j = check(read(path))
    assert (j.verdict == PASS) == (suite.verdict == "passed")
    assert j.verdict == PASS
    broken_by_suite = {"complete-reuse"} if suite.complete_reuse else set()
    assert {b.property for b in j.broken} == broken_by_suite
    assert all(b.also_by_model for b in j.broken)


def b_runs_again() -> list[dict[str, Any]]:
    """The recorded reversed interleaving under ``ordered``, with B's reuse after the
    restore turned into a tool call (B runs again)."""
    lines = recorded(catalogue.builtin("reversed-interleaving"), ORDERED)
    i = index_of(lines, "reuse", "B", after="restore")
    reuse = lines[i]
    lines[i] = {
        "event": "tool",
        **{k: reuse[k] for k in ("key", "position", "identity", "digest", "path")},
        "tool": "llm",
        "result": "llm:again",
    }
    return lines


def test_a_reuse_turned_into_an_execution_breaks_complete_reuse(tmp_path: Path) -> None:
    lines = b_runs_again()
    j = judged(lines, tmp_path)
    assert j.verdict == FAIL
    assert "reuse #2 for B" in (j.difference or "")  # the model reuses where the run executed
    broken = {b.property: b for b in j.broken}
    assert set(broken) >= {"complete-reuse"}
    cr = broken["complete-reuse"]
    save = index_of(lines, "save", "B")
    again = index_of(lines, "tool", "B", after="restore")
    assert cr.lines == (save + 1, again + 1)  # the save before the failure, the call after it
    assert cr.key == "K"
    assert cr.positions == (1, 1)
    assert cr.histories == (("A",), ("A",))
    assert not cr.also_by_model
    # the failure is written as a scenario file that simulate replays
    assert j.scenario_file is not None
    replayed = simulate(load(j.scenario_file), ORDERED)
    assert summary(replayed)["violations"] == []


def test_a_position_swapped_breaks_key_isolation_at_that_event() -> None:
    lines = recorded(catalogue.builtin("reversed-interleaving"), ORDERED)
    a = index_of(lines, "accept", "A", after="restore")
    b = index_of(lines, "accept", "B", after="restore")
    lines[a]["position"], lines[b]["position"] = lines[b]["position"], lines[a]["position"]
    j = judged(lines)
    assert j.verdict == FAIL
    broken = {b.property: b for b in j.broken}
    assert broken["key-isolation"].lines == (a + 1,)
    assert broken["key-isolation"].positions == (1,)
    assert "accepts A at position 1, but it has 0 inputs" in broken["key-isolation"].explanation


def test_a_reuse_of_stale_history_is_caught_with_both_histories() -> None:
    # under ordered, B waits for A; a run that reused B's completion first (position 0,
    # where A preceded it before the failure) reuses a completion computed after [A]
    lines = recorded(catalogue.builtin("reversed-interleaving"), ORDERED)
    a = index_of(lines, "accept", "A", after="restore")
    b = index_of(lines, "accept", "B", after="restore")
    b_reuse = index_of(lines, "reuse", "B", after="restore")
    for i in (a, a + 1):
        lines[i]["position"] = 1
    lines[b]["position"] = lines[b_reuse]["position"] = 0
    block = lines[b : b + 3]
    del lines[b : b + 3]
    lines[a:a] = block
    j = judged(lines)
    stale = {b.property: b for b in j.broken}["no-stale-reuse"]
    assert stale.histories == (("A",), ())
    assert "computed after [A] but follows [] now" in stale.explanation


def test_an_event_of_another_key_breaks_key_isolation() -> None:
    scenario = catalogue.builtin("two-keys-interleaved")
    lines = recorded(scenario, ORDERED)
    keys = {e["key"] for e in lines if e.get("event") == "accept"}
    assert len(keys) == 2
    i = next(
        i
        for i, e in enumerate(lines)
        if e.get("event") == "reuse" and e["completion"] != 0 and e["key"] == sorted(keys)[0]
    )
    other = next(k for k in keys if k != lines[i]["key"])
    lines[i]["key"] = other
    j = judged(lines)
    assert j.verdict == FAIL
    iso = {b.property: b for b in j.broken}["key-isolation"]
    assert iso.lines == (i + 1,)
    assert iso.key == other
    assert "of another key" in iso.explanation


def crash_in_d(after: int) -> Scenario:
    """reversed-interleaving with D's step crashing after its ``after``-th effect."""
    base = catalogue.builtin("reversed-interleaving")
    steps = list(base.schedule)
    d = next(i for i, s in enumerate(steps) if s.record == "D")
    steps[d : d + 2] = [Step("deliver", "D", after)]  # the crash is inside D's step
    return base.with_schedule(tuple(steps))


def test_an_indeterminate_save_the_verdict_depends_on_gives_unknown() -> None:
    # D's save timed out and the operator crashed; after the restore D ran again. If the
    # save landed, ordered should have reused it (a failure); if not, running D again is
    # right (a pass): the checker cannot tell
    lines = recorded(crash_in_d(1), ORDERED)  # the tool call, then the crash
    with_save = recorded(crash_in_d(2), ORDERED)  # the tool call, the save, the crash
    save = index_of(with_save, "save", "D")
    crash = next(i for i, e in enumerate(lines) if e.get("event") == "crash")
    lines.insert(crash, {**with_save[save], "indeterminate": True})
    j = judged(lines)
    assert j.verdict == UNKNOWN
    assert j.depends_on == (crash + 1,)
    assert f"if line {crash + 1} did not happen: pass" in j.reason
    assert "if all happened: fail" in j.reason
    # without the mark the same run fails
    del lines[crash]["indeterminate"]
    assert judged(lines).verdict == FAIL


def test_an_indeterminate_event_the_verdict_does_not_depend_on_is_judged() -> None:
    # B runs again after the restore (a failure whether or not D's save landed)
    lines = b_runs_again()
    lines[index_of(lines, "save", "D")]["indeterminate"] = True
    j = judged(lines)
    assert j.verdict == FAIL
    assert "complete-reuse" in {b.property for b in j.broken}


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda text: text[: len(text) - 20], "line 41: not a JSON object"),
        (
            lambda text: text.replace('"event": "reuse"', '"event": "reused"', 1),
            "unknown trace event 'reused'",
        ),
        (
            lambda text: text.replace('{"event": "crash"}', '{"event": "crash"', 1),
            "line 22: not a JSON object",
        ),
        (
            lambda text: text.replace(', "position": 0', "", 1),
            "line 3: position: missing (accept needs key, position, identity, digest)",
        ),
        (lambda text: "\n".join(text.split("\n")[1:]), "line 1: not a trace header"),
    ],
)
def test_a_malformed_line_is_named(damage: Any, says: str, tmp_path: Path, capsys: Any) -> None:
    scenario = catalogue.builtin("reversed-interleaving")
    path = tmp_path / "run.ndjson"
    path.write_text(damage(_text(scenario, ORDERED, simulate(scenario, ORDERED).world.events)))
    with pytest.raises(TraceError, match=says.replace("(", r"\(").replace(")", r"\)")):
        read(path)
    assert main(["check", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err


def test_a_delivery_out_of_channel_order_is_named_by_its_line() -> None:
    lines = recorded(catalogue.builtin("reversed-interleaving"), ORDERED)
    first = index_of(lines, "deliver", "A")
    lines[first]["identity"], lines[first]["offset"] = "C", 1  # C, where its channel holds it
    with pytest.raises(
        TraceError, match=f"line {first + 1}: deliver 'C': channel 'upstream-1' delivers 'A' next"
    ):
        judged(lines)


def test_the_command_exit_status_and_json(tmp_path: Path, capsys: Any) -> None:
    scenario = catalogue.builtin("reversed-interleaving")
    good = write(
        tmp_path / "good.ndjson", scenario, SEQNUM, simulate(scenario, SEQNUM).world.events
    )
    assert main(["check", str(good), "--json", "--out", str(tmp_path / "out")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "pass"
    assert [b["property"] for b in data["broken"]] == ["complete-reuse"]
    assert data["broken"][0]["also_by_model"] is True
    # the same run judged under ordered differs from the model: a failure
    lines = recorded(scenario, SEQNUM)
    lines[0]["contract"] = "ordered"
    bad = tmp_path / "bad.ndjson"
    bad.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["check", str(bad), "--out", str(tmp_path / "out")]) == 1
    shown = capsys.readouterr().out
    assert "differs from the model" in shown and "broken: complete-reuse" in shown


def test_channels_are_read_off_the_deliveries_when_the_header_has_none() -> None:
    scenario = catalogue.builtin("changed-input")
    for contract in (SEQNUM, ORDERED):
        lines = recorded(scenario, contract)
        del lines[0]["channels"]
        assert judged(lines).verdict == PASS


def test_a_contract_given_as_json_is_read() -> None:
    lines = recorded(catalogue.builtin("reversed-interleaving"), ORDERED)
    lines[0]["contract"] = CONTRACTS["ordered"].to_json()
    assert judged(lines).verdict == PASS


def test_the_end_counts_its_events_so_check_tells_when_a_key_gave_up() -> None:
    """The end of input's give-up comes before the ``end`` line, which counts it: the
    model's run passes; the same events with the give-up at B's delivery (an end that
    counts none) fail there; a dropped give-up fails."""
    lines = recorded(catalogue.builtin("lost-input-at-end"), ORDERED)
    end = lines[-1]
    assert end["event"] == "end" and end["step_events"] > 0
    assert judged(lines).verdict == PASS
    early = judged([*lines[:-1], {**end, "step_events": 0}])
    assert early.verdict == FAIL
    assert early.difference is not None and "deliver B" in early.difference
    cut = [line for line in lines if line.get("event") != "give-up"]
    assert judged([*cut[:-1], {**end, "step_events": end["step_events"] - 1}]).verdict == FAIL
