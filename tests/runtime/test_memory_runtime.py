"""The operator runtime over the in-memory store against the reference model."""

from __future__ import annotations

import pytest

from replay_contract.conformance.generate import generate
from replay_contract.conformance.runner import observe
from replay_contract.model import trace as t
from replay_contract.model.agent import call_tool, run_without_failure
from replay_contract.model.catalogue import all_builtin, builtin
from replay_contract.model.contracts import CONTRACTS, ORDERED, SEQNUM, contract_from_json
from replay_contract.model.mutants import MUTANTS
from replay_contract.model.run import simulate
from replay_contract.model.topology import Record
from replay_contract.runtime import bench
from replay_contract.runtime.memory_store import MemoryBackend
from replay_contract.runtime.operator import OperatorError, RuntimeOperator
from replay_contract.spec.summary import summary

from .helpers import crash_points, judged

EVERY_CONTRACT = [*CONTRACTS.values(), *MUTANTS.values()]


@pytest.mark.parametrize("contract", EVERY_CONTRACT, ids=lambda c: c.name)
@pytest.mark.parametrize("scenario", all_builtin(), ids=lambda s: s.name)
def test_builtin_scenarios_match_the_model(scenario, contract) -> None:  # type: ignore[no-untyped-def]
    result = judged(MemoryBackend(), scenario, contract)
    model = summary(simulate(scenario, contract))
    assert result.tool_calls == model["tool_calls"]
    assert result.repeated == model["repeated_tool_calls"]


def test_reversed_interleaving_ordered_repeats_no_tool_call_seqnum_all_four() -> None:
    scenario = builtin("reversed-interleaving")
    ordered = judged(MemoryBackend(), scenario, ORDERED)
    seqnum = judged(MemoryBackend(), scenario, SEQNUM)
    assert (ordered.tool_calls, ordered.repeated) == (4, 0)
    assert (seqnum.tool_calls, seqnum.repeated) == (8, 4)


def test_completion_ids_are_the_models_log_indexes() -> None:
    scenario = builtin("repeated-crashes")
    run = observe(RuntimeOperator(MemoryBackend()), scenario, ORDERED)
    assert run.error is None
    assert run.events == simulate(scenario, ORDERED).world.events


@pytest.mark.parametrize("contract", [ORDERED, SEQNUM, CONTRACTS["read-set"]], ids=lambda c: c.name)
@pytest.mark.parametrize(
    "name",
    [
        "reversed-interleaving",
        "repeated-crashes",
        "stateful-chain",
        "divergence-then-crash",
        "non-replayable-source",
        "changed-input",
    ],
)
def test_a_crash_at_every_effect(name: str, contract) -> None:  # type: ignore[no-untyped-def]
    variants = crash_points(builtin(name), contract)
    assert len(variants) > 10
    for variant in variants:
        judged(MemoryBackend(), variant, contract)


@pytest.mark.parametrize("seed", range(60))
def test_generated_scenarios(seed: int) -> None:
    scenario = generate(seed)
    for contract in (ORDERED, SEQNUM):
        judged(MemoryBackend(), scenario, contract)


def test_any_contract_value_runs() -> None:
    proposal = contract_from_json(
        {
            "based_on": "seqnum",
            "record_order": "with-first-completion",
            "wait": True,
            "give_up_after": 1,
        }
    )
    before = contract_from_json(
        {
            "based_on": "ordered",
            "record_order": "before-first-tool-call",
            "invalidation_scope": "all",
        }
    )
    for contract in (proposal, before):
        for scenario in all_builtin():
            judged(MemoryBackend(), scenario, contract)


def test_a_crashed_runtime_keeps_nothing_in_memory() -> None:
    scenario = builtin("single-upstream")
    impl = RuntimeOperator(MemoryBackend())
    events: list[t.Event] = []

    class Env:
        def tool(self, key, position, record, path, tool, reads):  # type: ignore[no-untyped-def]
            return call_tool(tool, record, path, reads)

        def output(self, key, identity, path, value):  # type: ignore[no-untyped-def]
            pass

        def report(self, event):  # type: ignore[no-untyped-def]
            events.append(event)

    impl.open(scenario.agent, scenario.topology, ORDERED, Env())
    record = scenario.topology.records[0]
    impl.deliver(record)
    impl.crash()
    with pytest.raises(OperatorError, match="down"):
        impl.deliver(Record("other", record.key, None, record.channel, 1))
    impl.restore()
    impl.deliver(record)  # checkpoint 0 again: the saved completion is reused
    assert [type(e).__name__ for e in events] == ["Accept", "Save", "Accept", "Reuse"]
    expected, _ = run_without_failure(scenario.agent, {}, record)
    assert impl.end() == {record.key: expected}
    impl.close()


@pytest.mark.parametrize("contract", [ORDERED, SEQNUM, CONTRACTS["read-set"]], ids=lambda c: c.name)
def test_incremental_checkpoints_are_the_bytes_of_full_ones(
    contract, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from replay_contract.runtime import state

    saved = state.CheckpointStorage.save
    checked = []

    def save(self, snapshot, changed=None) -> None:  # type: ignore[no-untyped-def]
        saved(self, snapshot, changed)
        assert self._latest == snapshot.to_bytes()  # every key encoded anew
        checked.append(changed is not None and len(changed) < len(snapshot.keys))

    monkeypatch.setattr(state.CheckpointStorage, "save", save)
    for scenario in all_builtin():  # crashes and restores among the checkpoints
        result = judged(MemoryBackend(), scenario, contract)
        assert result.tool_calls == summary(simulate(scenario, contract))["tool_calls"]
    # many keys, few inputs between checkpoints, a crash: most keys keep their encoding
    records = bench.workload(60, 16)
    impl = RuntimeOperator(MemoryBackend())
    impl.open(bench.AGENT, bench._topology(records), contract, bench.BenchEnvironment())
    for i, record in enumerate(records[:40], 1):
        impl.deliver(record)
        if i % 5 == 0:
            impl.checkpoint()
    impl.crash()
    impl.restore()
    for record in records[35:]:
        impl.deliver(record)
        impl.checkpoint()
    memory = impl.end()
    impl.close()
    assert sum(checked) > 10  # checkpoints that left keys' encodings as they were
    assert sum(m["notes"].count("respond") for m in memory.values()) == 16  # a note each


def test_a_timeout_releases_the_key_the_same_way_as_the_model() -> None:
    """The lost record was the last of its split: only the wait bound can release B.
    The runtime gives A up within the timeout step, event for event like the model; a
    variant that ignores timeouts keeps B waiting and breaks bounded-waiting."""
    scenario = builtin("lost-last-of-split-timeout")
    run = observe(RuntimeOperator(MemoryBackend()), scenario, ORDERED)
    assert run.error is None
    assert run.events == simulate(scenario, ORDERED).world.events
    _, events = next((s, es) for s, es in run.steps if s.kind == "timeout")
    assert [type(e) for e in events][:3] == [t.GiveUp, t.Invalidate, t.Accept]
    assert isinstance(events[-1], t.Timeout)
    ignoring = MUTANTS["ordered-ignores-timeout"]
    stuck = observe(RuntimeOperator(MemoryBackend(), claims=(ignoring.name,)), scenario, ignoring)
    _, events = next((s, es) for s, es in stuck.steps if s.kind == "timeout")
    assert [type(e) for e in events] == [t.Timeout]
