"""``replay-contract conform`` refuses bad input with one line and exit status 2: output
paths that cannot be written (checked before the target starts), a command line that
cannot be split, a contract the target does not implement, a run in which nothing ran;
and the process target's standard error log is kept only when an error names it."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from replay_contract.cli import main
from replay_contract.model.files import slug

from .conftest import HERE, ORDERLY, conform

AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    """The single line on stderr, checked to be a ``conform`` error without a traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("replay-contract conform: error: ")
    return lines[0]


def program(tmp_path: Path, name: str, text: str) -> str:
    """A ``process:`` target running ``text`` as a Python program."""
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return f"process:{sys.executable} {path}"


def marking(tmp_path: Path) -> tuple[str, Path]:
    """A process target that leaves a file behind once it starts (then fails the
    handshake): whether the command started the target before refusing its input."""
    marker = tmp_path / "started"
    return program(tmp_path, "marking", f"open({str(marker)!r}, 'w').close()\n"), marker


def orderly_with(tmp_path: Path, before: str = "", **capabilities: object) -> str:
    """``orderly.py`` announcing other capabilities, after running ``before``."""
    return program(
        tmp_path,
        "orderly_with",
        f"import sys\n{before}\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        "import orderly\n"
        "send = orderly.send\n"
        "def announce(message):\n"
        "    if 'capabilities' in message:\n"
        f"        message['capabilities'].update({capabilities!r})\n"
        "    send(message)\n"
        "orderly.send = announce\n"
        "raise SystemExit(orderly.main())\n",
    )


ONE_SCENARIO = ["--scenario", "reversed-interleaving", "--examples", "0", "--no-sweep"]


# -- output paths, checked before anything runs -------------------------------------------


@pytest.mark.parametrize(
    ("option", "where"),
    [
        ("--out", "file"),
        ("--out", "/proc/replay-contract-out"),
        ("--junit", "folder"),
        ("--junit", "/proc/replay-contract.xml"),
        ("--junit", "file/under-a-file.xml"),
        ("--junit", "dangling.xml"),  # a link to a file in a folder that is not there
        ("--out", "taken"),  # where the failures of this target would go is a file
    ],
)
def test_output_path_is_refused_with_one_line_before_the_target_starts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, option: str, where: str
) -> None:
    (tmp_path / "file").write_text("")
    (tmp_path / "folder").mkdir()
    (tmp_path / "dangling.xml").symlink_to(tmp_path / "missing" / "x.xml")
    path = where if where.startswith("/") else str(tmp_path / where)
    target, marker = marking(tmp_path)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / slug(target)).write_text("")
    args = ["conform", "--target", target, *ONE_SCENARIO, option, path]
    if option != "--out":
        args += ["--out", str(tmp_path / "out")]
    assert main(args) == 2
    line = one_line_error(capsys)
    assert f"error: {option} " in line
    assert not marker.exists()  # refused before the target started


@pytest.mark.skipif(AS_ROOT, reason="root writes into read-only folders")
@pytest.mark.parametrize("option", ["--out", "--junit"])
def test_read_only_folder_is_refused_before_the_target_starts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, option: str
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    target, marker = marking(tmp_path)
    path = locked if option == "--out" else locked / "report.xml"
    try:
        assert main(["conform", "--target", target, *ONE_SCENARIO, option, str(path)]) == 2
    finally:
        locked.chmod(0o700)
    assert "cannot write" in one_line_error(capsys)
    assert not marker.exists()


def test_out_is_checked_even_when_nothing_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("")
    status = main(["conform", "--target", "model", *ONE_SCENARIO, "--out", str(tmp_path / "file")])
    assert status == 2
    assert "--out" in one_line_error(capsys)


def test_junit_that_fails_at_the_write_keeps_the_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from replay_contract.conformance import report

    junit = tmp_path / "report.xml"

    def refuse(run: object, path: Path) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(report, "junit", refuse)
    args = ["--target", "model", *ONE_SCENARIO, "--out", str(tmp_path), "--junit", str(junit)]
    status = main(["conform", *args])
    captured = capsys.readouterr()
    assert status == 2
    assert "1 passed, 0 failed, 0 skipped" in captured.out  # the summary came first
    lines = captured.err.strip().splitlines()
    assert "Traceback" not in captured.err
    assert lines[-1] == (
        f"replay-contract conform: error: --junit {junit}: cannot write it (Permission denied)"
    )


# -- targets ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("process:python3 -c 'unterminated", "cannot split the command line (No closing"),
        ("process:''", "give the command"),
        ("process:   ", "give the command"),
    ],
)
def test_process_command_that_cannot_be_split_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str, message: str
) -> None:
    assert main(["conform", "--target", target, "--out", str(tmp_path)]) == 2
    line = one_line_error(capsys)
    assert message in line


