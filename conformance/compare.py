"""Comparing an implementation's trace with the reference model's, step by step.

Two traces are compared after normalising what may legitimately differ between
implementations: completion ids (the model numbers them by log index, a real store by
whatever it uses) are renumbered by first save, the completions an invalidation lists
are compared as a set, the free-text reason of a give-up is dropped, and the final
memory is compared as a mapping with empty memories left out. Everything else — every
decision, tool call, durable write and output, in order — must be equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attrs import asdict, evolve, frozen

from replay_contract.model import trace as t
from replay_contract.model.narrate import render
from replay_contract.model.scenario import Step
from replay_contract.model.topology import key_text

Steps = Sequence[tuple[Step, Sequence[t.Event]]]


def normalise(steps: Steps) -> list[list[t.Event]]:
    """The events of every step with completion ids renumbered by first save (1, 2, ...)
    and nothing left that implementations may choose freely."""
    ids: dict[int, int] = {}
    out: list[list[t.Event]] = []
    for _, events in steps:
        seg: list[t.Event] = []
        for e in events:
            if isinstance(e, t.Save):
                ids.setdefault(e.completion, len(ids) + 1)
                e = evolve(e, completion=ids[e.completion])
            elif isinstance(e, t.Reuse):
                e = evolve(e, completion=ids.get(e.completion, -1 - e.completion))
            elif isinstance(e, t.Invalidate):
                e = evolve(e, completions=tuple(sorted(ids.get(c, -1 - c) for c in e.completions)))
            elif isinstance(e, t.GiveUp):
                e = evolve(e, reason="")
            elif isinstance(e, t.End):
                e = t.End(
                    tuple(
                        sorted(
                            ((k, m) for k, m in e.memory if m),
                            key=lambda km: (type(km[0]).__name__, str(km[0])),
                        )
                    ),
                    e.step_events,
                )
            seg.append(e)
        out.append(seg)
    return out


@frozen
class Difference:
    """The first step where the two traces differ, and the event inside it."""

    step: int
    what: Step
    event: int
    expected: tuple[t.Event, ...]
    actual: tuple[t.Event, ...]

    def summary(self) -> str:
        exp, act = self._pair(self.event)
        return (
            f"step {self.step} ({self.what}): expected {exp or 'nothing'}, got {act or 'nothing'}"
        )

    def _pair(self, i: int) -> tuple[str, str]:
        x = self.expected[i] if i < len(self.expected) else None
        y = self.actual[i] if i < len(self.actual) else None
        exp = describe(x) if x is not None else ""
        act = describe(y) if y is not None else ""
        if x is not None and y is not None and x != y and exp == act:
            exp, act = exp + " " + _fields(x, y), act + " " + _fields(y, x)
        return exp, act

    def table(self) -> str:
        rows = []
        for i in range(max(len(self.expected), len(self.actual))):
            exp, act = self._pair(i)
            mark = "" if i < self.event else ("<-- first difference" if i == self.event else "")
            rows.append((str(i), exp, act, mark))
        head = f"schedule[{self.step}] {self.what}: first difference at event {self.event}"
        return head + "\n" + render(("#", "reference model", "implementation", ""), rows)


def first_difference(expected: Steps, actual: Steps) -> Difference | None:
    """Where the normalised traces first differ, or ``None`` when they agree."""
    exp, act = normalise(expected), normalise(actual)
    for i in range(max(len(exp), len(act))):
        e = exp[i] if i < len(exp) else []
        a = act[i] if i < len(act) else []
        if e != a:
            at = next(
                (j for j, (x, y) in enumerate(zip(e, a, strict=False)) if x != y),
                min(len(e), len(a)),
            )
            what = (expected[i] if i < len(expected) else actual[i])[0]
            return Difference(i, what, at, tuple(e), tuple(a))
    return None


def _fields(x: t.Event, y: t.Event) -> str:
    """The fields of ``x`` whose values differ from those of ``y``."""
    if type(x) is not type(y):
        return ""
    diff = [f"{k}={v!r}" for k, v in asdict(x, recurse=False).items() if getattr(y, k) != v]
    return "{" + ", ".join(diff) + "}"


def describe(e: t.Event) -> str:
    """One short line for an event, in the words of the contract."""

    def at(key: Any, position: int) -> str:
        return f"{key_text(key)}@{position}"

    match e:
        case t.Deliver():
            return (
                f"deliver {e.identity} (key {key_text(e.key)}, {e.channel}#{e.offset}, "
                f"{e.digest[:6]})"
            )
        case t.Accept():
            return f"accept {e.identity} at {at(e.key, e.position)}"
        case t.Wait():
            return f"{e.identity} waits for {e.awaiting or 'its predecessor'}"
        case t.Tool():
            return (
                f"tool {e.tool} for {e.identity} {'>'.join(e.path)} at "
                f"{at(e.key, e.position)} -> {e.result}"
            )
        case t.Save():
            return (
                f"save #{e.completion} {e.identity} {'>'.join(e.path)} at "
                f"{at(e.key, e.position)}{' +order' if e.order else ''}"
            )
        case t.Order():
            return f"order {e.identity} at {at(e.key, e.position)}"
        case t.Reuse():
            return (
                f"reuse #{e.completion} for {e.identity} {'>'.join(e.path)} at "
                f"{at(e.key, e.position)}"
            )
        case t.GiveUp():
            return f"give up {e.identity} at {at(e.key, e.position)}"
        case t.Invalidate():
            ids = ",".join(f"#{c}" for c in e.completions) or "none"
            return (
                f"invalidate {key_text(e.key)} from {e.position}: {ids}"
                f"{'' if e.durable else ' (not durable)'}"
            )
        case t.Output():
            return f"output {e.value} for {e.identity}"
        case t.Checkpoint():
            return f"checkpoint {e.checkpoint}"
        case t.Crash():
            return "crash"
        case t.Restore():
            return f"restore {e.checkpoint}"
        case t.End():
            return "end " + "; ".join(
                f"{key_text(k)}: " + ", ".join(f"{f}={v}" for f, v in m) for k, m in e.memory
            )
    return repr(e)
