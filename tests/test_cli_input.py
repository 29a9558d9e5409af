"""Bad input on the command line is refused with one line and exit status 2, before any
work is done; names the user chose never become paths outside the output folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay_contract.cli import main
from replay_contract.model.catalogue import builtin

SMALL = ["--bound", "inputs=2,channels=2,keys=1,crashes=1", "--timeout", "60", "--quiet"]
EMPTY = "an empty item (two commas in a row, or one at an end)"


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line of a refused command (argument errors exit through SystemExit)."""
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code  # type: ignore[assignment]
    captured = capsys.readouterr()
    assert status == 2, captured
    assert captured.err.count("\n") == 1, captured.err
    assert "Traceback" not in captured.err
    assert captured.out == ""  # refused before anything is printed
    return captured.err.strip()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([], "replay-contract: error: the following arguments are required: COMMAND"),
        (["bogus"], "invalid choice: 'bogus'"),
        (["simulate"], "replay-contract simulate: error: the following arguments are required"),
        (["verify", "--timeout", "abc"], "argument --timeout: expected a number of seconds"),
        (["verify", "--timeout", "nan"], "argument --timeout: expected a finite number above 0"),
        (["verify", "--timeout", "inf"], "expected a finite number above 0, got 'inf'"),
        (["verify", "--timeout", "0"], "expected a finite number above 0, got '0'"),
        (["verify", "--timeout", "1e308"], "expected at most 1000000 seconds, got '1e308'"),
        (["verify", "--out", ""], "argument --out: expected a path, got an empty one"),
        (["explore", "x", "--out", " "], "argument --out: expected a path, got an empty one"),
        (["explore", "x", "--limit", "-5"], "argument --limit: expected a whole number above 0"),
        (["scenarios", "a", "b"], "unrecognized arguments: b"),
    ],
)
def test_argument_errors_are_one_line(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = refused(argv, capsys)
    assert says in line
    assert line.endswith("--help)")


def test_a_contract_and_a_contract_file_are_not_both_taken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.json"
    path.write_text('{"based_on": "ordered", "wait": false}')
    for command in (["simulate", "reversed-interleaving"], ["verify", *SMALL]):
        line = refused([*command, "--contract-file", str(path), "--contract", "bogus"], capsys)
        assert line.endswith("error: give --contract or --contract-file, not both")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["simulate", "reversed-interleaving", "--contract", ""], "error: --contract: empty"),
        (["explore", "reversed-interleaving", "--contract", ","], f"--contract ',': {EMPTY}"),
        (["verify", *SMALL, "--contract", "seqnum", "--property", ""], "--property: empty"),
        (["verify", *SMALL, "--property", " , "], f"--property ' , ': {EMPTY}"),
        (["scenarios", ""], "no built-in scenario ''"),
        (["verify", "--bound", ""], "--bound: empty"),
        (["verify", "--bound", "inputs=2,inputs=3"], "bound: inputs is given twice"),
        # an empty item is refused, not skipped; a repeated one, not run twice
        (["verify", *SMALL, "--contract", "ordered,,seqnum"], f"'ordered,,seqnum': {EMPTY}"),
        (["verify", "--bound", "inputs=2,,"], f"--bound 'inputs=2,,': {EMPTY}"),
        (["simulate", "reversed-interleaving", "--contract", "seqnum,"], f"'seqnum,': {EMPTY}"),
        (["verify", *SMALL, "--contract", "ordered,ordered"], "ordered is given twice"),
        (
            ["explore", "reversed-interleaving", "--contract", "seqnum, ordered,seqnum"],
            "--contract 'seqnum, ordered,seqnum': seqnum is given twice",
        ),
        (["verify", *SMALL, "--property", "key-isolation,key-isolation"], "given twice"),
        (["bench", "--payloads", "1,,2"], f"--payloads '1,,2': {EMPTY}"),
        (["bench", "--by-keys", "1,16,1"], "--by-keys '1,16,1': 1 is given twice"),
    ],
)
def test_empty_or_repeated_choices_are_refused(
    argv: list[str],
    says: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert says in refused(argv, capsys)
    assert list(tmp_path.iterdir()) == []  # refused before any output folder is made


def test_a_deadline_without_a_deepening_is_refused_before_any_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["verify", *SMALL, "--contract", "seqnum", "--property", "complete-reuse"]
    line = refused([*argv, "--deadline", "5"], capsys)
    assert line.endswith("error: --deadline: only with --deepen (or --contract-file)")


@pytest.mark.parametrize(
    ("rules", "says"),
    [
        ({"name": 5}, "c.json.name: expected a non-empty text"),
        ({"name": {"a": 1}}, "c.json.name: expected a non-empty text"),
        ({"name": " "}, "c.json.name: expected a non-empty text"),
        ({"give_up_after": True}, "c.json.give_up_after: expected a non-negative integer"),
        ({"description": [1]}, "c.json.description: expected a text"),
        ({"based_on": 3}, "c.json.based_on: expected a contract name"),
        (
            {"based_on": "ordred"},
            "c.json.based_on: unknown contract 'ordred' (known: seqnum, ordered, stable-id, "
            "read-set, no-divergence-check)",
        ),
        (
            {"base": "ordered"},
            "c.json.base: unknown field (known: name, based_on, description, and the rules "
            "match, on_miss, wait, record_order, give_up_after, split_order, "
            "give_up_on_timeout, durable_invalidation, invalidation_scope)",
        ),
    ],
)
def test_a_contract_file_with_a_wrong_type_is_refused(
    tmp_path: Path, rules: dict[str, object], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"based_on": "ordered", **rules}))
    for command in (["simulate", "reversed-interleaving"], ["verify", *SMALL]):
        line = refused([*command, "--contract-file", str(path)], capsys)
        assert line.replace(str(tmp_path) + "/", "").endswith(says)


