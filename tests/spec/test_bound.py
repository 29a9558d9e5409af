from __future__ import annotations

import pytest

from replay_contract.spec.bound import DEFAULT, Bound, BoundError, parse


def test_parse_and_print() -> None:
    b = parse("inputs=3,channels=2,keys=1,crashes=1")
    assert b == Bound(3, 2, 1, 1)
    assert parse(str(b)) == b
    assert parse("agents=stateful,changes=0").agents == ("stateful",)
    assert parse("") == DEFAULT


@pytest.mark.parametrize("text", ["inputs", "inputs=x", "colour=2", "inputs=0", "agents=nobody"])
def test_refused(text: str) -> None:
    with pytest.raises(BoundError):
        parse(text)
