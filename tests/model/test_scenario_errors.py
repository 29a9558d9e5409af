"""A malformed scenario is refused with one line that names the place, exit status 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay_contract.cli import main
from replay_contract.model.catalogue import builtin
from replay_contract.model.errors import ScenarioError
from replay_contract.model.scenario import from_json, load, loads


def base() -> dict:
    return builtin("reversed-interleaving").to_json()


def refuse(data: dict | str) -> str:
    text = data if isinstance(data, str) else json.dumps(data)
    with pytest.raises(ScenarioError) as info:
        loads(text, "s.json")
    message = str(info.value)
    assert "\n" not in message
    return message


def test_bad_json_names_line_and_column() -> None:
    assert refuse('{"name": "x",\n "agent": }').startswith("s.json: line 2 column 11")


def test_unknown_record_is_named() -> None:
    data = base()
    data["schedule"][0] = {"step": "deliver", "record": "Z"}
    assert refuse(data) == "s.json: schedule[0]: deliver 'Z': no such record"


def test_delivery_out_of_channel_order_is_refused() -> None:
    data = base()
    data["schedule"][0] = {"step": "deliver", "record": "C"}
    message = refuse(data)
    assert message.startswith("s.json: schedule[0]: deliver 'C'")
    assert "delivers 'A' next" in message


def test_deliver_while_the_operator_is_down_is_refused() -> None:
    data = base()
    data["schedule"].insert(5, {"step": "deliver", "record": "B"})  # after crash, before restore
    assert "the operator is down" in refuse(data)


def test_restore_while_running_is_refused() -> None:
    data = base()
    data["schedule"].insert(0, {"step": "restore"})
    assert refuse(data) == (
        "s.json: schedule[0]: restore: the operator is running (crash it first)"
    )


def test_schedule_ending_down_is_refused() -> None:
    data = base()
    data["schedule"] = data["schedule"][:5]
    assert "ends with the operator down" in refuse(data)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["channels"][0]["records"][0].update(key=1.5),
            "channels[0].records[0].key: expected a string or an integer",
        ),
        (
            lambda d: d["channels"][0]["records"][0].update(paylod=1),
            "channels[0].records[0]: unknown field 'paylod'",
        ),
        (
            lambda d: d["channels"][0]["records"][0].pop("payload"),
            "channels[0].records[0]: missing field 'payload' (null when it has none)",
        ),
        (lambda d: d["channels"][1]["records"][0].update(id="A"), "record id 'A' appears twice"),
        (
            lambda d: d["channels"][0]["records"][0].update(replay="lost"),
            "only a channel that is not replayable",
        ),
        (lambda d: d["agent"]["actions"][0].update(trigger="nobody"), "no action emits 'nobody'"),
        (lambda d: d["schedule"][0].update(step="jump"), "schedule[0].step: unknown step 'jump'"),
        (lambda d: d["schedule"][4].update(crash_after=1), "crash_after is for deliver"),
        (lambda d: d["schedule"][0].update(crash_after=-1), "must not be negative"),
    ],
)
def test_field_errors_name_the_place(change, expected: str) -> None:
    data = base()
    change(data)
    assert expected in refuse(data)


def test_a_payload_may_be_null() -> None:
    data = base()
    data["channels"][0]["records"][0]["payload"] = None
    scenario = loads(json.dumps(data), "s.json")
    assert scenario.topology.channels[0].records[0].payload is None
    assert scenario.to_json()["channels"][0]["records"][0]["payload"] is None


def test_cycle_of_events_is_refused() -> None:
    data = base()
    data["agent"]["actions"] = [
        {"name": "a", "emits": ["e1"]},
        {"name": "b", "trigger": "e1", "emits": ["e2"]},
        {"name": "c", "trigger": "e2", "emits": ["e1"]},
    ]
    with pytest.raises(ScenarioError, match="cycle"):
        from_json(data)


def test_cli_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    data = base()
    data["schedule"][0] = {"step": "deliver", "record": "C"}
    bad.write_text(json.dumps(data))
    assert main(["simulate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "schedule[0]" in err


def test_cli_refuses_unknown_contract_and_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "reversed-interleaving", "--contract", "fifo"]) == 2
    assert "unknown contract 'fifo'" in capsys.readouterr().err
    assert main(["simulate", "no-such-scenario"]) == 2
    assert "neither a scenario file nor a built-in scenario" in capsys.readouterr().err


def test_a_name_both_a_file_here_and_a_built_in_scenario_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reversed-interleaving").write_text(json.dumps(base()))
    assert main(["simulate", "reversed-interleaving"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "both a file here and a built-in scenario" in err
    assert main(["simulate", "./reversed-interleaving", "--contract", "ordered"]) == 0


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"\xff\xfe\x00bad", "s.json: not UTF-8 text (byte 0)"),
        (b"[" * 100_000 + b"]" * 100_000, "s.json: invalid JSON (nested more than 64 levels)"),
        (b'{"agent": ' + b"[" * 70 + b"]" * 70 + b"}", "nested more than 64 levels"),
        (b'{"name": NaN}', "s.json: invalid JSON (NaN is not a JSON value)"),
        (b'{"name": -Infinity}', "-Infinity is not a JSON value"),
        (b'{"name": "a", "agent": {"actions": [1e400]}}', "invalid JSON (a number too large)"),
        (b'{"name": "\\ud800"}', "invalid JSON (a text with a lone surrogate \\ud800)"),
        (b'{"\\udfff": 1}', "lone surrogate \\udfff"),
        (b'{"name": "a", "name": "b"}', "invalid JSON (member 'name' appears twice in one object)"),
    ],
)
def test_an_unusable_file_is_one_line(tmp_path: Path, content: bytes, says: str) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(content)
    with pytest.raises(ScenarioError) as info:
        load(path)
    message = str(info.value).replace(str(tmp_path) + "/", "")
    assert says in message and "\n" not in message


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda d: d["channels"][0].update(name=""), "channels[0].name: must not be empty"),
        (lambda d: d["channels"][1].update(name="  "), "channels[1].name: must not be empty"),
        (
            lambda d: d["agent"]["actions"][0].update(name=""),
            "agent.actions[0].name: must not be empty",
        ),
        (
            lambda d: d["agent"]["actions"][0].update(trigger=""),
            "agent.actions[0].trigger: must not be empty",
        ),
        (lambda d: d.update(name=" "), "s.json.name: must not be empty"),
    ],
)
def test_empty_names_are_refused(change: Any, says: str) -> None:
    data = base()
    change(data)
    assert says in refuse(data)


def test_an_integer_key_beyond_what_json_readers_hold_is_refused() -> None:
    from replay_contract.model.scenario import MAX_INT_KEY

    data = builtin("single-upstream").to_json()
    data["channels"][0]["records"][0]["key"] = MAX_INT_KEY
    loads(json.dumps(data))  # the largest is fine
    data["channels"][0]["records"][0]["key"] = -(MAX_INT_KEY + 1)
    with pytest.raises(ScenarioError, match=r"\.key: -9007199254740992 is outside -9007"):
        loads(json.dumps(data))