def test_an_unusable_contract_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(b"\xff\xfe")
    line = refused(["simulate", "reversed-interleaving", "--contract-file", str(path)], capsys)
    assert line.endswith("c.json: not UTF-8 text (byte 0)")
    line = refused(["simulate", "reversed-interleaving", "--contract-file", str(tmp_path)], capsys)
    assert "cannot read" in line


def test_an_output_path_that_is_not_a_folder_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "afile"
    taken.write_text("")
    line = refused(
        ["explore", "reversed-interleaving", "--contract", "seqnum", "--out", str(taken)], capsys
    )
    assert line.endswith(f"--out {taken}: not a folder")
    argv = ["verify", *SMALL, "--contract", "seqnum", "--property", "complete-reuse"]
    line = refused([*argv, "--out", str(taken / "sub")], capsys)
    assert line.startswith("replay-contract verify: error: --out ")


def test_names_do_not_lead_out_of_the_output_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    scenario = builtin("reversed-interleaving").to_json()
    scenario["name"] = str(tmp_path / "escaped")
    (tmp_path / "s.json").write_text(json.dumps(scenario))
    assert main(["explore", "s.json", "--contract", "seqnum", "--out", "eo/a"]) == 1
    contract = tmp_path / "c.json"
    contract.write_text('{"based_on": "seqnum", "name": "../../../c-escaped"}')
    argv = ["verify", *SMALL, "--contract-file", "c.json", "--property", "complete-reuse"]
    assert main([*argv, "--out", "vo/a/b"]) == 1
    capsys.readouterr()
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.json"))
    found = [w for w in written if w not in ("s.json", "c.json")]
    assert found[-1] == "vo/a/b/c-escaped-complete-reuse.json"
    assert found[:-1] and all(w.startswith("eo/a/") for w in found[:-1])
    assert all("escaped-seqnum-" in w for w in found[:-1])


def test_a_file_in_the_way_of_a_result_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "vo" / "seqnum-complete-reuse.json").mkdir(parents=True)
    argv = ["verify", *SMALL, "--contract", "seqnum", "--property", "complete-reuse"]
    line = refused([*argv, "--out", str(tmp_path / "vo")], capsys)
    assert line.endswith("cannot write seqnum-complete-reuse.json there")
    (tmp_path / "eo" / "reversed-interleaving-seqnum-no-stale-reuse.json").mkdir(parents=True)
    argv = ["explore", "reversed-interleaving", "--contract", "seqnum"]
    line = refused([*argv, "--out", str(tmp_path / "eo")], capsys)
    assert line.endswith("cannot write reversed-interleaving-seqnum-no-stale-reuse.json there")


def test_a_line_break_in_a_file_name_stays_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad\nname.json"
    path.write_text("{")
    line = refused(["simulate", str(path)], capsys)
    assert "bad\\nname.json: line 1 column 2: invalid JSON" in line
