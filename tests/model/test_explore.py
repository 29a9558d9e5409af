"""The explorer tells how far it got on a long exploration."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_contract.cli import main
from replay_contract.commands import explore as command
from replay_contract.model.catalogue import builtin
from replay_contract.model.contracts import ORDERED
from replay_contract.spec import explore as explorer


def test_progress_is_told_the_runs_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(explorer, "PROGRESS_EVERY", 25)
    seen: list[int] = []
    e = explorer.explore(builtin("repeated-crashes"), ORDERED, True, progress=seen.append)
    assert e.runs > 100
    assert seen == list(range(25, e.runs + 1, 25))


def test_the_command_shows_progress_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(explorer, "PROGRESS_EVERY", 10)
    monkeypatch.setattr(command, "PROGRESS_SECONDS", 0.0)
    argv = ["explore", "repeated-crashes", "--contract", "ordered", "--crash-points"]
    assert main([*argv, "--out", str(tmp_path), "--json"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "exploring repeated-crashes under ordered ..."
    assert err[1].startswith("  ordered: 10 runs (")
    assert len(err) > 10
