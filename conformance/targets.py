"""Target names and the implementations they stand for.

Targets are registered as entry points of the group ``replay_contract.targets``, so an
installed package adds one by declaring it in its own metadata::

    [project.entry-points."replay_contract.targets"]
    my-operator = "my_package.conformance:implementation"
    my-family = "my_package.conformance:implementation_for"

The value names a function that returns an
:class:`~replay_contract.conformance.interface.Implementation`. A target name is looked
up whole first (``my-operator``: the function is called with no argument); a name with a
colon, ``PREFIX:REST``, resolves through the entry point named ``PREFIX``, whose
function takes ``REST`` (``my-family:kafka`` calls ``implementation_for("kafka")``). The
project registers:

``model``
    the reference model, stepped through the protocol; it claims every contract.
``mutant:<name>``
    the model under a broken variant of ``ordered`` (:data:`~replay_contract.model.
    mutants.MUTANTS`), claiming ``ordered``: the suite must fail it.
``process:<command>``
    any program that speaks the line-oriented JSON protocol of :mod:`.process` on its
    standard input and output (``docs/protocol.md``).
``kafka`` and ``fluss``
    the project's runtimes (``replay_contract.runtime.kafka:implementation`` and
    ``replay_contract.runtime.fluss:implementation``), imported only when asked for.
``flink-agents:<backend>[:fresh-jvm]``
    the real Apache Flink Agents runtime, through the adapter of ``conformance/flink-agents``
    (:mod:`.flink_agents`), on ``kafka`` or ``fluss``.

A target's function may also take the keyword arguments ``timeout`` (the seconds the
target waits for an answer: a process target for each line, a runtime for each store
operation) and ``log_folder`` (where a process target writes its standard error); a
runtime without them but with a ``timeout`` attribute gets it set.
"""

from __future__ import annotations

import inspect
import shlex
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

from replay_contract.errors import CommandError

from .interface import Implementation

#: The entry-point group targets are registered in.
GROUP = "replay_contract.targets"


def registered() -> dict[str, EntryPoint]:
    """The registered targets by entry-point name (the first of a name wins)."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=GROUP):
        found.setdefault(ep.name, ep)
    return found


def names() -> list[str]:
    """Every target name this suite knows; a prefix as ``PREFIX:<...>``."""
    out = []
    for name, ep in registered().items():
        try:
            prefix = _takes_rest(ep.load())
        except Exception:  # a target that cannot even load is still a name to list
            prefix = False
        out.append(f"{name}:<...>" if prefix else name)
    return out


def resolve(
    target: str, timeout: float | None = None, log_folder: Path | None = None
) -> Implementation:
    """The implementation a target name stands for; a one-line :class:`CommandError`
    when it does not exist or cannot start. ``timeout`` and ``log_folder`` go to the
    target's function when it takes them (see the module's docstring)."""
    eps = registered()
    if target in eps:
        ep, rest = eps[target], None
    else:
        prefix, colon, rest = target.partition(":")
        if not colon or prefix not in eps:
            raise CommandError(f"unknown target {target!r} (known: {', '.join(names())})")
        ep = eps[prefix]
    try:
        factory = ep.load()
    except ImportError as exc:
        raise CommandError(f"target {target}: not available: {_one_line(exc)}") from None
    if not callable(factory):
        raise CommandError(f"target {target}: {ep.value} is not a function")
    if rest is None and _takes_rest(factory):
        raise CommandError(f"target {target}: give what follows, as {target}:<...>")
    if rest is not None and not _takes_rest(factory):
        raise CommandError(f"unknown target {target!r}: {ep.name} takes nothing after it")
    options = {
        name: value
        for name, value in (("timeout", timeout), ("log_folder", log_folder))
        if value is not None and _takes(factory, name)
    }
    try:
        impl = factory(**options) if rest is None else factory(rest, **options)
    except CommandError:
        raise
    except Exception as exc:
        raise CommandError(f"target {target}: not available: {_one_line(exc)}") from None
    if not isinstance(impl, Implementation):
        raise CommandError(
            f"target {target}: not available: {ep.value} returned something that "
            "lacks the Implementation methods"
        )
    if timeout is not None and "timeout" not in options and hasattr(impl, "timeout"):
        impl.timeout = timeout
    return impl


# -- the project's own targets ----------------------------------------------------------


def model() -> Implementation:
    """The ``model`` target."""
    from .model_target import ModelImplementation

    return ModelImplementation()


def mutant(name: str) -> Implementation:
    """The ``mutant:<name>`` targets."""
    from replay_contract.model.mutants import MUTANTS

    from .model_target import ModelImplementation

    if name not in MUTANTS:
        raise CommandError(f"target mutant:{name}: no such mutant (known: {', '.join(MUTANTS)})")
    return ModelImplementation(MUTANTS[name])


def process(
    command: str, timeout: float | None = None, log_folder: Path | None = None
) -> Implementation:
    """The ``process:<command>`` targets."""
    from .process import TIMEOUT, ProcessImplementation, ProtocolError

    command = command.strip()
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise CommandError(
            f"target process:{command}: cannot split the command line ({exc})"
        ) from None
    if not argv or not argv[0]:
        raise CommandError("target process: give the command, e.g. process:'java -jar x'")
    try:
        return ProcessImplementation(command, timeout or TIMEOUT, log_folder)
    except (OSError, ProtocolError) as exc:
        raise CommandError(f"target process:{command}: not available: {exc}") from None


def _takes_rest(factory: Callable[..., Any]) -> bool:
    """Whether a target's function takes the rest of the name (a required argument)."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        for p in params
    )


def _takes(factory: Callable[..., Any], name: str) -> bool:
    """Whether a target's function takes the keyword argument ``name``."""
    try:
        return name in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]
