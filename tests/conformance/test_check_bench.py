"""The trace checker's benchmark runs its rows end to end (a smoke test on tiny rows;
the figures come from running it, not from a test)."""

from __future__ import annotations

import json

import pytest

from replay_contract.conformance.bench import main, recovery


def test_the_generated_recovery_swaps_each_pair() -> None:
    steps = [str(s) for s in recovery(5, 2).schedule]
    assert steps[:2] == ["checkpoint", "deliver r0"]
    assert steps[6:] == [
        "crash",
        "restore",
        "deliver r1",
        "deliver r0",
        "deliver r3",
        "deliver r2",
        "deliver r4",
    ]


def test_a_tiny_row_is_judged_and_measured(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--inputs", "40", "--keys", "4", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["inputs"] == 40 and row["keys"] == 4
    assert row["verdict"] == "pass"
    assert row["events"] > 40 * 8
    assert row["peak_mb"] > 0 and row["seconds"] > 0
