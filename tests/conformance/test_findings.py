"""Sorting failures into kinds of difference (``conformance.findings.classify``), on
broken variants of the model whose difference from ``seqnum`` or ``ordered`` is known."""

from __future__ import annotations

import pytest
from attrs import evolve

from replay_contract.conformance.findings import KINDS, classify
from replay_contract.conformance.judge import FAILED, judge
from replay_contract.conformance.model_target import ModelImplementation
from replay_contract.model import catalogue
from replay_contract.model.contracts import ORDERED, SEQNUM, STABLE_ID, Contract


@pytest.mark.parametrize(
    ("runs", "held_to", "scenario", "kind"),
    # (what runs, the contract it claims and is held to, the scenario, the kind)
    [
        (
            evolve(SEQNUM, durable_invalidation=False),
            SEQNUM,
            "reversed-interleaving",
            "invalidation-not-durable",
        ),
        (SEQNUM, ORDERED, "reversed-interleaving", "no-ordered-contract"),
        (STABLE_ID, SEQNUM, "reversed-interleaving", "stale-reuse"),
    ],
)
def test_a_known_difference_gets_its_kind(
    runs: Contract, held_to: Contract, scenario: str, kind: str
) -> None:
    s = catalogue.builtin(scenario)
    result = judge(ModelImplementation(runs, claims=(held_to.name,)), s, held_to)
    assert result.verdict == FAILED
    assert classify(result, s, held_to, "model") == kind
    assert kind in KINDS


def test_a_passing_model_has_nothing_to_classify() -> None:
    s = catalogue.builtin("reversed-interleaving")
    assert judge(ModelImplementation(), s, SEQNUM).verdict != FAILED
