"""The code stays lint-clean, formatted and type-checked (mypy strict)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from replay_contract.layout import stage

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
    ],
    ids=["ruff-check", "ruff-format"],
)
def test_clean(args: tuple[str, ...]) -> None:
    done = tool(*args)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_types(tmp_path: Path) -> None:
    """mypy strict over the package as it installs: model/, spec/ and conformance/ staged
    inside replay_contract/ (mypy walks folders, it does not follow the install mapping)."""
    staged = stage(ROOT, tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "-p",
            staged.name,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
