"""The seven properties of the replay contract, each a predicate over a trace.

Every predicate returns a :class:`Verdict`: whether the property holds and, when it
does not, the witness (the indexes of the trace events that show the violation) and a
one-line explanation.

The predicates judge the *effective* timeline: a ``restore`` rolls the operator's
accepted histories and the delivered inputs back to the checkpoint it restores, while
durable saves and tool calls, being outside the operator, stay.
"""

from __future__ import annotations

import sys
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from attrs import frozen

from replay_contract.model import trace as t
from replay_contract.model.agent import run_without_failure
from replay_contract.model.topology import Key, Record, key_text

NO_STALE_REUSE = "no-stale-reuse"
KEY_ISOLATION = "key-isolation"
NO_LOST_INPUT = "no-lost-input"
EQUIVALENT_OUTCOME = "equivalent-outcome"
DIVERGENCE_SAFEGUARD = "divergence-safeguard"
COMPLETE_REUSE = "complete-reuse"
BOUNDED_WAITING = "bounded-waiting"

PROPERTIES = (
    NO_STALE_REUSE,
    KEY_ISOLATION,
    NO_LOST_INPUT,
    EQUIVALENT_OUTCOME,
    DIVERGENCE_SAFEGUARD,
    COMPLETE_REUSE,
    BOUNDED_WAITING,
)

Input = tuple[str, str]  # identity, digest
K = tuple[str, Any]  # a key, typed so that 1 and "1" stay apart


def _k(key: Key) -> K:
    return (type(key).__name__, key)


@frozen
class Verdict:
    property: str
    holds: bool
    witness: tuple[int, ...] = ()
    explanation: str = ""


def _holds(name: str) -> Verdict:
    return Verdict(name, True)


class _Histories:
    """Accepted histories as the nodes of a trie, so that equal histories are one node:
    comparing two histories (or two prefixes of them) is comparing two numbers, and
    keeping one for later is keeping a number."""

    def __init__(self) -> None:
        self.parent: list[int] = [0]
        self.item: list[Input] = [("", "")]
        self.depth: list[int] = [0]
        self.child: dict[tuple[int, Input], int] = {}

    def extend(self, node: int, item: Input) -> int:
        found = self.child.get((node, item))
        if found is None:
            found = self.child[(node, item)] = len(self.parent)
            self.parent.append(node)
            self.item.append(item)
            self.depth.append(self.depth[node] + 1)
        return found

    def items(self, node: int) -> list[Input]:
        out = []
        while node:
            out.append(self.item[node])
            node = self.parent[node]
        out.reverse()
        return out

    def path(self, node: int, old: list[int] | None) -> list[int]:
        """The nodes from the root to ``node``, reusing ``old`` (a path) where it agrees."""
        depth = self.depth[node]
        if old is not None and len(old) > depth and old[depth] == node:
            del old[depth + 1 :]
            return old
        tail = []
        while old is None or len(old) <= self.depth[node] or old[self.depth[node]] != node:
            tail.append(node)
            if node == 0:
                old = []
                break
            node = self.parent[node]
        else:
            del old[self.depth[node] + 1 :]
        tail.reverse()
        old.extend(tail)
        return old


