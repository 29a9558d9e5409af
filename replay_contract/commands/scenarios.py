"""``replay-contract scenarios [NAME]``: list the built-in catalogue, or show one."""

from __future__ import annotations

import argparse
import json
from typing import Any

import replay_contract.model.catalogue as catalogue
from replay_contract.model.narrate import render


def register(sub: Any) -> None:
    p = sub.add_parser(
        "scenarios",
        help="list the built-in scenarios, or show one",
        description="List the built-in scenarios, or show one as JSON.",
    )
    p.add_argument("name", nargs="?", help="a built-in scenario to show")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.name is not None:
        scenario = catalogue.builtin(args.name)
        print(json.dumps(scenario.to_json(), indent=2, ensure_ascii=False))
        return 0
    scenarios = catalogue.all_builtin()
    if args.json:
        print(
            json.dumps(
                [{"name": s.name, "description": s.description} for s in scenarios], indent=2
            )
        )
        return 0
    print(
        render(
            ("scenario", "description"),
            ((s.name, _first_sentence(s.description)) for s in scenarios),
        )
    )
    print("\nShow one with: replay-contract scenarios NAME")
    return 0


def _first_sentence(text: str, width: int = 96) -> str:
    sentence = text.split(". ")[0].rstrip(".") + "."
    return sentence if len(sentence) <= width else sentence[: width - 3] + "..."
