"""Argument types and checks shared by the command line and the ``python -m`` entry points
of the specification's tools: one-line errors, positive numbers, writable outputs."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NoReturn

from replay_contract.errors import CommandError


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


def creatable_folder(path: Path, what: str = "--out") -> Path:
    """Make sure ``path`` can be a folder that files are written to, as
    :func:`writable_folder` does, but leave nothing behind: a command refused by a later
    check has then created nothing. It creates the folder once every check has passed."""
    with _tried(path, what):
        return path


def writable_file(path: Path, what: str) -> Path:
    """Make sure a file can be written at ``path``, before any work is done, leaving
    nothing behind: it is opened for appending and removed again if it was not there,
    as are the folders made for it (the command's writer creates them)."""
    if path.is_dir():
        raise CommandError(f"{what} {path}: is a folder, not a file")
    with _tried(path.parent if str(path.parent) else Path("."), what):
        existed = path.exists()
        try:
            with path.open("a"):
                pass
        except OSError as exc:
            raise CommandError(f"{what} {path}: cannot write it ({exc.strerror or exc})") from None
        if not existed:
            path.unlink(missing_ok=True)
    return path


@contextlib.contextmanager
def made_folder(path: Path, what: str = "--out") -> Iterator[Path]:
    """:func:`writable_folder` for a command that needs its output folder before its last
    check (a target that writes its log there): when the block raises, the folders made
    here are removed again if nothing was written to them."""
    with _tried(path, what, keep=True):
        yield path


@contextlib.contextmanager
def _tried(path: Path, what: str, keep: bool = False) -> Iterator[None]:
    """:func:`writable_folder` on ``path``; the folders it made are removed again at the
    end (with ``keep``, only when the block raised), the deepest first, each only if it
    is empty."""
    made = []
    for folder in (path, *path.parents):
        if folder.exists() or folder.is_symlink():
            break
        made.append(folder)
    try:
        writable_folder(path, what)
        yield
    except BaseException:
        _remove_empty(made)
        raise
    if not keep:
        _remove_empty(made)


def _remove_empty(folders: Iterable[Path]) -> None:
    for folder in folders:
        with contextlib.suppress(OSError):  # not empty: something was written there
            folder.rmdir()


def free_names(folder: Path, names: Iterable[str], what: str = "--out") -> None:
    """Refuse, before any work, a ``folder`` where one of the files a command may
    write (``names``) cannot be: a folder is in its place, or a file that cannot be
    written over."""
    for name in names:
        path = folder / name
        if path.is_dir() or (path.exists() and not os.access(path, os.W_OK)):
            raise CommandError(f"{what} {folder}: cannot write {name} there")


def comma_list(text: str, option: str) -> list[str]:
    """The items of an option's comma-separated value, stripped. An empty item (two
    commas in a row, or one at an end) and an item given twice are refused: nothing is
    skipped, or counted twice, without a word."""
    if not text.strip():
        raise CommandError(f"{option}: empty")
    items = [item.strip() for item in text.split(",")]
    if "" in items:
        raise CommandError(
            f"{option} {text!r}: an empty item (two commas in a row, or one at an end)"
        )
    seen: set[str] = set()
    for item in items:
        if item in seen:
            raise CommandError(f"{option} {text!r}: {item} is given twice")
        seen.add(item)
    return items


def one_line(message: str) -> str:
    """``message`` on one line: a line break that came in with the user's input (a
    file name, say) is shown as ``\\n``."""
    return message.replace("\r", "\\r").replace("\n", "\\n")