class _Timeline:
    """Per-key accepted histories and delivered inputs along the effective timeline.

    A checkpoint keeps, per key, the node of its history and of its delivered inputs; a
    restore goes back to them. Both cost the number of keys, not the length of the run.
    """

    def __init__(self) -> None:
        self.histories = _Histories()
        self.paths: dict[K, list[int]] = {}
        self.delivered_at: dict[K, int] = {}
        self.delivered_nodes: list[tuple[int, tuple[Input, int]]] = [(0, (("", ""), -1))]
        self.saved: dict[int, tuple[dict[K, int], dict[K, int]]] = {0: ({}, {})}
        self.last_restore_dead: dict[K, list[Input]] = {}

    def length(self, key: Key) -> int:
        path = self.paths.get(_k(key))
        return 0 if path is None else len(path) - 1

    def prefix(self, key: Key, position: int) -> int:
        """The node of the key's first ``position`` accepted inputs (all, if fewer)."""
        path = self.paths.get(_k(key))
        if path is None:
            return 0
        return path[min(position, len(path) - 1)]

    def of(self, key: Key) -> list[Input]:
        path = self.paths.get(_k(key))
        return [] if path is None else self.histories.items(path[-1])

    def history(self) -> dict[K, list[Input]]:
        """Every key's accepted history, keys in the order the timeline knows them."""
        return {k: self.histories.items(path[-1]) for k, path in self.paths.items()}

    def delivered(self) -> dict[K, list[tuple[Input, int]]]:
        """Every key's delivered inputs with the index of their ``deliver`` event."""
        out = {}
        for k, node in self.delivered_at.items():
            items = []
            while node:
                node, item = self.delivered_nodes[node]
                items.append(item)
            items.reverse()
            out[k] = items
        return out

    def step(self, index: int, event: t.Event) -> None:
        kind = type(event)
        if kind not in _TIMELINE_EVENTS:
            return
        if kind is t.Accept:
            assert isinstance(event, t.Accept)
            path = self.paths.get((type(event.key).__name__, event.key))
            if path is None:
                path = self.paths[_k(event.key)] = [0]
            path.append(self.histories.extend(path[-1], (event.identity, event.digest)))
        elif isinstance(event, t.Deliver):
            k = _k(event.key)
            self.delivered_nodes.append(
                (self.delivered_at.get(k, 0), ((event.identity, event.digest), index))
            )
            self.delivered_at[k] = len(self.delivered_nodes) - 1
        elif isinstance(event, t.Checkpoint):
            self.saved[event.checkpoint] = (
                {k: path[-1] for k, path in self.paths.items()},
                dict(self.delivered_at),
            )
        elif isinstance(event, t.Restore):
            history, delivered = self.saved.get(event.checkpoint, ({}, {}))
            self.last_restore_dead = {
                k: [
                    self.histories.item[n]
                    for n in path[self.histories.depth[history[k]] + 1 if k in history else 1 :]
                ]
                for k, path in self.paths.items()
            }
            self.paths = {
                k: self.histories.path(node, self.paths.get(k)) for k, node in history.items()
            }
            self.delivered_at = dict(delivered)


#: The events that move the timeline.
_TIMELINE_EVENTS = frozenset({t.Accept, t.Deliver, t.Checkpoint, t.Restore})


def _walk(trace: t.Trace) -> Iterator[tuple[int, t.Event, _Timeline]]:
    """Each event with the timeline as it stands *before* the event."""
    timeline = _Timeline()
    for index, event in enumerate(trace.events):
        yield index, event, timeline
        timeline.step(index, event)


def histories_before(trace: t.Trace, indexes: Iterable[int]) -> dict[int, dict[K, list[Input]]]:
    """Every key's accepted history as it stands just before each event of ``indexes``
    (what a witness shows next to its events)."""
    wanted = set(indexes)
    out: dict[int, dict[K, list[Input]]] = {}
    for i, _, tl in _walk(trace):
        if i in wanted:
            out[i] = tl.history()
            if len(out) == len(wanted):
                break
    return out


# -- no-stale-reuse ---------------------------------------------------------------------


def no_stale_reuse(trace: t.Trace) -> Verdict:
    """A completion is reused only where the key's preceding accepted history (or, for a
    contract whose basis is ``reads``, every value the action read) equals the one it
    was computed under."""
    saves: dict[int, tuple[int, int, tuple[Any, ...]]] = {}
    for i, e, tl in _walk(trace):
        if isinstance(e, t.Save):
            saves[e.completion] = (i, tl.prefix(e.key, e.position), e.reads)
        elif isinstance(e, t.Reuse):
            if e.completion not in saves:
                return Verdict(
                    NO_STALE_REUSE,
                    False,
                    (i,),
                    f"reuses completion {e.completion}, which was never saved",
                )
            s, then, reads = saves[e.completion]
            if trace.basis == "reads":
                if reads != e.reads:
                    return Verdict(
                        NO_STALE_REUSE,
                        False,
                        (s, i),
                        f"{e.identity} reuses a completion that read {list(reads)}"
                        f" but reads {list(e.reads)} now",
                    )
                continue
            now = tl.prefix(e.key, e.position)
            if now != then:
                items = tl.histories.items
                return Verdict(
                    NO_STALE_REUSE,
                    False,
                    (s, i),
                    f"{e.identity} at position {e.position} of key "
                    f"{key_text(e.key)} reuses a completion computed after "
                    f"{_ids(items(then))} but follows {_ids(items(now))} now"
                    f"{_changed(items(then), items(now))}",
                )
    return _holds(NO_STALE_REUSE)


