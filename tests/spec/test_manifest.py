"""``spec/manifest.json``: the expected verdicts, checked against ``verify``."""

from __future__ import annotations

from replay_contract.model.contracts import CONTRACTS
from replay_contract.model.run import simulate
from replay_contract.spec import manifest
from replay_contract.spec.bound import DEFAULT
from replay_contract.spec.properties import BOUNDED_WAITING, PROPERTIES, check


def test_manifest_covers_every_contract_and_property() -> None:
    entries = manifest.load()
    assert {(e.contract, e.property) for e in entries} == {
        (c, p) for c in CONTRACTS for p in PROPERTIES
    }
    for e in entries:
        assert e.verdict in ("proved", "counterexample", "unknown")
        assert e.status in ("verified", "explorer-only")


def test_verify_defaults_to_the_manifests_bound() -> None:
    """Every verdict at the default bound, but bounded-waiting's: that needs a bound with
    a timeout step (at the default, without one, verify calls it vacuous)."""
    entries = manifest.load()
    assert {e.bound for e in entries if e.property != BOUNDED_WAITING} == {DEFAULT}
    assert all(e.bound.timeouts >= 1 for e in entries if e.property == BOUNDED_WAITING)


def test_the_variant_that_ignores_timeouts_has_its_counterexample() -> None:
    """spec/counterexamples/ordered-ignores-timeout-bounded-waiting.json, found by verify,
    replays through the model: the variant waits past the timeout, ordered does not."""
    from replay_contract.model.mutants import MUTANTS
    from replay_contract.model.scenario import load

    scenario = load(
        manifest.ROOT / "counterexamples" / "ordered-ignores-timeout-bounded-waiting.json"
    )
    ignoring = simulate(scenario, MUTANTS["ordered-ignores-timeout"])
    assert not check(BOUNDED_WAITING, ignoring.trace).holds
    assert check(BOUNDED_WAITING, simulate(scenario, CONTRACTS["ordered"]).trace).holds


def test_counterexample_files_replay() -> None:
    for e in manifest.load():
        if e.verdict != "counterexample" or not e.counterexample:
            continue
        run = simulate(manifest.counterexample(e), CONTRACTS[e.contract])
        assert not check(e.property, run.trace).holds, e


def test_verify_reaches_the_verified_verdicts() -> None:
    assert manifest.check(manifest.load()) == []


def test_the_issue_expectations_hold_where_recorded() -> None:
    by = {(e.contract, e.property): e.verdict for e in manifest.load()}
    assert all(by[("ordered", p)] == "proved" for p in PROPERTIES)
    assert all(by[("seqnum", p)] == "proved" for p in PROPERTIES if p != "complete-reuse")
    assert by[("seqnum", "complete-reuse")] == "counterexample"
    assert by[("stable-id", "no-stale-reuse")] == "counterexample"
    assert by[("no-divergence-check", "divergence-safeguard")] == "counterexample"
    assert by[("read-set", "no-stale-reuse")] == "proved"
    assert by[("read-set", "equivalent-outcome")] == "proved"
