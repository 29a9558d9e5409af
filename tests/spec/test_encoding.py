"""The encoding, run concretely, against the model and the property predicates.

For every scenario of a small bound (and for random walks of larger ones) the machine of
``replay_contract.spec.encoding`` is driven by the scenario's schedule. The trace events
it records (``spec/events.py``) must equal the model's, event by event; the verdicts of
``spec/properties.py`` on its trace must equal their verdicts on the model's; and the
property flags its monitors set must equal the properties its trace breaks. This is what
makes the Z3 formula (the same code, given variables) a faithful translation of the
model, and the monitors a faithful translation of the predicates.
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


def agree(contract, bound, shape, steps, world) -> set[str]:
    """The machine driven by ``steps`` against the model's run of them (``world``): the
    same events, the same verdicts, and monitors that flag the properties its trace
    breaks. The properties broken."""
    machine = enc.run_concrete(contract, bound, shape, steps)
    where = f"{contract.name} {shape} {[str(s) for s in steps]}"
    assert all(a is True for a in machine.assumptions), f"not representable: {where}"
    assert machine.world["phase"] == enc.DONE, f"unfinished: {where}"
    model = t.Trace(world.agent, contract.basis, world.events)
    trace = machine.trace()
    same_events(trace.events, model.events, where)
    verdicts = check_all(trace)
    assert verdicts == check_all(model), where
    broken = {v.property for v in verdicts if not v.holds}
    assert {p for p in PROPERTIES if machine.world[flag(p)]} == broken, where
    return broken


def same_events(got, want, where: str) -> None:
    """``got`` (the machine's) equals ``want`` (the model's), naming the first event
    where they differ."""
    for i, (a, b) in enumerate(zip(got, want, strict=False)):
        assert a == b, f"{where}: event {i} differs\n  machine: {a}\n  model:   {b}"
    assert len(got) == len(want), (
        f"{where}: the machine has {len(got)} events, the model {len(want)}; "
        f"from event {min(len(got), len(want))} on, machine: {list(got[len(want) :])}, "
        f"model: {list(want[len(got) :])}"
    )


@pytest.mark.parametrize("name", list(CONTRACTS))
def test_every_run_of_a_small_bound(name: str) -> None:
    bound = parse("inputs=2,channels=2,keys=1,crashes=1,agents=stateful")
    contract = CONTRACTS[name]
    count = 0
    for shape in bounded.shapes(bound):
        for node in bounded.runs(shape, contract, bound):
            agree(contract, bound, shape, node.steps, node.world)
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
        agree(contract, bound, shape, node.steps, node.world)


@pytest.mark.parametrize("name", ["ordered", "seqnum", "ordered-ignores-timeout"])
def test_random_runs_with_a_timeout(name: str) -> None:
    """A ``timeout`` step put at a random place of random runs: the machine's events
    (what the timeout gives up and releases), its bounded-waiting flag and every other
    agree with the model and the predicates."""
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
        agree(contract, bound, shape, steps, world)


@pytest.mark.parametrize("name", ["ordered", "ordered-ignores-timeout"])
def test_a_timeout_after_the_lost_last_record_of_a_split(name: str) -> None:
    """The catalogue's lost-last-of-split-timeout in the bound's grammar: B waits for
    the lost A; the machine's events are the model's, and it flags bounded-waiting
    exactly where the model's trace breaks it (the variant that ignores timeouts)."""
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
    broken = agree(contract, bound, shape, steps, world)
    assert ("bounded-waiting" in broken) == (name == "ordered-ignores-timeout")