def _ids(history: tuple[Input, ...] | list[Input]) -> str:
    return "[" + ", ".join(i for i, _ in history) + "]"


def _changed(then: list[Input], now: list[Input]) -> str:
    """When two histories differ only in payloads, which inputs came back changed."""
    if [i for i, _ in then] != [i for i, _ in now]:
        return ""
    changed = [i for (i, a), (_, b) in zip(then, now, strict=True) if a != b]
    return f" ({', '.join(changed)} came back with another payload)"


# -- key-isolation ----------------------------------------------------------------------


def key_isolation(trace: t.Trace) -> Verdict:
    """Nothing done for one key (reuse, invalidation, waiting, positions) touches
    another: positions count per key, and a key reuses, invalidates and waits for its
    own entries and inputs only."""
    owner: dict[int, K] = {}
    record_key: dict[str, K] = {}
    for i, e, tl in _walk(trace):
        if isinstance(e, t.Deliver):
            record_key[e.identity] = _k(e.key)
        elif isinstance(e, t.Accept):
            if e.position != tl.length(e.key):
                return Verdict(
                    KEY_ISOLATION,
                    False,
                    (i,),
                    f"key {key_text(e.key)} accepts {e.identity} at position "
                    f"{e.position}, but it has {tl.length(e.key)} inputs",
                )
        elif isinstance(e, t.Save):
            owner[e.completion] = _k(e.key)
        elif isinstance(e, t.Reuse):
            if owner.get(e.completion, _k(e.key)) != _k(e.key):
                return Verdict(
                    KEY_ISOLATION,
                    False,
                    (i,),
                    f"key {key_text(e.key)} reuses completion {e.completion} of another key",
                )
        elif isinstance(e, t.Invalidate):
            foreign = [c for c in e.completions if owner.get(c, _k(e.key)) != _k(e.key)]
            if foreign:
                return Verdict(
                    KEY_ISOLATION,
                    False,
                    (i,),
                    f"a divergence of key {key_text(e.key)} invalidates "
                    f"completions {foreign} of other keys",
                )
        elif (
            isinstance(e, t.Wait)
            and e.awaiting
            and record_key.get(e.awaiting, _k(e.key)) != _k(e.key)
        ):
            return Verdict(
                KEY_ISOLATION,
                False,
                (i,),
                f"{e.identity} of key {key_text(e.key)} waits for {e.awaiting} of another key",
            )
    return _holds(KEY_ISOLATION)


# -- no-lost-input ----------------------------------------------------------------------


def no_lost_input(trace: t.Trace) -> Verdict:
    """Every delivered input is accepted into its key's history exactly once."""
    tl = _Timeline()
    for i, e in enumerate(trace.events):
        tl.step(i, e)
    history = tl.history()
    for key, delivered in tl.delivered().items():
        accepted = [identity for identity, _ in history.get(key, [])]
        counts = Counter(accepted)
        for (identity, _), index in delivered:
            count = counts[identity]
            if count != 1:
                what = "never accepted" if count == 0 else f"accepted {count} times"
                return Verdict(
                    NO_LOST_INPUT,
                    False,
                    (index,),
                    f"{identity} of key {key_text(key[1])} was delivered but {what}",
                )
        delivered_ids = {identity for (identity, _), _ in delivered}
        for identity in accepted:
            if identity not in delivered_ids:
                return Verdict(
                    NO_LOST_INPUT,
                    False,
                    (),
                    f"{identity} of key {key_text(key[1])} was accepted but never delivered",
                )
    return _holds(NO_LOST_INPUT)


