"""Readable tables of a run: who was delivered where, what was reused, what ran again.

:func:`rows` turns a trace into one row per decision, in the style of the worked example
of the published contract; :func:`render` lays rows out as a plain-text table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import define, field

from . import trace as t
from .topology import key_text

COLUMNS = ("step", "key", "pos", "input", "decision", "tools", "broke")


@define
class Row:
    step: int
    key: str = ""
    position: str = ""
    input: str = ""
    decision: str = ""
    tools: int = 0
    broke: list[str] = field(factory=list)

    def cells(self) -> tuple[str, ...]:
        return (
            str(self.step),
            self.key,
            self.position,
            self.input,
            self.decision,
            str(self.tools) if self.key else "",
            ", ".join(self.broke),
        )


def rows(trace: t.Trace, witnesses: Mapping[str, Sequence[int]] | None = None) -> list[Row]:
    """One row per decision; ``witnesses`` maps a property to the event indexes that
    show its violation, and the rows holding those events name the property."""
    out: list[Row] = []
    owner: dict[int, Row] = {}
    saved: set[tuple[Any, ...]] = set()
    diverged: set[object] = set()
    current: Row | None = None
    for i, e in enumerate(trace.events):
        if isinstance(e, t.Accept):
            after = " after divergence" if (type(e.key), e.key) in diverged else ""
            current = Row(i, key_text(e.key), str(e.position), e.identity, "accepted" + after)
            out.append(current)
        elif isinstance(e, t.Wait):
            current = None
            out.append(
                Row(
                    i,
                    key_text(e.key),
                    "",
                    e.identity,
                    f"waits for {e.awaiting}" if e.awaiting else "waits",
                )
            )
        elif isinstance(e, t.GiveUp):
            current = None
            diverged.add((type(e.key), e.key))
            out.append(
                Row(i, key_text(e.key), str(e.position), e.identity, f"given up: {e.reason}")
            )
        elif isinstance(e, t.Invalidate):
            diverged.add((type(e.key), e.key))
            row = Row(
                i,
                key_text(e.key),
                f">={e.position}",
                "",
                f"invalidates {len(e.completions)} saved" + ("" if e.durable else " (not durably)"),
            )
            out.append(row)
        elif isinstance(e, t.Reuse) and current is not None:
            current.decision = (
                "reused"
                if current.decision.startswith("accepted")
                else ("partly reused" if "executed" in current.decision else current.decision)
            )
        elif isinstance(e, t.Tool) and current is not None:
            current.tools += 1
            again = (type(e.key), e.key, e.identity, e.path) in saved
            label = "re-executed" if again else "executed"
            if "divergence" in current.decision:
                label += " after divergence"
            if current.decision.startswith("accepted") or current.decision == "executed":
                current.decision = label
            elif current.decision == "reused":
                current.decision = "partly reused"
        elif isinstance(e, t.Save):
            saved.add((type(e.key), e.key, e.identity, e.path))
        elif isinstance(e, t.Checkpoint):
            current = None
            out.append(Row(i, decision=f"-- checkpoint {e.checkpoint} --"))
        elif isinstance(e, t.Crash):
            current = None
            out.append(Row(i, decision="-- crash --"))
        elif isinstance(e, t.Timeout):
            current = None
            out.append(Row(i, decision="-- timeout: the wait bound passed --"))
        elif isinstance(e, t.Restore):
            current = None
            diverged.clear()
            out.append(Row(i, decision=f"-- restore checkpoint {e.checkpoint} --"))
        if current is not None:
            owner[i] = current
    for name, indexes in (witnesses or {}).items():
        for index in indexes:
            found = owner.get(index) or next((r for r in out if r.step == index), None)
            if found is not None and name not in found.broke:
                found.broke.append(name)
    for row in out:
        if row.decision.startswith("accepted"):
            row.decision = "accepted, nothing to run" + row.decision.removeprefix("accepted")
    return out


def render(header: Sequence[str], body: Iterable[Sequence[str]]) -> str:
    """A plain-text table with a header rule."""
    body = [list(r) for r in body]
    widths = [max([len(h)] + [len(r[c]) for r in body]) for c, h in enumerate(header)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()
    rule = "  ".join("-" * w for w in widths)
    lines = [line, rule]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in body]
    return "\n".join(lines)


def table(trace: t.Trace, witnesses: Mapping[str, Sequence[int]] | None = None) -> str:
    return render(COLUMNS, (r.cells() for r in rows(trace, witnesses)))
