"""One named test per acceptance criterion of the original request (apache/flink-agents
issue 1302), run against the model and against the independent implementation over the
process protocol; the Kafka and Fluss runs of the recovery criterion need the servers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from replay_contract.conformance.judge import judge
from replay_contract.conformance.model_target import ModelImplementation
from replay_contract.conformance.suite import run_all, shutdown
from replay_contract.conformance.targets import resolve
from replay_contract.model import catalogue
from replay_contract.model import operator as op
from replay_contract.model import trace as t
from replay_contract.model.agent import run_without_failure
from replay_contract.model.contracts import NO_DIVERGENCE_CHECK, ORDERED, SEQNUM
from replay_contract.model.run import apply, simulate
from replay_contract.model.scenario import Scenario, load
from replay_contract.spec.summary import summary

from .conftest import ORDERLY, SCENARIOS, by_name, conform

TARGETS = ["model", ORDERLY]
TARGET_IDS = ["model", "process"]


def _run(
    capsys: pytest.CaptureFixture[str],
    out: Path,
    target: str,
    contract: str,
    *scenarios: str,
    sweep: bool = False,
) -> dict[str, Any]:
    args = ["--target", target, "--contract", contract, "--examples", "0", "--out", str(out)]
    for s in scenarios:
        args += ["--scenario", s]
    if not sweep:
        args.append("--no-sweep")
    status, doc = conform(capsys, *args)
    assert status == (1 if doc["failed"] else 0)
    return doc


# -- two upstream instances, reversed interleaving after the failure ----------------------


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_two_upstreams_reversed_after_failure_measures_tool_calls(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str
) -> None:
    """A, C on upstream-1 and B, D on upstream-2 for key K, all four completed before the
    failure, delivered B, A, C, D after it: the suite counts every tool call itself."""
    ordered = by_name(_run(capsys, tmp_path, target, "ordered", "reversed-interleaving"))
    seqnum = by_name(_run(capsys, tmp_path, target, "seqnum", "reversed-interleaving"))
    got = ordered["reversed-interleaving"]
    assert got["verdict"] == "passed"
    assert got["tool_calls"] == {"expected": 4, "actual": 4}  # one per input, none again
    assert got["repeated_tool_calls"] == {"expected": 0, "actual": 0}
    base = seqnum["reversed-interleaving"]
    assert base["verdict"] == "passed"  # the target agrees with the model's seqnum ...
    assert base["tool_calls"] == {"expected": 8, "actual": 8}  # ... which runs all 4 again
    assert base["repeated_tool_calls"]["actual"] == 4
    assert "B of key K calls llm again" in base["complete_reuse"]


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_reversed_interleaving_crashed_at_every_effect(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str
) -> None:
    doc = _run(capsys, tmp_path, target, "ordered", "reversed-interleaving", sweep=True)
    variants = [r for r in doc["results"] if ".crash-" in r["name"]]
    assert len(variants) >= 16 and doc["failed"] == 0 and doc["skipped"] == 0
    assert not any(r["complete_reuse"] for r in variants)


# -- stateful actions ---------------------------------------------------------------------


def test_stateful_actions_depend_on_preceding_inputs() -> None:
    """In stateful-chain C reads what A or B wrote last: the order of the preceding
    inputs changes C's result, so a reuse by identity alone would be stale."""
    s = catalogue.builtin("stateful-chain")
    a, b, c = (s.topology.record(i) for i in "ABC")
    after_ab, _ = run_without_failure(s.agent, run_without_failure(s.agent, {}, a)[0], b)
    after_ba, _ = run_without_failure(s.agent, run_without_failure(s.agent, {}, b)[0], a)
    _, out_ab = run_without_failure(s.agent, after_ab, c)
    _, out_ba = run_without_failure(s.agent, after_ba, c)
    assert out_ab != out_ba


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_stateful_actions_reused_only_after_their_history_is_restored(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str
) -> None:
    got = by_name(_run(capsys, tmp_path, target, "ordered", "stateful-chain", sweep=True))
    assert all(r["verdict"] == "passed" for r in got.values())
    assert got["stateful-chain"]["repeated_tool_calls"]["actual"] == 0
    # the accepted history comes back before any dependent memory update: B waits for A
    events = simulate(catalogue.builtin("stateful-chain"), ORDERED).world.events
    restore = next(i for i, e in enumerate(events) if isinstance(e, t.Restore))
    after = [e for e in events[restore:] if isinstance(e, t.Wait | t.Accept)]
    assert isinstance(after[0], t.Wait) and (after[0].identity, after[0].awaiting) == ("B", "A")
    assert [e.identity for e in after[1:] if isinstance(e, t.Accept)] == ["A", "B", "C"]


