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
from attrs import evolve

from replay_contract.model import bounded
from replay_contract.model import trace as t
from replay_contract.model.contracts import CONTRACTS
from replay_contract.model.mutants import MUTANTS
from replay_contract.spec import encoding as enc
from replay_contract.spec.bound import parse
from replay_contract.spec.monitors import flag
from replay_contract.spec.properties import PROPERTIES, check_all

#: the published contracts, the mutants, and the proposed change of the docs' example
#: (docs/examples/earlier-order.json: the order written before the first tool call),
#: whose proofs for every bound rest on this machine too
EARLY = evolve(CONTRACTS["ordered"], name="ordered-early", record_order="before-first-tool-call")
EVERY = {**CONTRACTS, **MUTANTS, EARLY.name: EARLY}


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


@pytest.mark.parametrize("name", ["ordered", "seqnum", "ordered-ignores-timeout"])
def test_random_runs_with_a_timeout(name: str) -> None:
    """A ``timeout`` step put at a random place of random runs: the machine's
    bounded-waiting flag (and every other) equals the predicates' verdicts."""
    from replay_contract.model.errors import ScenarioError
    from replay_contract.model.run import run_schedule
    from replay_contract.model.scenario import Step

    bound = parse("inputs=3,channels=2,keys=2,crashes=2,timeouts=1")
    contract = EVERY[name]
    rng = random.Random(name)
    shapes = list(bounded.shapes(bound))
    tried = 0
    while tried < 30:
        shape = rng.choice(shapes)
        node = bounded.random_run(shape, contract, bound, rng.randrange)
        plain = [s for s in node.steps if s.kind != "end"]
        at = rng.randrange(len(plain) + 1)
        steps = (*plain[:at], Step("timeout"), *plain[at:])
        try:
            world = run_schedule(shape.scenario(steps), contract)
        except ScenarioError:
            continue  # the operator is down there
        tried += 1
        machine = enc.run_concrete(contract, bound, shape, steps)
        assert all(a is True for a in machine.assumptions), f"not representable: {steps}"
        assert machine.world["phase"] == enc.DONE, f"unfinished: {steps}"
        trace = t.Trace(world.agent, contract.basis, world.events)
        want = {v.property for v in check_all(trace) if not v.holds}
        got = {p for p in PROPERTIES if machine.world[flag(p)]}
        assert got == want, f"{contract.name} {shape} {[str(s) for s in steps]}"


@pytest.mark.parametrize("name", ["ordered", "ordered-ignores-timeout"])
def test_a_timeout_after_the_lost_last_record_of_a_split(name: str) -> None:
    """The catalogue's lost-last-of-split-timeout in the bound's grammar: B waits for
    the lost A; the machine flags bounded-waiting exactly where the model's trace breaks
    it (the variant that ignores timeouts)."""
    from replay_contract.model.run import run_schedule
    from replay_contract.model.scenario import Step

    bound = parse("inputs=2,channels=2,keys=1,crashes=1,timeouts=1")
    contract = EVERY[name]
    shape = bounded.Shape((0, 1), (0, 0), ("lost", "same"), "stateful")
    steps = (
        Step("deliver", "A"),
        Step("deliver", "B"),
        Step("crash"),
        Step("restore"),
        Step("deliver", "B"),
        Step("timeout"),
    )
    world = run_schedule(shape.scenario(steps), contract)
    want = {
        v.property
        for v in check_all(t.Trace(world.agent, contract.basis, world.events))
        if not v.holds
    }
    machine = enc.run_concrete(contract, bound, shape, steps)
    got = {p for p in PROPERTIES if machine.world[flag(p)]}
    assert got == want
    assert ("bounded-waiting" in got) == (name == "ordered-ignores-timeout")
