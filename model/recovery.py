"""How ``ordered`` records and restores the order.

After a restore each key expects the positions recorded in the store from its next
position on, while they are contiguous. An arriving input of a recovering key waits;
while the input at the head of the expected order is among those waiting, it is
re-accepted at its recorded position (or the key diverges if it came back changed);
once the expected order is used up, what waits is accepted in arrival order
(docs/contract.md, "How ``ordered`` records and restores the order").
"""

from __future__ import annotations

from collections.abc import Iterable

from . import trace as t
from .fallback import (
    CAME_BACK_CHANGED,
    END_OF_INPUT,
    diverge,
    give_up_before,
    give_up_on_timeout,
    give_up_waiting,
)
from .keyed import Host
from .reuse import accept
from .store import RecordedOrder
from .topology import Key, Record


def restore_order(host: Host, keys: Iterable[Key]) -> None:
    """After a restore: each key's expected order from the store, then accept what it
    allows already."""
    view = host.view()
    states = [host.state(key) for key in keys]
    for ks in states:
        ks.expected = RecordedOrder(view.recorded_order(ks.key, ks.next_position))
        ks.diverge_at = None
    for ks in states:
        advance(host, ks.key)


def arrive(host: Host, record: Record) -> None:
    """An input arrives: accepted at once, or it waits for the recorded order."""
    c = host.contract
    ks = host.state(record.key)
    if not (c.wait and ks.recovering):
        accept(host, record, recorded=False)
        return
    if c.split_order:
        give_up_before(host, ks, record)
    ks.waiting.append(record)
    advance(host, record.key)
    if any(w.identity == record.identity for w in ks.waiting):
        awaiting = ks.expected[0].identity if ks.expected else ""
        host.report(t.Wait(record.key, record.identity, awaiting))
        if give_up_waiting(host, ks):
            advance(host, record.key)


def advance(host: Host, key: Key) -> None:
    """Accept what the recorded order allows, then what waits once it is exhausted."""
    ks = host.state(key)
    while True:
        if ks.expected:
            head = ks.expected[0]
            match = next((w for w in ks.waiting if w.identity == head.identity), None)
            if match is None:
                return
            if match.digest != head.digest:
                diverge(host, key, head.position, head.identity, CAME_BACK_CHANGED)
                continue
            ks.expected = ks.expected[1:]
            ks.waiting = [w for w in ks.waiting if w is not match]
            accept(host, match, recorded=True)
        elif ks.diverge_at is not None:
            diverge(host, key, ks.diverge_at, "", "its recorded input is missing")
        else:
            waiting, ks.waiting = ks.waiting, []
            for record in waiting:
                accept(host, record, recorded=False)
            return


def end_of_input(host: Host) -> None:
    """End of input: give up every recorded input still missing, accept what waits."""
    for key in host.known_keys():
        ks = host.state(key)
        if ks.expected:
            head = ks.expected[0]
            diverge(host, key, head.position, head.identity, END_OF_INPUT)
        advance(host, key)


def timeout(host: Host) -> None:
    """Processing time passed the wait bound: every key with waiting inputs gives up what
    they wait for (:func:`.fallback.give_up_on_timeout`) and accepts them."""
    for key in host.known_keys():
        if give_up_on_timeout(host, host.state(key)):
            advance(host, key)