# -- equivalent-outcome -----------------------------------------------------------------


def equivalent_outcome(trace: t.Trace) -> Verdict:
    """The outputs and memory of the run equal those of a failure-free run over the same
    accepted per-key order (outputs count once committed: a checkpoint commits them, a
    crash drops those not yet committed, the end of input commits the rest)."""
    tl = _Timeline()
    payloads: dict[Input, Record] = {}
    pending: list[t.Output] = []
    committed: list[t.Output] = []
    end: t.End | None = None
    end_index = len(trace.events)
    for i, e in enumerate(trace.events):
        tl.step(i, e)
        if isinstance(e, t.Deliver):
            payloads[(e.identity, e.digest)] = Record(
                e.identity, e.key, e.payload, e.channel, e.offset
            )
        elif isinstance(e, t.Output):
            pending.append(e)
        elif isinstance(e, t.Checkpoint):
            committed.extend(pending)
            pending = []
        elif isinstance(e, t.Crash):
            pending = []
        elif isinstance(e, t.End):
            committed.extend(pending)
            pending, end, end_index = [], e, i
    memory = {_k(k): dict(fields) for k, fields in end.memory} if end else {}
    committed_of: dict[K, list[str]] = {}
    for o in committed:
        committed_of.setdefault(_k(o.key), []).append(o.value)
    for key, history in tl.history().items():
        mem: dict[str, Any] = {}
        outputs: list[str] = []
        for item in history:
            mem, out = run_without_failure(trace.agent, mem, payloads[item])
            outputs.extend(out)
        got_outputs = committed_of.get(key, [])
        if got_outputs != outputs:
            return Verdict(
                EQUIVALENT_OUTCOME,
                False,
                (end_index,),
                f"key {key_text(key[1])} emitted {got_outputs}, a failure-free "
                f"run over {_ids(history)} emits {outputs}",
            )
        if end is not None and memory.get(key, {}) != mem:
            return Verdict(
                EQUIVALENT_OUTCOME,
                False,
                (end_index,),
                f"key {key_text(key[1])} ends with memory {memory.get(key, {})}, "
                f"a failure-free run over {_ids(history)} ends with {mem}",
            )
    return _holds(EQUIVALENT_OUTCOME)


# -- divergence-safeguard ---------------------------------------------------------------


def divergence_safeguard(trace: t.Trace) -> Verdict:
    """When a different input appears at a recorded position, no completion saved before
    that is reused for the key at or after the position."""
    recorded: dict[tuple[K, int], Input] = {}
    divergences: dict[K, list[tuple[int, int]]] = {}  # per key: event index, position
    saved_at: dict[int, int] = {}
    for i, e in enumerate(trace.events):
        if isinstance(e, t.Accept):
            slot = (_k(e.key), e.position)
            before = recorded.get(slot)
            if before is not None and before != (e.identity, e.digest):
                divergences.setdefault(_k(e.key), []).append((i, e.position))
            recorded[slot] = (e.identity, e.digest)
        elif isinstance(e, t.Save):
            saved_at[e.completion] = i
        elif isinstance(e, t.Reuse):
            of_key = divergences.get(_k(e.key), [])
            after = bisect_right(of_key, (saved_at.get(e.completion, -1), sys.maxsize))
            for d, position in of_key[after:]:
                if e.position >= position:
                    return Verdict(
                        DIVERGENCE_SAFEGUARD,
                        False,
                        (d, i),
                        f"key {key_text(e.key)} diverged at position {position}, "
                        f"yet {e.identity} at position {e.position} reuses a "
                        "completion saved before",
                    )
    return _holds(DIVERGENCE_SAFEGUARD)


# -- complete-reuse ---------------------------------------------------------------------


def repeated_tool_calls(trace: t.Trace) -> list[tuple[int, int]]:
    """Tool calls for an action whose completion was already saved: (save, call) pairs."""
    saves: dict[tuple[K, str, str, tuple[str, ...]], int] = {}
    repeats = []
    for i, e in enumerate(trace.events):
        if isinstance(e, t.Save):
            saves.setdefault((_k(e.key), e.identity, e.digest, e.path), i)
        elif isinstance(e, t.Tool):
            s = saves.get((_k(e.key), e.identity, e.digest, e.path))
            if s is not None:
                repeats.append((s, i))
    return repeats