def test_reuse_by_identity_alone_is_caught_on_stateful_actions(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, doc = conform(
        capsys,
        "--target",
        "mutant:ordered-identity-only",
        "--scenario",
        "stateful-chain",
        "--examples",
        "0",
        "--no-sweep",
        "--out",
        str(tmp_path),
    )
    assert status == 1
    assert by_name(doc)["stateful-chain"]["property"] == "no-stale-reuse"


# -- repeated failures and checkpoints during recovery ------------------------------------


def recovering_checkpoints(scenario: Scenario) -> int:
    """Checkpoints the model takes while some key is still recovering."""
    world, count = op.World(scenario.topology, scenario.agent, ORDERED), 0
    for step in scenario.schedule:
        if step.kind == "checkpoint":
            count += any(ks.recovering for ks in world.operator.keys.values())
        world = apply(world, step)
    return count


def crashes(scenario: Scenario) -> int:
    return sum(s.kind == "crash" or s.crash_after is not None for s in scenario.schedule)


RECOVERY = [str(SCENARIOS / "checkpoint-during-recovery.json"), "repeated-crashes"]


def test_recovery_scenarios_have_repeated_failures_and_recovery_checkpoints() -> None:
    for ref in RECOVERY:
        scenario = catalogue.resolve(ref)
        assert crashes(scenario) >= 3 and recovering_checkpoints(scenario) >= 1, ref


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_repeated_failures_and_checkpoints_during_recovery(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str
) -> None:
    ordered = _run(capsys, tmp_path, target, "ordered", *RECOVERY, sweep=True)
    assert ordered["failed"] == 0 and ordered["skipped"] == 0
    mid = by_name(ordered)["checkpoint-during-recovery"]
    assert mid["repeated_tool_calls"] == {"expected": 0, "actual": 0}
    assert mid["tool_calls"]["actual"] == 4
    seqnum = by_name(_run(capsys, tmp_path, target, "seqnum", *RECOVERY))
    assert seqnum["checkpoint-during-recovery"]["verdict"] == "passed"
    assert seqnum["checkpoint-during-recovery"]["repeated_tool_calls"]["actual"] == 4


def test_generated_scenarios_repeat_failures_and_checkpoint_during_recovery() -> None:
    """The generator reaches these states on its own, and the model passes them."""
    impl = ModelImplementation()
    from replay_contract.conformance.generate import generate

    hits = 0
    for seed in range(300):
        s = generate(seed)
        if crashes(s) >= 2 and recovering_checkpoints(s) >= 1:
            hits += 1
            assert judge(impl, s, ORDERED, seed).verdict == "passed", seed
    assert hits >= 10


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("kafka", marks=pytest.mark.kafka),
        pytest.param("fluss", marks=pytest.mark.fluss),
    ],
)
def test_repeated_failures_and_checkpoints_during_recovery_on_backend(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    request.getfixturevalue(f"{backend}_bootstrap")  # the real server, started if need be
    impl = resolve(backend)
    try:
        from replay_contract.conformance.suite import cases

        fixed = [catalogue.resolve(r) for r in RECOVERY] + [
            catalogue.builtin("reversed-interleaving")
        ]
        for contract in (ORDERED, SEQNUM):
            results = run_all(
                impl, cases(0, 0, contract, scenarios=fixed), contract, tmp_path, backend
            )
            failed = [r for r in results if r.verdict != "passed"]
            assert not failed, failed[0].reason
    finally:
        shutdown(impl)


# -- keys isolated ------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_keys_isolated(capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str) -> None:
    """K diverges (its first recorded input is lost) beside J, whose inputs come back
    reversed: J still reuses everything, waits only for its own inputs, and is never
    invalidated."""
    isolated = str(SCENARIOS / "keys-isolated-under-divergence.json")
    doc = _run(
        capsys,
        tmp_path,
        target,
        "ordered",
        isolated,
        "two-keys-interleaved",
        "divergence-beside-other-key",
        sweep=True,
    )
    assert doc["failed"] == 0 and doc["skipped"] == 0
    events = simulate(load(isolated), ORDERED).world.events
    restore = next(i for i, e in enumerate(events) if isinstance(e, t.Restore))
    for_j = [e for e in events[restore:] if getattr(e, "key", None) == "J"]
    assert sum(isinstance(e, t.Reuse) for e in for_j) == 2
    assert not any(isinstance(e, t.Tool | t.Invalidate | t.GiveUp) for e in for_j)
    assert any(isinstance(e, t.Invalidate) and e.key == "K" for e in events)


def test_invalidating_another_key_is_caught(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, doc = conform(
        capsys,
        "--target",
        "mutant:ordered-invalidate-every-key",
        "--scenario",
        str(SCENARIOS / "keys-isolated-under-divergence.json"),
        "--examples",
        "0",
        "--no-sweep",
        "--out",
        str(tmp_path),
    )
    assert status == 1
    assert by_name(doc)["keys-isolated-under-divergence"]["property"] == "key-isolation"


# -- the existing ordered-input behaviour -------------------------------------------------


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_ordered_input_behaviour_retained(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str
) -> None:
    """A key with one ordered input path keeps full reuse, under seqnum as before and
    under ordered, with the same tool calls and never a wait."""
    for contract in ("ordered", "seqnum"):
        got = by_name(_run(capsys, tmp_path, target, contract, "single-upstream", sweep=True))[
            "single-upstream"
        ]
        assert got["verdict"] == "passed" and got["complete_reuse"] is None
        assert got["tool_calls"]["actual"] == 4
        assert got["repeated_tool_calls"]["actual"] == 0
    assert not any(
        isinstance(e, t.Wait)
        for e in simulate(catalogue.builtin("single-upstream"), ORDERED).world.events
    )


def test_ordered_equals_seqnum_when_every_key_has_one_ordered_path() -> None:
    """Over generated scenarios whose keys each come from one replayable channel,
    ordered does exactly the work seqnum does and ends the same."""
    from replay_contract.conformance.generate import generate

    checked = 0
    for seed in range(600):
        s = generate(seed)
        feeds: dict[Any, set[str]] = {}
        for r in s.topology.records:
            feeds.setdefault((type(r.key), r.key), set()).add(r.channel)
        if not all(c.replayable for c in s.topology.channels) or any(
            len(v) > 1 for v in feeds.values()
        ):
            continue
        checked += 1
        o, q = summary(simulate(s, ORDERED)), summary(simulate(s, SEQNUM))
        assert q["violations"] == [] and o["violations"] == [], seed
        assert (o["tool_calls"], o["outputs"]) == (q["tool_calls"], q["outputs"]), seed
        assert sorted(map(str, o["final_memory"])) == sorted(map(str, q["final_memory"]))
    assert checked >= 50


# -- genuine divergence -------------------------------------------------------------------

DIVERGENT = [
    "genuine-divergence",
    "changed-input",
    "non-replayable-source",
    "divergence-then-crash",
]


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_genuine_divergence_still_caught(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str
) -> None:
    """A different input at a recorded position invalidates the key's saved suffix and
    runs it again, under ordered as under seqnum."""
    for contract in ("ordered", "seqnum"):
        doc = _run(capsys, tmp_path, target, contract, *DIVERGENT, sweep=True)
        assert doc["failed"] == 0 and doc["skipped"] == 0
        for name in DIVERGENT:
            assert by_name(doc)[name]["repeated_tool_calls"]["actual"] > 0, (contract, name)
    events = simulate(catalogue.builtin("genuine-divergence"), ORDERED).world.events
    assert any(isinstance(e, t.Invalidate) and e.durable for e in events)


def test_masking_divergence_is_caught(tmp_path: Path) -> None:
    """A target that claims seqnum but never invalidates on a mismatch (the
    no-divergence-check proposal) fails on the genuine divergence."""
    masked = ModelImplementation(NO_DIVERGENCE_CHECK, claims=("seqnum",))
    result = judge(masked, catalogue.builtin("genuine-divergence"), SEQNUM)
    assert result.verdict == "failed"
    assert result.property == "no-stale-reuse"  # the first property it breaks ...
    assert "broken: divergence-safeguard" in result.report  # ... and the safeguard


def test_volatile_invalidation_is_caught_after_a_second_failure(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, doc = conform(
        capsys,
        "--target",
        "mutant:ordered-volatile-invalidation",
        "--scenario",
        "divergence-then-crash",
        "--examples",
        "0",
        "--no-sweep",
        "--out",
        str(tmp_path),
    )
    assert status == 1
    assert by_name(doc)["divergence-then-crash"]["property"] == "no-stale-reuse"
