"""The model driven by hypothesis through random schedules, several contracts side by side.

Every step is applied to one world per contract; the ``ordered`` contract must keep
every property, ``seqnum`` every property but ``complete-reuse``, and all contracts
must agree on which steps can happen.
"""

from __future__ import annotations

import contextlib
import copy

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from replay_contract.model import operator as op
from replay_contract.model import trace as t
from replay_contract.model.contracts import ORDERED, SEQNUM, Contract
from replay_contract.model.errors import ScenarioError
from replay_contract.spec.properties import (
    BOUNDED_WAITING,
    COMPLETE_REUSE,
    KEY_ISOLATION,
    NO_STALE_REUSE,
    check,
    check_all,
)

from .strategies import agents, topologies

ALLOWED: dict[str, set[str]] = {ORDERED.name: set(), SEQNUM.name: {COMPLETE_REUSE}}
CONTRACTS: tuple[Contract, ...] = (ORDERED, SEQNUM)


class ModelMachine(RuleBasedStateMachine):
    worlds: dict[str, op.World]

    @initialize(topology=topologies(), agent=agents)
    def start(self, topology, agent) -> None:
        self.worlds = {c.name: op.World(topology, agent, c) for c in CONTRACTS}

    @property
    def any_world(self) -> op.World:
        return self.worlds[ORDERED.name]

    def apply(self, step) -> None:
        outcomes = {}
        for name, world in self.worlds.items():
            try:
                outcomes[name] = step(world)
            except ScenarioError as exc:
                outcomes[name] = exc
        refused = {name for name, o in outcomes.items() if isinstance(o, ScenarioError)}
        assert refused in (set(), set(self.worlds)), f"only {refused} refused the step"
        if not refused:
            self.worlds = outcomes  # type: ignore[assignment]

    @precondition(lambda self: self.any_world.operator.up)
    @rule(data=st.data(), crash=st.one_of(st.none(), st.integers(0, 4)))
    def deliver(self, data, crash) -> None:
        world = self.any_world
        ready = [r for c in world.topology.channels if (r := world.next_record(c.name))]
        if not ready:
            return
        record = data.draw(st.sampled_from(ready))
        self.apply(lambda w: op.deliver(w, record.identity, crash))

    # Deliveries are most of a schedule: a second rule makes them twice as likely.
    deliver_again = deliver

    @precondition(lambda self: self.any_world.operator.up)
    @rule()
    def checkpoint(self) -> None:
        self.apply(op.checkpoint)

    @precondition(lambda self: self.any_world.operator.up)
    @rule()
    def crash(self) -> None:
        self.apply(op.crash)

    @precondition(lambda self: self.any_world.operator.up)
    @rule()
    def timeout(self) -> None:
        self.apply(op.timeout)

    @precondition(lambda self: not self.any_world.operator.up)
    @rule(crash=st.one_of(st.none(), st.integers(0, 3)))
    def restore(self, crash) -> None:
        self.apply(lambda w: op.restore(w, crash))

    @rule()
    def refused_step_changes_nothing(self) -> None:
        for world in self.worlds.values():
            before = copy.deepcopy(world)
            refused = op.restore if world.operator.up else op.checkpoint
            with contextlib.suppress(ScenarioError):
                refused(world)
                raise AssertionError(f"{refused.__name__} was not refused")
            assert world == before  # nothing was changed in place

    @invariant()
    def prefix_properties_hold(self) -> None:
        for name, world in self.worlds.items():
            trace = t.Trace(world.agent, world.contract.basis, world.events)
            for prop in (NO_STALE_REUSE, KEY_ISOLATION, BOUNDED_WAITING):
                if prop not in ALLOWED[name]:
                    verdict = check(prop, trace)
                    assert verdict.holds, (name, verdict.explanation)

    def teardown(self) -> None:
        if not hasattr(self, "worlds"):
            return
        for name, world in self.worlds.items():
            if not world.operator.up:
                world = op.restore(world)
            world = op.end(world)
            trace = t.Trace(world.agent, world.contract.basis, world.events)
            broken = {v.property: v.explanation for v in check_all(trace) if not v.holds}
            assert set(broken) <= ALLOWED[name], (name, broken)


ModelMachine.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestModel = ModelMachine.TestCase
