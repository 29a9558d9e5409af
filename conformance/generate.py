"""Generated scenarios: every one a function of one integer seed.

:func:`generate` draws an agent (one to three actions on each input, follow-up events,
memory fields that several actions read and write, zero to two tools per action), a
topology (up to three upstream channels, several keys sharing channels, a key fed by
more than one channel, sources that are not replayable and lose or change records on
re-delivery) and a schedule (deliveries in a random interleaving, checkpoints — also
while a recovery is still replaying — crashes between steps and after any effect of a
step, repeated crashes, crashes during the restore itself). The same seed gives the
same scenario on every machine and every Python version: the generator uses only
:class:`random.Random` with integer draws. :func:`scenarios` is the same generator as a
Hypothesis strategy (Hypothesis supplies the draws and shrinks a failing case).

:func:`crash_sweep` turns a scenario into one variant per crash point: for every
delivery before its first crash and every effect of that delivery, the variant crashes
right there, restores and re-delivers the rest in a fresh interleaving.

Both stay within what a target can run when asked: without ``crash_points`` a crash
comes between steps only (a delivery that would crash inside becomes the delivery and
then a crash), without ``non_replayable`` every source is replayable. With ``timeout``
(a target that runs the ``timeout`` step) a generated scenario has the wait bound pass
once after its first restore, at a place drawn from a generator of its own, and each
sweep variant has it pass after its re-delivery; without it the scenarios are exactly
those of before. The same seed and capabilities give the same scenario.
"""

from __future__ import annotations

import random
import string

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from replay_contract.model.agent import INPUT, Action, Agent
from replay_contract.model.contracts import ORDERED, Contract
from replay_contract.model.scenario import Scenario, Step
from replay_contract.model.topology import Channel, Key, Record, Replay, Topology

from .channels import Channels
from .reference import reference_steps

NAMES = ("plan", "respond", "review", "notify", "summarise", "classify", "escalate")
FIELDS = ("notes", "count", "status")
TOOLS = ("llm", "search")
KEYS: tuple[Key, ...] = ("K", "J", 1, "1")


def generate(
    seed: int, crash_points: bool = True, non_replayable: bool = True, timeout: bool = False
) -> Scenario:
    """The scenario of ``seed``, within the capabilities given (the module docstring)."""
    scenario = _draw(
        random.Random(seed),
        f"generated-{seed}",
        f"generated from seed {seed} (replay_contract.conformance.generate)",
        crash_points,
        non_replayable,
    )
    return _with_timeout(random.Random(f"{seed}:timeout"), scenario) if timeout else scenario


def _with_timeout(rng: random.Random, scenario: Scenario) -> Scenario:
    """``scenario`` with a ``timeout`` step after a step that leaves the operator up,
    after its first restore (before it nothing waits); unchanged when there is none."""
    from replay_contract.model.errors import ScenarioError
    from replay_contract.model.scenario import check_schedule

    steps = scenario.schedule
    first = next((i for i, s in enumerate(steps) if s.kind == "restore"), None)
    if first is None:
        return scenario
    places = list(range(first + 1, len(steps) + 1))
    rng.shuffle(places)
    for at in places:
        candidate = scenario.with_schedule((*steps[:at], Step("timeout"), *steps[at:]))
        try:
            check_schedule(candidate)
        except ScenarioError:
            continue  # the operator is down there, or the input has ended
        return candidate
    return scenario


def scenarios() -> SearchStrategy[Scenario]:
    """The same scenarios as a Hypothesis strategy, for an implementation's own property
    tests: the generator's draws come from Hypothesis instead of a seeded
    :class:`random.Random`, so Hypothesis can shrink a failing scenario (fewer channels,
    records, actions and crashes) and replay it from its example database."""
    return st.randoms(note_method_calls=False, use_true_random=False).map(
        lambda rng: _draw(rng, "hypothesis", "drawn by Hypothesis (conformance.generate)")
    )


def _draw(
    rng: random.Random,
    name: str,
    description: str,
    crash_points: bool = True,
    non_replayable: bool = True,
) -> Scenario:
    agent = _agent(rng)
    topology = _topology(rng, non_replayable)
    schedule = _schedule(rng, topology, crash_points)
    return Scenario(name, agent, topology, schedule, description)


def _subset(rng: random.Random, items: tuple[str, ...], most: int) -> tuple[str, ...]:
    k = rng.randint(0, min(most, len(items)))
    return tuple(sorted(rng.sample(items, k), key=items.index))


def _agent(rng: random.Random) -> Agent:
    fields = FIELDS[: rng.randint(1, len(FIELDS))]
    names = list(NAMES)
    rng.shuffle(names)
    actions: list[Action] = []
    for _ in range(rng.randint(1, 3)):
        actions.append(_action(rng, names.pop(), INPUT, fields))
    # follow-up events: an action emits, later actions listen (acyclic by construction)
    for depth in range(rng.choice((0, 0, 1, 1, 2))):
        source = rng.randrange(len(actions))
        event = f"event-{depth + 1}"
        actions[source] = Action(
            actions[source].name,
            actions[source].trigger,
            actions[source].reads,
            actions[source].writes,
            actions[source].tools,
            (*actions[source].emits, event),
            actions[source].output,
        )
        for _ in range(rng.randint(1, 2)):
            if names:
                actions.append(_action(rng, names.pop(), event, fields))
    return Agent(tuple(actions))


