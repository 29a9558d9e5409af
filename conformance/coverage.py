"""Which rules of a contract a suite run exercised.

A run that never makes a key wait cannot tell an implementation that waits from one that
does not; one that never has more than ``give_up_after`` inputs waiting cannot tell one
with that bound from one without. So each result records the rules of the contract that
the reference model's run of its scenario used, and the summary says how many scenarios
exercised each rule, and which rules none did.

A rule is named after the field of :class:`~replay_contract.model.contracts.Contract`
it stands for (``end-of-input`` and ``changed-input`` are the two other ways a waiting
key gives up); it applies to a contract whose fields make it happen at all, and a run
exercises it when the reference trace shows its decision (:data:`RULES`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from attrs import frozen

from replay_contract.model import fallback
from replay_contract.model import trace as t
from replay_contract.model.contracts import Contract


@frozen
class Rule:
    name: str
    what: str
    applies: Callable[[Contract], bool]
    seen: Callable[[Sequence[t.Event]], bool]


def _gave_up(why: str) -> Callable[[Sequence[t.Event]], bool]:
    """A give-up whose reason (the model's, model/fallback.py) starts with ``why``."""
    return lambda events: any(isinstance(e, t.GiveUp) and e.reason.startswith(why) for e in events)


def _any(kind: type) -> Callable[[Sequence[t.Event]], bool]:
    return lambda events: any(isinstance(e, kind) for e in events)


def _invalidates(c: Contract) -> bool:
    return c.on_miss == "invalidate" or c.wait


def _scoped(events: Sequence[t.Event]) -> bool:
    """An invalidation in a run with more than one key: the scope shows."""
    keys = {e.key for e in events if isinstance(e, t.Accept)}
    return len(keys) > 1 and any(isinstance(e, t.Invalidate) for e in events)


RULES: tuple[Rule, ...] = (
    Rule("match", "a saved completion is reused", lambda c: True, _any(t.Reuse)),
    Rule(
        "on_miss",
        "a miss invalidates the key's later entries",
        lambda c: c.on_miss == "invalidate",
        _any(t.Invalidate),
    ),
    Rule("wait", "an input waits for its recorded predecessor", lambda c: c.wait, _any(t.Wait)),
    Rule(
        "record_order",
        "an input's position is written durably",
        lambda c: c.record_order != "no",
        lambda events: any(
            isinstance(e, t.Order) or (isinstance(e, t.Save) and e.order) for e in events
        ),
    ),
    Rule(
        "give_up_after",
        "more inputs wait than give_up_after: the missing one is given up",
        lambda c: c.wait,
        _gave_up(fallback.MORE_WAITED),
    ),
    Rule(
        "split_order",
        "a later record of the missing input's channel gives it up",
        lambda c: c.wait and c.split_order,
        _gave_up(fallback.LATER_RECORD),
    ),
    Rule(
        "give_up_on_timeout",
        "the wait bound passes while inputs wait: what they wait for is given up",
        lambda c: c.wait and c.give_up_on_timeout,
        _gave_up(fallback.WAIT_BOUND_PASSED),
    ),
    Rule(
        "end-of-input",
        "the end of input gives up what is still missing",
        lambda c: c.wait,
        _gave_up(fallback.END_OF_INPUT),
    ),
    Rule(
        "changed-input",
        "a recorded input that comes back changed is given up",
        lambda c: c.wait,
        _gave_up(fallback.CAME_BACK_CHANGED),
    ),
    Rule(
        "durable_invalidation",
        "an invalidation is written to the store",
        lambda c: _invalidates(c) and c.durable_invalidation,
        lambda events: any(isinstance(e, t.Invalidate) and e.durable for e in events),
    ),
    Rule(
        "invalidation_scope",
        "an invalidation while other keys have state",
        _invalidates,
        _scoped,
    ),
)


def rules(contract: Contract) -> list[Rule]:
    """The rules that apply to ``contract``."""
    return [r for r in RULES if r.applies(contract)]


def exercised(contract: Contract, events: Sequence[t.Event]) -> tuple[str, ...]:
    """The rules of ``contract`` that a run (its trace's events) exercised."""
    return tuple(r.name for r in rules(contract) if r.seen(events))


def tally(contract: Contract, runs: Iterable[Sequence[str]]) -> dict[str, int]:
    """For each rule of ``contract``: how many runs exercised it (0: none did)."""
    counts = {r.name: 0 for r in rules(contract)}
    for names in runs:
        for name in names:
            if name in counts:
                counts[name] += 1
    return counts
