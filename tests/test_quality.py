"""The code stays lint-clean, formatted and type-checked (mypy strict)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    "args",
    [
        ("ruff", "check", "--no-cache", "."),
        ("ruff", "format", "--no-cache", "--check", "."),
        ("mypy",),
    ],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_clean(args: tuple[str, ...]) -> None:
    done = tool(*args)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
