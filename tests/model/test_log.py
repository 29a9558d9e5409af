"""A Log shared by successive worlds keeps, for every world, exactly its own entries."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from replay_contract.model.log import Log


@given(st.lists(st.tuples(st.integers(0, 5), st.lists(st.integers(), max_size=3)), max_size=12))
def test_every_branch_keeps_its_own_entries(moves: list[tuple[int, list[int]]]) -> None:
    logs: list[Log[int]] = [Log()]
    plain: list[tuple[int, ...]] = [()]
    for parent, more in moves:
        at = parent % len(logs)
        logs.append(logs[at] + more)
        plain.append(plain[at] + tuple(more))
        for log, expected in zip(logs, plain, strict=True):
            assert log == expected
            assert tuple(log) == expected
            assert len(log) == len(expected)
            assert list(reversed(log)) == list(reversed(expected))
            assert log[1:] == expected[1:]
            if expected:
                assert log[-1] == expected[-1]


def test_a_log_is_a_sequence_that_compares_with_tuples() -> None:
    log = Log([1, 2]).appended(3)
    assert log == (1, 2, 3)
    assert (1, 2, 3) == log  # noqa: SIM300 (the tuple on the left, on purpose)
    assert log != (1, 2)
    assert log[0:2] == (1, 2)
    assert isinstance(log[0:2], tuple)
    assert log.__add__(()) is log  # appending nothing shares the log
