"""Targets come from the entry-point group ``replay_contract.targets``: a tiny
distribution written in the test (a module and its ``.dist-info``, put on ``sys.path``)
adds a whole-name target and a prefix target, and ``conform`` runs both."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from replay_contract.conformance import targets
from replay_contract.conformance.model_target import ModelImplementation
from replay_contract.errors import CommandError

from .conftest import conform

MODULE = """
from replay_contract.conformance.model_target import ModelImplementation
from replay_contract.model.mutants import MUTANTS

def implementation():
    return ModelImplementation()

def family(rest):
    return ModelImplementation(MUTANTS[rest])

def broken():
    return object()
"""

ENTRY_POINTS = """
[replay_contract.targets]
tiny = tiny_target:implementation
tiny-family = tiny_target:family
tiny-broken = tiny_target:broken
tiny-missing = tiny_target_nowhere:implementation
"""


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tiny_target.py").write_text(MODULE)
    info = tmp_path / "tiny_target-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-target\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(ENTRY_POINTS))
    monkeypatch.syspath_prepend(str(tmp_path))


def test_the_projects_targets_are_entry_points() -> None:
    assert {"model", "kafka", "fluss", "mutant:<...>", "process:<...>"} <= set(targets.names())
    assert isinstance(targets.resolve("model"), ModelImplementation)
    assert isinstance(targets.resolve("mutant:ordered-no-wait"), ModelImplementation)


@pytest.mark.usefixtures("tiny")
def test_an_installed_package_adds_targets(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert {"tiny", "tiny-family:<...>"} <= set(targets.names())
    one = ["--scenario", "reversed-interleaving", "--no-sweep", "--examples", "0"]
    status, doc = conform(capsys, "--target", "tiny", *one, "--out", str(tmp_path / "a"))
    assert (status, doc["target"], doc["passed"], doc["failed"]) == (0, "tiny", 1, 0)
    # the prefix target gets the rest of the name: a mutant the suite must fail
    status, doc = conform(
        capsys, "--target", "tiny-family:ordered-no-wait", *one, "--out", str(tmp_path / "b")
    )
    assert (status, doc["failed"]) == (1, 1)


@pytest.mark.usefixtures("tiny")
@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("tiny-family", "target tiny-family: give what follows"),
        ("tiny:x", "tiny takes nothing after it"),
        ("tiny-broken", "lacks the Implementation methods"),
        ("tiny-missing", "target tiny-missing: not available: No module named"),
        ("nowhere:x", "unknown target 'nowhere:x'"),
    ],
)
def test_a_bad_target_is_refused_in_one_line(target: str, message: str) -> None:
    with pytest.raises(CommandError, match=message):
        targets.resolve(target)
