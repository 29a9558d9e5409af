"""``verify --deepen``: counterexamples from random runs of the model first, then proofs
bound by bound, and what a deadline leaves."""

from __future__ import annotations

import contextlib
import itertools
import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve

from replay_contract.cli import main
from replay_contract.commands import verify as verify_command
from replay_contract.exits import INTERRUPTED, NO_ANSWER
from replay_contract.model.contracts import ORDERED, SEQNUM
from replay_contract.model.mutants import MUTANTS
from replay_contract.model.run import simulate
from replay_contract.spec import deepen as deepening
from replay_contract.spec import proofcache
from replay_contract.spec.bound import DEFAULT, parse
from replay_contract.spec.deepen import deepen, estimate, ladder, sample
from replay_contract.spec.properties import PROPERTIES, check

NO_WAIT = evolve(ORDERED, name="ordered-no-wait", wait=False)
EARLY = evolve(ORDERED, name="ordered-early", record_order="before-first-tool-call")


def test_the_ladder_raises_one_dimension_at_a_time_up_to_the_bound() -> None:
    steps = ladder(DEFAULT)
    assert steps[0] == evolve(DEFAULT, inputs=2, crashes=1)
    assert steps[-1] == DEFAULT
    assert [(b.inputs, b.crashes) for b in steps] == [(2, 1), (3, 1), (3, 2), (4, 2), (6, 2)]
    for a, b in itertools.pairwise(steps):  # one dimension at a time
        assert (b.inputs > a.inputs) != (b.crashes > a.crashes)
    tiny = parse("inputs=1,channels=1,keys=1,crashes=0")
    assert ladder(tiny) == [tiny]


def test_the_next_step_is_estimated_from_how_one_input_grew_the_time() -> None:
    steps = ladder(DEFAULT)  # (2, 1), (3, 1), (3, 2), (4, 2), (6, 2)
    seconds = [8.7, 12.8, 40.9, 146.5]
    done = list(zip(steps, seconds, strict=False))
    # each input multiplied the time by 146.5 / 40.9 from three to four: twice more
    assert estimate(done, steps[4]) == pytest.approx(146.5 * (146.5 / 40.9) ** 2)
    # the crashes changed between the steps before the fourth: its factor is unknown
    assert [estimate(done[:i], steps[i]) for i in range(4)] == [None] * 4
    # steps too short to measure, or a bound that is not the latest's with more inputs
    assert estimate([(steps[2], 0.2), (steps[3], 0.5)], steps[4]) is None
    assert estimate(done, evolve(steps[4], keys=3)) is None
    assert estimate(done, steps[3]) is None


