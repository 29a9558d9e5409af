"""``spec/manifest.json``: the expected verdicts, checked against ``verify``."""

from __future__ import annotations

from replay_contract.model.contracts import CONTRACTS
from replay_contract.model.run import simulate
from replay_contract.spec import manifest
from replay_contract.spec.bound import DEFAULT
from replay_contract.spec.properties import PROPERTIES, check


def test_manifest_covers_every_contract_and_property() -> None:
    entries = manifest.load()
    assert {(e.contract, e.property) for e in entries} == {
        (c, p) for c in CONTRACTS for p in PROPERTIES
    }
    for e in entries:
        assert e.verdict in ("proved", "counterexample", "unknown")
        assert e.status in ("verified", "explorer-only")


def test_verify_defaults_to_the_manifests_bound() -> None:
    assert {e.bound for e in manifest.load()} == {DEFAULT}


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
