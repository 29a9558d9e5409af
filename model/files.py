"""Reading the user's JSON files and naming the files written for them.

Every file a command reads (a scenario, a proposed contract, a service's state) goes
through :func:`read_json`, so that each way such a file can be unusable (missing,
unreadable, not UTF-8, not JSON, nested too deeply, with ``NaN`` or ``Infinity``, which
JSON does not have) is one error of the caller's type with a one-line message.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

#: How deep a JSON value may nest; no scenario or contract needs more than a handful.
MAX_DEPTH = 64


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's members; a name given twice is refused (JSON leaves it open which
    one counts, and the user meant one of them)."""
    out: dict[str, Any] = {}
    for name, value in pairs:
        if name in out:
            raise ValueError(f"member {name!r} appears twice in one object")
        out[name] = value
    return out


def parse_json(text: str, source: str, error: type[Exception]) -> Any:
    """The value of ``text``, or ``error`` with a message that starts with ``source``."""
    try:
        value = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_members)
    except json.JSONDecodeError as exc:
        raise error(
            f"{source}: line {exc.lineno} column {exc.colno}: invalid JSON ({exc.msg})"
        ) from None
    except ValueError as exc:
        raise error(f"{source}: invalid JSON ({exc})") from None
    except RecursionError:
        raise error(f"{source}: invalid JSON (nested more than {MAX_DEPTH} levels)") from None
    problem = _problem(value)
    if problem is not None:
        raise error(f"{source}: invalid JSON ({problem})")
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


def _problem(value: Any) -> str | None:
    """What makes a parsed value unusable although the parser took it: nesting deeper
    than :data:`MAX_DEPTH`, a number too large for a float (``1e400`` reads as
    infinity), a text with a lone surrogate (``"\\ud800"``, which cannot be printed or
    written as UTF-8)."""
    level = [(value, 1)]
    while level:
        item, depth = level.pop()
        if depth > MAX_DEPTH:
            return f"nested more than {MAX_DEPTH} levels"
        if isinstance(item, float) and not math.isfinite(item):
            return "a number too large"
        texts = [item] if isinstance(item, str) else list(item) if isinstance(item, dict) else []
        for text in texts:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                return f"a text with a lone surrogate \\u{ord(text[exc.start]):04x}"
        if isinstance(item, dict):
            level.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            level.extend((v, depth + 1) for v in item)
    return None


def slug(text: str) -> str:
    """``text`` as a file name: no folder separators, no dots at the start, nothing
    that a file system refuses. A scenario or contract name is the user's, so it may
    be anything; the file written for it stays in the folder it is written to."""
    return re.sub(r"[^A-Za-z0-9._@-]+", "_", text).strip("_.") or "unnamed"
