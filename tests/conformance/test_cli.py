"""``replay-contract conform`` as a user runs it, and the pytest plugin."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from replay_contract.cli import main

from .conftest import ORDERLY, conform


def test_text_output_has_the_summary_table_and_progress_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status = main(
        ["conform", "--target", "model", "--examples", "5", "--seed", "3", "--out", str(tmp_path)]
    )
    out, err = capsys.readouterr()
    assert status == 0
    header = out.splitlines()[0]
    for column in (
        "scenario",
        "verdict",
        "tool calls exp/act",
        "repeated exp/act",
        "first difference / broken property",
    ):
        assert column in header
    assert "reversed-interleaving " in out
    assert "failed" in err and "passed" in err  # the progress lines
    assert "reproduce: replay-contract conform --target model --contract ordered --seed 3" in out


def test_json_document(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, doc = conform(
        capsys,
        "--target",
        "mutant:ordered-no-wait",
        "--examples",
        "4",
        "--seed",
        "0",
        "--no-sweep",
        "--out",
        str(tmp_path),
    )
    assert status == 1
    assert {"target", "contract", "passed", "failed", "skipped", "results"} <= set(doc)
    assert doc["passed"] + doc["failed"] + doc["skipped"] == len(doc["results"])
    generated = [r for r in doc["results"] if r["name"].startswith("generated-")]
    assert [r["seed"] for r in generated] == [0, 1, 2, 3]
    for r in doc["results"]:
        assert {"name", "seed", "verdict", "property", "difference", "scenario_file"} <= set(r)
        if r["verdict"] == "failed":
            assert r["scenario_file"] and Path(r["scenario_file"]).exists()
            assert r["property"] or r["difference"]


def test_seqnum_report_shows_repeated_calls_and_where_complete_reuse_breaks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status = main(
        [
            "conform",
            "--target",
            "model",
            "--contract",
            "seqnum",
            "--examples",
            "0",
            "--no-sweep",
            "--out",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    row = next(line for line in out.splitlines() if line.startswith("reversed-interleaving"))
    assert "8 / 8" in row and "4 / 4" in row
    assert "complete-reuse breaks, as in the model: step 6 (deliver B)" in row


def test_junit_xml(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    junit = tmp_path / "report.xml"
    status, doc = conform(
        capsys,
        "--target",
        "mutant:ordered-impatient",
        "--examples",
        "3",
        "--seed",
        "0",
        "--junit",
        str(junit),
        "--out",
        str(tmp_path),
    )
    assert status == 1
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite"
    assert len(suite.findall("testcase")) == len(doc["results"])
    failures = suite.findall("testcase/failure")
    assert len(failures) == doc["failed"] == int(suite.get("failures", "0")) > 0
    assert all(f.get("message") for f in failures)


def test_a_written_scenario_replays_the_failure(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, doc = conform(
        capsys,
        "--target",
        "mutant:ordered-no-wait",
        "--examples",
        "0",
        "--no-sweep",
        "--scenario",
        "reversed-interleaving",
        "--out",
        str(tmp_path),
    )
    written = doc["results"][0]["scenario_file"]
    status, again = conform(
        capsys,
        "--target",
        "mutant:ordered-no-wait",
        "--examples",
        "0",
        "--no-sweep",
        "--scenario",
        written,
        "--out",
        str(tmp_path / "b"),
    )
    assert status == 1
    assert again["results"][0]["property"] == doc["results"][0]["property"]


@pytest.mark.parametrize(
    "args",
    [
        ["--target", "nowhere"],
        ["--target", "kafkaa"],
        ["--target", "model", "--contract", "strict"],
        ["--target", "model", "--examples", "-1"],
        ["--target", "mutant:nothing"],
        ["--target", "model", "--scenario", "no-such-scenario"],
        ["--target", "model", "--seed", "-1"],
        ["--target", "process:python3 -c 'unterminated"],
        ["--target", "mutant:ordered-no-wait", "--contract", "seqnum"],
        ["--target", "process:false"],  # exits before its first line
        ["--target", ORDERLY, "--contract", "stable-id"],  # refused once it has started
    ],
)
def test_refused_input_is_one_line_and_status_2_and_writes_nothing(
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    outputs = ["--junit", "reports/junit.xml", "--record-traces", "traces/run"]
    assert main(["conform", *args, *outputs]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("replay-contract conform: error: ")
    assert out == ""
    # not even the default --out folder (out/conformance), nor those of the outputs
    assert list(tmp_path.iterdir()) == []


def test_a_run_makes_its_output_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, junit, traces = tmp_path / "o" / "c", tmp_path / "r" / "junit.xml", tmp_path / "t"
    args = ["--target", "mutant:ordered-no-wait", "--scenario", "reversed-interleaving"]
    args += ["--examples", "0", "--no-sweep", "--out", str(out), "--junit", str(junit)]
    status, doc = conform(capsys, *args, "--record-traces", str(traces))
    assert status == 1
    assert Path(doc["results"][0]["scenario_file"]).parent.parent.parent == out
    assert junit.is_file() and list(traces.rglob("*.ndjson"))


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_pytest_plugin_collects_and_passes_the_suite(tmp_path: Path) -> None:
    done = _pytest(tmp_path, "--replay-target=model", "--replay-examples=3")
    assert done.returncode == 0, done.stdout[-2000:]
    collected = _pytest(tmp_path, "--replay-target=model", "--replay-examples=3", "--collect-only")
    assert "replay-contract[model,ordered]::generated-2" in collected.stdout
    assert "replay-contract[model,ordered]::reversed-interleaving.crash-3.3" in collected.stdout


def test_pytest_plugin_fails_a_mutant_with_the_report(tmp_path: Path) -> None:
    done = _pytest(
        tmp_path,
        "--replay-target=mutant:ordered-no-wait",
        "--replay-examples=0",
        f"--replay-out={tmp_path / 'out'}",
        "-k",
        "reversed-interleaving and not crash",
    )
    assert done.returncode == 1
    assert "<-- first difference" in done.stdout
    assert "replay:" in done.stdout and "reversed-interleaving.json" in done.stdout


def test_pytest_plugin_counts_its_scenarios_in_the_collection_line(tmp_path: Path) -> None:
    args = ["--replay-target=model", "--replay-examples=2"]
    done = _pytest(tmp_path, *args, "-k", "reversed-interleaving and not crash", "-v")
    assert done.returncode == 0, done.stdout[-2000:]
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("collected ")]
    collected, deselected = (int(w) for w in re.findall(r"\d+", line)[:2])
    assert line == f"collected {collected} items / {deselected} deselected / 1 selected"
    assert collected == deselected + 1


@pytest.mark.parametrize("where", ["a-file/out", "a-file"])
def test_pytest_plugin_refuses_an_output_folder_it_cannot_write(tmp_path: Path, where: str) -> None:
    (tmp_path / "a-file").write_text("")
    out = tmp_path / where
    done = _pytest(
        tmp_path,
        "--replay-target=mutant:ordered-no-wait",
        "--replay-examples=0",
        f"--replay-out={out}",
    )
    assert done.returncode == 4  # a usage error, before any scenario runs
    (line,) = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert line.startswith(f"ERROR: --replay-out {out}: ")
    assert "not a folder" in line or "cannot create it" in line
    assert "Traceback" not in done.stdout + done.stderr and "failed" not in done.stdout


def test_pytest_plugin_refuses_an_unknown_target(tmp_path: Path) -> None:
    done = _pytest(tmp_path, "--replay-target=nowhere")
    assert done.returncode == 4  # a usage error
    assert "unknown target 'nowhere'" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--replay-target=mutant:ordered-no-wait", "--replay-contract=seqnum"],
            "the target implements ordered, not seqnum",
        ),
        (["--replay-target=model", "--replay-examples=-1"], "--replay-examples: must not be"),
        (["--replay-target=model", "--replay-seed=-1"], "--replay-seed: must not be negative"),
    ],
)
def test_pytest_plugin_refuses_what_would_run_nothing(
    tmp_path: Path, args: list[str], message: str
) -> None:
    done = _pytest(tmp_path, *args)
    assert done.returncode == 4  # a usage error
    assert message in done.stderr and "Traceback" not in done.stderr


def test_pytest_plugin_is_cheap_to_import() -> None:
    code = (
        "import sys, replay_contract.conformance.plugin as p; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('hypothesis', 'z3', 'attrs') or m.startswith('replay_contract.model')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
