from __future__ import annotations

import argparse

import attrs
import pytest

from replay_contract.cli import build_parser
from replay_contract.spec.bound import DEFAULT, Bound, BoundError, parse


def test_parse_and_print() -> None:
    b = parse("inputs=3,channels=2,keys=1,crashes=1")
    assert b == Bound(3, 2, 1, 1)
    assert parse(str(b)) == b
    assert parse("agents=stateful,changes=0").agents == ("stateful",)
    assert parse("inputs=3") == Bound(3, DEFAULT.channels, DEFAULT.keys, DEFAULT.crashes)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("inputs", "'inputs' is not NAME=VALUE"),
        ("inputs=x", "inputs: expected an integer"),
        ("colour=2", "unknown dimension 'colour'"),
        ("inputs=0", "inputs: must be at least 1"),
        ("agents=nobody", "unknown agent 'nobody'"),
        ("", "empty"),
        (",,,", "empty"),
        ("inputs=2,keys=1,inputs=3", "inputs is given twice"),
    ],
)
def test_refused(text: str, says: str) -> None:
    with pytest.raises(BoundError, match=says):
        parse(text)


def test_the_help_of_verify_names_every_dimension_of_the_bound() -> None:
    """The help (and so docs/reference/cli.md, generated from it) names every dimension
    parse() takes."""
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    (bound,) = [a for a in commands.choices["verify"]._actions if a.dest == "bound"]
    assert bound.help is not None
    for field in attrs.fields(Bound):
        assert f"{field.name}=" in bound.help, field.name
    assert "timeouts=T" in bound.help and "bounded-waiting" in bound.help