def test_the_line_of_a_step_says_about_how_long_it_will_take(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(deepening, "MEASURABLE", 0.0)  # every step here takes well under 1 s
    bound = parse("inputs=4,channels=2,keys=1,crashes=1")
    said: list[str] = []

    class Said(Exception):
        """The last step's line is said: the step itself is not needed."""

    def hear(line: str) -> None:
        said.append(line)
        if f": deepening to {bound} " in line:
            raise Said

    with pytest.raises(Said):
        deepen(SEQNUM, bound, ["no-stale-reuse"], progress=hear, reachability=False, workers=1)
    starts = [line for line in said if ": deepening to " in line]
    assert [b.inputs for b in ladder(bound)] == [2, 3, 4]
    assert len(starts) == 3
    assert not any("at the growth so far" in line for line in starts[:2])
    assert starts[2].startswith(f"seqnum: deepening to {bound} (no-stale-reuse); about ")
    assert starts[2].endswith(" at the growth so far")


def test_a_step_read_back_from_the_proof_cache_counts_as_long_as_it_took(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPLAY_CONTRACT_PROOF_CACHE", str(tmp_path / "proofs"))
    bound = parse("inputs=4,channels=2,keys=1,crashes=1")
    seen: list[list[tuple[str, float]]] = []
    estimated = deepening.estimate

    class Seen(Exception):
        """The last step's line is made: the step itself is not needed."""

    def seeing(done: list[tuple[Any, float]], at: Any) -> float | None:
        seen.append([(str(b), s) for b, s in done])
        if at == bound:
            raise Seen
        return estimated(done, at)

    monkeypatch.setattr(deepening, "estimate", seeing)

    def run() -> list[tuple[str, float]]:
        seen.clear()
        with pytest.raises(Seen):
            deepen(SEQNUM, bound, ["no-stale-reuse"], reachability=False, workers=1)
        return seen[-1]  # the steps before the last, as the last one's line saw them

    first = run()
    assert [b for b, _ in first] == [str(b) for b in ladder(bound)[:2]]
    assert all(s > 0 for _, s in first)
    again = run()  # every class read back: the steps take what they took the first time
    assert again == [(b, pytest.approx(s, abs=1e-3)) for b, s in first]


def test_a_step_begun_in_an_earlier_run_says_how_much_of_it_was_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPLAY_CONTRACT_PROOF_CACHE", str(tmp_path / "proofs"))
    bound = parse("inputs=3,channels=2,keys=1,crashes=1")
    props = ("no-stale-reuse",)
    step = proofcache.ladder_key(SEQNUM, bound, props, {"workers": 1, "reachability": False})
    proofcache.spent(step, 200.0, whole=False)  # as a run stopped in it after 200 s
    said: list[str] = []
    deepen(SEQNUM, bound, props, progress=said.append, reachability=False, workers=1)
    (line,) = [line for line in said if f": deepening to {bound} " in line]
    assert line.endswith("(no-stale-reuse); about 3 min of it in earlier runs")
    assert proofcache.spent(step, 0.0, whole=False) > 200.0  # finished: the two runs'
    assert proofcache.begun(step) == 0.0


def test_random_runs_find_each_broken_property_reduced_and_replayed() -> None:
    found = list(sample(NO_WAIT, ladder(DEFAULT), PROPERTIES, seconds=3.0))
    broken = {r.property for r in found}
    assert {"no-stale-reuse", "complete-reuse"} <= broken
    for r in found:
        assert r.verdict == "counterexample"
        ce = r.counterexample
        assert ce is not None
        assert not check(r.property, simulate(ce.scenario, NO_WAIT).trace).holds
        assert len(ce.scenario.topology.records) <= 3  # reduced


def test_a_sound_contract_gives_no_random_counterexample() -> None:
    bound = parse("inputs=3,channels=2,keys=2,crashes=1")
    assert list(sample(ORDERED, ladder(bound), PROPERTIES, seconds=2.0)) == []


def test_deepening_agrees_with_the_manifest_at_a_small_bound() -> None:
    bound = parse("inputs=2,channels=2,keys=1,crashes=1")
    said: list[str] = []
    shown: list[str] = []
    results = deepen(
        SEQNUM,
        bound,
        ["no-stale-reuse", "complete-reuse"],
        progress=said.append,
        found=lambda r: shown.append(r.property),
        workers=1,
    )
    verdicts = {r.property: r.verdict for r in results}
    assert verdicts == {"no-stale-reuse": "proved", "complete-reuse": "counterexample"}
    assert shown == ["complete-reuse"]
    assert any(f"proved up to {bound}: no-stale-reuse" in line for line in said)


def test_what_induction_tries_is_deepened_before_what_is_left_to_the_unrolling() -> None:
    volatile = MUTANTS["ordered-volatile-invalidation"]  # waits, fits neither family
    generic = ("key-isolation", "no-lost-input")
    # what the generic invariant covers, then what the search for an invariant tries,
    # then bounded-waiting, which no invariant is written for
    assert deepening.tracks(volatile, DEFAULT, PROPERTIES, "induction") == [
        generic,
        tuple(p for p in PROPERTIES if p not in (*generic, "bounded-waiting")),
        ("bounded-waiting",),
    ]
    assert deepening.tracks(volatile, DEFAULT, PROPERTIES, "unrolling") == [tuple(PROPERTIES)]
    six = [p for p in PROPERTIES if p != "bounded-waiting"]
    # a contract of a family: what the generic invariant covers first, then the rest
    assert deepening.tracks(ORDERED, DEFAULT, six, "induction") == [
        ("key-isolation", "no-lost-input"),
        tuple(p for p in six if p not in ("key-isolation", "no-lost-input")),
    ]
    by_reads = evolve(ORDERED, name="ordered-by-reads", match="reads")
    assert deepening.tracks(by_reads, DEFAULT, six, "induction") == [
        ("no-stale-reuse", "key-isolation", "no-lost-input", "equivalent-outcome"),
        ("divergence-safeguard", "complete-reuse"),
    ]


@pytest.mark.parametrize(
    ("name", "bound", "slow", "deadline"),
    [
        # waits and fits neither family: its complete-reuse goes to the unrolling, which
        # takes minutes at two crashes; the generic invariant proves the other two
        (
            "ordered-volatile-invalidation",
            "inputs=3,channels=2,keys=2,crashes=2",
            "complete-reuse",
            25.0,  # the two at the bound within about 10 s
        ),
        # a contract of a family: its full invariant takes twenty minutes at the default
        # bound; the generic one proves the other two there in seconds
        ("ordered", str(DEFAULT), "divergence-safeguard", 60.0),  # the two within about 31 s
    ],
)
def test_the_generic_invariants_proofs_reach_the_bound_while_the_rest_is_stopped(
    name: str, bound: str, slow: str, deadline: float
) -> None:
    contract = ORDERED if name == "ordered" else MUTANTS[name]
    asked = parse(bound)
    said: list[str] = []
    results = deepen(
        contract,
        asked,
        ["key-isolation", "no-lost-input", slow],
        deadline=deadline,
        progress=said.append,
        workers=2,
        engine="induction",
    )
    by = {r.property: r for r in results}
    for p in ("key-isolation", "no-lost-input"):
        assert by[p].verdict == "proved", by[p].reason
        assert by[p].bound == asked
        assert by[p].engines == dict.fromkeys(asked.agents, "induction")
        # the reachability checks were made with the proofs at the bound, before the stop
        assert by[p].reachable["crash"] == by[p].reachable["restore"] == "reached"
    assert by[slow].verdict == "unknown"
    assert by[slow].reason.endswith(f"stopped before {asked}")
    assert any(f"proved up to {asked}: key-isolation, no-lost-input" in line for line in said)


def test_a_deadline_leaves_unknown_with_the_bound_reached() -> None:
    started = time.monotonic()
    results = deepen(EARLY, DEFAULT, ["divergence-safeguard"], deadline=6.0, workers=1)
    assert time.monotonic() - started < 20
    (r,) = results
    assert r.verdict == "unknown"
    # how far it got depends on the machine's load; that it says so does not
    assert r.reason.startswith(("proved up to inputs=", "not proved at any bound"))
    assert r.reason.endswith(f"stopped before {DEFAULT}")
    assert multiprocessing.active_children() == []  # the step stopped with its workers


def test_cli_refuses_a_deadline_without_deepen(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--contract", "seqnum", "--deadline", "5"]) == 2
    assert "--deadline" in capsys.readouterr().err


def test_cli_contract_file_deepens(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proposal = tmp_path / "no-wait.json"
    proposal.write_text(json.dumps({"name": "nw", "based_on": "ordered", "wait": False}))
    status = main(
        [
            "verify",
            "--contract-file",
            str(proposal),
            "--property",
            "complete-reuse",
            "--quiet",
            "--json",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert status == 1
    (result,) = json.loads(capsys.readouterr().out)
    assert result["verdict"] == "counterexample"
    assert Path(result["counterexample"]).exists()


def test_cli_text_says_the_wall_clock_each_verdict_falls_within(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # deepening, the time of a verdict is the time from the start to it: never past the
    # wall clock the table ends with
    proposal = tmp_path / "no-wait.json"
    proposal.write_text(json.dumps({"name": "nw", "based_on": "ordered", "wait": False}))
    bound = "inputs=2,channels=2,keys=1,crashes=1"
    argv = ["verify", "--contract-file", str(proposal), "--bound", bound, "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    (clock,) = re.findall(r"^  wall clock: ([\d.]+) s \(the times above: from the start", out, re.M)
    times = re.findall(r"^nw +[a-z-]+ +(?:proved|counterexample|unknown) +([\d.]+) s", out, re.M)
    assert len(times) == len(PROPERTIES) - 1  # bounded-waiting needs timeouts in the bound
    assert all(float(t) <= float(clock) for t in times)


def _alive_in_session(session: int) -> list[int]:
    """The processes of ``session`` that have not ended (zombies left out)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        state, _, _, sid = stat[stat.rindex(")") + 2 :].split()[:4]
        if int(sid) == session and state != "Z":
            alive.append(int(entry.name))
    return alive


def _until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _start(tmp_path: Path, *options: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "replay_contract", "verify", "--contract", "ordered"]
    return subprocess.Popen(
        [*command, "--out", str(tmp_path), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its session id is its pid, and its processes keep it
    )


def _end(run: subprocess.Popen[str], sig: signal.Signals) -> tuple[str, str]:
    """Send ``sig`` once the run has solver workers (at least two processes besides
    the command); its output, once no process of it is left (a test failure if some
    still run 10 s later)."""
    try:
        assert _until(lambda: len(_alive_in_session(run.pid)) >= 3, 120)
        run.send_signal(sig)
        run.wait(timeout=60)  # not its output: a process left behind holds the pipes open
        assert _until(lambda: not _alive_in_session(run.pid), 10), _alive_in_session(run.pid)
        out, err = run.communicate(timeout=60)
    finally:
        for pid in _alive_in_session(run.pid):  # not to leave them if the test fails
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return out, err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["term", "kill"])
def test_a_killed_verify_leaves_no_solver_running(sig: signal.Signals, tmp_path: Path) -> None:
    # step classes of 30 s and more: a worker left behind would still be running
    bound = "inputs=4,channels=2,keys=2,crashes=2"
    run = _start(tmp_path, "--engine", "induction", "--bound", bound, "--no-reachability")
    _, err = _end(run, sig)
    if sig == signal.SIGTERM:  # as Ctrl-C
        assert run.returncode == INTERRUPTED
        assert "replay-contract verify: interrupted (SIGTERM)" in err
    else:
        assert run.returncode == -signal.SIGKILL


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("cache", [False, True], ids=["no-cache", "cache"])
def test_a_terminated_deepening_shows_what_it_knows(
    cache: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if cache:
        monkeypatch.setenv("REPLAY_CONTRACT_PROOF_CACHE", str(tmp_path / "proofs"))
    run = _start(tmp_path, "--deepen")
    out, err = _end(run, signal.SIGTERM)
    assert run.returncode == NO_ANSWER, err
    rows = [line for line in out.splitlines() if line.startswith("ordered ")]
    assert len(rows) == 6 and all(" unknown " in row for row in rows), out
    assert "stopped while at inputs=" in err
    # how to go on is said only where the proof cache kept what was proved
    assert (f"  {verify_command.RESUME}" in out.splitlines()) == cache, out
