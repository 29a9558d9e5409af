"""``replay-contract explore SCENARIO``: every re-delivery (and crash point) of it."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import replay_contract.model.catalogue as catalogue
from replay_contract.cli import (
    CommandError,
    free_names,
    path_argument,
    positive_int,
    writable_folder,
)
from replay_contract.commands.simulate import add_contract_options, chosen_contracts
from replay_contract.exits import BROKEN, HOLDS, NO_ANSWER
from replay_contract.model.files import slug
from replay_contract.model.narrate import render
from replay_contract.spec.explore import explore, too_large
from replay_contract.spec.properties import PROPERTIES


def register(sub: Any) -> None:
    p = sub.add_parser(
        "explore",
        help="run every channel-order-preserving re-delivery of a scenario",
        description="Run every channel-order-preserving interleaving of the deliveries "
        "after each restore (and, with --crash-points, a crash after every effect of "
        "every delivery), check every property, and write the first run that breaks "
        "each property as a scenario file. Exit status 1 when a run breaks a property, "
        "0 when none does in the whole space, 3 when none does but --limit stopped the "
        "exploration before the end (the answer is unknown).",
    )
    p.add_argument("scenario", help="a scenario file, or a built-in scenario name")
    add_contract_options(p)
    p.add_argument(
        "--crash-points",
        action="store_true",
        help="also crash after every effect of every delivery",
    )
    p.add_argument("--limit", type=positive_int, default=200_000, help="at most this many runs")
    p.add_argument(
        "--out",
        type=path_argument,
        default=Path("out/explore"),
        help="folder for the scenario files of violations (default out/explore)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


#: Seconds between two progress lines of a long exploration.
PROGRESS_SECONDS = 5.0


def _progress(contract: str) -> Callable[[int], None]:
    """A line on stderr at most every :data:`PROGRESS_SECONDS` seconds: the runs so far."""
    started = last = time.monotonic()

    def tell(runs: int) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= PROGRESS_SECONDS:
            last = now
            print(f"  {contract}: {runs:,} runs ({now - started:.0f} s)", file=sys.stderr)

    return tell


def run(args: argparse.Namespace) -> int:
    scenario = catalogue.resolve(args.scenario)
    chosen = chosen_contracts(args)
    refusal = too_large(scenario, args.limit)
    if refusal is not None:
        raise CommandError(refusal)
    writable_folder(args.out)
    # where each finding would be written (its name: spec/explore.py)
    free_names(
        args.out,
        (f"{slug(f'{scenario.name}-{c.name}-{p}')}.json" for c in chosen for p in PROPERTIES),
    )
    results: list[dict[str, Any]] = []
    for contract in chosen:
        print(f"exploring {scenario.name} under {contract.name} ...", file=sys.stderr)
        e = explore(scenario, contract, args.crash_points, args.limit, _progress(contract.name))
        findings = []
        for f in e.findings:
            path = f.scenario.write(args.out / f"{slug(f.scenario.name)}.json")
            findings.append(
                {"property": f.property, "explanation": f.explanation, "scenario_file": str(path)}
            )
        results.append(
            {
                "scenario": scenario.name,
                "contract": contract.name,
                "runs": e.runs,
                "complete": e.complete,
                "violations": findings,
            }
        )
    if any(r["violations"] for r in results):
        status = BROKEN
    else:
        status = HOLDS if all(r["complete"] for r in results) else NO_ANSWER
    if args.json:
        print(json.dumps(results, indent=2))
        return status
    rows = []
    for r in results:
        if not r["violations"]:
            rows.append((r["contract"], str(r["runs"]), "none", ""))
        for v in r["violations"]:
            rows.append((r["contract"], str(r["runs"]), v["property"], v["scenario_file"]))
    print(render(("contract", "runs", "first violation", "scenario file"), rows))
    if any(not r["complete"] for r in results):
        print(f"(stopped at --limit {args.limit} runs: the space is not fully explored)")
    return status
