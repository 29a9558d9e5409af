"""The induction engine of ``verify``: what it proves, what it must not, and the step
classes its soundness rests on."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import z3
from attrs import evolve

from replay_contract.cli import main
from replay_contract.model.contracts import CONTRACTS, ORDERED, SEQNUM
from replay_contract.model.mutants import MUTANTS
from replay_contract.model.run import simulate
from replay_contract.spec import bounded_explore, induction
from replay_contract.spec import encoding as enc
from replay_contract.spec import logic as lg
from replay_contract.spec.bound import parse
from replay_contract.spec.properties import PROPERTIES, check
from replay_contract.spec.verify import build, verify_contract

SMALL = parse("inputs=2,channels=2,keys=2,crashes=1")


def test_induction_agrees_with_the_explorer_and_proves_what_it_claims() -> None:
    results = verify_contract(SEQNUM, SMALL, engine="induction")
    explored = bounded_explore.explore(SMALL, SEQNUM)
    for r in results:
        assert r.verdict == explored.verdict(r.property), (r.property, r.reason)
        by_induction = r.property in induction.INDUCTIVE
        expected = "induction" if by_induction else "unrolling"
        assert r.engines == dict.fromkeys(SMALL.agents, expected), r.property
    assert {r.property: r.verdict for r in results}["complete-reuse"] == "counterexample"


@pytest.mark.parametrize("agent", ["stateful", "chain"])
def test_seqnum_is_inductive_with_two_crashes(agent: str) -> None:
    bound = parse("inputs=3,channels=2,keys=2,crashes=2")
    outcome = induction.prove(SEQNUM, agent, bound, induction.INDUCTIVE)
    assert outcome.failed == {}
    assert outcome.proved == list(induction.INDUCTIVE)


@pytest.mark.parametrize("name", ["stable-id", "no-divergence-check"])
def test_the_invariant_found_for_a_contract_proves_nothing_it_breaks(name: str) -> None:
    # both really break no-stale-reuse or divergence-safeguard (the explorer's
    # counterexamples); outside the families, the search for what of the family's
    # invariant they keep must leave those properties unproved, and prove the others
    contract = CONTRACTS[name]
    assert induction.generic(contract)
    outcome = induction.prove(contract, "stateful", SMALL, induction.INDUCTIVE)
    explored = bounded_explore.explore(SMALL, contract)
    broken = {p for p in induction.INDUCTIVE if explored.verdict(p) == "counterexample"}
    assert broken & {"no-stale-reuse", "divergence-safeguard"}
    assert set(outcome.failed) == broken
    assert set(outcome.proved) == set(induction.INDUCTIVE) - broken
    assert outcome.without  # families of the invariant it does not keep
    assert all("not inductive at micro-step" in why for why in outcome.failed.values())


def test_a_wrong_flag_is_not_proved() -> None:
    # complete-reuse has no facts: asked anyway, its flag is not kept unset
    outcome = induction.prove(SEQNUM, "stateful", SMALL, ["complete-reuse"])
    assert outcome.proved == []
    assert "may set its flag" in outcome.failed["complete-reuse"]


@pytest.mark.parametrize(
    "bound", ["inputs=3,channels=2,keys=2,crashes=1", "inputs=2,channels=1,keys=1,crashes=2"]
)
def test_every_micro_step_has_the_formula_of_its_class(bound: str) -> None:
    b = parse(bound)
    props = list(induction.INDUCTIVE)
    total = enc.first_budget(SEQNUM, b) + b.crashes * enc.budget(SEQNUM, b)
    reps = induction.step_classes(SEQNUM, b)
    assert sorted({induction.class_of(SEQNUM, b, t) for t in range(total)}) == reps
    covered = 0
    for t in reps:
        covered += 1 + induction.check_class(
            SEQNUM, "stateful", b, induction.build_step(SEQNUM, "stateful", b, t, props), props
        )
    assert covered == total
    # and the comparison tells different steps apart
    first, second = (induction.step_formula(SEQNUM, "stateful", b, t, props) for t in reps[2:4])
    same = len(first) == len(second) and all(x.eq(y) for x, y in zip(first, second, strict=True))
    assert not same


def test_a_wrong_class_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(induction, "class_of", lambda contract, bound, t: 1 if t else 0)
    props = ["no-lost-input"]
    step = induction.build_step(SEQNUM, "stateful", SMALL, 1, props)
    with pytest.raises(induction.ClassMismatch, match="differs from that of micro-step 1"):
        induction.check_class(SEQNUM, "stateful", SMALL, step, props)


def test_a_contract_outside_the_families_has_its_invariant_searched_for() -> None:
    assert "match='identity'" in induction.unsupported(CONTRACTS["stable-id"])
    every_key = MUTANTS["ordered-invalidate-every-key"]
    assert "invalidation_scope='all'" in induction.unsupported(every_key)
    assert induction.unsupported(SEQNUM) == induction.unsupported(ORDERED) == ""
    assert induction.generic(every_key) and every_key.wait
    assert induction.inductive(every_key, "stateful", PROPERTIES) == induction.inductive(
        ORDERED, "stateful", PROPERTIES
    )
    # what the search does not keep goes to the unrolling, and verify says why (with
    # one key, invalidating every key is invalidating the key: there it is kept)
    bound = SMALL
    said: list[str] = []
    results = verify_contract(
        every_key, bound, ["complete-reuse"], engine="induction", progress=said.append, workers=1
    )
    assert results[0].verdict == "counterexample"
    assert set(results[0].engines.values()) == {"unrolling"}
    assert any("again without the facts of" in line for line in said)
    assert any("complete-reuse" in line and "not proved by induction" in line for line in said)
    # searched for first at small bounds; not for a contract of a family, nor when
    # only what the generic invariant covers is asked
    larger = parse("inputs=3,channels=2,keys=3,crashes=2")
    smaller = [parse(f"inputs=2,channels=2,keys=2,crashes={c}") for c in (1, 2)]
    assert induction.search_bounds(every_key, larger, PROPERTIES) == smaller
    assert induction.search_bounds(every_key, larger, induction.GENERIC) == []
    assert induction.search_bounds(every_key, smaller[1], PROPERTIES) == smaller[:1]
    assert induction.search_bounds(every_key, smaller[0], PROPERTIES) == []
    assert induction.search_bounds(ORDERED, larger, PROPERTIES) == []


#: Contracts that wait and fit neither family: one rule of ``ordered`` changed each.
WAITING_OUTSIDE = {
    "ordered-volatile-invalidation": MUTANTS["ordered-volatile-invalidation"],
    "ordered-by-identity": evolve(ORDERED, name="ordered-by-identity", match="identity"),
    "ordered-on-miss-invalidates": evolve(
        ORDERED, name="ordered-on-miss-invalidates", on_miss="invalidate"
    ),
}


#: What the search for the invariant proves for each of them at ``SMALL`` (agent
#: ``stateful``).
FOUND = {
    "ordered-volatile-invalidation": {"key-isolation", "no-lost-input"},
    "ordered-by-identity": set(PROPERTIES) - {"bounded-waiting"},
    "ordered-on-miss-invalidates": {
        "no-stale-reuse",
        "key-isolation",
        "no-lost-input",
        "equivalent-outcome",
    },
}


@pytest.mark.parametrize("name", sorted(FOUND))
def test_the_invariant_found_for_a_waiting_contract_agrees_with_the_explorer(name: str) -> None:
    contract = WAITING_OUTSIDE[name]
    assert induction.generic(contract) and contract.wait
    bound = parse(f"{SMALL},agents=stateful")  # the search takes rounds: one agent
    results = verify_contract(contract, bound, engine="induction", reachability=False)
    explored = bounded_explore.explore(SMALL, contract)
    for r in results:
        assert r.verdict == explored.verdict(r.property), (r.property, r.reason)
    by_induction = {r.property for r in results if r.engines == {"stateful": "induction"}}
    assert by_induction == FOUND[name]


@pytest.mark.parametrize("agent", ["stateful", "chain"])
@pytest.mark.parametrize(
    "name", ["ordered-volatile-invalidation", "ordered-by-identity", "ordered-on-miss-invalidates"]
)
def test_the_generic_invariant_of_a_waiting_contract_is_kept_over_two_crashes(
    name: str, agent: str
) -> None:
    contract = WAITING_OUTSIDE[name]
    bound = parse("inputs=3,channels=2,keys=2,crashes=2")
    assert induction.by_generic(contract, induction.GENERIC)
    outcome = induction.prove(contract, agent, bound, induction.GENERIC)
    assert outcome.failed == {}
    assert outcome.proved == list(induction.GENERIC)


def test_no_lost_input_of_a_waiting_contract_rests_on_its_waiting_facts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # without them the end of input is not known to reach every waiting input
    volatile = WAITING_OUTSIDE["ordered-volatile-invalidation"]
    monkeypatch.setattr(induction, "_generic_waiting_facts", lambda *args: None)
    outcome = induction.prove(volatile, "stateful", SMALL, induction.GENERIC)
    assert "no-lost-input" not in outcome.proved
    assert "no-lost-input" in outcome.failed


BY_READS = evolve(ORDERED, name="ordered-by-reads", match="reads")


def test_ordered_with_a_lookup_by_reads_gets_the_full_invariant() -> None:
    assert induction.unsupported(BY_READS) == ""
    assert induction.inductive(BY_READS, "stateful", PROPERTIES) == [
        p for p in PROPERTIES if p != "bounded-waiting"
    ]
    results = verify_contract(BY_READS, SMALL, engine="induction")
    explored = bounded_explore.explore(SMALL, BY_READS)
    for r in results:
        assert r.verdict == explored.verdict(r.property) == "proved", (r.property, r.reason)
        assert r.engines == dict.fromkeys(SMALL.agents, "induction"), r.property


def test_the_invariant_of_a_lookup_by_reads_is_kept_over_two_crashes() -> None:
    # the agent whose action reads the key's memory (3 inputs: 3 minutes with both agents)
    bound = parse("inputs=2,channels=2,keys=2,crashes=2")
    covered = induction.inductive(BY_READS, "stateful", PROPERTIES)
    assert "complete-reuse" in covered
    outcome = induction.prove(BY_READS, "stateful", bound, covered)
    assert outcome.failed == {}
    assert outcome.proved == covered


def test_complete_reuse_by_reads_rests_on_the_ghost_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    # without it a saved completion ahead may have read other values than the key's
    # memory when its input comes back, and the lookup would miss it
    monkeypatch.setattr(induction, "_memory_ghost_facts", lambda contract, properties: False)
    outcome = induction.prove(BY_READS, "stateful", SMALL, ["complete-reuse"])
    assert "complete-reuse" in outcome.failed


@pytest.mark.parametrize("name", ["stable-id", "read-set", "no-divergence-check"])
def test_the_generic_invariant_proves_what_does_not_depend_on_the_lookup(name: str) -> None:
    contract = CONTRACTS[name]
    assert induction.generic(contract)
    covered = {"key-isolation", "no-lost-input"} | (
        {"no-stale-reuse", "equivalent-outcome"} if name == "read-set" else set()
    )
    results = verify_contract(contract, SMALL, engine="induction")
    explored = bounded_explore.explore(SMALL, contract)
    for r in results:
        assert r.verdict == explored.verdict(r.property), (r.property, r.reason)
        expected = "induction" if r.property in covered else "unrolling"
        assert r.engines == dict.fromkeys(SMALL.agents, expected), r.property
        if r.counterexample is not None:  # replayed through the model, it breaks the property
            assert not check(r.property, simulate(r.counterexample.scenario, contract).trace).holds
    reached = {b for b, v in results[0].reachable.items() if v == "reached"}
    assert reached == set(explored.reached)


def test_invalidating_every_key_is_not_proved_by_the_generic_invariant() -> None:
    # seqnum's rules with an invalidation of every key: it really breaks key-isolation
    every_key = evolve(SEQNUM, name="seqnum-every-key", invalidation_scope="all")
    assert induction.generic(every_key)
    problem = build(every_key, "stateful", SMALL)
    broken = lg.lift_bool(problem.machine.monitors.broken("key-isolation"))
    assert problem.solver.check(broken) == z3.sat
    outcome = induction.prove(every_key, "stateful", SMALL, induction.GENERIC)
    assert outcome.proved == ["no-lost-input"]
    assert "may set its flag" in outcome.failed["key-isolation"]


def test_verify_says_what_induction_leaves_to_the_unrolling() -> None:
    said: list[str] = []
    bound = parse("inputs=2,channels=2,keys=1,crashes=1,agents=stateful")
    stable_id = CONTRACTS["stable-id"]
    results = verify_contract(
        stable_id, bound, ["divergence-safeguard"], engine="induction", progress=said.append
    )
    assert [r.verdict for r in results] == ["counterexample"]
    line = next(x for x in said if "divergence-safeguard" in x and "unrolling" in x)
    assert "not proved by induction (not inductive at micro-step" in line
    # a property no invariant is written for is not tried, and verify says so
    said.clear()
    results = verify_contract(
        SEQNUM, bound, ["complete-reuse"], engine="induction", progress=said.append
    )
    assert [r.verdict for r in results] == ["counterexample"]
    line = next(x for x in said if "not tried" in x)
    assert "it has an invariant only for no-stale-reuse, key-isolation" in line


def test_no_lost_input_rests_on_the_delivery_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(induction, "_delivery_facts", lambda *args: None)
    outcome = induction.prove(CONTRACTS["stable-id"], "stateful", SMALL, induction.GENERIC)
    assert outcome.proved == ["key-isolation"]
    assert "may set its flag" in outcome.failed["no-lost-input"]


def test_a_lookup_that_ignores_the_reads_is_not_proved(monkeypatch: pytest.MonkeyPatch) -> None:
    # read-set's monitor judges a reuse by the values read; a lookup by identity alone
    # reuses a completion that read other values: the flag must not be kept unset
    find = enc.Machine.find

    def by_identity(self: enc.Machine, *args: Any) -> Any:
        contract = self.contract
        self.contract = evolve(contract, match="identity")
        try:
            return find(self, *args)
        finally:
            self.contract = contract

    monkeypatch.setattr(enc.Machine, "find", by_identity)
    read_set = CONTRACTS["read-set"]
    problem = build(read_set, "stateful", SMALL)
    for prop in ("no-stale-reuse", "equivalent-outcome"):
        broken = lg.lift_bool(problem.machine.monitors.broken(prop))
        assert problem.solver.check(broken) == z3.sat, prop
    outcome = induction.prove(read_set, "stateful", SMALL, ["no-stale-reuse"])
    assert "may set its flag" in outcome.failed["no-stale-reuse"]
    outcome = induction.prove(read_set, "stateful", SMALL, ["equivalent-outcome"])
    assert "not inductive" in outcome.failed["equivalent-outcome"]


def test_read_sets_outcome_rests_on_its_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(induction, "_outcome_facts", lambda *args: None)
    outcome = induction.prove(CONTRACTS["read-set"], "stateful", SMALL, ["equivalent-outcome"])
    assert "may set its flag" in outcome.failed["equivalent-outcome"]


#: waiting contracts and bounds their invariant proves (the five properties but
#: complete-reuse): the loop's facts allow the sequel of an advance loop that gives up
#: after an arrival (more inputs wait than ``give_up_after``) or that a timeout starts,
#: or every proposed contract that gives up early and every bound with timeouts would
#: fall back to the unrolling
_THREE = "inputs=3,channels=2,keys=2,crashes=1"
WAITING = {
    "ordered": (ORDERED, _THREE),
    "ordered-before-first-tool-call": (
        evolve(ORDERED, name="early", record_order="before-first-tool-call"),
        _THREE,
    ),
    "gives up at once": (evolve(ORDERED, name="give-up-0", give_up_after=0), _THREE),
    "gives up after one": (evolve(ORDERED, name="give-up-1", give_up_after=1), _THREE),
    "ordered with timeouts": (ORDERED, "inputs=2,channels=2,keys=2,crashes=1,timeouts=1"),
}


@pytest.mark.parametrize("name", list(WAITING))
def test_the_waiting_contracts_are_inductive(name: str) -> None:
    contract, bound = WAITING[name]
    outcome = induction.prove(contract, "stateful", parse(bound), induction.INDUCTIVE)
    assert outcome.failed == {}
    assert outcome.proved == list(induction.INDUCTIVE)


def test_ordered_by_induction_agrees_with_the_explorer() -> None:
    bound = parse("inputs=2,channels=2,keys=1,crashes=1")
    results = verify_contract(ORDERED, bound, engine="induction")
    explored = bounded_explore.explore(bound, ORDERED)
    for r in results:
        assert r.verdict == explored.verdict(r.property) == "proved", r.property
        # every property, complete-reuse included, by induction for both agents
        assert r.engines == dict.fromkeys(bound.agents, "induction"), r.property


def test_ordered_reuses_completely_by_induction() -> None:
    bound = parse("inputs=3,channels=2,keys=2,crashes=1")
    outcome = induction.prove(ORDERED, "stateful", bound, ["complete-reuse"])
    assert outcome.proved == ["complete-reuse"], outcome.failed


def test_ordered_reuses_completely_with_three_keys() -> None:
    # a restore's loop stops at the first empty place of its order: with three keys the
    # invariant must say the order has no gap, or a key placed after one looks skipped
    bound = parse("inputs=1,channels=1,keys=3,crashes=1")
    for agent in ("stateful", "chain"):
        outcome = induction.prove(ORDERED, agent, bound, ["complete-reuse"])
        assert outcome.proved == ["complete-reuse"], (agent, outcome.failed)


def test_an_impatient_ordered_is_not_proved() -> None:
    # gives up on a missing recorded input at once: the unrolling finds its
    # counterexample to complete-reuse; that property's facts, which must not hold for
    # it, are left out, and the invariant without them proves the rest
    impatient = MUTANTS["ordered-impatient"]
    tried = induction.inductive(impatient, "stateful", PROPERTIES)
    assert "complete-reuse" in tried  # the property it breaks
    outcome = induction.prove(impatient, "stateful", SMALL, tried)
    assert list(outcome.failed) == ["complete-reuse"]
    assert outcome.proved == [p for p in tried if p != "complete-reuse"]
    assert outcome.without


def test_complete_reuse_rests_on_its_own_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    # without the facts of complete-reuse the rest of the invariant does not keep the
    # flag unset: the proof above is not carried by the other facts alone
    bound = parse("inputs=2,channels=2,keys=1,crashes=1")
    monkeypatch.setattr(induction, "_reuse_facts", lambda *args: None)
    outcome = induction.prove(ORDERED, "stateful", bound, ["complete-reuse"])
    assert "may set its flag" in outcome.failed["complete-reuse"]


def test_the_other_properties_are_tried_again_when_complete_reuses_facts_fail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # here a false fact stands for one of complete-reuse's facts that is not kept
    monkeypatch.setattr(induction, "_reuse_facts", lambda m, ghosts, epoch, add: add("bad", False))
    bound = parse("inputs=2,channels=2,keys=1,crashes=1,agents=stateful")
    said: list[str] = []
    results = verify_contract(ORDERED, bound, engine="induction", progress=said.append, workers=1)
    by = {r.property: r for r in results}
    assert all(r.verdict == "proved" for r in results)
    assert by["complete-reuse"].engines == {"stateful": "unrolling"}
    assert set(by) == set(PROPERTIES) - {"bounded-waiting"}  # no timeout in the bound
    for p in by:
        if p != "complete-reuse":
            assert by[p].engines == {"stateful": "induction"}, p
    assert any("again without the facts of 1 family (bad)" in line for line in said)


def test_a_forgetful_lookup_fails_the_facts_of_complete_reuse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a machine that never reuses at a key's first position calls that tool again after
    # a restore: only complete-reuse breaks, and the fact that catches it is one of
    # complete-reuse's own, not an earlier fact of the waiting invariant
    bound = parse("inputs=2,channels=2,keys=1,crashes=1")
    find = enc.Machine.find

    def forgetful(self: enc.Machine, *args: Any) -> Any:
        found = find(self, *args)
        position = args[4]
        found.any = lg.and_(found.any, lg.lt(0, position))
        return found

    monkeypatch.setattr(enc.Machine, "find", forgetful)
    problem = build(ORDERED, "stateful", bound)
    broken = lg.lift_bool(problem.machine.monitors.broken("complete-reuse"))
    assert problem.solver.check(broken) == z3.sat  # really broken, not just unproved
    tried = induction.inductive(ORDERED, "stateful", PROPERTIES)
    rest = [p for p in tried if p != "complete-reuse"]
    assert induction.prove(ORDERED, "stateful", bound, rest).proved == rest
    said: list[str] = []
    outcome = induction.prove(ORDERED, "stateful", bound, tried, say=said.append)
    assert outcome.proved == rest
    assert list(outcome.failed) == ["complete-reuse"]
    first = next(line for line in said if "again without" in line)
    assert "the fact 'repeated excused" in first


def test_cli_engine_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["verify", "--contract", "seqnum", "--bound", str(SMALL), "--out", str(tmp_path)]
    assert main([*args, "--engine", "induction", "--json", "--quiet"]) == 1  # complete-reuse
    data = {d["property"]: d for d in json.loads(capsys.readouterr().out)}
    assert data["no-stale-reuse"]["verdict"] == "proved"
    assert set(data["no-stale-reuse"]["engines"].values()) == {"induction"}
    assert data["complete-reuse"]["verdict"] == "counterexample"
    assert set(data["complete-reuse"]["engines"].values()) == {"unrolling"}
    assert main([*args, "--engine", "induction", "--property", "key-isolation", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "(by induction)" in out
    # not deepening, a verdict's time is its share of the solver time, not the wall clock
    assert re.search(r"^  wall clock: [\d.]+ s \(the times above: each property's share", out, re.M)


def test_cli_refuses_an_unknown_engine(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["verify", "--engine", "guess"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--engine" in err and "guess" in err


def test_a_long_class_says_how_far_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(induction, "PROGRESS_EVERY", 0.0)  # a line before every query
    lines: list[str] = []
    props = induction.inductive(SEQNUM, "stateful", PROPERTIES)
    t = induction.step_classes(SEQNUM, SMALL)[1]
    outcome = induction.check_step_class(SEQNUM, "stateful", SMALL, t, props, say=lines.append)
    n = outcome.queries
    assert n > 1 and outcome.failed == {} and outcome.broken == ""
    counts = [line.split(": ")[-1].split(" queries")[0] for line in lines if "answered" in line]
    assert counts == [f"{i} of {n}" for i in range(n)]
    assert lines[-1].endswith(" s") and f"in {n} queries" in lines[-1]


def test_the_facts_of_a_recorded_input_are_asked_one_a_query() -> None:
    # each family of ALONE is one the invariant has (a renamed family would silently be
    # asked with its others again), and each of its facts is a query of its own
    props = induction.inductive(ORDERED, "stateful", PROPERTIES)
    t = induction.step_classes(ORDERED, SMALL)[-1]
    step = induction.build_step(ORDERED, "stateful", SMALL, t, props)
    family = {name: re.sub(r"[\d ]+$", "", name) for name, _ in step.goals}
    assert set(induction.ALONE) <= set(family.values())
    groups = dict(induction._groups(step.goals))
    for label, goals in groups.items():
        if any(family[name] in induction.ALONE for name, _ in goals):
            assert [name for name, _ in goals] == [label]
    assert len(groups["recorded without gap"]) > 1  # the other families by family
    asked = [name for goals in groups.values() for name, _ in goals]
    assert sorted(asked) == sorted(name for name, _ in step.goals)
