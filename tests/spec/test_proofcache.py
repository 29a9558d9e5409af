"""The proof cache of ``verify``: a step class checked once is read back, only for the very
check it answered, and an entry it cannot read is said and checked again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import z3
from attrs import evolve

from replay_contract import model, spec
from replay_contract.cli import main
from replay_contract.model.contracts import ORDERED, SEQNUM
from replay_contract.spec import induction, proofcache
from replay_contract.spec.bound import parse
from replay_contract.spec.properties import PROPERTIES

SMALL = parse("inputs=2,channels=2,keys=2,crashes=1")
LARGER = parse("inputs=3,channels=2,keys=2,crashes=1")
FROM_CACHE = "from the proof cache"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "proofs"
    monkeypatch.setenv("REPLAY_CONTRACT_PROOF_CACHE", str(folder))
    return folder


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json")) if folder.exists() else []


def _check(t: int, lines: list[str], **kw: Any) -> induction.ClassOutcome:
    props = induction.inductive(ORDERED, "stateful", PROPERTIES)
    return induction.check_step_class(ORDERED, "stateful", LARGER, t, props, say=lines.append, **kw)


def test_a_class_checked_again_is_read_back(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = induction.step_classes(ORDERED, LARGER)[1]
    lines: list[str] = []
    first = _check(t, lines)
    assert first.failed == {} and first.broken == "" and first.queries > 0
    assert len(_entries(cache)) == 1 and FROM_CACHE not in lines[-1]

    def unbuilt(*args: Any) -> None:
        raise AssertionError("the step was built again")

    monkeypatch.setattr(induction, "build_step", unbuilt)
    again = _check(t, lines)
    assert (again.t, again.failed, again.broken, again.queries) == (
        first.t,
        first.failed,
        first.broken,
        first.queries,
    )
    assert FROM_CACHE in lines[-1] and f"micro-step {t} " in lines[-1]


def test_a_flag_not_kept_is_read_back_as_not_kept(cache: Path) -> None:
    first = induction.prove(SEQNUM, "stateful", SMALL, ["complete-reuse"])
    lines: list[str] = []
    again = induction.prove(SEQNUM, "stateful", SMALL, ["complete-reuse"], say=lines.append)
    assert again.proved == [] and again.failed == first.failed
    assert "may set its flag" in again.failed["complete-reuse"]
    assert lines and all(FROM_CACHE in line for line in lines)


def test_the_name_is_of_the_rules_and_the_check() -> None:
    props = ["no-stale-reuse", "no-lost-input"]
    name = proofcache.key(ORDERED, "stateful", SMALL, 1, props, ())
    renamed = evolve(ORDERED, name="my-ordered", description="another text")
    assert proofcache.key(renamed, "stateful", SMALL, 1, props, ()) == name
    EARLY = evolve(ORDERED, record_order="before-first-tool-call")
    others = [
        proofcache.key(EARLY, "stateful", SMALL, 1, props, ()),
        proofcache.key(ORDERED, "chain", SMALL, 1, props, ()),
        proofcache.key(ORDERED, "stateful", LARGER, 1, props, ()),
        proofcache.key(ORDERED, "stateful", SMALL, 2, props, ()),
        proofcache.key(ORDERED, "stateful", SMALL, 1, props[:1], ()),
        proofcache.key(ORDERED, "stateful", SMALL, 1, props, ("no-lost-input",)),
    ]
    assert len({name, *others}) == 1 + len(others)


def test_any_change_of_the_code_gives_other_names(tmp_path: Path) -> None:
    code = tmp_path / "spec"
    (code / "sub").mkdir(parents=True)
    (code / "a.py").write_text("x = 1\n")
    (code / "sub" / "b.py").write_text("y = 2\n")
    before = proofcache.fingerprint([code])
    assert proofcache.fingerprint([code]) == before
    (code / "sub" / "b.py").write_text("y = 3\n")
    changed = proofcache.fingerprint([code])
    (code / "sub" / "c.py").write_text("")
    added = proofcache.fingerprint([code])
    assert len({before, changed, added}) == 3


def test_the_code_is_read_once_when_the_cache_is_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a file edited while a long run goes on must not name that run's outcomes: a
    # process forked later (the deepening's steps, the class workers) keeps the code
    # it runs, and so the fingerprint taken when it was imported
    folders = [Path(spec.__file__).parent, Path(model.__file__).parent]
    imported = proofcache.fingerprint(folders)  # the files are those imported
    monkeypatch.setattr(proofcache, "fingerprint", lambda folders: "the files now")
    assert proofcache.code_fingerprint() == imported


@pytest.mark.parametrize("damage", ["cut short", "a field of another type"])
def test_an_unreadable_entry_is_said_and_checked_again(
    damage: str, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = induction.step_classes(ORDERED, LARGER)[0]
    first = _check(t, [])
    (entry,) = _entries(cache)
    text = entry.read_text()
    if damage == "cut short":
        entry.write_text(text[: len(text) // 2])
    else:
        data = json.loads(text)
        data["outcome"]["queries"] = "many"
        entry.write_text(json.dumps(data))
    lines: list[str] = []
    again = _check(t, lines)
    err = capsys.readouterr().err
    assert f"proof cache: {entry}: cannot read the entry" in err and "checking again" in err
    assert FROM_CACHE not in lines[-1] and again.failed == first.failed
    assert json.loads(entry.read_text())["outcome"]["queries"] == first.queries


def test_a_cache_that_cannot_be_written_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("REPLAY_CONTRACT_PROOF_CACHE", str(blocker / "proofs"))
    monkeypatch.setattr(proofcache, "_unwritable", False)
    outcomes = [_check(t, []) for t in induction.step_classes(ORDERED, LARGER)[:2]]
    assert all(o.failed == {} and o.broken == "" for o in outcomes)  # the checks stand
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if "cannot write" in line]
    assert len(said) == 1 and str(blocker) in said[0] and said[0].endswith("not kept")
    assert "cannot remove" not in err  # no partial entry can be under a file


@pytest.mark.parametrize("where", ["a-file", "a-file/proofs"])
def test_verify_refuses_a_cache_it_cannot_write_before_any_work(
    where: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv(proofcache.VARIABLE, str(tmp_path / where))
    monkeypatch.chdir(tmp_path)
    argv = ["verify", "--contract", "seqnum", "--property", "complete-reuse", "--deepen"]
    argv += ["--bound", "inputs=2,channels=2,keys=1,crashes=1", "--deadline", "60", "--quiet"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"replay-contract verify: error: {proofcache.VARIABLE} {tmp_path}/")
    assert line.endswith("; --no-proof-cache runs without the cache")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # no out/ made
    # without the cache the same command runs: seqnum breaks complete-reuse
    assert main([*argv, "--no-proof-cache"]) == 1
    assert "proof cache" not in capsys.readouterr().err


def test_removing_an_entry_under_a_file_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv(proofcache.VARIABLE, str(tmp_path / "a-file"))
    proofcache.remove(proofcache.partial("ab" * 32))  # there is no such entry to remove
    assert capsys.readouterr().err == ""


def _partial(entry: Path) -> bool:
    return entry.name.endswith(f"{proofcache.PARTIAL}.json")


def test_a_class_with_an_unknown_query_is_not_written(cache: Path) -> None:
    t = induction.step_classes(ORDERED, LARGER)[1]
    outcome = _check(t, [], timeout=0.001)  # a millisecond per query: some are unknown
    assert "did not settle" in outcome.broken + "".join(outcome.failed.values())
    assert [entry for entry in _entries(cache) if not _partial(entry)] == []


class Stop(Exception):
    """Stands for Ctrl-C or a deadline in the middle of a step class's check."""


