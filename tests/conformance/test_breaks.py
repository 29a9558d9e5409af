"""Thirteen ways an implementer may get the contract wrong, written into ``orderly.py``
(``--bug NAME``): a default ``conform`` run fails every one of them.

The test runs the catalogue and its crash sweeps (``--examples 0``), the part of the
default run that is the same for every seed: the generated scenarios of a default run
can only add failures. Shrinking is left out; it changes the report, not the verdict.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from . import orderly
from .conftest import HERE, conform


@pytest.mark.parametrize("bug", list(orderly.BUGS))
def test_a_default_run_fails_the_bug(
    bug: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contract, _what = orderly.BUGS[bug]
    target = f"process:{sys.executable} {HERE / 'orderly.py'} --bug {bug}"
    args = ["--target", target, "--contract", contract, "--examples", "0", "--no-shrink"]
    status, doc = conform(capsys, *args, "--out", str(tmp_path))
    assert status == 1, doc.get("results", [])[:3]
    assert doc["failed"] > 0 and doc["errors"] == 0 and doc["skipped"] == 0


def test_the_same_program_without_a_bug_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for contract in ("ordered", "seqnum"):
        target = f"process:{sys.executable} {HERE / 'orderly.py'}"
        args = ["--target", target, "--contract", contract, "--examples", "0"]
        status, doc = conform(capsys, *args, "--out", str(tmp_path))
        assert status == 0 and doc["failed"] == 0 and doc["passed"] > 0
