"""The encoding, run concretely, against the model and the property predicates.

For every scenario of a small bound (and for random walks of larger ones) the machine of
``replay_contract.spec.encoding`` is driven by the scenario's schedule; the property
flags its monitors set must equal the verdicts of ``spec/properties.py`` on the model's
trace. This is what makes the Z3 formula (the same code, given variables) a faithful
translation of the model and of the predicates.
"""

from __future__ import annotations

import random

import pytest

from replay_contract.model import bounded
from replay_contract.model import trace as t
from replay_contract.model.contracts import CONTRACTS
from replay_contract.model.mutants import MUTANTS
from replay_contract.spec import encoding as enc
from replay_contract.spec.bound import parse
from replay_contract.spec.monitors import flag
from replay_contract.spec.properties import PROPERTIES, check_all

EVERY = {**CONTRACTS, **MUTANTS}


def agree(contract, bound, shape, node) -> None:
    machine = enc.run_concrete(contract, bound, shape, node.steps)
    steps = [str(s) for s in node.steps]
    assert all(a is True for a in machine.assumptions), f"not representable: {steps}"
    assert machine.world["phase"] == enc.DONE, f"unfinished: {steps}"
    trace = t.Trace(node.world.agent, contract.basis, node.world.events)
    want = {v.property for v in check_all(trace) if not v.holds}
    got = {p for p in PROPERTIES if machine.world[flag(p)]}
    assert got == want, f"{contract.name} {shape} {steps}"


@pytest.mark.parametrize("name", list(CONTRACTS))
def test_every_run_of_a_small_bound(name: str) -> None:
    bound = parse("inputs=2,channels=2,keys=1,crashes=1,agents=stateful")
    contract = CONTRACTS[name]
    count = 0
    for shape in bounded.shapes(bound):
        for node in bounded.runs(shape, contract, bound):
            agree(contract, bound, shape, node)
            count += 1
    assert count > 2000


@pytest.mark.parametrize("name", list(EVERY))
def test_random_runs_of_a_larger_bound(name: str) -> None:
    bound = parse("inputs=3,channels=2,keys=2,crashes=2")
    contract = EVERY[name]
    rng = random.Random(name)
    shapes = list(bounded.shapes(bound))
    for _ in range(40):
        shape = rng.choice(shapes)
        node = bounded.random_run(shape, contract, bound, rng.randrange)
        agree(contract, bound, shape, node)
