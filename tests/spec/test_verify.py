"""``verify`` against the exhaustive explorer, and the command line."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from attrs import evolve

from replay_contract.cli import main
from replay_contract.model import bounded
from replay_contract.model.catalogue import resolve
from replay_contract.model.contracts import CONTRACTS, ORDERED
from replay_contract.model.mutants import MUTANTS
from replay_contract.model.run import simulate
from replay_contract.model.scenario import Step
from replay_contract.spec import bounded_explore, verify
from replay_contract.spec.bound import DEFAULT_ENGINE, parse
from replay_contract.spec.everybound import parametric_engine
from replay_contract.spec.properties import check
from replay_contract.spec.verify import check_budget, verify_contract

SMALL = parse("inputs=2,channels=2,keys=2,crashes=1")
#: Contracts whose proofs finish in seconds at SMALL (those that never wait).
FAST = {n: c for n, c in {**CONTRACTS, **MUTANTS}.items() if not c.wait}


def _agree(contract, bound, engine: str = "unrolling") -> None:
    results = verify_contract(contract, bound, engine=engine)
    explored = bounded_explore.explore(bound, contract)
    for r in results:
        assert r.verdict == explored.verdict(r.property), (r.property, r.reason)
        if r.counterexample is not None:
            run = simulate(r.counterexample.scenario, contract)
            assert not check(r.property, run.trace).holds
    reached = {b for b, v in results[0].reachable.items() if v == "reached"}
    assert reached == set(explored.reached)


@pytest.mark.parametrize("name", list(FAST))
def test_z3_and_explorer_agree(name: str) -> None:
    _agree(FAST[name], SMALL)


#: The opt-in engine's cases: the contracts of FAST it has a parametric step for (for the
#: others it is the default engine).
OPT_IN = [n for n, c in FAST.items() if parametric_engine.plan(c, SMALL, ["no-stale-reuse"])]
#: The default engine's: the published contracts outside the families are in
#: tests/spec/test_induction.py, which says by which engine each verdict comes too.
DEFAULT = [n for n in FAST if n not in ("stable-id", "read-set", "no-divergence-check")]


@pytest.mark.parametrize(
    ("name", "engine"),
    [*((n, DEFAULT_ENGINE) for n in DEFAULT), *((n, "parametric") for n in OPT_IN)],
)
def test_the_default_and_the_opt_in_engine_agree_with_the_explorer(name: str, engine: str) -> None:
    # the command's default: induction, then the unrolling (its counterexamples and
    # reachability checks pinned to witnesses first); opt-in: the parametric steps first
    _agree(FAST[name], SMALL, engine=engine)


def test_the_opt_in_engine_has_a_case_of_its_own() -> None:
    assert OPT_IN == ["seqnum"]


#: Waiting contracts at a bound where their proofs take seconds: the published one, its
#: other record_order rule, and a mutant whose counterexample Z3 must find too.
WAITING = {
    "ordered": ORDERED,
    "ordered-before-first-tool-call": evolve(
        ORDERED, name="ordered-before-first-tool-call", record_order="before-first-tool-call"
    ),
    "ordered-impatient": MUTANTS["ordered-impatient"],
}


@pytest.mark.parametrize("name", list(WAITING))
def test_z3_and_explorer_agree_on_waiting_contracts(name: str) -> None:
    _agree(WAITING[name], parse("inputs=2,channels=2,keys=1,crashes=1"))


def _verify(out: Path, *args: str) -> int:
    """``replay-contract verify ARGS`` at the small bound, quietly, writing into ``out``."""
    return main(["verify", *args, "--bound", str(SMALL), "--quiet", "--out", str(out)])


def test_cli_counterexample_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = _verify(tmp_path, "--contract", "seqnum", "--property", "complete-reuse", "--json")
    assert status == 1  # a property is broken
    (result,) = json.loads(capsys.readouterr().out)
    assert result["verdict"] == "counterexample"
    assert {"contract", "property", "verdict", "bound", "seconds"} <= set(result)
    path = Path(result["counterexample"])
    assert path.exists()
    status = main(["simulate", str(path), "--contract", "seqnum", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert status == 1 and "complete-reuse" in summary["violations"]
    # the reversed-interleaving shape: two channels, one key
    scenario = resolve(str(path))
    assert len(scenario.topology.channels) == 2 and len(scenario.topology.keys) == 1


def test_a_counterexample_keeps_only_the_records_it_needs() -> None:
    """At a bound with more records than the violation needs, the reported scenario is
    still the reversed interleaving: two records, one per channel, both replayable."""
    (result,) = verify_contract(
        CONTRACTS["seqnum"], parse("inputs=4,channels=2,keys=2,crashes=1"), ["complete-reuse"]
    )
    assert result.counterexample is not None
    topology = result.counterexample.scenario.topology
    assert [len(c.records) for c in topology.channels] == [1, 1]
    assert len(topology.keys) == 1 and all(c.replayable for c in topology.channels)
    run = simulate(result.counterexample.scenario, CONTRACTS["seqnum"])
    assert not check("complete-reuse", run.trace).holds


@pytest.mark.parametrize("searched", [verify.SEARCHED_RUNS, 0], ids=["search", "no-search"])
def test_a_counterexample_shrinks_to_two_records_whatever_its_schedule(
    searched: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A schedule the solver may give (the explorer has hundreds like it): the crash
    comes with B's delivery, so dropping B drops the crash and the violation. The
    reversed interleaving is still found among the runs of two records; without that
    search the scenario keeps three."""
    monkeypatch.setattr(verify, "SEARCHED_RUNS", searched)
    seqnum = CONTRACTS["seqnum"]
    shape = bounded.Shape((0, 0, 1), (0, 0, 0), ("same", "same", "same"), "stateful")
    steps = [
        Step("deliver", "A"),
        Step("deliver", "B", crash_after=0),
        Step("restore"),
        Step("deliver", "C"),
        Step("deliver", "A"),
    ]
    assert not check("complete-reuse", simulate(shape.scenario(steps), seqnum).trace).holds
    small, schedule = verify.simplify(shape, steps, seqnum, "complete-reuse")
    assert small.inputs == (2 if searched else 3)
    run = simulate(small.scenario(schedule), seqnum)
    assert not check("complete-reuse", run.trace).holds
    if searched:
        channels = small.scenario(schedule).topology.channels
        assert [len(c.records) for c in channels] == [1, 1]


