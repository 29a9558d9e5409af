"""The runner, the environment and the comparison, on implementations that misbehave
in one precise way each."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve

from replay_contract.conformance.environment import SuiteEnvironment
from replay_contract.conformance.generate import crash_sweep, generate
from replay_contract.conformance.interface import Capabilities, Crashed, Environment
from replay_contract.conformance.judge import judge
from replay_contract.conformance.model_target import ModelImplementation
from replay_contract.conformance.process import ProcessImplementation
from replay_contract.conformance.reference import reference_steps
from replay_contract.conformance.runner import observe
from replay_contract.conformance.suite import cases, run_all
from replay_contract.model import catalogue
from replay_contract.model import trace as t
from replay_contract.model.agent import Agent
from replay_contract.model.agent import Path as ActionPath
from replay_contract.model.contracts import CONTRACTS, ORDERED
from replay_contract.model.run import simulate
from replay_contract.model.scenario import Scenario, loads
from replay_contract.model.topology import Key, Record, Topology

TINY = {
    "name": "tiny",
    "agent": {
        "actions": [
            {
                "name": "respond",
                "reads": ["notes"],
                "writes": ["notes"],
                "tools": ["llm"],
                "output": True,
            }
        ]
    },
    "channels": [{"name": "upstream-1", "records": [{"id": "A", "key": "K", "payload": "a"}]}],
    "schedule": [],
}


def tiny(*schedule: dict[str, Any]) -> Scenario:
    return loads(json.dumps({**TINY, "schedule": list(schedule)}))


@pytest.mark.parametrize("contract", sorted(CONTRACTS))
def test_reference_steps_are_the_models_run(contract: str) -> None:
    for scenario in catalogue.all_builtin():
        steps = reference_steps(scenario, CONTRACTS[contract])
        events = tuple(e for _, es in steps for e in es)
        assert events == simulate(scenario, CONTRACTS[contract]).world.events


@pytest.mark.parametrize(
    ("crash_after", "kinds"),
    [
        (0, ["deliver", "crash"]),
        (1, ["deliver", "accept", "tool", "crash"]),
        (2, ["deliver", "accept", "tool", "save", "crash"]),
        (9, ["deliver", "accept", "tool", "save", "output", "crash"]),
    ],
)
def test_crash_after_the_nth_effect(crash_after: int, kinds: list[str]) -> None:
    scenario = tiny(
        {"step": "deliver", "record": "A", "crash_after": crash_after}, {"step": "restore"}
    )
    observed = observe(ModelImplementation(), scenario, ORDERED)
    assert observed.error is None
    assert [e.kind for e in observed.steps[0][1]] == kinds
    assert judge(ModelImplementation(), scenario, ORDERED).verdict == "passed"


class Wrapped(ModelImplementation):
    """The model with one deliberate fault, chosen by ``fault``."""

    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault = fault

    def open(self, agent: Agent, topology: Topology, contract: Any, env: Environment) -> None:
        super().open(agent, topology, contract, _Env(env, self.fault))

    def checkpoint(self) -> int:
        number = super().checkpoint()
        return number + 1 if self.fault == "checkpoint-number" else number

    def deliver(self, record: Record) -> None:
        if self.fault == "raise" and record.identity == "C":
            raise RuntimeError("lost the connection")
        super().deliver(record)


class _Env:
    def __init__(self, env: Environment, fault: str) -> None:
        self.env, self.fault = env, fault

    def tool(
        self,
        key: Key,
        position: int,
        record: Record,
        path: ActionPath,
        tool: str,
        reads: tuple[Any, ...],
    ) -> str:
        result = self.env.tool(key, position, record, path, tool, reads)
        if self.fault == "tool-twice":
            self.env.tool(key, position, record, path, tool, reads)
        return result

    def output(self, key: Key, identity: str, path: ActionPath, value: str) -> None:
        self.env.output(key, identity, path, value)

    def report(self, event: t.Event) -> None:
        if self.fault == "renumber" and isinstance(event, t.Save | t.Reuse):
            event = evolve(event, completion=1000 - event.completion)
        elif self.fault == "renumber" and isinstance(event, t.Invalidate):
            event = evolve(event, completions=tuple(1000 - c for c in event.completions))
        try:
            self.env.report(event)
        except Crashed:
            if self.fault != "swallow":
                raise
            self.env.report(event)  # keeps going after the crash


def test_completion_ids_of_the_implementation_may_differ() -> None:
    impl = Wrapped("renumber")
    for scenario in catalogue.all_builtin():
        assert judge(impl, scenario, ORDERED).verdict == "passed", scenario.name


def test_a_repeated_tool_call_is_a_difference() -> None:
    result = judge(Wrapped("tool-twice"), catalogue.builtin("single-upstream"), ORDERED)
    assert result.verdict == "failed"
    assert result.tool_calls == 2 * result.expected_tool_calls
    assert result.difference is not None and "tool llm" in result.difference
    assert "<-- first difference" in result.report


def test_calls_after_a_crash_are_a_breach() -> None:
    scenario = tiny({"step": "deliver", "record": "A", "crash_after": 2}, {"step": "restore"})
    result = judge(Wrapped("swallow"), scenario, ORDERED)
    assert result.verdict == "failed"
    assert "after the environment raised Crashed" in result.reason


def test_a_wrong_checkpoint_number_is_a_breach() -> None:
    result = judge(Wrapped("checkpoint-number"), catalogue.builtin("repeated-crashes"), ORDERED)
    assert result.verdict == "failed" and "checkpoint returned" in result.reason


def test_an_exception_of_the_implementation_fails_the_scenario() -> None:
    result = judge(Wrapped("raise"), catalogue.builtin("reversed-interleaving"), ORDERED)
    assert result.verdict == "failed"
    assert "RuntimeError: lost the connection" in result.reason


def test_unsupported_capabilities_are_skipped_with_the_reason() -> None:
    impl = ModelImplementation()
    impl.capabilities = Capabilities(("ordered",), crash_points=False, non_replayable=False)
    crashing = judge(impl, catalogue.builtin("crash-before-save"), ORDERED)
    lossy = judge(impl, catalogue.builtin("non-replayable-source"), ORDERED)
    plain = judge(impl, catalogue.builtin("reversed-interleaving"), ORDERED)
    assert crashing.verdict == "skipped" and "crash_after" in crashing.reason
    assert lossy.verdict == "skipped" and "not replayable" in lossy.reason
    assert plain.verdict == "passed"


def test_environment_counts_effects_not_decisions() -> None:
    env = SuiteEnvironment()
    env.begin("deliver A", crash_after=1)
    env.report(t.Accept("K", 0, "A", "d"))
    env.report(t.Invalidate("K", 0, (), durable=False))  # not durable: not an effect
    with pytest.raises(Crashed):
        env.report(t.Order("K", 0, "A", "d"))
    assert [e.kind for e in env.events] == ["accept", "invalidate", "order"]


def test_generated_scenarios_are_reproducible_and_valid() -> None:
    for seed in range(200):
        a, b = generate(seed), generate(seed)
        assert a == b
        assert loads(json.dumps(a.to_json()), a.name) == a  # the model accepts it


def test_crash_sweep_crashes_after_every_effect() -> None:
    variants = crash_sweep(catalogue.builtin("reversed-interleaving"))
    points = {v.name.split(".crash-")[1] for v in variants}
    # four deliveries before the crash, each with two effects: 0, 1, 2 and "after"
    assert points == {f"{i}.{k}" for i in range(4) for k in range(4)}
    for v in variants:
        assert simulate(v, ORDERED).world.ended


def test_a_failing_generated_case_is_written_and_shrunk(tmp_path: Path) -> None:
    impl = ModelImplementation(evolve(ORDERED, name="broken", wait=False))
    todo = [c for c in cases(40, 0, ORDERED, sweep=False) if c.family == "generated"]
    results = run_all(impl, todo, ORDERED, tmp_path, "mutant:test")
    failed = [r for r in results if r.verdict == "failed"]
    assert failed
    first = failed[0]
    assert first.scenario_file is not None and Path(first.scenario_file).exists()
    shrunk = Path(first.scenario_file).with_name(Path(first.scenario_file).stem + "-shrunk.json")
    assert shrunk.exists()
    small = json.loads(shrunk.read_text())
    big = json.loads(Path(first.scenario_file).read_text())
    assert len(json.dumps(small)) < len(json.dumps(big))
    assert judge(impl, loads(shrunk.read_text()), ORDERED).verdict == "failed"


HELLO = (
    '{"protocol": "replay-contract/1", "capabilities": {"contracts": ["ordered"], '
    '"crash_points": true, "non_replayable": true}}'
)


def program(tmp_path: Path, body: str) -> str:
    path = tmp_path / "impl.py"
    path.write_text("import json, sys\nprint(" + repr(HELLO) + ", flush=True)\n" + body)
    return f"{sys.executable} {path}"


def test_a_program_that_exits_is_an_error_naming_its_status_and_is_restarted(
    tmp_path: Path,
) -> None:
    command = program(
        tmp_path,
        "for line in sys.stdin:\n"
        "    if json.loads(line)['op'] == 'deliver': sys.exit(3)\n"
        "    print(json.dumps({'done': None}), flush=True)\n",
    )
    impl = ProcessImplementation(command, timeout=10)
    try:
        for _ in range(2):  # the second scenario starts the program again
            result = judge(impl, catalogue.builtin("single-upstream"), ORDERED)
            assert result.verdict == "error", result.reason
            assert "the target exited with status 3" in result.reason
    finally:
        impl.shutdown()


def test_a_program_that_writes_garbage_fails_the_scenario(tmp_path: Path) -> None:
    command = program(tmp_path, "for line in sys.stdin:\n    print('hello?', flush=True)\n")
    impl = ProcessImplementation(command, timeout=10)
    try:
        result = judge(impl, catalogue.builtin("single-upstream"), ORDERED)
        assert result.verdict == "failed" and "not a JSON line" in result.reason
    finally:
        impl.shutdown()


def test_end_memory_may_leave_out_empty_keys() -> None:
    class Sparse(ModelImplementation):
        def end(self) -> Mapping[Key, Mapping[str, Any]]:
            return {k: m for k, m in super().end().items() if m}

    scenario = loads(
        json.dumps(
            {
                **TINY,
                "agent": {"actions": [{"name": "a", "tools": ["x"]}]},
                "schedule": [{"step": "deliver", "record": "A"}],
            }
        )
    )
    assert judge(Sparse(), scenario, ORDERED).verdict == "passed"
