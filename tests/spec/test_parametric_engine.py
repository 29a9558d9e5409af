"""``verify --engine parametric``: which properties the parametric steps take, that they
prove them, and that what they leave (or fail) goes to the induction engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from attrs import evolve

from replay_contract.cli import main
from replay_contract.model.contracts import CONTRACTS, ORDERED, SEQNUM
from replay_contract.spec import bounded_explore
from replay_contract.spec.bound import parse
from replay_contract.spec.everybound import parametric_engine as pe
from replay_contract.spec.properties import PROPERTIES
from replay_contract.spec.verify import verify_contract

TINY = parse("inputs=2,channels=2,keys=1,crashes=1")
WIDE = parse("inputs=8,channels=3,keys=2,crashes=2")


def served(jobs: dict[pe.Job, set[tuple[str, str]]]) -> set[tuple[str, str]]:
    return set().union(*jobs.values()) if jobs else set()


def test_ordered_has_a_step_for_each_of_its_six_properties() -> None:
    jobs = pe.plan(ORDERED, WIDE, PROPERTIES)
    agents = [a for a in WIDE.agents if a in pe.ENTRIES]
    assert agents, WIDE.agents
    # bounded-waiting (the timeout step) has no parametric step: induction or the unrolling
    six = [p for p in PROPERTIES if p != "bounded-waiting"]
    assert served(jobs) == {(a, p) for a in agents for p in six}
    # complete-reuse rests on both halves: the store's and the excuse
    halves = {j.model for j, pairs in jobs.items() if (agents[0], "complete-reuse") in pairs}
    assert halves == {"ordered", "complete", "lost"}
    assert all(j.excuse for j in jobs if j.model == "lost")


def test_a_step_is_asked_only_for_the_properties_asked() -> None:
    jobs = pe.plan(ORDERED, WIDE, ["no-lost-input"])
    assert {j.model for j in jobs} == {"lost"}
    assert not any(j.excuse for j in jobs)
    jobs = pe.plan(ORDERED, WIDE, ["no-stale-reuse"])
    assert {(j.model, j.safeguard, j.isolation, j.outcome) for j in jobs} == {
        ("ordered", False, False, False)
    }


def test_complete_reuse_is_left_to_induction_beyond_give_up_after() -> None:
    # the excuse holds only while a waiting key has not given up
    impatient = evolve(ORDERED, give_up_after=2)
    pairs = served(pe.plan(impatient, parse("inputs=3,channels=2,keys=2,crashes=1"), PROPERTIES))
    assert not any(p == "complete-reuse" for _, p in pairs)
    assert any(p == "no-stale-reuse" for _, p in pairs)
    pairs = served(pe.plan(impatient, parse("inputs=2,channels=2,keys=2,crashes=1"), PROPERTIES))
    assert any(p == "complete-reuse" for _, p in pairs)


def test_a_step_follows_the_rules_not_the_name() -> None:
    renamed = evolve(ORDERED, name="my-ordered", description="the same rules")
    assert served(pe.plan(renamed, WIDE, PROPERTIES)) == served(pe.plan(ORDERED, WIDE, PROPERTIES))
    changed = evolve(ORDERED, name="my-ordered", wait=False)
    assert pe.plan(changed, WIDE, PROPERTIES) == {}


def test_the_store_model_takes_the_order_written_before_the_first_tool_call() -> None:
    early = evolve(ORDERED, name="my-ordered", record_order="before-first-tool-call")
    plan = pe.plan(early, WIDE, PROPERTIES)
    assert served(plan) == served(pe.plan(ORDERED, WIDE, PROPERTIES))
    assert all(job.early for job in plan if job.model in ("ordered", "complete"))
    assert not any(job.early for job in pe.plan(ORDERED, WIDE, PROPERTIES))


def test_seqnum_has_steps_for_two_properties_and_the_broken_contracts_none() -> None:
    pairs = served(pe.plan(SEQNUM, WIDE, PROPERTIES))
    assert {p for _, p in pairs} == {"no-stale-reuse", "divergence-safeguard"}
    for name in ("stable-id", "no-divergence-check", "read-set"):
        assert pe.plan(CONTRACTS[name], WIDE, PROPERTIES) == {}, name


def test_ordered_is_proved_by_its_steps_and_agrees_with_the_explorer() -> None:
    said: list[str] = []
    results = verify_contract(ORDERED, TINY, engine="parametric", progress=said.append, workers=2)
    explored = bounded_explore.explore(TINY, ORDERED)
    agents = [a for a in TINY.agents if a in pe.ENTRIES]
    for r in results:
        assert r.verdict == explored.verdict(r.property) == "proved", (r.property, r.reason)
        assert {a: r.engines[a] for a in agents} == dict.fromkeys(agents, "parametric")
        assert r.seconds > 0
    # the steps ran, each kept its facts, and the reachability checks still ran
    kept = [line for line in said if "/ parametric " in line and "facts kept" in line]
    assert len(kept) == len(pe.plan(ORDERED, TINY, PROPERTIES)), said
    assert all(r.reachable[b] == "reached" for r in results for b in ("crash", "reuse")), said


def test_seqnum_takes_two_steps_and_induction_for_the_rest() -> None:
    results = verify_contract(SEQNUM, TINY, engine="parametric", reachability=False, workers=2)
    explored = bounded_explore.explore(TINY, SEQNUM)
    for r in results:
        assert r.verdict == explored.verdict(r.property), r.property
        engines = set(r.engines.values())
        if r.property in ("no-stale-reuse", "divergence-safeguard"):
            assert engines == {"parametric"}, r.property
        else:
            assert "parametric" not in engines, r.property
    verdicts = {r.property: r.verdict for r in results}
    assert verdicts["complete-reuse"] == "counterexample"


def test_a_step_that_fails_leaves_its_properties_to_induction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # as if the model had a fact the step does not keep: the property is not taken as
    # proved by it, but proved (or refuted) by the induction engine as without it
    def broken(job: pe.Job, timeout: float | None) -> pe.Done:
        return pe.Done(job, ("some fact (sat)",), 1, 0.1)

    monkeypatch.setattr(pe, "run", broken)
    said: list[str] = []
    results = verify_contract(
        SEQNUM,
        TINY,
        ["no-stale-reuse"],
        engine="parametric",
        reachability=False,
        progress=said.append,
        workers=1,
    )
    (r,) = results
    assert r.verdict == "proved"
    assert "parametric" not in r.engines.values()
    assert set(r.engines.values()) <= {"induction", "unrolling"}
    assert any("not proved by its parametric step" in line for line in said), said


def test_the_command_says_which_engine_proved_what(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "verify",
            "--contract",
            "seqnum",
            "--property",
            "divergence-safeguard",
            "--engine",
            "parametric",
            "--bound",
            "inputs=2,channels=2,keys=1,crashes=1",
            "--no-reachability",
            "--json",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 0
    (data,) = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "proved"
    assert set(data["engines"].values()) == {"parametric"}


@pytest.mark.parametrize(
    ("changes", "engine", "hinted"),
    [
        ({"record_order": "before-first-tool-call"}, None, True),  # ordered's rules
        ({"record_order": "before-first-tool-call"}, "parametric", False),  # opted in
        ({"wait": False}, None, False),  # no model is written for these rules
    ],
)
def test_the_default_engines_say_when_the_opt_in_would_prove_for_every_bound(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    changes: dict[str, object],
    engine: str | None,
    hinted: bool,
) -> None:
    proposal = tmp_path / "proposal.json"
    proposal.write_text(json.dumps({"name": "p", "based_on": "ordered", **changes}))
    argv = ["verify", "--contract-file", str(proposal), "--property", "no-lost-input"]
    argv += ["--bound", "inputs=2,channels=2,keys=1,crashes=1", "--no-reachability"]
    argv += ["--out", str(tmp_path / "out"), *(["--engine", engine] if engine else [])]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert ("--engine parametric (opt-in) would prove no-lost-input" in err) == hinted


def test_no_step_is_planned_at_a_bound_with_a_timeout_step() -> None:
    """The models have no timeout step: at a bound with one they prove nothing, and
    verify leaves the properties to induction and the unrolling."""
    timed = parse("inputs=2,channels=2,keys=1,crashes=1,timeouts=1")
    assert pe.plan(ORDERED, TINY, PROPERTIES)
    assert pe.plan(ORDERED, timed, PROPERTIES) == {}
    (r,) = verify_contract(
        ORDERED, timed, ["no-lost-input"], engine="parametric", reachability=False, workers=1
    )
    assert r.verdict == "proved"
    assert "parametric" not in r.engines.values()
