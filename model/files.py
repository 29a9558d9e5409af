"""Reading the user's JSON files and naming the files written for them.

Every file a command reads (a scenario, a proposed contract, a service's state) goes
through :func:`read_json`, so that each way such a file can be unusable (missing,
unreadable, not UTF-8, not JSON, nested too deeply, with ``NaN`` or ``Infinity``, which
JSON does not have) is one error of the caller's type with a one-line message.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

#: How deep a JSON value may nest; no scenario or contract needs more than a handful.
MAX_DEPTH = 64


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def parse_json(text: str, source: str, error: type[Exception]) -> Any:
    """The value of ``text``, or ``error`` with a message that starts with ``source``."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise error(
            f"{source}: line {exc.lineno} column {exc.colno}: invalid JSON ({exc.msg})"
        ) from None
    except ValueError as exc:
        raise error(f"{source}: invalid JSON ({exc})") from None
    except RecursionError:
        raise error(f"{source}: invalid JSON (nested more than {MAX_DEPTH} levels)") from None
    if _depth(value) > MAX_DEPTH:
        raise error(f"{source}: invalid JSON (nested more than {MAX_DEPTH} levels)")
    return value


def read_text(path: Path, error: type[Exception]) -> str:
    """The text of ``path`` as UTF-8, or ``error`` naming the path and the problem."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None


def read_json(path: Path, error: type[Exception]) -> Any:
    return parse_json(read_text(path, error), str(path), error)


def _depth(value: Any) -> int:
    deepest, level = 0, [(value, 1)]
    while level:
        item, depth = level.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        if isinstance(item, dict):
            level.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            level.extend((v, depth + 1) for v in item)
    return deepest


def slug(text: str) -> str:
    """``text`` as a file name: no folder separators, no dots at the start, nothing
    that a file system refuses. A scenario or contract name is the user's, so it may
    be anything; the file written for it stays in the folder it is written to."""
    return re.sub(r"[^A-Za-z0-9._@-]+", "_", text).strip("_.") or "unnamed"
