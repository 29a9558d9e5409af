"""Target names and the implementations they stand for.

``model``
    the reference model, stepped through the protocol; it claims every contract.
``mutant:<name>``
    the model under a broken variant of ``ordered`` (:data:`~replay_contract.model.
    mutants.MUTANTS`), claiming ``ordered``: the suite must fail it.
``process:<command>``
    any program that speaks the line-oriented JSON protocol of :mod:`.process` on its
    standard input and output (``docs/protocol.md``).
``flink-agents:kafka`` and ``flink-agents:fluss``
    the real Apache Flink Agents runtime, through the adapter of ``conformance/flink-agents``
    (:mod:`.flink_agents`); ``:fresh-jvm`` after the name restores in a new JVM.
``kafka`` and ``fluss``
    the project's runtimes, from ``replay_contract.runtime.kafka`` and
    ``replay_contract.runtime.fluss`` (a function ``implementation()`` returning the
    implementation), imported only when asked for.
"""

from __future__ import annotations

import importlib
import shlex
from pathlib import Path
from typing import Any

from replay_contract.cli import CommandError

from .interface import Implementation

RUNTIMES = {"kafka": "replay_contract.runtime.kafka", "fluss": "replay_contract.runtime.fluss"}


def names() -> list[str]:
    """Every target name this suite knows, the process target as a pattern."""
    from replay_contract.model.mutants import MUTANTS

    return [
        "model",
        *RUNTIMES,
        "flink-agents:kafka",
        "flink-agents:fluss",
        "process:<command>",
        *(f"mutant:{m}" for m in MUTANTS),
    ]


def resolve(
    target: str, timeout: float | None = None, log_folder: Path | None = None
) -> Implementation:
    """The implementation a target name stands for; a one-line :class:`CommandError`
    when it does not exist or cannot start. ``timeout``: the seconds a process target
    or a runtime's store waits for an answer (the target's own default when ``None``);
    ``log_folder``: where a process target's standard error log goes."""
    from .model_target import ModelImplementation

    if target == "model":
        return ModelImplementation()
    if target.startswith("mutant:"):
        from replay_contract.model.mutants import MUTANTS

        name = target.removeprefix("mutant:")
        if name not in MUTANTS:
            raise CommandError(f"target {target}: no such mutant (known: {', '.join(MUTANTS)})")
        return ModelImplementation(MUTANTS[name])
    if target.startswith("process:"):
        from .process import TIMEOUT, ProcessImplementation, ProtocolError

        command = target.removeprefix("process:").strip()
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise CommandError(f"target {target}: cannot split the command line ({exc})") from None
        if not argv or not argv[0]:
            raise CommandError("target process: give the command, e.g. process:'java -jar x'")
        try:
            return ProcessImplementation(command, timeout or TIMEOUT, log_folder)
        except (OSError, ProtocolError) as exc:
            raise CommandError(f"target {target}: not available: {exc}") from None
    if target.startswith("flink-agents:"):
        from . import flink_agents

        try:
            impl: Implementation = flink_agents.implementation(target, timeout, log_folder)
        except CommandError:
            raise
        except Exception as exc:
            raise CommandError(f"target {target}: not available: {_one_line(exc)}") from None
        return impl
    if target in RUNTIMES:
        impl = _runtime(target)
        if timeout is not None and hasattr(impl, "timeout"):
            impl.timeout = timeout
        return impl
    raise CommandError(f"unknown target {target!r} (known: {', '.join(names())})")


def _runtime(target: str) -> Implementation:
    module_name = RUNTIMES[target]
    try:
        module: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise CommandError(f"target {target}: not available: {_one_line(exc)}") from None
    factory = getattr(module, "implementation", None)
    if factory is None:
        raise CommandError(
            f"target {target}: not available: {module_name} has no implementation() function"
        )
    try:
        impl = factory()
    except Exception as exc:
        raise CommandError(f"target {target}: not available: {_one_line(exc)}") from None
    if not isinstance(impl, Implementation):
        raise CommandError(
            f"target {target}: not available: {module_name}.implementation() "
            "returned something that lacks the Implementation methods"
        )
    return impl


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]
