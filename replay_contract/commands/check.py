"""``replay-contract check TRACE``: judge a recorded run against the model and the properties.

The exit status is 0 when the run passes, 1 when it fails, 3 when the verdict is
``unknown`` (it depends on events whose outcome the recorder could not know) and 2 when
the trace cannot be read (the line is named).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from replay_contract.cli import CommandError, path_argument, writable_folder
from replay_contract.conformance.check import (
    FAIL,
    PASS,
    STOPS,
    UNKNOWN,
    Judgement,
    check,
    paused_collection,
)
from replay_contract.conformance.tracefile import TraceError, read
from replay_contract.model.topology import key_text

STATUS = {PASS: 0, FAIL: 1, UNKNOWN: 3}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="judge a recorded trace against the model and the properties",
        description="Judge a recorded run (newline-delimited JSON: a header, then one "
        "trace event per line; docs/howto/check.md) as the conformance suite judges its "
        "own runs: the run's steps against the reference model's, and every property. "
        "A failure names each broken property with its witness and is reduced to a "
        "scenario file that simulate replays. Exit status: 0 pass, 1 fail, 3 unknown, "
        "2 unreadable trace.",
    )
    p.add_argument("trace", type=path_argument, help="the trace file")
    p.add_argument(
        "--out",
        type=path_argument,
        default=Path("out/check"),
        help="where a failure's scenario file is written (default: out/check)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    writable_folder(args.out)
    try:
        with paused_collection():
            judgement = check(read(args.trace), args.out)
    except TraceError as exc:
        raise CommandError(str(exc)) from None
    if args.json:
        print(json.dumps(judgement.to_json(), indent=2, ensure_ascii=False))
    else:
        print(text(judgement))
    return STATUS[judgement.verdict]


def text(j: Judgement) -> str:
    """The verdict as a person reads it."""
    lines = [f"trace {j.name} under {j.contract}: {j.events} events, {j.steps} steps: {j.verdict}"]
    if j.verdict == UNKNOWN:
        lines.append(f"  {j.reason}")
    elif j.difference is not None:
        lines.append(f"  differs from the model at {j.difference}")
    allows = (
        "the contract allows it" if j.ended else "the contract allows it, or the run was not over"
    )
    if not j.ended:
        lines.append("  the recording stops before the end of input: judged up to its last event")
    for b in j.broken:
        allowed = f" (the model breaks it too: {allows})" if b.also_by_model else ""
        lines.append(f"  broken: {b.property}{allowed}")
        lines.append(f"    {b.explanation}")
        if b.key is not None:
            positions = ", ".join(str(p) for p in b.positions) or "none"
            lines.append(f"    key {key_text(b.key)}, positions {positions}")
        for line, event, history in zip(b.lines, b.described, b.histories, strict=True):
            lines.append(f"    line {line}: {event}")
            if event != STOPS:
                lines.append(f"      accepted before its position: [{', '.join(history)}]")
    if j.scenario_file is not None:
        contract = (
            f"--contract-file {j.contract_file}"
            if j.contract_file is not None
            else f"--contract {j.contract}"
        )
        lines.append(
            f"  scenario file: {j.scenario_file} "
            f"(replay it: replay-contract simulate {j.scenario_file} {contract})"
        )
    return "\n".join(lines)
