"""Helpers for the conformance suite's own tests: run ``replay-contract conform`` in
process and read its JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from replay_contract.cli import main

HERE = Path(__file__).resolve().parent
ORDERLY = f"process:{sys.executable} {HERE / 'orderly.py'}"
SCENARIOS = HERE / "scenarios"


def conform(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    """``replay-contract conform ARGS --json``: the exit status and the document."""
    status = main(["conform", *args, "--json"])
    out = capsys.readouterr().out
    return status, json.loads(out) if out.strip() else {}


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in doc["results"]}
