"""Pipelined writes (``RuntimeOperator(..., pipelined=True)``) over a memory store whose
writes stay in flight (``MemoryBackend(lag=N)``): the runtime goes on while they do,
reports each write only once it is durable, and a crash between the send of a write and
its acknowledgement breaks no property the reference model keeps."""

from __future__ import annotations

from typing import Any

import pytest

from replay_contract.model import trace as t
from replay_contract.model.catalogue import all_builtin, builtin
from replay_contract.model.contracts import CONTRACTS, ORDERED, SEQNUM, Contract
from replay_contract.model.scenario import Scenario
from replay_contract.runtime import bench
from replay_contract.runtime.memory_store import MemoryBackend, MemoryNamespace
from replay_contract.runtime.operator import RuntimeOperator

from .helpers import crash_points, pipelined_breaks

LAG = 3


class Watching:
    """An environment that checks, at each report of a durable write, that the store's
    log holds the entry (it is durable), and counts what it sees."""

    def __init__(self, impl: RuntimeOperator) -> None:
        self.impl = impl
        self.tools = 0
        self.saves: list[int] = []
        self.reports: list[t.Event] = []

    def _log(self) -> list[Any]:
        namespace = self.impl.namespace
        assert isinstance(namespace, MemoryNamespace)
        return namespace.log.entries

    def tool(self, key, position, record, path, tool, reads):  # type: ignore[no-untyped-def]
        self.tools += 1
        return f"{tool}:{record.identity}"

    def output(self, key, identity, path, value):  # type: ignore[no-untyped-def]
        pass

    def report(self, event: t.Event) -> None:
        self.reports.append(event)
        if isinstance(event, t.Save):
            assert event.completion < len(self._log()), "a save reported before it is durable"
            self.saves.append(event.completion)
        elif isinstance(event, t.Reuse):
            assert event.completion < len(self._log()), "a reuse of a write in flight"


def _run(lag: int, pipelined: bool, records: int = 40) -> tuple[Watching, dict[Any, Any]]:
    recs = bench.workload(records, 4)
    impl = RuntimeOperator(MemoryBackend(lag=lag), pipelined=pipelined)
    env = Watching(impl)
    impl.open(bench.AGENT, bench._topology(recs), ORDERED, env)
    try:
        for i, record in enumerate(recs, 1):
            impl.deliver(record)
            if i % 10 == 0:
                impl.checkpoint()
        memory = dict(impl.end())
    finally:
        impl.close()
    return env, memory


def test_the_runtime_goes_on_while_writes_are_in_flight() -> None:
    recs = bench.workload(LAG, 2)
    impl = RuntimeOperator(MemoryBackend(lag=LAG), pipelined=True)
    env = Watching(impl)
    impl.open(bench.AGENT, bench._topology(recs), ORDERED, env)
    try:
        for record in recs:
            impl.deliver(record)
        assert env.tools == LAG  # every input ran its action ...
        assert env.saves == []  # ... while no write was acknowledged, so none reported
        impl.checkpoint()
        assert env.saves == list(range(LAG))  # the checkpoint waited: all reported, in order
    finally:
        impl.close()


def test_a_pipelined_run_reports_the_same_writes_once_durable() -> None:
    waited, memory = _run(lag=0, pipelined=False)
    pipelined, pipelined_memory = _run(lag=LAG, pipelined=True)
    assert pipelined_memory == memory
    assert pipelined.saves == waited.saves == list(range(40))
    durable = (t.Save, t.Order, t.Invalidate)

    def split(events: list[t.Event]) -> tuple[list[t.Event], list[t.Event]]:
        return [e for e in events if isinstance(e, durable)], [
            e for e in events if not isinstance(e, durable)
        ]

    # the same writes and the same decisions, each in the same order; only later
    assert split(pipelined.reports) == split(waited.reports)
    assert pipelined.reports != waited.reports


def _with_lag(scenario: Scenario, contract: Contract) -> tuple[list[str], int]:
    """The properties the pipelined runtime breaks on ``scenario`` and the model keeps,
    and the entries it sent that never landed (in flight at a crash)."""
    return pipelined_breaks(MemoryBackend(lag=LAG), scenario, contract)


@pytest.mark.parametrize("contract", [ORDERED, SEQNUM], ids=lambda c: c.name)
@pytest.mark.parametrize("name", [s.name for s in all_builtin()])
def test_a_crash_between_send_and_acknowledgement_breaks_no_property(
    name: str, contract: Contract
) -> None:
    lost = 0
    for variant in crash_points(builtin(name), contract):
        broken, lost_here = _with_lag(variant, contract)
        assert broken == [], f"{variant.name}: {broken}"
        lost += lost_here
    assert lost > 0, "no crash fell while writes were in flight"


@pytest.mark.parametrize("contract", list(CONTRACTS.values()), ids=lambda c: c.name)
def test_every_builtin_scenario_keeps_the_models_properties_pipelined(contract: Contract) -> None:
    for scenario in all_builtin():
        broken, _ = _with_lag(scenario, contract)
        assert broken == [], f"{scenario.name}: {broken}"
