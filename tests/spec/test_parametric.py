"""The experimental parametric induction step of ``seqnum`` (:mod:`.parametric`): it
proves what it claims for every bound, refutes the broken variants, and is a step of the
real machine of :mod:`.encoding` on concrete runs (:mod:`.parametric_refine`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_contract.spec.bound import parse
from replay_contract.spec.everybound import parametric as pm
from replay_contract.spec.everybound import parametric_refine as refine

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 60_000
#: the command line of the docs: the step for bound 3 and unbounded, two keys
COMMAND = ("--keys", "2", "--n", "3,none", "--quiet", "--initial")

#: the facts of seqnum's invariant (no-stale-reuse only)
FACTS = {
    "valid ahead is order op",
    "valid ahead is order sv",
    "written behind",
    "slot basics",
    "history is order op",
    "next nonneg op",
    "history is order sv",
    "next nonneg sv",
    "orders agree below next",
    "checkpoint behind",
    "markers equal",
    "marker below now",
    "counters",
    "no stale reuse",
}

#: the facts that --drop leaves out one at a time (each is needed by another)
MAIN_FACTS = (
    "orders agree below next",
    "written behind",
    "markers equal",
    "checkpoint behind",
    "valid ahead is order op",
    "valid ahead is order sv",
    "history is order op",
    "history is order sv",
)


def not_kept(rows: pm.Rows) -> dict[str, str]:
    return {name: res for name, res, _ in rows if res != "unsat"}


@pytest.mark.parametrize("entries", [1, 2], ids=["stateful", "chain"])
@pytest.mark.parametrize("n", [None, 6], ids=["unbounded", "n=6,keys=2"])
def test_seqnum_invariant_is_inductive(entries: int, n: int | None) -> None:
    rows = pm.check_step(
        pm.Options(entries=entries, n=n, keys=None if n is None else 2), TIMEOUT_MS
    )
    assert {name for name, _, _ in rows} == FACTS
    assert not_kept(rows) == {}


def test_with_divergence_safeguard_too() -> None:
    rows = pm.check_step(pm.Options(safeguard=True), TIMEOUT_MS)
    assert len(rows) == len(FACTS) + 4
    assert {"recorded", "no later divergence", "divergence safeguard"} <= {r[0] for r in rows}
    assert not_kept(rows) == {}


def test_all_facts_in_one_query() -> None:
    assert pm.check_step(pm.Options(), TIMEOUT_MS, split=False)[0][1] == "unsat"


@pytest.mark.parametrize("safeguard", [False, True])
def test_the_initial_state_satisfies_the_invariant(safeguard: bool) -> None:
    rows = pm.check_initial(pm.Options(safeguard=safeguard), TIMEOUT_MS)
    assert len(rows) >= len(FACTS)
    assert not_kept(rows) == {}


@pytest.mark.parametrize("entries", [1, 2], ids=["stateful", "chain"])
@pytest.mark.parametrize(
    ("variant", "failing"),
    [
        ("no-divergence-check", {"valid ahead is order op", "valid ahead is order sv"}),
        (
            "stable-id",
            {"valid ahead is order op", "valid ahead is order sv", "no stale reuse"},
        ),
        ("forget-saved-order", {"valid ahead is order sv", "orders agree below next"}),
    ],
)
def test_broken_variants_get_a_counterexample_to_induction(
    entries: int, variant: str, failing: set[str]
) -> None:
    rows = pm.check_step(pm.Options(entries=entries, variant=variant), TIMEOUT_MS)
    assert not_kept(rows) == dict.fromkeys(failing, "sat")


@pytest.mark.parametrize("fact", MAIN_FACTS)
def test_every_main_fact_is_needed(fact: str) -> None:
    rows = pm.check_step(pm.Options(drop=(fact,)), TIMEOUT_MS)
    assert fact not in {name for name, _, _ in rows}
    failed = not_kept(rows)
    assert failed, f"without {fact!r} every other fact is still kept"
    assert set(failed.values()) == {"sat"}


def test_an_unrolling_reaches_a_stale_reuse_only_when_broken() -> None:
    ok = pm.bmc(pm.Options(), 3, TIMEOUT_MS)
    assert ok["reuse"][0] == "sat"  # a reuse happens at all: the check is not vacuous
    assert ok["stale reuse"][0] == "unsat"
    broken = pm.bmc(pm.Options(variant="stable-id"), 3, TIMEOUT_MS)
    assert broken["stale reuse"][0] == "sat"


@pytest.mark.parametrize(
    ("agent", "sample"), [("stateful", 25), ("chain", 15)], ids=["stateful", "chain"]
)
def test_every_micro_step_of_the_machine_is_a_step_of_the_model(agent: str, sample: int) -> None:
    bound = parse(f"inputs=2,channels=2,keys=1,crashes=1,agents={agent}")
    done = refine.check_runs(bound, sample=sample)
    assert done.runs == sample
    assert done.failures == []


@pytest.mark.parametrize("variant", ["stable-id", "no-divergence-check"])
def test_a_broken_model_is_caught_by_the_refinement_check(variant: str) -> None:
    bound = parse("inputs=2,channels=2,keys=1,crashes=1,agents=stateful")
    done = refine.check_runs(bound, sample=40, variant=variant, stop_after=1)
    assert len(done.failures) == 1
    assert "micro-step" in done.failures[0][1][0]
