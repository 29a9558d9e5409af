"""The contract live: scenarios run as real Flink jobs (``replay-contract live``).

Each live run starts a job on a local MiniCluster in this test process's PyFlink JVM
(one JVM for every run of the session), so a run costs the job's start (about 5 s) plus
its steps. The tests without a marker need no JVM: what a live job cannot express is
refused with the reason, and the suite skips it through the target's capabilities.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from replay_contract.conformance.interface import Capabilities
from replay_contract.conformance.judge import skip_reason
from replay_contract.live.driver import expresses
from replay_contract.model.catalogue import builtin
from replay_contract.model.contracts import CONTRACTS
from replay_contract.model.run import simulate
from replay_contract.spec.summary import summary

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ("tool_calls", "repeated_tool_calls", "reused", "violations", "final_memory", "outputs")


def live(name: str, contract: str, store: str, folder: Path) -> dict[str, Any]:
    from replay_contract.live.report import run

    return run(builtin(name), CONTRACTS[contract], store, folder=folder)


def assert_as_model(result: dict[str, Any], name: str, contract: str) -> None:
    expected = summary(simulate(builtin(name), CONTRACTS[contract]))
    assert result["verdict"] == "passed", result["reason"]
    assert {f: result[f] for f in FIGURES} == {f: expected[f] for f in FIGURES}


# -- what a live job cannot express (no JVM) ---------------------------------------------


@pytest.mark.parametrize(
    "name, reason",
    [
        ("crash-before-save", "crashes inside a step"),
        ("repeated-crashes", "crashes inside a step"),
    ],
)
def test_inexpressible_scenarios_are_refused_with_the_reason(name: str, reason: str) -> None:
    found = expresses(builtin(name), CONTRACTS["ordered"])
    assert found is not None and reason in found


def test_expressible_scenarios_run() -> None:
    for name in ("reversed-interleaving", "checkpoint-while-waiting", "lost-input-at-end"):
        assert expresses(builtin(name), CONTRACTS["ordered"]) is None


def test_the_suite_skips_what_a_target_cannot_express() -> None:
    caps = Capabilities(contracts=("ordered",), expresses=lambda s, c: f"not {s.name}")
    scenario = builtin("reversed-interleaving")
    assert skip_reason(caps, scenario, CONTRACTS["ordered"]) == "not reversed-interleaving"
    assert skip_reason(Capabilities(contracts=("ordered",)), scenario, CONTRACTS["ordered"]) is None


# -- live on Kafka -----------------------------------------------------------------------


@pytest.mark.flink
@pytest.mark.kafka
@pytest.mark.parametrize("contract", ["seqnum", "ordered"])
def test_reversed_interleaving_live_on_kafka_three_times(
    contract: str, kafka_bootstrap: str, tmp_path: Path
) -> None:
    runs = [live("reversed-interleaving", contract, "kafka", tmp_path) for _ in range(3)]
    for result in runs:
        assert_as_model(result, "reversed-interleaving", contract)
    counts = {(r["tool_calls"], r["repeated_tool_calls"], r["reused"]) for r in runs}
    assert counts == ({(8, 4, 0)} if contract == "seqnum" else {(4, 0, 4)})


#: The seed's criteria, each a catalogue scenario run live under ``ordered``.
CRITERIA = [
    "stateful-chain",  # actions that depend on earlier inputs
    "divergence-then-crash",  # repeated failures
    "checkpoint-while-waiting",  # a checkpoint completed while recovery still replays
    "two-keys-interleaved",  # two keys isolated
    "single-upstream",  # a key with one ordered path keeps its reuse
    "lost-input-at-end",  # an input that never returns
]


@pytest.mark.flink
@pytest.mark.kafka
@pytest.mark.parametrize("name", CRITERIA)
def test_seed_criteria_live_on_kafka(name: str, kafka_bootstrap: str, tmp_path: Path) -> None:
    assert_as_model(live(name, "ordered", "kafka", tmp_path), name, "ordered")


# -- live on Fluss -----------------------------------------------------------------------


@pytest.mark.flink
@pytest.mark.kafka
@pytest.mark.fluss
@pytest.mark.parametrize(
    "name, contract",
    [
        ("reversed-interleaving", "seqnum"),
        ("reversed-interleaving", "ordered"),
        *((name, "ordered") for name in CRITERIA),
    ],
)
def test_live_on_fluss(
    name: str, contract: str, kafka_bootstrap: str, fluss_bootstrap: str, tmp_path: Path
) -> None:
    assert_as_model(live(name, contract, "fluss", tmp_path), name, contract)


# -- a JVM that does not come up -----------------------------------------------------------


@pytest.mark.flink
@pytest.mark.kafka
def test_a_jvm_that_does_not_come_up_is_one_line_and_nothing_is_left(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    before = set(admin.list_topics(timeout=10).topics)
    env = {
        "PATH": str(tmp_path / "no-bin"),
        "JAVA_HOME": str(tmp_path / "no-java"),
        "HOME": str(Path.home()),
    }
    result = subprocess.run(
        [sys.executable, "-m", "replay_contract", "live", "reversed-interleaving", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 3, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "JVM did not come up" in lines[0], result.stderr
    left = set(admin.list_topics(timeout=10).topics) - before
    assert not left, f"the failed run left topics behind: {sorted(left)}"


# -- rescale on restore ------------------------------------------------------------------


@pytest.mark.flink
@pytest.mark.kafka
@pytest.mark.parametrize("before, after", [(2, 3), (3, 2)])
def test_rescale_on_restore_keeps_the_contract(
    before: int, after: int, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """The restore is a new job from the latest retained checkpoint with the agent
    operator's parallelism changed; its run equals the model's restore, reuse and all."""
    from replay_contract.conformance.judge import judge
    from replay_contract.live.driver import LiveFlink
    from replay_contract.model.scenario import load

    scenario = load(Path(__file__).with_name("scenarios") / "rescale-two-keys.json")
    target = LiveFlink("kafka", parallelism=before, folder=tmp_path, rescale=(after,))
    result = judge(target, scenario, CONTRACTS["ordered"])
    assert result.verdict == "passed", result.reason
    assert (result.tool_calls, result.repeated) == (8, 0)
    assert target.folder is not None
    opened = {p.name for p in target.folder.glob("open-1-agent-*")}
    assert opened <= {f"open-1-agent-{i}" for i in range(after)}