def test_a_check_stopped_part_way_asks_only_the_rest_when_started_again(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(induction, "PARTIAL_EVERY", 0.0)  # keep each answer at once
    t = induction.step_classes(ORDERED, LARGER)[-1]
    answered = 7
    asked: list[int] = []
    check = z3.Solver.check

    def counted(solver: z3.Solver, *args: Any) -> Any:
        if len(asked) == answered and stopping:
            raise Stop
        asked.append(1)
        return check(solver, *args)

    monkeypatch.setattr(z3.Solver, "check", counted)
    stopping = True
    with pytest.raises(Stop):
        _check(t, [])
    (entry,) = _entries(cache)
    assert _partial(entry)
    kept = json.loads(entry.read_text())["outcome"]
    assert len(kept["proved"]) == answered and kept["seconds"] > 0

    stopping = False
    asked.clear()
    lines: list[str] = []
    again = _check(t, lines)
    assert again.failed == {} and again.broken == ""
    assert len(asked) == again.queries - answered  # only the queries not answered before
    assert f"{answered} of {again.queries} queries from the proof cache" in lines[0]
    (whole,) = _entries(cache)  # the partial entry gave way to the whole outcome
    assert not _partial(whole)
    assert json.loads(whole.read_text())["outcome"]["queries"] == again.queries

    fresh = _check(t, [])  # read back whole
    assert fresh.queries == again.queries and len(asked) == again.queries - answered


def test_the_time_of_a_piece_of_work_adds_up_over_the_runs_until_it_is_done(
    cache: Path,
) -> None:
    step = proofcache.ladder_key(ORDERED, LARGER, PROPERTIES, {"workers": 2})
    assert proofcache.spent(step, 5.0, whole=False) == 5.0  # a run stopped in it
    assert proofcache.spent(step, 3.0, whole=True) == 8.0  # the run that finished it
    assert proofcache.spent(step, 0.01, whole=True) == 8.0  # read back at once
    assert proofcache.spent(step, 0.01, whole=False) == 8.0
    other = proofcache.ladder_key(ORDERED, LARGER, PROPERTIES, {"workers": 1})
    assert other != step and proofcache.spent(other, 2.0, whole=True) == 2.0
    assert len(_entries(cache)) == 2


def test_the_time_of_a_piece_of_work_is_this_runs_without_the_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REPLAY_CONTRACT_PROOF_CACHE", proofcache.OFF)
    step = proofcache.ladder_key(ORDERED, LARGER, PROPERTIES, {})
    assert proofcache.spent(step, 5.0, whole=True) == 5.0
    assert proofcache.spent(step, 0.5, whole=True) == 0.5


def test_verify_reads_back_what_it_proved_unless_told_not_to(cache: Path, tmp_path: Path) -> None:
    def verify(*extra: str) -> tuple[list[Any], str]:
        argv = ["verify", "--contract", "seqnum", "--bound", str(SMALL), "--engine", "induction"]
        run = subprocess.run(
            [sys.executable, "-m", "replay_contract", *argv, "--json", *extra],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert run.returncode == 1, run.stderr  # seqnum breaks complete-reuse
        return [(r["property"], r["verdict"]) for r in json.loads(run.stdout)], run.stderr

    first, err = verify()
    assert "micro-step" in err and FROM_CACHE not in err
    written = _entries(cache)
    assert written
    second, err = verify()
    assert second == first and FROM_CACHE in err
    checked = [line for line in err.splitlines() if "/ induction /" in line and "micro-" in line]
    assert checked and all(FROM_CACHE in line for line in checked)
    third, err = verify("--no-proof-cache")
    assert third == first and "micro-step" in err and FROM_CACHE not in err
    assert _entries(cache) == written
