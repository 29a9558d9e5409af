"""``replay-contract simulate SCENARIO``: run a scenario under one contract or all."""

from __future__ import annotations

import argparse
import json
from typing import Any

import replay_contract.model.catalogue as catalogue
from replay_contract.cli import CommandError, path_argument
from replay_contract.exits import BROKEN, HOLDS
from replay_contract.model.contracts import Contract, contract_from_json, contracts
from replay_contract.model.files import read_json
from replay_contract.model.narrate import render, table
from replay_contract.model.run import Run, simulate
from replay_contract.spec.properties import check_all
from replay_contract.spec.summary import summary


def register(sub: Any) -> None:
    p = sub.add_parser(
        "simulate",
        help="run a scenario through the reference model",
        description="Run a scenario (a file or a built-in name) through the reference "
        "model under one contract or all of them, and show what was reused, what ran "
        "again and which properties broke. Exit status 1 when any run breaks a property "
        "(the comparison of all contracts on reversed-interleaving does: seqnum breaks "
        "complete-reuse there), 0 when none does.",
    )
    p.add_argument("scenario", help="a scenario file, or a built-in scenario name")
    add_contract_options(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def add_contract_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--contract",
        help="a contract name, a comma-separated list, or 'all' (default)",
    )
    p.add_argument(
        "--contract-file",
        type=path_argument,
        metavar="FILE",
        help='a proposed contract as JSON ({"based_on": "ordered", ...})',
    )


def chosen_contracts(args: argparse.Namespace) -> list[Contract]:
    if args.contract_file is not None:
        if args.contract is not None:
            raise CommandError("give --contract or --contract-file, not both")
        data = read_json(args.contract_file, CommandError)
        return [contract_from_json(data, str(args.contract_file))]
    return contracts("all" if args.contract is None else args.contract)


def run(args: argparse.Namespace) -> int:
    scenario = catalogue.resolve(args.scenario)
    runs = [simulate(scenario, c) for c in chosen_contracts(args)]
    summaries = [summary(r) for r in runs]
    status = BROKEN if any(s["violations"] for s in summaries) else HOLDS
    if args.json:
        print(
            json.dumps(
                summaries[0] if len(summaries) == 1 else summaries, indent=2, ensure_ascii=False
            )
        )
        return status
    print(f"{scenario.name}: {scenario.description}\n")
    print(comparison(runs))
    for r in runs:
        print(f"\n{r.contract.name}")
        print(detail(r))
    return status


def comparison(runs: list[Run]) -> str:
    """One row per contract: the figures side by side."""
    rows = []
    for r in runs:
        s = summary(r)
        rows.append(
            (
                r.contract.name,
                str(s["tool_calls"]),
                str(s["repeated_tool_calls"]),
                str(s["reused"]),
                str(s["waited"]),
                ", ".join(s["violations"]) or "none",
            )
        )
    return render(
        ("contract", "tool calls", "repeated", "reused", "waited", "properties broken"), rows
    )


def detail(r: Run) -> str:
    verdicts = check_all(r.trace)
    witnesses = {v.property: v.witness for v in verdicts if not v.holds}
    text = table(r.trace, witnesses)
    for v in verdicts:
        if not v.holds:
            text += f"\n  {v.property}: {v.explanation}"
    return text
