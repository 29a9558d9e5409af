"""Forked solver workers end on SIGTERM and SIGHUP by the signal's default action,
whatever handlers the command line set in the process that forked them."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from collections.abc import Iterator

import pytest

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


def _handlers() -> list[bool]:
    return [signal.getsignal(s) is signal.SIG_DFL for s in (signal.SIGTERM, signal.SIGHUP)]


@pytest.mark.usefixtures("command_line_handlers")
def test_a_worker_does_not_keep_the_command_lines_handlers() -> None:
    assert _handlers() == [False, False]  # the parent's, as the command line set them
    with mp.get_context("fork").Pool(1, die_with_parent, (os.getpid(),)) as pool:
        assert pool.apply(_handlers) == [True, True]
    assert _handlers() == [False, False]
