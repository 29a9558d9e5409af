"""Every command's exit status, as replay_contract.exits.TABLE states it: 0 holds, 1 a
property broken (or a verdict unlike the manifest's), 2 bad input, 3 no answer."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from replay_contract.cli import build_parser, main
from replay_contract.exits import BAD_INPUT, BROKEN, HOLDS, NO_ANSWER, TABLE, worst
from replay_contract.model.catalogue import builtin

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["--bound", "inputs=2,channels=2,keys=2,crashes=1", "--quiet"]


@pytest.mark.parametrize(
    ("contract", "status"), [("seqnum", BROKEN), ("ordered", HOLDS), ("all", BROKEN)]
)
def test_simulate(contract: str, status: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "reversed-interleaving", "--contract", contract]) == status
    capsys.readouterr()
    assert main(["simulate", "reversed-interleaving", "--contract", contract, "--json"]) == status
    data = json.loads(capsys.readouterr().out)
    broken = any(s["violations"] for s in (data if isinstance(data, list) else [data]))
    assert broken == (status == BROKEN)


@pytest.mark.parametrize(("contract", "status"), [("seqnum", BROKEN), ("ordered", HOLDS)])
def test_explore(contract: str, status: int, tmp_path: Path) -> None:
    argv = ["explore", "reversed-interleaving", "--contract", contract, "--out", str(tmp_path)]
    assert main(argv) == status
    assert bool(list(tmp_path.glob("*.json"))) == (status == BROKEN)


def _wide(records: int) -> dict[str, object]:
    """Two channels of ``records // 2`` inputs each for one key, all delivered, a crash
    and every input re-delivered: C(records, records // 2) interleavings."""
    half = records // 2
    data = builtin("single-upstream").to_json()
    channels = [
        {
            "name": f"upstream-{c}",
            "records": [{"id": f"R{c}-{i}", "key": "K", "payload": "p"} for i in range(half)],
        }
        for c in (1, 2)
    ]
    ids = [r["id"] for ch in channels for r in ch["records"]]
    deliver = [{"step": "deliver", "record": i} for i in ids]
    data.update(
        name="wide",
        channels=channels,
        schedule=[*deliver, {"step": "crash"}, {"step": "restore"}, *deliver],
    )
    return data


def test_explore_stopped_by_its_limit_is_no_answer_and_bounded_in_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """28 inputs re-delivered have about 40 million interleavings: --limit 100 stops
    after 100 runs, without enumerating them first, and the answer is unknown (3)."""
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(_wide(28)))
    argv = ["explore", str(path), "--contract", "ordered", "--limit", "100", "--json"]
    started = time.monotonic()
    assert main([*argv, "--out", str(tmp_path / "out")]) == NO_ANSWER
    assert time.monotonic() - started < 60  # a list of every interleaving never ends
    (result,) = json.loads(capsys.readouterr().out)
    assert result["runs"] == 100 and result["complete"] is False


def test_verify_counterexample_is_broken(tmp_path: Path) -> None:
    argv = ["verify", "--contract-file", str(ROOT / "docs/examples/no-wait.json")]
    argv += ["--property", "no-stale-reuse", "--bound", "inputs=3,channels=2,keys=2,crashes=1"]
    assert main([*argv, "--quiet", "--out", str(tmp_path)]) == BROKEN


def test_verify_unknown_is_no_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["verify", "--contract", "stable-id", "--property", "no-lost-input"]
    argv += ["--engine", "unrolling", "--timeout", "0.001", "--no-reachability", "--json"]
    assert main([*argv, *SMALL, "--out", str(tmp_path)]) == NO_ANSWER
    (result,) = json.loads(capsys.readouterr().out)
    assert result["verdict"] == "unknown"


def test_verify_against_the_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["verify", "--contract", "seqnum", "--property", "complete-reuse", *SMALL]
    argv += ["--out", str(tmp_path)]
    assert main(argv) == BROKEN  # a counterexample: a property broken
    # ... and the one spec/manifest.json records: as expected
    assert main([*argv, "--manifest", "--json"]) == HOLDS
    capsys.readouterr()
    # a proved property the manifest records as proved
    proved = ["verify", "--contract", "seqnum", "--property", "divergence-safeguard", *SMALL]
    assert main([*proved, "--no-reachability", "--manifest", "--out", str(tmp_path)]) == HOLDS
    # a proposed contract has no verdict there: refused before any work
    proposal = ["verify", "--contract-file", str(ROOT / "docs/examples/no-wait.json")]
    assert main([*proposal, "--manifest", *SMALL, "--out", str(tmp_path)]) == BAD_INPUT
    assert "records no verdict for" in capsys.readouterr().err


def test_verify_manifest_difference_is_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from replay_contract.commands import verify as command

    monkeypatch.setattr(
        command,
        "manifest_verdicts",
        lambda chosen, props: {(c.name, p): "proved" for c in chosen for p in props},
    )
    argv = ["verify", "--contract", "seqnum", "--property", "complete-reuse", "--manifest"]
    assert main([*argv, *SMALL, "--out", str(tmp_path)]) == BROKEN
    assert "differs from spec/manifest.json: proved expected" in capsys.readouterr().out


def test_conform_failure_is_broken(tmp_path: Path) -> None:
    argv = ["conform", "--target", "mutant:ordered-no-wait", "--scenario", "reversed-interleaving"]
    assert main([*argv, "--no-sweep", "--examples", "0", "--out", str(tmp_path)]) == BROKEN


def test_the_worst_status_wins() -> None:
    assert worst([]) == HOLDS
    assert worst([HOLDS, BROKEN, HOLDS]) == BROKEN
    assert worst([BROKEN, NO_ANSWER, HOLDS]) == NO_ANSWER


def test_the_table_is_in_the_help() -> None:
    text = build_parser().format_help()
    assert [code for code, _ in TABLE] == [0, 1, 2, 3, 130]
    for code, _meaning in TABLE:
        assert f"; {code} " in text or f"exit status: {code} " in text


def test_a_server_that_dies_starting_is_no_answer(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from replay_contract.services import common, kafka

    def dies(progress: bool = True) -> None:
        raise common.StartError("the Kafka broker exited during start-up; see kafka.log")

    monkeypatch.setattr(kafka, "up", dies)
    assert main(["services", "up", "kafka"]) == NO_ANSWER
    assert capsys.readouterr().err == (
        "replay-contract services: error: the Kafka broker exited during start-up; see kafka.log\n"
    )
