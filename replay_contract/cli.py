"""The ``replay-contract`` command line.

Each subcommand lives in :mod:`replay_contract.commands` as a module with a
``register(subparsers)`` function; the parser it adds sets ``func`` to the function that
runs it and returns the exit status. Refused input raises :class:`CommandError` (or a
``ScenarioError``/``UnknownContractError`` of the model): the command prints one line
naming the problem and exits with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from replay_contract.model.errors import ScenarioError, UnknownContractError

#: Subcommand modules, in the order ``--help`` lists them.
COMMANDS = ("scenarios", "simulate", "explore", "verify", "conform", "services", "bench")


class CommandError(Exception):
    """Input a command refuses; the message is printed as one line."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="replay-contract",
        description="Replay contract for keyed agent recovery: simulate, verify and test it.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"replay_contract.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"replay_contract.commands.{name}":
                continue  # not built yet
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.func(args)
    except (CommandError, ScenarioError, UnknownContractError) as exc:
        print(f"replay-contract {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print(f"replay-contract {args.command}: interrupted", file=sys.stderr)
        return 130
    return status


if __name__ == "__main__":
    raise SystemExit(main())
