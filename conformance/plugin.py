"""The conformance suite as a pytest plugin (entry point ``pytest11``).

``pytest --replay-target=T [--replay-contract=NAME] [--replay-examples=N]
[--replay-seed=S] [--replay-out=DIR]`` adds one test per scenario of the suite (the
catalogue, the crash sweeps and the generated scenarios) to whatever else pytest
collects. A scenario the target cannot run is skipped with the reason; a failure shows
the first difference as a table and the scenario file to replay.

This module is imported by every pytest run once the package is installed, so it imports
nothing but pytest at import time; the suite itself is imported only when
``--replay-target`` is given.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .interface import Implementation
    from .suite import Case

_SESSION_KEY = pytest.StashKey["_ReplaySession"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("replay-contract", "replay contract conformance suite")
    group.addoption(
        "--replay-target",
        metavar="T",
        help="run the conformance suite against target T (model, kafka, fluss, "
        "flink-agents:kafka, flink-agents:fluss, process:<command>, mutant:<name>)",
    )
    group.addoption(
        "--replay-contract",
        metavar="NAME",
        default="ordered",
        help="the contract to hold the target to (default: ordered)",
    )
    group.addoption(
        "--replay-examples",
        metavar="N",
        type=int,
        default=50,
        help="generated scenarios (default: 50)",
    )
    group.addoption(
        "--replay-seed",
        metavar="S",
        type=int,
        default=0,
        help="seed of the first generated scenario (default: 0)",
    )
    group.addoption(
        "--replay-out",
        metavar="DIR",
        default="out/conformance",
        help="where failing scenarios are written (default: out/conformance)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Refuse bad options of the suite before anything is collected or run: a negative
    count, or a ``--replay-out`` where the failing scenarios cannot be written (nothing
    is created: the suite makes the folder when a scenario fails)."""
    if not config.getoption("replay_target"):
        return
    from replay_contract.arguments import creatable_folder
    from replay_contract.errors import CommandError

    for option in ("replay_examples", "replay_seed"):
        if config.getoption(option) < 0:
            raise pytest.UsageError(
                f"--{option.replace('_', '-')}: must not be negative, "
                f"got {config.getoption(option)}"
            )
    out = config.getoption("replay_out")
    if not str(out).strip():
        raise pytest.UsageError("--replay-out: expected a path, got an empty one")
    try:
        creatable_folder(Path(out), "--replay-out")
    except CommandError as exc:
        raise pytest.UsageError(str(exc)) from None


class _ReplaySession:
    """The target and contract of one pytest session, the target started once."""

    def __init__(self, config: pytest.Config) -> None:
        from replay_contract.errors import CommandError
        from replay_contract.model.contracts import contract
        from replay_contract.model.errors import UnknownContractError

        from .judge import unclaimed
        from .targets import resolve

        self.target: str = config.getoption("replay_target")
        self.out = Path(config.getoption("replay_out"))
        try:
            self.contract = contract(config.getoption("replay_contract"))
            self.impl: Implementation = resolve(self.target)
        except (CommandError, UnknownContractError) as exc:
            raise pytest.UsageError(f"--replay-target={self.target}: {exc}") from None
        reason = unclaimed(self.impl.capabilities, self.contract)
        if reason is not None:
            self.close()
            raise pytest.UsageError(
                f"--replay-target={self.target}: the target {reason}; "
                "choose one it implements with --replay-contract"
            )

    def close(self) -> None:
        from .suite import shutdown

        shutdown(self.impl)


class ReplayScenario(pytest.Item):
    """One scenario of the suite, run against the session's target."""

    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        from .judge import ERROR, FAILED, SKIPPED
        from .suite import run_case

        session = self.config.stash[_SESSION_KEY]
        result = run_case(session.impl, self.case, session.contract, session.out, session.target)
        if result.verdict == SKIPPED:
            pytest.skip(result.reason)
        if result.verdict == FAILED:
            raise ScenarioFailed(result.reason, result.report, result.scenario_file)
        if result.verdict == ERROR:  # no verdict on the contract, but not a pass either
            pytest.fail(f"error (the target could not go on): {result.reason}", pytrace=False)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ScenarioFailed):
            return str(excinfo.value.text())
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"replay-contract scenario {self.case.name}"


class ScenarioFailed(Exception):
    def __init__(self, reason: str, report: str, scenario_file: str | None) -> None:
        super().__init__(reason)
        self.reason, self.report, self.scenario_file = reason, report, scenario_file

    def text(self) -> str:
        replay = f"\n\nreplay: {self.scenario_file}" if self.scenario_file else ""
        return f"{self.reason}\n\n{self.report}{replay}"


class ReplaySuite(pytest.Collector):
    """The suite's scenarios for one target and contract."""

    def collect(self) -> Iterator[pytest.Item]:
        from .suite import cases

        session = self.config.stash[_SESSION_KEY]
        for case in cases(
            self.config.getoption("replay_examples"),
            self.config.getoption("replay_seed"),
            session.contract,
        ):
            yield ReplayScenario.from_parent(self, name=case.name, case=case)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if not config.getoption("replay_target"):
        return
    replay = _ReplaySession(config)
    config.stash[_SESSION_KEY] = replay
    name = f"replay-contract[{replay.target},{replay.contract.name}]"
    suite = ReplaySuite.from_parent(session, name=name, nodeid=name)
    added = list(suite.collect())
    items.extend(added)
    # report them as collected, as a collector found during collection would: the
    # "collected N items / M deselected" line then counts them (else "-M selected")
    found: list[pytest.Item | pytest.Collector] = [*added]
    config.hook.pytest_collectreport(report=pytest.CollectReport(name, "passed", None, found))


def pytest_unconfigure(config: pytest.Config) -> None:
    replay = config.stash.get(_SESSION_KEY, None)
    if replay is not None:
        replay.close()
