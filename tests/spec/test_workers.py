"""Forked solver workers end when they are told to, whatever handlers the command line
set in the process that forked them."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from collections.abc import Iterator

import pytest
import z3

from replay_contract.cli import stop_as_on_ctrl_c
from replay_contract.spec.workers import die_with_parent


@pytest.fixture
def command_line_handlers() -> Iterator[None]:
    """SIGTERM and SIGHUP handled as ``replay-contract`` handles them (as Ctrl-C)."""
    restore = stop_as_on_ctrl_c()
    try:
        yield
    finally:
        restore()


def _pigeons(holes: int) -> str:
    """A query Z3 takes about a minute over (12 pigeons in 11 holes): a long stretch
    inside the solver, where no handler written in Python can run."""
    s = z3.Solver()
    p = [[z3.Bool(f"p{i}_{j}") for j in range(holes)] for i in range(holes + 1)]
    for row in p:
        s.add(z3.Or(*row))
    for j in range(holes):
        for i in range(holes + 1):
            for k in range(i + 1, holes + 1):
                s.add(z3.Or(z3.Not(p[i][j]), z3.Not(p[k][j])))
    return str(s.check())


@pytest.mark.usefixtures("command_line_handlers")
def test_terminate_stops_a_worker_inside_the_solver() -> None:
    """As when one agent refutes every property and the other's queries are dropped."""
    with mp.get_context("fork").Pool(1, die_with_parent, (os.getpid(),)) as pool:
        pool.apply_async(_pigeons, (11,))
        time.sleep(2)  # the worker is inside the query
        started = time.monotonic()
        pool.terminate()
        waited = time.monotonic() - started
    assert waited < 20, f"terminate waited {waited:.0f} s for the query to end"


@pytest.mark.usefixtures("command_line_handlers")
def test_the_parent_keeps_its_handlers() -> None:
    with mp.get_context("fork").Pool(1, die_with_parent, (os.getpid(),)) as pool:
        assert pool.apply(_pigeons, (2,)) == "unsat"
    assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    assert signal.getsignal(signal.SIGHUP) is not signal.SIG_DFL
