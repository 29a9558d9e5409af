"""The benchmark of ``verify``: the explorer's deadline and the frontier it finds, and the
sections that run ``verify`` as a user does (deepen, parametric)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from replay_contract.model.contracts import ORDERED, SEQNUM
from replay_contract.spec import bench, bounded_explore
from replay_contract.spec.bench import (
    DIMENSIONS,
    TIMEOUT,
    _grown,
    _smaller,
    deepening,
    frontier,
    growth,
    parametric,
    proofs,
)
from replay_contract.spec.bound import parse
from replay_contract.spec.everybound import parametric_engine
from replay_contract.spec.properties import BOUNDED_WAITING, PROPERTIES
from replay_contract.spec.verify import QUERY_TIMEOUT


def test_an_exploration_cut_short_proves_nothing() -> None:
    bound = parse("inputs=3,channels=2,keys=2,crashes=1")
    cut = bounded_explore.explore(bound, SEQNUM, deadline=0.0)
    assert not cut.finished
    assert cut.runs <= 1
    # a property without a counterexample so far is unknown, not proved
    assert {cut.verdict(p) for p in PROPERTIES} <= {"unknown", "counterexample"}
    assert "unknown" in {cut.verdict(p) for p in PROPERTIES}
    whole = bounded_explore.explore(parse("inputs=2,channels=1,keys=1,crashes=1"), SEQNUM)
    assert whole.finished
    assert {whole.verdict(p) for p in PROPERTIES} <= {"proved", "counterexample"}


def test_a_bound_grows_only_where_it_means_something() -> None:
    b = parse("inputs=2,channels=2,keys=1,crashes=1")
    assert _grown(b, "channels") is None  # more channels than records
    assert _grown(b, "inputs") == parse("inputs=3,channels=2,keys=1,crashes=1")
    assert _grown(b, "crashes") == parse("inputs=2,channels=2,keys=1,crashes=2")


def test_a_bound_is_tried_after_every_bound_it_grows_from() -> None:
    base = parse("inputs=2,channels=2,keys=1,crashes=1")
    b = parse("inputs=3,channels=3,keys=2,crashes=2")
    assert set(_smaller(b, base)) == {
        parse("inputs=3,channels=2,keys=2,crashes=2"),
        parse("inputs=3,channels=3,keys=1,crashes=2"),
        parse("inputs=3,channels=3,keys=2,crashes=1"),
        # not inputs=2: three channels need three records
    }
    assert _smaller(base, base) == []


def test_the_frontier_holds_the_largest_bounds_the_explorer_finishes() -> None:
    deadline = 2.0
    rows = frontier("seqnum", "inputs=1,channels=1,keys=1,crashes=1", deadline, 60.0)
    assert rows
    bounds = {parse(r["bound"]) for r in rows}
    for r in rows:
        # the explorer finished there within the deadline (plus the last run's time)
        assert r["explorer_seconds"] <= deadline + 1.0
        assert r["agree"] is True, r
        # no row grows into another row: each is a largest one
        b = parse(r["bound"])
        assert not any(_grown(b, d) in bounds for d in DIMENSIONS)
    largest = [r for r in rows if r["largest"] == "yes"]
    assert len(largest) == 1
    assert largest[0]["runs"] == max(r["runs"] for r in rows)


def test_growth_by_induction_grows_one_dimension_at_a_time() -> None:
    rows = growth("stable-id", "inputs=1,channels=1,keys=1,crashes=1", 60.0, 1, "induction")
    assert [(r["dimension"], r["bound"]) for r in rows] == [
        ("inputs", "inputs=1,channels=1,keys=1,crashes=1"),
        ("inputs", "inputs=2,channels=1,keys=1,crashes=1"),
        ("channels", "inputs=1,channels=2,keys=1,crashes=1"),
        ("keys", "inputs=1,channels=1,keys=2,crashes=1"),
        ("crashes", "inputs=1,channels=1,keys=1,crashes=2"),
    ]
    assert all(r["unknown"] == 0 for r in rows)
    # stable-id's key-isolation and no-lost-input by the generic invariant, the rest by
    # the unrolling
    assert {r["engine"] for r in rows} == {"induction+unrolling"}


def test_the_frontier_from_the_command_line() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "replay_contract.spec.bench",
            "--only",
            "frontier",
            "--frontier-contract",
            "seqnum",
            "--frontier-bound",
            "inputs=1,channels=1,keys=1,crashes=1",
            "--frontier-deadline",
            "2",
            "--engine",
            "induction",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    record = json.loads(out.stdout)
    assert record["cores"] >= 1
    assert record["frontier"] and all(r["agree"] for r in record["frontier"])
    # seqnum's five properties by induction, complete-reuse by the unrolling
    assert {r["engine"] for r in record["frontier"]} == {"induction+unrolling"}
    assert "frontier seqnum: exploring inputs=1,channels=1,keys=1,crashes=1" in out.stderr


def test_bad_input_is_one_line_and_exits_non_zero() -> None:
    from replay_contract.spec.bench import main

    for args, says in (
        (["--frontier-contract", "nope"], "bench: unknown contract 'nope' (known: seqnum"),
        (["--frontier-bound", "inputs=x"], "bench: bound: inputs: expected an integer"),
    ):
        out = subprocess.run(
            [sys.executable, "-m", "replay_contract.spec.bench", "--only", "frontier", *args],
            capture_output=True,
            text=True,
        )
        assert out.returncode == 2
        assert out.stderr.startswith(says) and out.stderr.count("\n") == 1, out.stderr
    assert main(["--only", "growth", "--growth-contract", "nope"]) == 2


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--only", "proof"], "error: --only: unknown section 'proof'"),
        (["--only", ","], "error: --only: no section named"),
        (["--only", "proofs", "--contracts", ""], "bench: no contract named in ''"),
        (["--timeout", "nan"], "argument --timeout: expected a finite number above 0"),
        (["--growth-steps", "-1"], "argument --growth-steps: expected a whole number above 0"),
        (["--frontier-deadline", "0"], "argument --frontier-deadline: expected a finite number"),
        # a later section's bad input is refused before the first section runs
        (["--only", "proofs,frontier", "--frontier-contract", "nope"], "unknown contract 'nope'"),
        (["--only", "proofs,deepen", "--deepen-contracts", "nope"], "unknown contract 'nope'"),
        (["--only", "deepen", "--contract-files", "missing.json"], "missing.json: cannot read"),
    ],
)
def test_bad_choices_are_refused_before_anything_runs(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from replay_contract.spec.bench import main

    try:
        status = main(args)
    except SystemExit as exc:
        status = exc.code  # type: ignore[assignment]
    captured = capsys.readouterr()
    assert status == 2
    assert says in captured.err and captured.err.count("\n") == 1, captured.err
    assert captured.out == ""


def test_the_proofs_section_says_which_engine_answered() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "replay_contract.spec.bench",
            "--only",
            "proofs",
            "--contracts",
            "seqnum",
            "--bound",
            "inputs=2,channels=1,keys=1,crashes=1",
            "--engine",
            "induction",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = {r["property"]: r for r in json.loads(done.stdout)["proofs"]}
    assert rows["no-stale-reuse"]["engine"] == "induction"
    assert rows["no-stale-reuse"]["met"] == "yes"
    assert rows["complete-reuse"]["engine"] == "unrolling"


def test_the_parametric_section_reports_each_step(monkeypatch: pytest.MonkeyPatch) -> None:
    bound = "inputs=8,channels=3,keys=2,crashes=2"
    jobs = parametric_engine.plan(ORDERED, parse(bound), PROPERTIES)
    # every property but bounded-waiting (proved through the unrolling, at a bound with
    # timeouts) has a parametric step (complete-reuse: the store's half and the excuse)
    assert {p for pairs in jobs.values() for _, p in pairs} == set(PROPERTIES) - {BOUNDED_WAITING}
    # the section runs the plan's steps: here only the waiting inputs' model, for time
    lost = {j: pairs for j, pairs in jobs.items() if j.model == "lost"}
    monkeypatch.setattr(parametric_engine, "plan", lambda *args: lost)
    rows = parametric(bound, 60.0)
    step, total = rows
    assert step["model"] == "lost"
    assert step["properties"] == "complete-reuse,no-lost-input"
    assert step["facts"] == step["kept"] > 50
    assert step["not kept"] == "-"
    assert total["model"] == "all (wall clock)"
    assert total["properties"] == "2 of six"
    assert total["seconds"] >= step["seconds"] * 0.9


def test_the_parametric_section_runs_verify_as_a_user_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # verify --contract ordered with the default engine and the reachability checks;
    # only the waiting inputs' step here (for time): the rest by induction
    bound = "inputs=2,channels=2,keys=1,crashes=1"
    jobs = parametric_engine.plan(ORDERED, parse(bound), PROPERTIES)
    lost = {j: pairs for j, pairs in jobs.items() if j.model == "lost"}
    monkeypatch.setattr(parametric_engine, "plan", lambda *args: lost)
    rows = proofs("ordered", bound, 60.0, "parametric", reachability=True)
    *each, total = rows
    # bounded-waiting only at a bound with a timeout step
    assert {r["property"] for r in each} == set(PROPERTIES) - {BOUNDED_WAITING}
    assert all(r["verdict"] == r["expected"] == "proved" for r in each)
    assert {r["property"]: r["engine"] for r in each}["no-lost-input"] == "parametric"
    assert total["verdict"] == "reached: crash,restore,reuse,wait,invalidation"


def test_the_deepen_section_says_each_bound_as_it_comes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bound = "inputs=2,channels=2,keys=1,crashes=1"
    rows = deepening("docs/examples/no-wait.json", "seqnum", bound, 120.0, 60.0, "induction")
    assert [r["contract"] for r in rows] == ["ordered-no-wait", "seqnum"]
    said = capsys.readouterr().err.splitlines()
    for row, name in zip(rows, ("ordered-no-wait", "seqnum"), strict=True):
        assert row["unknown"] == 0 and row["proved"] > 0
        # the ladder's lines come as deepen says them, and only those
        ladder = [line for line in said if line.startswith(f"deepen {name}")]
        assert any(f"{name}: deepening to {bound}" in line for line in ladder)
        proved = [line for line in ladder if ": proved up to " in line]
        assert len(proved) == len(row["bounds proved (wall clock)"].split("; "))
        # the first proof at the bound asked: the time of the first line that says it
        first = next(line for line in proved if f"proved up to {bound}:" in line)
        assert first.endswith(f"({row['first proof at the bound s']} s)")
        assert not any("micro-step" in line for line in ladder)
    # a counterexample is said as soon as it is found
    assert any(line.startswith("deepen ordered-no-wait / ") for line in said)


def test_the_deepen_section_times_a_mutant_as_a_proposed_change() -> None:
    bound = "inputs=2,channels=2,keys=2,crashes=1"
    # a broken one: its counterexamples come from the sample, its proofs by induction
    rows = deepening("", "ordered-identity-only", bound, 120.0, 60.0, "induction")
    assert [r["contract"] for r in rows] == ["ordered-identity-only"]
    assert rows[0]["unknown"] == 0 and rows[0]["proved"] > 0 and rows[0]["counterexamples"] > 0


@pytest.mark.parametrize(
    ("argv", "deepen", "others"),
    [([], QUERY_TIMEOUT, TIMEOUT), (["--timeout", "5"], 5.0, 5.0)],
)
def test_the_deepen_section_gives_a_query_what_verify_gives(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    deepen: float,
    others: float,
) -> None:
    # what a user runs (verify --deepen) has verify's own timeout a query unless told:
    # the benchmark's shorter one would leave the largest queries of the default bound
    # unknown
    given: dict[str, float] = {}

    def deepening(*args: Any) -> list[dict[str, Any]]:
        given["deepen"] = args[4]
        return []

    def counterexamples(bound: str, timeout: float) -> list[dict[str, Any]]:
        given["others"] = timeout
        return []

    monkeypatch.setattr(bench, "deepening", deepening)
    monkeypatch.setattr(bench, "counterexamples", counterexamples)
    assert bench.main(["--only", "deepen,counterexamples", *argv]) == 0
    assert given == {"deepen": deepen, "others": others}
    assert f"the deepen section: {deepen} s" in capsys.readouterr().out
