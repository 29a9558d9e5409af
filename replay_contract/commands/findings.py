"""``replay-contract findings``: record how the real Flink Agents runtime differs from the model.

It runs the suite against ``flink-agents:kafka`` and ``flink-agents:fluss`` (and their
fresh-JVM restores) under ``seqnum`` and ``ordered``, sorts every failure into a kind of
difference (:mod:`replay_contract.conformance.findings`), keeps the smallest scenario of
each kind and writes the recorded run that ``docs/flink-agents.md`` is generated from.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from replay_contract.cli import path_argument, positive_int
from replay_contract.conformance import findings


def register(sub: Any) -> None:
    p = sub.add_parser(
        "findings",
        help="record how the real Flink Agents runtime differs from the model",
        description="Run the suite against the real Flink Agents runtime (flink-agents:kafka "
        "and flink-agents:fluss, restored in the same and in a fresh JVM) under seqnum and "
        "ordered, sort the failures into kinds, keep the smallest scenario of each kind and "
        "write the recorded run (the Kafka and Fluss servers must be running: "
        "`replay-contract services up all`).",
    )
    p.add_argument(
        "--out",
        type=path_argument,
        default=findings.RECORD,
        help="the recorded run to write (default: conformance/flink-agents/findings.json; "
        "the scenario files go to findings/ beside it)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the generated scenarios")
    p.add_argument(
        "--shrink-budget",
        type=int,
        default=15,
        help="runs spent shrinking each kind's scenario (default 15; 0 keeps it as found)",
    )
    p.add_argument("--workers", type=positive_int, default=2, help="runs at a time (default 2)")
    p.add_argument("--json", action="store_true", help="print the recorded run")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = findings.record(
        findings.FLINK_AGENTS_PLANS,
        out,
        seed=args.seed,
        shrink_budget=args.shrink_budget,
        workers=args.workers,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    for r in doc["runs"]:
        kinds = ", ".join(f"{k} {n}" for k, n in r["kinds"].items()) or "none"
        print(
            f"{r['target']:<30} {r['contract']:<8} {r['passed']:>4} passed {r['failed']:>4} "
            f"failed {r['skipped']:>3} skipped in {r['seconds']:>6.0f} s   kinds: {kinds}"
        )
    for f in doc["findings"]:
        print(f"{f['kind']}: {f['title']} ({f['scenario_file']})")
    print(f"recorded in {out} ({doc['seconds']:.0f} s)")
    return 0
