"""The proof cache: step classes already checked are not checked again.

A step class of the induction (:func:`.induction.check_step_class`) is a function of the
contract's rules, the agent, the bound, the micro-step, the properties and the flags
left out, and of the code that builds and asks its formulas. Its outcome, once every
query of it was answered (``sat`` or ``unsat``, none ``unknown``), is written to a file
named by a hash of all of these: the rules (not the contract's name or description), the
arguments, the text of every module of ``replay_contract.spec`` and
``replay_contract.model`` (read when this module is imported, with the code that runs)
and Z3's version. A run that asks the same check again (a deepening stopped by Ctrl-C
and started again, the same change under another name, a second look at a verdict)
reads the outcome instead of asking the solver. Any change of the code or of Z3 gives
other names, so an outcome is only ever reused for the very formulas it answered.

A check stopped before its end (``--deadline``, Ctrl-C, a query without an answer) keeps
what it proved so far under the same name with :data:`PARTIAL` after it: the queries
answered ``unsat``. Each assumes the whole invariant, never another query's answer, so
the check started again asks only the others; the partial entry goes once the whole
outcome is written.

A step of a deepening keeps, beside its classes, the wall clock it took over the runs
that worked on it (:func:`spent`), so that the estimate of the next step
(:func:`.deepen.estimate`) holds when the steps before it are read back in a moment.

Where: ``$REPLAY_CONTRACT_PROOF_CACHE``, or ``proofs/`` in the download cache
(:func:`replay_contract.cache.cache_dir`);
``REPLAY_CONTRACT_PROOF_CACHE=off`` (or ``verify --no-proof-cache``) turns it off. An
entry that cannot be read is said on standard error, checked again and written anew.
``verify`` refuses a cache that cannot be written before it starts
(:func:`unwritable`): otherwise each process that checks would say so.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import z3

from replay_contract.arguments import creatable_folder
from replay_contract.cache import cache_dir
from replay_contract.errors import CommandError
from replay_contract.model.contracts import Contract

from .bound import Bound

#: The version of an entry's layout (part of every name).
FORMAT = 1

OFF = "off"

#: The environment variable that says where the cache is, or that it is off.
VARIABLE = "REPLAY_CONTRACT_PROOF_CACHE"

#: What names the partial entry of a check (:func:`partial`).
PARTIAL = ".partial"

#: Whether a write failed in this process (the others are not tried).
_unwritable = False


def folder() -> Path | None:
    """Where the cache is, or ``None`` when it is off."""
    configured = os.environ.get(VARIABLE, "")
    if configured.strip().lower() == OFF:
        return None
    if configured:
        return Path(configured).expanduser().absolute()
    return cache_dir() / "proofs"


def turn_off() -> None:
    """No lookup or write in this process and those it starts."""
    os.environ[VARIABLE] = OFF


def unwritable() -> str | None:
    """Why the cache cannot be written, as one line naming its folder (and
    :data:`VARIABLE` when that chose it), or ``None`` when it can or is off. Nothing is
    created: the folders made to try it are removed again."""
    top = folder()
    if top is None:
        return None
    try:
        creatable_folder(top, VARIABLE if os.environ.get(VARIABLE) else "the proof cache")
    except CommandError as exc:
        return str(exc)
    return None


def code_fingerprint() -> str:
    """A hash of the modules that build and ask the formulas (and of Z3's version), as
    they were when this module was imported: the code that runs, even if the files
    change while it does (a process forked later inherits it)."""
    return _CODE


def fingerprint(folders: Sequence[Path]) -> str:
    """A hash of the text of every Python module below ``folders``, and Z3's version."""
    h = hashlib.sha256(f"z3 {z3.get_version_string()}\n".encode())
    for top in folders:
        for path in sorted(top.rglob("*.py")):
            h.update(f"{path.relative_to(top.parent).as_posix()}\n".encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def _code() -> str:
    from replay_contract import model, spec

    return fingerprint([Path(spec.__file__).parent, Path(model.__file__).parent])


_CODE = _code()


def key(
    contract: Contract,
    agent: str,
    bound: Bound,
    t: int,
    properties: Sequence[str],
    skip: Sequence[str],
    without: Iterable[str] = (),
) -> str:
    """The name of a step class's check: what its formulas are a function of (the
    families of facts left out of the invariant named only when there are some)."""
    what: dict[str, Any] = {
        "agent": agent,
        "bound": str(bound),
        "t": t,
        "properties": list(properties),
        "skip": sorted(skip),
    }
    if without:
        what["without"] = sorted(without)
    return _name(contract, what)


def ladder_key(
    contract: Contract, bound: Bound, properties: Sequence[str], options: Mapping[str, Any]
) -> str:
    """The name of a step of a deepening (:mod:`.deepen`): the properties it asks at
    ``bound``, with the ``options`` of :func:`.verify.verify_contract` it asks them with
    (those of a plain value: a callback names nothing)."""
    plain = {k: v for k, v in options.items() if isinstance(v, (str, int, float, bool))}
    return _name(contract, {"ladder": str(bound), "properties": list(properties), "options": plain})


def _name(contract: Contract, what: Mapping[str, Any]) -> str:
    rules = {k: v for k, v in contract.to_json().items() if k not in ("name", "description")}
    named = {"format": FORMAT, "code": code_fingerprint(), "rules": rules, **what}
    return hashlib.sha256(json.dumps(named, sort_keys=True).encode()).hexdigest()


def spent(name: str, seconds: float, whole: bool) -> float:
    """The wall-clock seconds the work ``name`` has taken over every run that worked on
    it, this run's ``seconds`` among them, kept under ``name``; ``whole`` when this run
    finished it. Once it is finished the figure stays: a run that reads the work back
    from the cache in a moment takes as long, for an estimate, as the runs that did it.
    With the cache off, ``seconds``."""
    known = read(name, _SPENT)
    if known is not None and known["whole"]:
        return float(known["seconds"])
    total = seconds + (0.0 if known is None else float(known["seconds"]))
    write(name, {"seconds": round(total, 3), "whole": whole})
    return total


def begun(name: str) -> float:
    """The seconds earlier runs spent on the work ``name`` without finishing it (0 when
    none did, or one finished it)."""
    known = read(name, _SPENT)
    return 0.0 if known is None or known["whole"] else float(known["seconds"])


#: The fields of an entry of :func:`spent`.
_SPENT: dict[str, type | tuple[type, ...]] = {"seconds": (int, float), "whole": bool}


def partial(name: str) -> str:
    """The name under which the check ``name`` keeps what it proved before it ended."""
    return name + PARTIAL


def _path(name: str) -> Path | None:
    top = folder()
    return None if top is None else top / name[:2] / f"{name}.json"


def read(name: str, fields: Mapping[str, type | tuple[type, ...]]) -> dict[str, Any] | None:
    """The outcome recorded under ``name``, with each of ``fields`` of its type, or
    ``None`` (none, the cache off, or an entry that cannot be read: said on standard
    error)."""
    path = _path(name)
    if path is None or not path.exists():
        return None
    try:
        entry = json.loads(path.read_text())
        if not isinstance(entry, dict) or entry.get("key") != name:
            raise ValueError("not an entry of this name")
        outcome = entry.get("outcome")
        if not isinstance(outcome, dict):
            raise ValueError("no outcome")
        for field, kind in fields.items():
            value = outcome.get(field)
            if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
                raise ValueError(f"no {field} of the right type")
        return outcome
    except (OSError, ValueError) as e:
        print(
            f"proof cache: {path}: cannot read the entry ({e}); checking again",
            file=sys.stderr,
        )
        return None


def write(name: str, outcome: dict[str, Any]) -> None:
    """Record ``outcome`` under ``name`` (atomically: a reader sees all of it or none).
    A cache that cannot be written is said on standard error, once a process; the check
    stands."""
    global _unwritable
    path = _path(name)
    if path is None or _unwritable:
        return
    written = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    entry = {"key": name, "written": written, "outcome": outcome}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        part.write_text(json.dumps(entry, indent=1, sort_keys=True) + "\n")
        part.replace(path)
    except OSError as e:
        _unwritable = True
        print(f"proof cache: {path}: cannot write ({e}); not kept", file=sys.stderr)


def remove(name: str) -> None:
    """Forget the entry ``name`` if there is one (a partial entry the whole outcome
    replaces)."""
    path = _path(name)
    if path is not None:
        try:
            path.unlink(missing_ok=True)
        except NotADirectoryError:
            pass  # a file in place of the folder: no entry there, and the write said so
        except OSError as e:
            print(f"proof cache: {path}: cannot remove ({e})", file=sys.stderr)
