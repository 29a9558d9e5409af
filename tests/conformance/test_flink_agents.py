"""The real Apache Flink Agents runtime under the suite (``flink-agents:kafka|fluss``).

The adapter (``conformance/flink-agents/``) is built once per cache from the upstream
snapshot beside the repository; the servers are the ones ``services up`` starts. These
tests check the adapter itself (full reuse where upstream is known to reuse, a broken
adapter caught, both restore modes), measure the seed's first acceptance criterion on the
real runtime, refuse bad input with one line, and replay every recorded finding.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from replay_contract.conformance import findings, flink_agents
from replay_contract.conformance.interface import Implementation
from replay_contract.conformance.judge import FAILED, PASSED, judge
from replay_contract.conformance.process import ProcessImplementation
from replay_contract.conformance.suite import shutdown
from replay_contract.conformance.targets import resolve
from replay_contract.model import catalogue
from replay_contract.model.contracts import ORDERED, SEQNUM

BACKENDS = [
    pytest.param("kafka", marks=pytest.mark.kafka),
    pytest.param("fluss", marks=pytest.mark.fluss),
]


@pytest.fixture(scope="module")
def built() -> dict[str, str]:
    """The adapter and upstream, built (or taken from the cache)."""
    return flink_agents.build(progress=False)


@pytest.fixture(scope="module", params=BACKENDS)
def runtime(
    request: pytest.FixtureRequest, built: dict[str, str]
) -> Iterator[tuple[str, Implementation]]:
    """The real runtime on one backend, restored in the same JVM: one adapter per module."""
    backend = request.param
    request.getfixturevalue(f"{backend}_bootstrap")
    impl = resolve(f"flink-agents:{backend}")
    yield backend, impl
    shutdown(impl)


def test_reversed_interleaving_repeats_every_tool_call_on_the_real_runtime(
    runtime: tuple[str, Implementation],
) -> None:
    # The seed's first criterion: two upstream instances, distinct inputs for key K, the
    # interleaving reversed after the failure, actual tool invocations counted.
    _, impl = runtime
    scenario = catalogue.builtin("reversed-interleaving")
    result = judge(impl, scenario, SEQNUM)
    assert (result.tool_calls, result.repeated) == (8, 4)
    assert result.expected_repeated == 4  # the model's seqnum repeats them too
    assert "again" in result.complete_reuse  # complete-reuse breaks, as the model says


def test_one_ordered_input_path_keeps_full_reuse_on_the_real_runtime(
    runtime: tuple[str, Implementation],
) -> None:
    # Where upstream is known to reuse (one path, same order), the adapter must show it.
    _, impl = runtime
    result = judge(impl, catalogue.builtin("single-upstream"), SEQNUM)
    assert result.verdict == PASSED, result.reason
    assert (result.tool_calls, result.repeated) == (4, 0)


def test_ordered_is_not_implemented_by_the_real_runtime(
    runtime: tuple[str, Implementation],
) -> None:
    _, impl = runtime
    scenario = catalogue.builtin("reversed-interleaving")
    result = judge(impl, scenario, ORDERED)
    assert result.verdict == FAILED
    assert findings.classify(result, scenario, ORDERED, "flink-agents") == "no-ordered-contract"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_restore_in_a_fresh_jvm_reuses_nothing(
    request: pytest.FixtureRequest, built: dict[str, str], backend: str
) -> None:
    # Each incarnation is a JVM of its own, the checkpoint passed as a file: the action's
    # part of upstream's state key changes with the JVM, so nothing saved is found.
    request.getfixturevalue(f"{backend}_bootstrap")
    target = f"flink-agents:{backend}:fresh-jvm"
    impl = resolve(target)
    try:
        scenario = catalogue.builtin("single-upstream")
        result = judge(impl, scenario, SEQNUM)
    finally:
        shutdown(impl)
    assert (result.tool_calls, result.repeated) == (8, 4)
    assert findings.classify(result, scenario, SEQNUM, target) == "identity-per-jvm"


@pytest.mark.kafka
def test_a_broken_adapter_is_caught(built: dict[str, str], kafka_bootstrap: str) -> None:
    # --bug skip-reuse: the adapter does not report the reuses it observes.
    command = [*flink_agents.command("flink-agents:kafka", progress=False), "--bug", "skip-reuse"]
    impl = ProcessImplementation(shlex.join(command))
    try:
        result = judge(impl, catalogue.builtin("single-upstream"), SEQNUM)
    finally:
        shutdown(impl)
    assert result.verdict == FAILED
    assert result.first is not None and "reuse" in result.difference


def _finding_params() -> list[object]:
    if not findings.RECORD.is_file():
        return [pytest.param(None, marks=pytest.mark.skip(reason="no recorded run"))]
    doc = findings.load()
    params = []
    for f in doc["findings"]:
        if not f.get("reproduced", True):
            continue  # intermittent: the record says it did not come back
        marks = [getattr(pytest.mark, "fluss" if "fluss" in f["target"] else "kafka")]
        params.append(pytest.param(f, id=f["kind"], marks=marks))
    return params


@pytest.mark.parametrize("finding", _finding_params())
def test_a_fresh_run_reproduces_each_recorded_finding(
    request: pytest.FixtureRequest, built: dict[str, str], finding: dict[str, object]
) -> None:
    target = str(finding["target"])
    backend, _ = flink_agents.parse_target(target)
    request.getfixturevalue(f"{backend}_bootstrap")
    scenario = findings.finding_scenario(finding)
    contract = SEQNUM if finding["contract"] == "seqnum" else ORDERED
    impl = resolve(target)
    try:
        result = judge(impl, scenario, contract)
    finally:
        shutdown(impl)
    assert result.verdict == FAILED
    assert findings.classify(result, scenario, contract, target) == finding["kind"]
    assert result.difference == finding["difference"] or result.reason == finding["difference"]


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replay_contract", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "Traceback" not in result.stderr and "\tat " not in result.stderr
    return lines[0]


def test_a_bad_upstream_path_is_one_line(tmp_path: Path) -> None:
    import os

    env = {**os.environ, flink_agents.SOURCE_ENV: str(tmp_path / "nowhere")}
    line = _one_line_error(_cli("conform", "--target", "flink-agents:kafka", env=env))
    assert "no Flink Agents source" in line and "nowhere" in line


def test_an_unreachable_broker_is_one_line() -> None:
    import os

    env = {**os.environ, "REPLAY_CONTRACT_KAFKA": "127.0.0.1:1"}
    line = _one_line_error(_cli("conform", "--target", "flink-agents:kafka", env=env))
    assert "127.0.0.1:1" in line and "not reachable" in line


@pytest.mark.kafka
def test_a_failed_build_is_one_line(tmp_path: Path, kafka_bootstrap: str) -> None:
    import os

    source = tmp_path / "flink-agents"
    for module in flink_agents.MODULES:
        (source / module).mkdir(parents=True)
    for parent in flink_agents.PARENTS:
        (source / parent).write_text("<project>not a pom</project>\n")
    cache = tmp_path / "cache"
    env = {
        **os.environ,
        flink_agents.SOURCE_ENV: str(source),
        "REPLAY_CONTRACT_CACHE": str(cache),
        "REPLAY_CONTRACT_KAFKA": kafka_bootstrap,
    }
    result = _cli("conform", "--target", "flink-agents:kafka", env=env)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "the Maven build failed" in errors[0], result.stderr
    assert "Traceback" not in result.stderr
