"""Outside the contract: giving up, divergence and invalidation.

A recorded input that does not come back is given up: when a later record of its
channel arrives (split order), when more inputs wait than the contract's bound, when
processing time passes the contract's wait bound while inputs wait for it (a ``timeout``
step), or at the end of input. The key then diverges at that position: its saved suffix is
invalidated (durably, unless the contract is a broken one) and what waits runs again in
arrival order (docs/contract.md, "Outside the contract: fallback and re-execution").
"""

from __future__ import annotations

from . import trace as t
from .keyed import Host, KeyState
from .store import Invalidation, RecordedOrder
from .topology import Key, Record

# Why a key gives up a recorded input (``GiveUp.reason``), worded here once: the model
# reports them; the symbolic machine's recorder (spec/events.py, spec/encoding.py) and
# the conformance coverage (conformance/coverage.py) take them from here.
END_OF_INPUT = "end of input"
WAIT_BOUND_PASSED = "the wait bound passed"
CAME_BACK_CHANGED = "the input came back changed"
LATER_RECORD = "a later record of channel"  # then the channel and "arrived"
MORE_WAITED = "more than"  # then the bound and "inputs waited"


def later_record_arrived(channel: str) -> str:
    return f"{LATER_RECORD} {channel!r} arrived"


def more_waited(bound: int) -> str:
    return f"{MORE_WAITED} {bound} inputs waited"


def give_up_before(host: Host, ks: KeyState, record: Record) -> None:
    """Split order: a record of a channel arrived, so an expected input of that channel
    at a lower offset that has not arrived never will; the key diverges there."""
    arrived = {w.identity for w in ks.waiting} | {record.identity}
    r = ks.expected.first_missing(record.channel, record.offset, arrived)
    if r is None:
        return
    reason = later_record_arrived(record.channel)
    host.report(t.GiveUp(record.key, r.position, r.identity, reason))
    ks.expected = ks.expected.before(r.position)
    ks.diverge_at = r.position if ks.diverge_at is None else min(ks.diverge_at, r.position)


def give_up_waiting(host: Host, ks: KeyState) -> bool:
    """More inputs wait than the contract allows: give up the expected head. Whether it
    gave up."""
    bound = host.contract.give_up_after
    if len(ks.waiting) > bound and ks.expected:
        head = ks.expected[0]
        diverge(host, ks.key, head.position, head.identity, more_waited(bound))
        return True
    return False


def give_up_on_timeout(host: Host, ks: KeyState) -> bool:
    """Processing time passed the wait bound: if inputs of the key wait, give up the
    recorded inputs they wait for, so that they run in arrival order now (bounded
    waiting, whether or not anything more arrives). A key that expects recorded inputs
    but has nothing waiting keeps expecting them. Whether it gave up."""
    if not (host.contract.give_up_on_timeout and ks.waiting and ks.expected):
        return False
    head = ks.expected[0]
    diverge(host, ks.key, head.position, head.identity, WAIT_BOUND_PASSED)
    return True


def diverge(host: Host, key: Key, position: int, missing: str, reason: str) -> None:
    """The key's history diverges at ``position``: void its saved suffix from the key's
    next position."""
    if missing:
        host.report(t.GiveUp(key, position, missing, reason))
    ks = host.state(key)
    ks.expected, ks.diverge_at = RecordedOrder(), None
    invalidate(host, key, Invalidation(key, ks.next_position))


def invalidate(host: Host, key: Key, inv: Invalidation) -> None:
    """Void the saved completions ``inv`` covers (of every key, for a contract whose
    invalidation scope is ``all``)."""
    c = host.contract
    view = host.view()
    targets = view.keys() if c.invalidation_scope == "all" else [key]
    ones = [Invalidation(target, inv.position, inv.keep) for target in targets]
    voided = [view.voided_by(one) for one in ones]
    for one, completions in zip(ones, voided, strict=True):
        if c.durable_invalidation:
            host.write(one)
            host.report(t.Invalidate(key, inv.position, completions))
        else:
            host.invalidate_in_memory(one)
            host.report(t.Invalidate(key, inv.position, completions, durable=False))
