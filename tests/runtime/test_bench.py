"""``replay-contract bench`` on the in-memory store and on the real broker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SMALL = [
    "--inputs",
    "200",
    "--keys",
    "4",
    "--repeat",
    "1",
    "--replayed",
    "10,40",
    "--pad",
    "0,2000",
    "--by-keys",
    "1,4",
    "--payloads",
    "0,300",
]


def bench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replay_contract", "bench", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, **(env or {})},
    )


def figures(backend: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = bench("--backend", backend, *SMALL, "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert "throughput" in result.stderr  # progress goes to stderr
    data: dict[str, Any] = json.loads(result.stdout)["backends"][backend]
    return data


def check(data: dict[str, Any], batched: bool = False) -> None:
    by_contract = {r["contract"]: r for r in data["throughput"]}
    assert set(by_contract) == {"ordered", "seqnum"}
    for row in by_contract.values():
        assert row["writes_per_input"] == 1.0  # the position rides with the completion
        if batched:  # pipelined writes: many inputs' entries per acknowledged request
            assert 0 < row["round_trips_per_input"] < 0.5
        else:  # the memory store lands each write at once
            assert row["round_trips_per_input"] == 1.0
        assert row["cpu_us_per_input"] > 0
        assert len(row["runs_inputs_per_s"]) == len(row["runs_cpu_us_per_input"]) == 1
    # one round: each ratio is that of the round
    seqnum, ordered = by_contract["seqnum"], by_contract["ordered"]
    assert data["ratio_ordered_to_seqnum"] == pytest.approx(
        ordered["inputs_per_s"] / seqnum["inputs_per_s"], abs=0.002
    )
    assert data["cpu_ratio_ordered_to_seqnum"] == pytest.approx(
        seqnum["cpu_us_per_input"] / ordered["cpu_us_per_input"], abs=0.002
    )
    for row in data["recovery_by_replayed"]:
        assert row["entries_read"] == row["replayed"]
        repeated = 0 if row["contract"] == "ordered" else row["replayed"]
        assert row["tool_calls_repeated"] == repeated
    by_keys = data["throughput_by_keys"]
    assert [(r["keys"], r["contract"]) for r in by_keys] == [(1, "ordered"), (4, "ordered")]
    by_payload = data["throughput_by_payload"]
    assert [r["payload"] for r in by_payload] == [0, 300]
    for row in by_keys + by_payload:
        assert row["writes_per_input"] == 1.0  # at most one durable write per input
    ceiling = data["ceiling"]
    assert set(ceiling["memory_inputs_per_s"]) == {"ordered", "seqnum"}
    for contract, share in ceiling["share_of_ceiling"].items():
        own, memory = ceiling["inputs_per_s"][contract], ceiling["memory_inputs_per_s"][contract]
        assert share == pytest.approx(own / memory, abs=0.001) and share > 0
        cpu_share = ceiling["cpu_share_of_ceiling"][contract]
        own, memory = (
            ceiling["cpu_us_per_input"][contract],
            ceiling["memory_cpu_us_per_input"][contract],
        )
        assert cpu_share == pytest.approx(memory / own, abs=0.002) and cpu_share > 0
    pads = data["recovery_by_entries_before_marker"]
    assert [r["entries_before_marker"] for r in pads] == [0, 2000]
    assert {r["entries_read"] for r in pads} == {40}  # never what lies before the marker


def test_bench_on_the_memory_store() -> None:
    check(figures("memory"))


def test_rounds_alternate_the_contracts_and_give_the_median_ratio() -> None:
    result = bench("--backend", "memory", *SMALL[:4], "--repeat", "3", *SMALL[6:], "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)["backends"]["memory"]
    runs = {r["contract"]: r["runs_inputs_per_s"] for r in data["throughput"]}
    cpu = {r["contract"]: r["runs_cpu_us_per_input"] for r in data["throughput"]}
    assert len(runs["seqnum"]) == len(runs["ordered"]) == 3
    ratios = sorted(o / s for o, s in zip(runs["ordered"], runs["seqnum"], strict=True))
    assert data["ratio_ordered_to_seqnum"] == pytest.approx(ratios[1], abs=0.002)
    ratios = sorted(s / o for o, s in zip(cpu["ordered"], cpu["seqnum"], strict=True))
    assert data["cpu_ratio_ordered_to_seqnum"] == pytest.approx(ratios[1], abs=0.002)
    order = [
        line.split()[3]
        for line in result.stderr.splitlines()
        if line.startswith("bench: memory: throughput") and " round " in line
    ]
    assert order == ["seqnum", "ordered", "ordered", "seqnum", "seqnum", "ordered"]


def test_bench_tables() -> None:
    result = bench("--backend", "memory", *SMALL)
    assert result.returncode == 0, result.stderr
    assert "ordered/seqnum throughput ratio" in result.stdout
    assert "by CPU time per input" in result.stdout
    assert "recovery vs inputs replayed for one key" in result.stdout
    assert "memory: throughput (ordered) vs keys" in result.stdout
    assert "memory: throughput (ordered) vs payload size" in result.stdout
    assert "memory: the ceiling" in result.stdout


def test_an_unknown_backend_is_one_line() -> None:
    result = bench("--backend", "nope")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "unknown backend 'nope'" in result.stderr


def test_bad_sizes_are_refused() -> None:
    result = bench("--replayed", "ten")
    assert result.returncode == 2 and "--replayed" in result.stderr


@pytest.mark.kafka
def test_bench_on_the_real_broker(kafka_bootstrap: str) -> None:
    check(figures("kafka", env={"REPLAY_CONTRACT_KAFKA": kafka_bootstrap}), batched=True)


def test_bench_refuses_an_unreachable_broker() -> None:
    result = bench("--backend", "kafka", env={"REPLAY_CONTRACT_KAFKA": "127.0.0.1:9"})
    assert result.returncode == 2
    assert "kafka at 127.0.0.1:9 is not reachable" in result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_bench_refuses_a_non_loopback_address() -> None:
    result = bench("--backend", "kafka", env={"REPLAY_CONTRACT_KAFKA": "10.1.2.3:9092"})
    assert result.returncode == 2 and "only 127.0.0.1:PORT" in result.stderr


def hermetic(tmp_path: Path, **env: str) -> dict[str, str]:
    """The environment of a bench run that sees no running service and no address but
    those in ``env``."""
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("REPLAY_CONTRACT_KAFKA", "REPLAY_CONTRACT_FLUSS")
    }
    return {**base, "REPLAY_CONTRACT_STATE": str(tmp_path / "no-services"), **env}


def bench_in(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replay_contract", "bench", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


@pytest.mark.parametrize(
    ("variable", "message"),
    [
        ("REPLAY_CONTRACT_FLUSS", "fluss at 127.0.0.1:1 is not reachable"),
        ("REPLAY_CONTRACT_KAFKA", "kafka at 127.0.0.1:1 is not reachable"),
    ],
)
def test_all_refuses_an_address_the_user_set_that_does_not_answer(
    tmp_path: Path, variable: str, message: str
) -> None:
    result = bench_in(hermetic(tmp_path, **{variable: "127.0.0.1:1"}), "--backend", "all", *SMALL)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()  # nothing was measured before
    assert line.startswith("replay-contract bench: error: ") and message in line
    assert f"{variable}=127.0.0.1:1 is set" in line
    assert result.stdout == ""


def test_all_skips_the_backends_nobody_configured(tmp_path: Path) -> None:
    result = bench_in(hermetic(tmp_path), "--backend", "all", *SMALL, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)["backends"]
    assert list(data) == ["memory", "kafka", "fluss"]
    assert "no broker is running" in data["kafka"]["skipped"]
    assert "no cluster is running" in data["fluss"]["skipped"]
    check(data["memory"])


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--inputs", "0"),
        ("--inputs", "inf"),
        ("--keys", "-4"),
        ("--keys", "nan"),
        ("--repeat", "0"),
        ("--replayed", "10,-1"),
        ("--pad", "nan"),
        ("--by-keys", "0,16"),
        ("--payloads", "big"),
    ],
)
def test_bad_numbers_are_one_line(option: str, value: str) -> None:
    result = bench("--backend", "memory", option, value)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("replay-contract bench: error: ") and option in line


def test_the_address_variables_are_those_the_backends_read() -> None:
    from replay_contract.runtime import backends, fluss, kafka

    assert backends.ADDRESSES == {"kafka": kafka.ENV, "fluss": fluss.ENV}
