"""The ``replay-contract`` command line.

Each subcommand lives in :mod:`replay_contract.commands` as a module with a
``register(subparsers)`` function; the parser it adds sets ``func`` to the function that
runs it and returns the exit status. Refused input raises
:class:`~replay_contract.errors.CommandError` (or a
``ScenarioError``/``UnknownContractError`` of the model): the command prints one line
naming the problem and exits with status 2. Every exit status is in
:data:`replay_contract.exits.TABLE`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from replay_contract.arguments import MAX_SECONDS as MAX_SECONDS
from replay_contract.arguments import OneLineParser as OneLineParser
from replay_contract.arguments import comma_list as comma_list
from replay_contract.arguments import creatable_folder as creatable_folder
from replay_contract.arguments import free_names as free_names
from replay_contract.arguments import made_folder as made_folder
from replay_contract.arguments import one_line as one_line
from replay_contract.arguments import path_argument as path_argument
from replay_contract.arguments import positive_int as positive_int
from replay_contract.arguments import positive_number as positive_number
from replay_contract.arguments import writable_file as writable_file
from replay_contract.arguments import writable_folder as writable_folder
from replay_contract.errors import CommandError as CommandError
from replay_contract.exits import (
    BAD_INPUT,
    INTERRUPTED,
    NO_ANSWER,
    TABLE,
    InfrastructureError,
    Terminated,
    interruption,
)
from replay_contract.model.errors import ScenarioError, UnknownContractError

#: Subcommand modules, in the order ``--help`` lists them.
COMMANDS = (
    "scenarios",
    "simulate",
    "explore",
    "verify",
    "conform",
    "findings",
    "check",
    "services",
    "bench",
    "live",
)


#: The options of any command that take a comma-separated list, by their ``dest``: an
#: empty item or one given twice is refused before the command runs
#: (:func:`~replay_contract.arguments.comma_list`).
LISTS = {
    "contract": "--contract",
    "property": "--property",
    "bound": "--bound",
    "replayed": "--replayed",
    "pad": "--pad",
    "by_keys": "--by-keys",
    "payloads": "--payloads",
}


def check_lists(args: argparse.Namespace) -> None:
    """Refuse a comma-separated option with an empty or repeated item (:data:`LISTS`)."""
    for dest, option in LISTS.items():
        value = getattr(args, dest, None)
        if isinstance(value, str):
            comma_list(value, option)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="replay-contract",
        description="Replay contract for keyed agent recovery: simulate, verify and test it.",
        epilog="exit status: " + "; ".join(f"{status} {meaning}" for status, meaning in TABLE),
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


def _interrupt(signum: int, frame: Any) -> None:
    raise Terminated(signal.Signals(signum).name)


def stop_as_on_ctrl_c() -> Callable[[], None]:
    """Have SIGTERM and SIGHUP end the command as Ctrl-C does: what it found so far is
    shown, and the processes and servers it started are stopped. Gives what puts the
    earlier handlers back. (Only the main thread can set handlers: elsewhere nothing.)"""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    earlier = {s: signal.signal(s, _interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}

    def restore() -> None:
        for s, handler in earlier.items():
            signal.signal(s, handler)

    return restore


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    restore = stop_as_on_ctrl_c()
    try:
        check_lists(args)
        status: int = args.func(args)
    except InfrastructureError as exc:  # before CommandError: a server that died starting
        print(f"replay-contract {args.command}: error: {one_line(str(exc))}", file=sys.stderr)
        return NO_ANSWER
    except (CommandError, ScenarioError, UnknownContractError) as exc:
        print(f"replay-contract {args.command}: error: {one_line(str(exc))}", file=sys.stderr)
        return BAD_INPUT
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt as exc:
        print(f"replay-contract {args.command}: interrupted ({interruption(exc)})", file=sys.stderr)
        return INTERRUPTED
    finally:
        restore()
    return status


if __name__ == "__main__":
    raise SystemExit(main())