def complete_reuse(trace: t.Trace) -> Verdict:
    """When every recorded input of a key comes back unchanged, no tool call is repeated
    for an action of that key whose completion was saved before the failure.

    An input is *recorded* when it was accepted in a timeline that a restore rolled
    back; it *comes back* when it is accepted again after that restore with the same
    digest. A key one of whose recorded inputs never comes back, comes back changed, or
    has not come back when the wait bound passes (a ``timeout``: the contract may give it
    up then) is outside this property (its saved suffix may have to run again).
    """
    outstanding: dict[K, dict[str, str]] = {}
    unclean: set[K] = set()
    tl = _Timeline()
    for i, e in enumerate(trace.events):
        tl.step(i, e)
        if isinstance(e, t.Restore):
            for key, dead in tl.last_restore_dead.items():
                for identity, dg in dead:
                    outstanding.setdefault(key, {})[identity] = dg
        elif isinstance(e, t.Accept):
            waiting = outstanding.get(_k(e.key), {})
            if e.identity in waiting and waiting.pop(e.identity) != e.digest:
                unclean.add(_k(e.key))
        elif isinstance(e, t.Timeout):
            unclean.update(k for k, v in outstanding.items() if v)
    unclean.update(k for k, v in outstanding.items() if v)
    for s, i in repeated_tool_calls(trace):
        call = trace.events[i]
        assert isinstance(call, t.Tool)
        if _k(call.key) not in unclean:
            return Verdict(
                COMPLETE_REUSE,
                False,
                (s, i),
                f"{call.identity} of key {key_text(call.key)} calls "
                f"{call.tool} again for {'>'.join(call.path)}, whose completion "
                "was saved before the failure",
            )
    return _holds(COMPLETE_REUSE)


# -- bounded-waiting --------------------------------------------------------------------


def bounded_waiting(trace: t.Trace) -> Verdict:
    """No input still waits when processing time has passed the contract's wait bound
    (a ``timeout`` event, which closes the step that acted on it): how long an input
    waits is bounded by time, whether or not more input arrives.

    Waiting belongs to the operator's keyed state: a checkpoint saves which inputs wait,
    a restore brings that back (inputs delivered after the checkpoint come again)."""
    waiting: dict[str, int] = {}  # identity -> index of its wait event
    saved: dict[int, dict[str, int]] = {0: {}}
    for i, e in enumerate(trace.events):
        if isinstance(e, t.Wait):
            waiting[e.identity] = i
        elif isinstance(e, t.Accept):
            waiting.pop(e.identity, None)
        elif isinstance(e, t.Checkpoint):
            saved[e.checkpoint] = dict(waiting)
        elif isinstance(e, t.Restore):
            waiting = dict(saved.get(e.checkpoint, {}))
        elif isinstance(e, t.Timeout) and waiting:
            first = min(waiting.values())
            wait = trace.events[first]
            assert isinstance(wait, t.Wait)
            return Verdict(
                BOUNDED_WAITING,
                False,
                (first, i),
                f"{wait.identity} of key {key_text(wait.key)} still waits for "
                f"{wait.awaiting or 'its recorded predecessor'} after the wait bound passed",
            )
    return _holds(BOUNDED_WAITING)


CHECKS: dict[str, Callable[[t.Trace], Verdict]] = {
    NO_STALE_REUSE: no_stale_reuse,
    KEY_ISOLATION: key_isolation,
    NO_LOST_INPUT: no_lost_input,
    EQUIVALENT_OUTCOME: equivalent_outcome,
    DIVERGENCE_SAFEGUARD: divergence_safeguard,
    COMPLETE_REUSE: complete_reuse,
    BOUNDED_WAITING: bounded_waiting,
}


def check(name: str, trace: t.Trace) -> Verdict:
    return CHECKS[name](trace)


def check_all(trace: t.Trace) -> list[Verdict]:
    return [check(name, trace) for name in PROPERTIES]