def test_process_target_refuses_a_contract_it_does_not_implement(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status = main(
        ["conform", "--target", ORDERLY, "--contract", "read-set", "--out", str(tmp_path)]
    )
    assert status == 2
    line = one_line_error(capsys)
    assert line.endswith(
        "implements ordered, seqnum, not read-set; choose one it implements with --contract"
    )


def test_process_target_refuses_the_default_contract_it_does_not_implement(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = orderly_with(tmp_path, contracts=["seqnum"])
    assert main(["conform", "--target", target, "--out", str(tmp_path / "out")]) == 2
    assert "implements seqnum, not ordered" in one_line_error(capsys)


def test_process_target_whose_contracts_are_not_a_list_is_refused_as_such(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = orderly_with(tmp_path, contracts="ordered")
    assert main(["conform", "--target", target, "--out", str(tmp_path / "out")]) == 2
    line = one_line_error(capsys)
    assert 'capabilities.contracts: expected a list of contract names, got "ordered"' in line


def test_mutant_refuses_another_contract(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status = main(
        [
            "conform",
            "--target",
            "mutant:ordered-no-wait",
            "--contract",
            "seqnum",
            "--out",
            str(tmp_path),
        ]
    )
    assert status == 2
    assert "target mutant:ordered-no-wait implements ordered, not seqnum" in one_line_error(capsys)


def test_a_run_where_every_scenario_was_skipped_is_not_a_success(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = orderly_with(tmp_path, crash_points=False)
    args = ["--target", target, "--scenario", "crash-before-save", "--examples", "0"]
    status = main(["conform", *args, "--no-sweep", "--out", str(tmp_path / "out")])
    assert status == 2
    line = one_line_error(capsys)
    assert "no scenario can run: the target would skip all 1 (needs a crash inside a step" in line


def test_a_run_where_some_scenarios_were_skipped_still_passes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = orderly_with(tmp_path, crash_points=False)
    status, doc = conform(
        capsys,
        "--target",
        target,
        "--scenario",
        "crash-before-save",
        "--scenario",
        "reversed-interleaving",
        "--examples",
        "0",
        "--no-sweep",
        "--out",
        str(tmp_path / "out"),
    )
    assert status == 0
    assert (doc["passed"], doc["skipped"]) == (1, 1)


@pytest.mark.parametrize(
    ("option", "value"), [("--examples", "-1"), ("--seed", "-3"), ("--examples", "nan")]
)
def test_bad_numbers(capsys: pytest.CaptureFixture[str], option: str, value: str) -> None:
    try:
        status = main(["conform", "--target", "model", option, value])
    except SystemExit as exc:  # refused by the argument parser
        status = int(str(exc.code))
    assert status == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert option in err


# -- the process target's standard error log -----------------------------------------------


@pytest.fixture
def logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The --out folder of the test, where the process target's log goes; the system's
    temporary folder, which must stay empty, is ``tmp_path / "tmp"``."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return tmp_path / "out"


def _written(logs: Path) -> list[Path]:
    """The target's logs left under --out, and nothing in the temporary folder."""
    assert list((logs.parent / "tmp").iterdir()) == []
    return sorted(logs.glob("replay-process-*.log"))


def test_log_is_removed_after_a_run_that_went_well(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, logs: Path
) -> None:
    target = orderly_with(tmp_path, "sys.stderr.write('noise on stderr\\n')")
    status, doc = conform(capsys, "--target", target, *ONE_SCENARIO, "--out", str(logs))
    assert status == 0 and doc["passed"] == 1
    assert _written(logs) == []


def test_log_is_removed_when_a_refused_contract_stops_the_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, logs: Path
) -> None:
    target = orderly_with(tmp_path, "sys.stderr.write('noise on stderr\\n')")
    args = ["--target", target, "--contract", "read-set", "--out", str(logs)]
    assert main(["conform", *args]) == 2
    one_line_error(capsys)
    assert _written(logs) == []


def test_log_that_explains_a_failed_start_is_kept_and_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, logs: Path
) -> None:
    target = program(tmp_path, "broken", "import sys\nsys.exit('cannot start: no licence')\n")
    assert main(["conform", "--target", target, "--out", str(logs)]) == 2
    line = one_line_error(capsys)
    (log,) = _written(logs)
    assert f"log {log}" in line and "cannot start: no licence" in line
    assert "cannot start: no licence" in log.read_text()


def test_log_of_a_failed_start_without_output_is_removed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, logs: Path
) -> None:
    target = program(tmp_path, "silent", "print('not the protocol')\n")
    assert main(["conform", "--target", target, "--out", str(logs)]) == 2
    assert "not a JSON line" in one_line_error(capsys)
    assert _written(logs) == []


def test_log_of_a_run_that_failed_is_kept_and_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, logs: Path
) -> None:
    before = "sys.argv += ['--bug', 'no-wait']\nsys.stderr.write('debug: my operator\\n')"
    target = orderly_with(tmp_path, before)
    args = ["conform", "--target", target, *ONE_SCENARIO, "--out", str(logs)]
    assert main(args) == 1
    err = capsys.readouterr().err
    (log,) = _written(logs)
    assert f"the target's standard error: {log}" in err.splitlines()
    assert "debug: my operator" in log.read_text()