def _action(rng: random.Random, name: str, trigger: str, fields: tuple[str, ...]) -> Action:
    return Action(
        name,
        trigger,
        reads=_subset(rng, fields, 2),
        writes=_subset(rng, fields, 2),
        tools=_subset(rng, TOOLS, 2),
        output=rng.random() < 0.6,
    )


def _topology(rng: random.Random, non_replayable: bool = True) -> Topology:
    keys = list(KEYS[: rng.choice((1, 2, 2, 3, 4))])
    ids = iter(string.ascii_uppercase)
    channels = []
    for c in range(rng.randint(1, 3)):
        replayable = rng.random() < 0.75 or not non_replayable
        records = []
        for offset in range(rng.randint(1, 4)):
            identity = next(ids)
            key = keys[0] if rng.random() < 0.5 else rng.choice(keys)
            replay = None
            if not replayable and rng.random() < 0.5:
                replay = (
                    Replay(lost=True)
                    if rng.random() < 0.5
                    else Replay(payload=f"{identity.lower()}-changed")
                )
            records.append(
                Record(
                    identity,
                    key,
                    f"{identity.lower()}-payload",
                    f"upstream-{c + 1}",
                    offset,
                    replay,
                )
            )
        channels.append(Channel(f"upstream-{c + 1}", tuple(records), replayable))
    return Topology(tuple(channels))


def _schedule(
    rng: random.Random, topology: Topology, crash_points: bool = True
) -> tuple[Step, ...]:
    channels = Channels(topology)
    steps: list[Step] = []
    crashes, most = 0, rng.choice((1, 1, 2, 3))
    up, restored = True, False
    while len(steps) < 48:
        if not up:
            crash_after = rng.randint(0, 3) if crashes < most and rng.random() < 0.15 else None
            if not crash_points and crash_after is not None:
                crash_after = None  # the restore completes (a crash would come between steps)
                crashes += 1
            steps.append(Step("restore", crash_after=crash_after))
            channels.restore()
            crashes += crash_after is not None
            up, restored = crash_after is None, True
            continue
        pending = channels.pending()
        if not pending:
            if crashes < most and rng.random() < 0.7:
                steps.append(Step("crash"))
                crashes, up = crashes + 1, False
                continue
            break
        draw = rng.random()
        if draw < (0.3 if restored else 0.1):
            steps.append(Step("checkpoint"))
            channels.checkpoint()
            restored = False
        elif draw < 0.4 and crashes < most and rng.random() < 0.3:
            steps.append(Step("crash"))
            crashes, up = crashes + 1, False
        else:
            record = channels.deliver(_record_of(channels, rng.choice(pending)))
            crash_after = rng.randint(0, 4) if crashes < most and rng.random() < 0.12 else None
            if crash_after is not None and not crash_points:
                steps += [Step("deliver", record.identity), Step("crash")]
            else:
                steps.append(Step("deliver", record.identity, crash_after))
            if crash_after is not None:
                crashes, up = crashes + 1, False
    if not up:
        steps.append(Step("restore"))
    return tuple(steps)


def _record_of(channels: Channels, channel: str) -> str:
    record = channels.next_record(channel)
    assert record is not None
    return record.identity


def crash_sweep(
    scenario: Scenario,
    seed: int = 0,
    contract: Contract = ORDERED,
    crash_points: bool = True,
    timeout: bool = False,
) -> list[Scenario]:
    """One variant of ``scenario`` per crash point before its first crash.

    Variant ``name.crash-i.k`` crashes after the k-th effect (0: before any) of schedule step
    i, a delivery, restores and re-delivers what is left in an interleaving drawn from
    ``seed``. ``k`` runs up to one past the step's effects under ``contract`` (the step
    completes, then the crash). Without ``crash_points`` only that last variant is made,
    as the delivery followed by a crash step. With ``timeout`` the wait bound passes
    after the re-delivery."""
    from replay_contract.model.trace import is_effect

    first_crash = next(
        (
            i
            for i, s in enumerate(scenario.schedule)
            if s.kind == "crash" or s.crash_after is not None
        ),
        len(scenario.schedule),
    )
    plain = scenario.with_schedule(scenario.schedule[:first_crash])
    effects = [sum(is_effect(e) for e in events) for _, events in reference_steps(plain, contract)]
    variants = []
    for i, step in enumerate(plain.schedule):
        if step.kind != "deliver":
            continue
        for k in range(effects[i] + 2) if crash_points else (effects[i] + 1,):
            rng = random.Random(f"{seed}:{i}:{k}")
            crash = (
                (Step("deliver", step.record, k),)
                if crash_points
                else (Step("deliver", step.record), Step("crash"))
            )
            head = (*plain.schedule[:i], *crash, Step("restore"))
            steps = redeliver(rng, scenario.topology, head)
            if timeout:
                steps = (*steps, Step("timeout"))
            variants.append(scenario.with_schedule(steps, f"{scenario.name}.crash-{i}.{k}"))
    return variants


def redeliver(rng: random.Random, topology: Topology, head: tuple[Step, ...]) -> tuple[Step, ...]:
    """``head`` followed by every record still to deliver, in a random interleaving."""
    channels = Channels(topology)
    for step in head:
        if step.kind == "deliver":
            assert step.record is not None
            channels.deliver(step.record)
        elif step.kind == "checkpoint":
            channels.checkpoint()
        elif step.kind == "restore":
            channels.restore()
    steps = list(head)
    while pending := channels.pending():
        record = channels.deliver(_record_of(channels, rng.choice(pending)))
        steps.append(Step("deliver", record.identity))
    return tuple(steps)
