"""Deliberately broken variants of the ``ordered`` contract.

The tests and the conformance suite must catch every one of them: each breaks one rule
that the published contract depends on.
"""

from __future__ import annotations

from attrs import evolve

from .contracts import ORDERED, Contract

#: A ``give_up_after`` no run reaches: in effect, no bound at all.
NO_BOUND = 2**31 - 1

MUTANTS: dict[str, Contract] = {
    m.name: m
    for m in (
        evolve(
            ORDERED,
            name="ordered-no-wait",
            wait=False,
            description="does not wait for the recorded predecessor",
        ),
        evolve(
            ORDERED,
            name="ordered-volatile-invalidation",
            durable_invalidation=False,
            description="invalidates without a durable record",
        ),
        evolve(
            ORDERED,
            name="ordered-invalidate-every-key",
            invalidation_scope="all",
            description="invalidates the saved suffix of every key, not only the diverging one",
        ),
        evolve(
            ORDERED,
            name="ordered-identity-only",
            match="identity",
            wait=False,
            description="reuses by input identity only, at whatever position the input arrives",
        ),
        evolve(
            ORDERED,
            name="ordered-no-give-up-bound",
            give_up_after=NO_BOUND,
            description="never gives up while inputs wait, only at the end of input",
        ),
        evolve(
            ORDERED,
            name="ordered-ignores-timeout",
            give_up_on_timeout=False,
            description="keeps waiting when the wait bound passes (waits without bound)",
        ),
        evolve(
            ORDERED,
            name="ordered-impatient",
            give_up_after=0,
            description="gives up on a missing recorded input as soon as anything waits",
        ),
    )
}
