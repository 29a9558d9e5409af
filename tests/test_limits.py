"""A bound or a scenario too large for the engine asked is refused with one line that
says what is too large and what would finish, before any work."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from replay_contract.cli import main
from replay_contract.model.catalogue import builtin
from replay_contract.model.scenario import Scenario, Step
from replay_contract.model.topology import Channel, Record, Topology
from replay_contract.spec.bound import LIMIT, parse, too_large
from replay_contract.spec.explore import interleavings, orders


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    started = time.monotonic()
    status = main(argv)
    captured = capsys.readouterr()
    assert status == 2, captured
    assert captured.err.count("\n") == 1, captured.err
    assert time.monotonic() - started < 10  # refused, not started
    return captured.err.strip()


def test_verify_refuses_a_bound_past_the_limit(capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(["verify", "--bound", "inputs=100000"], capsys)
    assert "inputs=100000 is too large for verify" in line
    assert f"at most inputs={LIMIT.inputs}" in line
    assert "inputs=8,channels=3,keys=2,crashes=2" in line  # what would finish
    assert "channels=9 is too large" in refused(["verify", "--bound", "channels=9"], capsys)


def test_the_bounds_in_use_are_within_the_limit() -> None:
    for text in ("inputs=6,channels=2,keys=2,crashes=2", "inputs=8,channels=3,keys=2,crashes=2"):
        assert too_large(parse(text)) is None


def swapped(n: int, crashes: int = 1) -> Scenario:
    """n inputs of one key on two channels, all delivered, then ``crashes`` times a
    crash, a restore and all of them again."""
    base = builtin("reversed-interleaving")
    ids = [f"r{i}" for i in range(n)]
    channels = tuple(
        Channel(
            f"upstream-{c + 1}",
            tuple(Record(i, "K", i, f"upstream-{c + 1}", j) for j, i in enumerate(ids[c::2])),
        )
        for c in range(2)
    )
    again = (Step("crash"), Step("restore"), *(Step("deliver", i) for i in ids))
    schedule = (*(Step("deliver", i) for i in ids), *(again * crashes))
    return Scenario(f"swap-{n}", base.agent, Topology(channels), schedule)


def test_orders_are_counted_without_listing_them() -> None:
    scenario = swapped(8)
    total, widest = orders(scenario)
    assert (
        total
        == widest
        == len(list(interleavings([["r0", "r2", "r4", "r6"], ["r1", "r3", "r5", "r7"]])))
    )
    assert orders(builtin("reversed-interleaving")) == (6, 6)


def test_explore_refuses_a_scenario_past_what_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = ["--out", str(tmp_path / "out")]
    path = swapped(200).write(tmp_path / "swap-200.json")
    line = refused(["explore", str(path), *out], capsys)
    assert "swap-200: about 10^58 re-delivery orders of 402 steps each are too many" in line
    assert "simulate runs one order" in line
    path = swapped(12, crashes=2).write(tmp_path / "swap-12.json")  # 924 orders per restore
    line = refused(["explore", str(path), *out], capsys)
    assert "853,776 re-delivery orders of 40 steps each are too many" in line
    assert "within --limit 200,000" in line
    assert "--limit 25,000 would finish" in line
    assert not (tmp_path / "out").exists()
