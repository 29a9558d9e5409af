"""``replay-contract services`` with a recorded state that cannot be used: one line naming
the file, exit status 2, no traceback. No server is started: ``JAVA_HOME`` points nowhere,
so an ``up`` that got past the state would stop at finding Java."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay_contract.cli import main

#: A pid that no process has (above the kernel's largest, 2**22).
NO_SUCH_PID = 4_194_400

VALID = {
    "kafka": {
        "service": "kafka",
        "bootstrap": "127.0.0.1:9",
        "ports": {"broker": 9, "controller": 10},
        "processes": [{"role": "broker", "pid": NO_SUCH_PID, "started": 1}],
    },
    "fluss": {
        "service": "fluss",
        "bootstrap": "127.0.0.1:10",
        "ports": {"zookeeper": 9, "coordinator": 10, "tablet": 11},
        "processes": [
            {"role": role, "pid": NO_SUCH_PID + i, "started": None}
            for i, role in enumerate(("zookeeper", "coordinator", "tablet"))
        ],
    },
}

BAD = {
    "wrong shape": (
        '{"pids": "abc", "bootstrap": 5, "port": "x"}',
        "ports and processes are missing",
    ),
    "bootstrap": (
        '{"bootstrap": 5, "ports": {}, "processes": []}',
        "bootstrap: expected",
    ),
    "ports": ('{"bootstrap": "127.0.0.1:9", "ports": {"b": "x"}, "processes": []}', "ports.b"),
    "processes": (
        '{"bootstrap": "127.0.0.1:9", "ports": {}, "processes": {"pid": 1}}',
        "processes: expected a list",
    ),
    "pid": (
        '{"bootstrap": "127.0.0.1:9", "ports": {}, "processes": [{"role": "broker", "pid": -1}]}',
        "processes[0].pid: expected a process id above 1, got -1",
    ),
    "pid as text": (
        '{"bootstrap": "127.0.0.1:9", "ports": {}, "processes": [{"role": "broker", "pid": "12"}]}',
        "processes[0].pid",
    ),
    "array": ("[1, 2]", "expected a JSON object"),
    "not json": ("{", "invalid JSON"),
    "NaN": ('{"bootstrap": NaN}', "invalid JSON"),
}


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "state"
    monkeypatch.setenv("REPLAY_CONTRACT_STATE", str(root))
    monkeypatch.setenv("REPLAY_CONTRACT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))
    return root


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("replay-contract services: error: ")
    return lines[0]


@pytest.mark.parametrize("service", ["kafka", "fluss"])
@pytest.mark.parametrize("action", ["status", "down", "up"])
@pytest.mark.parametrize("bad", sorted(BAD))
def test_bad_state_is_one_line_naming_the_file(
    capsys: pytest.CaptureFixture[str], state: Path, service: str, action: str, bad: str
) -> None:
    text, message = BAD[bad]
    path = state / service / "state.json"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert main(["services", action, service]) == 2
    line = one_line(capsys)
    assert f"error: {path}: " in line and message in line
    assert path.read_text() == text  # left as it was


def test_status_all_names_the_bad_file(capsys: pytest.CaptureFixture[str], state: Path) -> None:
    path = state / "fluss" / "state.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"pids": "abc"}')
    assert main(["services", "status", "all"]) == 2
    assert str(path) in one_line(capsys)


@pytest.mark.parametrize("service", ["kafka", "fluss"])
def test_a_well_formed_state_of_stopped_processes_is_not_running(
    capsys: pytest.CaptureFixture[str], state: Path, service: str
) -> None:
    path = state / service / "state.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(VALID[service]))
    assert main(["services", "status", service, "--json"]) == 3
    info = json.loads(capsys.readouterr().out)
    assert info["running"] is False and info["pids"] == []
    assert main(["services", "down", service]) == 0
    assert capsys.readouterr().out.strip() == f"{service}: not running"


def test_a_state_folder_that_cannot_be_created_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPLAY_CONTRACT_STATE", "/proc/replay-contract-state")
    assert main(["services", "down", "kafka"]) == 2
    assert "/proc/replay-contract-state/kafka" in one_line(capsys)
