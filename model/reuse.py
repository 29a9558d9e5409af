"""The rules of a contract: accepting an input and running its actions.

An accepted input takes the key's next position. For each action of the agent's plan
the saved completion is looked up (by position, by identity, or by the values the action
reads, as the contract says) and reused; on a miss the contract may first invalidate the
key's saved suffix, then the tools are called, the action executes and its completion is
saved. The input's position is recorded as the contract's ``record_order`` says: before
the first tool call, with the first completion, or in an entry of its own after the
actions (docs/contract.md, "How ``ordered`` records and restores the order").
"""

from __future__ import annotations

from . import trace as t
from .agent import execute, read
from .fallback import invalidate
from .keyed import Host
from .store import Completion, Invalidation, Lookup, OrderEntry
from .topology import Record


def accept(host: Host, record: Record, recorded: bool) -> None:
    """Accept ``record`` at its key's next position (``recorded``: the position is in
    the store already) and run its actions."""
    c = host.contract
    ks = host.state(record.key)
    key, ident, dig = record.key, record.identity, record.digest
    position = ks.next_position
    memory = dict(ks.memory)
    ks.next_position += 1
    host.report(t.Accept(key, position, ident, dig))
    ordered = recorded or c.record_order == "no"
    if c.record_order == "before-first-tool-call" and not ordered:
        record_position(host, record, position)
        ordered = True
    for path, action in host.agent.plan():
        reads = read(memory, action)
        found = host.view().find(
            key,
            Lookup(
                path,
                ident,
                dig,
                position=position if c.match == "position" else None,
                reads=reads if c.match == "reads" else None,
            ),
        )
        if found is not None:
            index, saved = found
            host.report(t.Reuse(key, position, ident, dig, path, index, reads))
            writes, outputs = saved.writes, saved.outputs
        else:
            if c.on_miss == "invalidate":
                inv = Invalidation(key, position, keep=(ident, dig))
                if host.view().voided_by(inv):
                    invalidate(host, key, inv)
            results = tuple(
                (tool, host.tool(key, position, record, path, tool, reads)) for tool in action.tools
            )
            effects = execute(action, path, record, reads, results)
            writes, outputs = effects.writes, effects.outputs
            carries = c.record_order == "with-first-completion" and not ordered
            completion = Completion(
                key,
                position,
                ident,
                dig,
                path,
                reads,
                writes,
                outputs,
                carries,
                record.channel,
                record.offset,
            )
            index = host.write(completion)
            host.report(t.Save(key, position, ident, dig, path, index, reads, carries))
            ordered = ordered or carries
        memory.update(writes)
        for value in outputs:
            host.output(key, ident, path, value)
    if not ordered:
        record_position(host, record, position)
    ks.memory = memory


def record_position(host: Host, record: Record, position: int) -> None:
    """Write the input's position in an entry of its own."""
    key, ident, dig = record.key, record.identity, record.digest
    host.write(OrderEntry(key, position, ident, dig, record.channel, record.offset))
    host.report(t.Order(key, position, ident, dig))
