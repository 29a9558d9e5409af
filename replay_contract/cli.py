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
import math
import os
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NoReturn

from replay_contract.model.errors import ScenarioError, UnknownContractError

#: Subcommand modules, in the order ``--help`` lists them.
COMMANDS = (
    "scenarios",
    "simulate",
    "explore",
    "verify",
    "conform",
    "check",
    "services",
    "bench",
)


class CommandError(Exception):
    """Input a command refuses; the message is printed as one line."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (``PROG: error: ...``, exit status
    2), pointing to ``--help`` instead of printing the usage block first. Its
    subcommands' parsers are of the same class."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


#: The longest a time limit may be (a solver takes it in milliseconds, as a 32-bit
#: number): about eleven days.
MAX_SECONDS = 1_000_000


def positive_number(text: str) -> float:
    """An ``argparse`` type: a finite number of seconds greater than zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number above 0, got {text!r}")
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_SECONDS} seconds, got {text!r}")
    return value


def path_argument(text: str) -> Path:
    """An ``argparse`` type: a path, not empty (an empty one would mean the current
    folder without saying so)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path, got an empty one")
    return Path(text)


def positive_int(text: str) -> int:
    """An ``argparse`` type: a whole number greater than zero."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a whole number above 0, got {text!r}")
    return value


def writable_folder(path: Path, what: str = "--out") -> Path:
    """Make sure ``path`` is a folder that files can be written to, before any work is
    done: a command that found something should not lose it to a bad output folder."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise CommandError(f"{what} {path}: not a folder") from None
    except OSError as exc:
        raise CommandError(f"{what} {path}: cannot create it ({exc.strerror or exc})") from None
    if not path.is_dir():
        raise CommandError(f"{what} {path}: not a folder")
    try:
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise CommandError(f"{what} {path}: cannot write to it ({exc.strerror or exc})") from None
    return path


def writable_file(path: Path, what: str) -> Path:
    """Make sure a file can be written at ``path`` (its folder is created), before any
    work is done: it is opened for appending, and removed again if it was not there."""
    if path.is_dir():
        raise CommandError(f"{what} {path}: is a folder, not a file")
    writable_folder(path.parent if str(path.parent) else Path("."), what)
    existed = path.exists()
    try:
        with path.open("a"):
            pass
    except OSError as exc:
        raise CommandError(f"{what} {path}: cannot write it ({exc.strerror or exc})") from None
    if not existed:
        path.unlink(missing_ok=True)
    return path


def free_names(folder: Path, names: Iterable[str], what: str = "--out") -> None:
    """Refuse, before any work, a ``folder`` where one of the files a command may
    write (``names``) cannot be: a folder is in its place, or a file that cannot be
    written over."""
    for name in names:
        path = folder / name
        if path.is_dir() or (path.exists() and not os.access(path, os.W_OK)):
            raise CommandError(f"{what} {folder}: cannot write {name} there")


def one_line(message: str) -> str:
    """``message`` on one line: a line break that came in with the user's input (a
    file name, say) is shown as ``\\n``."""
    return message.replace("\r", "\\r").replace("\n", "\\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
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
        print(f"replay-contract {args.command}: error: {one_line(str(exc))}", file=sys.stderr)
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
