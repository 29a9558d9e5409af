"""The exit status of every command, in one table: :data:`TABLE` (docs/reference/cli.md
and ``replay-contract --help`` show it).

A worse status wins: 3 over 1 over 0 (an answer that could not be had is not hidden by
another that was).
"""

from __future__ import annotations

from collections.abc import Iterable

HOLDS = 0
BROKEN = 1
BAD_INPUT = 2
NO_ANSWER = 3
INTERRUPTED = 130

#: The table above, as rows (status, meaning): the documentation is generated from it.
TABLE = (
    (HOLDS, "everything asked about holds: no property broken, every scenario passed"),
    (
        BROKEN,
        "a property is broken (simulate, explore, verify), a conformance scenario failed "
        "(conform), or a verdict differs from spec/manifest.json (verify --manifest)",
    ),
    (BAD_INPUT, "bad input, refused before any work is done; one line names the problem"),
    (
        NO_ANSWER,
        "no answer: an unknown verdict, an infrastructure error (a server that went away "
        "or cannot start, a target that died or hung, a deadline reached), or a service "
        "that is not running (services status)",
    ),
    (
        INTERRUPTED,
        "interrupted (Ctrl-C, SIGTERM or SIGHUP); conform still prints and writes what it has",
    ),
)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, taken as Ctrl-C; its text is the signal's name."""


def interruption(exc: KeyboardInterrupt) -> str:
    """What stopped a command: ``Ctrl-C`` or the signal's name."""
    return str(exc) if isinstance(exc, Terminated) else "Ctrl-C"


class InfrastructureError(Exception):
    """Something the command needs is not there any more (a server went away, a target
    process died): not bad input and not a verdict. Printed as one line, exit status
    :data:`NO_ANSWER`."""


def worst(statuses: Iterable[int]) -> int:
    """The status of several answers: 3 over 1 over 0."""
    rank = {HOLDS: 0, BROKEN: 1, NO_ANSWER: 2}
    return max(statuses, key=lambda s: rank.get(s, 3), default=HOLDS)
