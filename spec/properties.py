"""The six properties of the replay contract, each a predicate over a trace.

Every predicate returns a :class:`Verdict`: whether the property holds and, when it
does not, the witness (the indexes of the trace events that show the violation) and a
one-line explanation.

The predicates judge the *effective* timeline: a ``restore`` rolls the operator's
accepted histories and the delivered inputs back to the checkpoint it restores, while
durable saves and tool calls, being outside the operator, stay.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
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

PROPERTIES = (
    NO_STALE_REUSE,
    KEY_ISOLATION,
    NO_LOST_INPUT,
    EQUIVALENT_OUTCOME,
    DIVERGENCE_SAFEGUARD,
    COMPLETE_REUSE,
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


class _Timeline:
    """Per-key accepted histories and delivered inputs along the effective timeline."""

    def __init__(self) -> None:
        self.history: dict[K, list[Input]] = {}
        self.delivered: dict[K, list[tuple[Input, int]]] = {}
        self.saved: dict[int, tuple[dict[K, list[Input]], dict[K, list[tuple[Input, int]]]]] = {
            0: ({}, {})
        }
        self.last_restore_dead: dict[K, list[Input]] = {}

    def of(self, key: Key) -> list[Input]:
        return self.history.get(_k(key), [])

    def step(self, index: int, event: t.Event) -> None:
        if isinstance(event, t.Accept):
            self.history.setdefault(_k(event.key), []).append((event.identity, event.digest))
        elif isinstance(event, t.Deliver):
            self.delivered.setdefault(_k(event.key), []).append(
                ((event.identity, event.digest), index)
            )
        elif isinstance(event, t.Checkpoint):
            self.saved[event.checkpoint] = (
                {k: list(v) for k, v in self.history.items()},
                {k: list(v) for k, v in self.delivered.items()},
            )
        elif isinstance(event, t.Restore):
            history, delivered = self.saved.get(event.checkpoint, ({}, {}))
            self.last_restore_dead = {
                k: v[len(history.get(k, [])) :] for k, v in self.history.items()
            }
            self.history = {k: list(v) for k, v in history.items()}
            self.delivered = {k: list(v) for k, v in delivered.items()}


def _walk(trace: t.Trace) -> Iterator[tuple[int, t.Event, _Timeline]]:
    """Each event with the timeline as it stands *before* the event."""
    timeline = _Timeline()
    for index, event in enumerate(trace.events):
        yield index, event, timeline
        timeline.step(index, event)


# -- no-stale-reuse ---------------------------------------------------------------------


def no_stale_reuse(trace: t.Trace) -> Verdict:
    """A completion is reused only where the key's preceding accepted history (or, for a
    contract whose basis is ``reads``, every value the action read) equals the one it
    was computed under."""
    saves: dict[int, tuple[int, tuple[Input, ...], tuple[Any, ...]]] = {}
    for i, e, tl in _walk(trace):
        if isinstance(e, t.Save):
            saves[e.completion] = (i, tuple(tl.of(e.key)[: e.position]), e.reads)
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
            now = tuple(tl.of(e.key)[: e.position])
            if now != then:
                return Verdict(
                    NO_STALE_REUSE,
                    False,
                    (s, i),
                    f"{e.identity} at position {e.position} of key "
                    f"{key_text(e.key)} reuses a completion computed after "
                    f"{_ids(then)} but follows {_ids(now)} now",
                )
    return _holds(NO_STALE_REUSE)


def _ids(history: tuple[Input, ...] | list[Input]) -> str:
    return "[" + ", ".join(i for i, _ in history) + "]"


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
            if e.position != len(tl.of(e.key)):
                return Verdict(
                    KEY_ISOLATION,
                    False,
                    (i,),
                    f"key {key_text(e.key)} accepts {e.identity} at position "
                    f"{e.position}, but it has {len(tl.of(e.key))} inputs",
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
    for key, delivered in tl.delivered.items():
        accepted = [identity for identity, _ in tl.history.get(key, [])]
        for (identity, _), index in delivered:
            count = accepted.count(identity)
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
    for key, history in tl.history.items():
        mem: dict[str, Any] = {}
        outputs: list[str] = []
        for item in history:
            mem, out = run_without_failure(trace.agent, mem, payloads[item])
            outputs.extend(out)
        got_outputs = [o.value for o in committed if _k(o.key) == key]
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
    divergences: list[tuple[K, int, int]] = []  # key, position, event index
    saved_at: dict[int, int] = {}
    for i, e, _ in _walk(trace):
        if isinstance(e, t.Accept):
            slot = (_k(e.key), e.position)
            before = recorded.get(slot)
            if before is not None and before != (e.identity, e.digest):
                divergences.append((_k(e.key), e.position, i))
            recorded[slot] = (e.identity, e.digest)
        elif isinstance(e, t.Save):
            saved_at[e.completion] = i
        elif isinstance(e, t.Reuse):
            for key, position, d in divergences:
                if (
                    key == _k(e.key)
                    and e.position >= position
                    and saved_at.get(e.completion, -1) < d
                ):
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
    digest. A key one of whose recorded inputs never comes back, or comes back changed,
    is outside this property (its saved suffix may have to run again).
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


CHECKS: dict[str, Callable[[t.Trace], Verdict]] = {
    NO_STALE_REUSE: no_stale_reuse,
    KEY_ISOLATION: key_isolation,
    NO_LOST_INPUT: no_lost_input,
    EQUIVALENT_OUTCOME: equivalent_outcome,
    DIVERGENCE_SAFEGUARD: divergence_safeguard,
    COMPLETE_REUSE: complete_reuse,
}


def check(name: str, trace: t.Trace) -> Verdict:
    return CHECKS[name](trace)


def check_all(trace: t.Trace) -> list[Verdict]:
    return [check(name, trace) for name in PROPERTIES]
