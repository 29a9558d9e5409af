"""What the runtime must do the same over every real backend (Kafka, Fluss): the model's
decisions on every built-in scenario, a crash at every effect, clients that close cleanly.

Each test runs once per backend, against the server ``tests/servers.py`` starts; what
only one backend has (the topic's compaction, the writer generations) is tested in
``test_kafka_runtime.py`` and ``test_fluss_runtime.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from replay_contract.model.catalogue import all_builtin, builtin
from replay_contract.model.contracts import ORDERED, SEQNUM, Contract
from replay_contract.model.run import simulate
from replay_contract.model.scenario import Scenario
from replay_contract.model.store import OrderEntry
from replay_contract.runtime.fluss_backend import FlussBackend
from replay_contract.runtime.kafka_store import KafkaBackend
from replay_contract.runtime.store import Backend
from replay_contract.spec.summary import summary

from .helpers import crash_points, judged, pipelined_breaks

BACKENDS = [
    pytest.param("kafka", marks=pytest.mark.kafka),
    pytest.param("fluss", marks=pytest.mark.fluss),
]


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    bootstrap = request.getfixturevalue(f"{request.param}_bootstrap")
    if request.param == "kafka":
        yield KafkaBackend(bootstrap, timeout=20.0)
        return
    fluss = FlussBackend(bootstrap, timeout=30.0)
    yield fluss
    fluss.close()  # its admin connection


@pytest.mark.parametrize("contract", [ORDERED, SEQNUM], ids=lambda c: c.name)
@pytest.mark.parametrize("scenario", all_builtin(), ids=lambda s: s.name)
def test_builtin_scenarios_match_the_model(
    backend: Backend, scenario: Scenario, contract: Contract
) -> None:
    result = judged(backend, scenario, contract)
    model = summary(simulate(scenario, contract))
    assert (result.tool_calls, result.repeated) == (
        model["tool_calls"],
        model["repeated_tool_calls"],
    )
    if scenario.name == "reversed-interleaving":
        assert result.repeated == (0 if contract is ORDERED else 4)


@pytest.mark.parametrize(
    ("name", "contract"),
    [
        ("reversed-interleaving", ORDERED),
        ("reversed-interleaving", SEQNUM),
        ("crash-before-save", ORDERED),
        ("repeated-crashes", ORDERED),
        ("divergence-then-crash", SEQNUM),
    ],
    ids=lambda x: getattr(x, "name", x),
)
def test_a_crash_at_every_effect(backend: Backend, name: str, contract: Contract) -> None:
    for variant in crash_points(builtin(name), contract):
        judged(backend, variant, contract)


@pytest.mark.parametrize("contract", [ORDERED, SEQNUM], ids=lambda c: c.name)
def test_a_crash_with_writes_in_flight_breaks_no_property(
    backend: Backend, contract: Contract
) -> None:
    """The pipelined runtime (its writes in flight while it goes on) crashed at every
    effect of a run with divergences and repeated crashes: whatever of its unacknowledged
    writes landed, the run keeps every property the reference model keeps."""
    for variant in crash_points(builtin("divergence-then-crash"), contract):
        assert pipelined_breaks(backend, variant, contract)[0] == [], variant.name


def test_store_clients_close_cleanly(backend: Backend) -> None:
    namespace = backend.namespace()
    try:
        store = namespace.connect()
        assert store.end() == 0
        assert store.append([OrderEntry(1, 0, "A", "d"), OrderEntry("1", 0, "A", "d")]) == [0, 1]
        store.close()
        store.close()  # a second close is harmless
        with pytest.raises(Exception, match="closed"):
            store.end()
    finally:
        namespace.drop()