def test_cli_text_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _verify(tmp_path, "--contract", "stable-id", "--property", "no-stale-reuse")
    out = capsys.readouterr().out
    assert "counterexample" in out and "reused" in out and "replay-contract simulate" in out


def test_a_stopped_run_keeps_the_verdicts_it_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def first_only(*args: object, **kwargs: object) -> list[verify.Result]:
        calls.append(args[0])
        if len(calls) > 1:
            raise KeyboardInterrupt  # the user stops the run during the second contract
        return verify_contract(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(verify, "verify_contract", first_only)
    status = _verify(tmp_path, "--contract", "seqnum,stable-id", "--property", "complete-reuse")
    assert status == 130
    out = capsys.readouterr().out
    assert out.startswith(f"bound: {SMALL}\n")
    assert "seqnum                 complete-reuse         counterexample" in out
    assert "stable-id" not in out


def test_proposed_contract_from_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proposal = tmp_path / "proposal.json"
    proposal.write_text(
        json.dumps({"name": "seqnum-masking", "based_on": "seqnum", "on_miss": "nothing"})
    )
    _verify(
        tmp_path, "--contract-file", str(proposal), "--property", "divergence-safeguard", "--json"
    )
    (result,) = json.loads(capsys.readouterr().out)
    assert result["contract"] == "seqnum-masking"
    assert result["verdict"] == "counterexample"


def test_refused_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--bound", "inputs=x"]) == 2
    assert main(["verify", "--property", "nonsense"]) == 2
    assert "error" in capsys.readouterr().err


def test_a_long_query_says_it_is_still_running(monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    monkeypatch.setattr(verify, "_progress", said.append)
    monkeypatch.setattr(verify, "HEARTBEAT", 0.02)
    with verify._heartbeat("ordered / any property / stateful"):
        time.sleep(0.3)
    assert said and all(m.startswith("ordered / any property / stateful: still") for m in said)
    count = len(said)
    time.sleep(0.1)
    assert len(said) == count  # it stops with its query


def test_verify_names_the_query_that_is_still_running(monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    monkeypatch.setattr(verify, "HEARTBEAT", 0.001)
    verify_contract(CONTRACTS["seqnum"], SMALL, ["no-stale-reuse"], progress=said.append, workers=1)
    beats = [m for m in said if "still solving" in m]
    assert any(m.startswith("seqnum / no-stale-reuse / ") for m in beats), said
    assert any(m.startswith("seqnum / reaching a crash / ") for m in beats), said


def test_vacuous_bound_is_not_a_proof() -> None:
    (r,) = verify_contract(
        evolve(ORDERED, wait=False, name="no-wait"),
        parse("inputs=1,channels=1,keys=1,crashes=0"),
        ["no-lost-input"],
    )
    assert r.verdict == "unknown" and "vacuous" in r.reason


@pytest.mark.parametrize("name", list({**CONTRACTS, **MUTANTS}))
def test_the_unrolling_is_long_enough(name: str) -> None:
    """``budget`` gives every run of a small bound the micro-steps it needs."""
    contract = {**CONTRACTS, **MUTANTS}[name]
    budget = check_budget(contract, parse("inputs=2,channels=2,keys=1,crashes=1"))
    assert set(budget.values()) == {"enough"}, budget


def test_bounded_waiting_without_a_timeout_in_the_bound_is_vacuous() -> None:
    from replay_contract.model.contracts import ORDERED as ordered
    from replay_contract.spec.bound import parse as parse_bound
    from replay_contract.spec.verify import verify_contract as verify_one

    bound = parse_bound("inputs=2,channels=2,keys=1,crashes=1")
    (result,) = verify_one(ordered, bound, ["bounded-waiting"], timeout=120, engine="unrolling")
    assert result.verdict == "unknown"
    assert "no timeout step" in result.reason
