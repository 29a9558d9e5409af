"""The exhaustive explorer: every channel-order-preserving re-delivery, every crash point.

For one scenario and contract, :func:`explore` runs

- every interleaving of the deliveries that follow each restore in the schedule, keeping
  each channel's order (the records delivered stay the same; only their interleaving
  changes), and,
- with ``crash_points``, a crash after every effect of every delivery of the schedule,
  each followed by a restore, by every interleaving of every channel's whole
  remaining suffix and by a ``timeout`` (the wait bound passes before the input ends),

and checks every property on every run. It reports how many runs it explored and, for
each property, the first run that breaks it as a scenario of its own. It is the
reference the symbolic encoding of ``verify`` is tested against.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from math import comb

from attrs import frozen

from replay_contract.model import trace as t
from replay_contract.model.contracts import Contract
from replay_contract.model.operator import World
from replay_contract.model.run import Run, apply, run_schedule
from replay_contract.model.scenario import Scenario, Step

from .properties import check_all


@frozen
class Finding:
    """The first run found to break a property."""

    property: str
    scenario: Scenario
    explanation: str
    witness: tuple[int, ...]


@frozen
class Exploration:
    scenario: str
    contract: str
    runs: int
    findings: tuple[Finding, ...]
    complete: bool

    def broken(self) -> list[str]:
        return [f.property for f in self.findings]


def interleavings(channels: Sequence[Sequence[str]]) -> Iterator[tuple[str, ...]]:
    """Every merge of the sequences that keeps each one's order."""
    lists = [list(c) for c in channels if c]
    if not lists:
        yield ()
        return
    for i, lst in enumerate(lists):
        rest = [*lists[:i], lst[1:], *lists[i + 1 :]]
        for tail in interleavings(rest):
            yield (lst[0], *tail)


def _by_channel(scenario: Scenario, identities: Sequence[str]) -> list[list[str]]:
    groups: dict[str, list[str]] = {}
    for identity in identities:
        groups.setdefault(scenario.topology.record(identity).channel, []).append(identity)
    return list(groups.values())


def _blocks(steps: Sequence[Step]) -> list[tuple[int, int]]:
    """The runs of plain deliveries right after each restore, as (start, stop)."""
    blocks: list[tuple[int, int]] = []
    i = 0
    while i < len(steps):
        if steps[i].kind == "restore":
            j = i + 1
            while j < len(steps) and steps[j].kind == "deliver" and steps[j].crash_after is None:
                j += 1
            if j - i > 2:
                blocks.append((i + 1, j))
            i = j
        else:
            i += 1
    return blocks


def orders(scenario: Scenario) -> tuple[int, int]:
    """How many schedules :func:`redeliveries` yields, and how many re-delivery orders
    of one restore it lists at once (the most of any restore), counted without listing
    them: the interleavings of channels of lengths n1..nk number (n1+..+nk)!/(n1!..nk!)."""
    total, widest = 1, 1
    for start, stop in _blocks(scenario.schedule):
        ids = [s.record for s in scenario.schedule[start:stop] if s.record]
        count, placed = 1, 0
        for group in _by_channel(scenario, ids):
            placed += len(group)
            count *= comb(placed, len(group))
        total *= count
        widest = max(widest, count)
    return total, widest


#: The most model steps an exploration may take (runs times schedule steps, and the
#: re-delivery orders of one restore listed up front times their length): a few minutes
#: on 2 cores (about 6,000 steps a second, the properties checked on every run).
MOST_STEPS = 1_000_000


def too_large(scenario: Scenario, limit: int) -> str | None:
    """Why exploring ``scenario`` with at most ``limit`` runs would not finish (one line:
    what is too large and what would), or ``None``. Only the re-delivery orders are
    counted (they are enumerated lazily, so only the runs made cost); crash points add
    to them."""
    total, _ = orders(scenario)
    steps = max(1, len(scenario.schedule))
    runs = min(total, limit)
    if runs * steps <= MOST_STEPS:
        return None
    what = f"{_count(total)} re-delivery orders of {steps} steps each"
    return (
        f"{scenario.name}: {what} are too many to explore within --limit {limit:,} "
        f"(about {MOST_STEPS:,} steps finish in minutes); --limit "
        f"{max(1, MOST_STEPS // steps):,} would finish, or simulate runs one order"
    )


def _count(n: int) -> str:
    return f"{n:,}" if n < 10**9 else f"about 10^{len(str(n)) - 1}"


def redeliveries(scenario: Scenario) -> Iterator[tuple[Step, ...]]:
    """The schedule with the plain deliveries after each restore in every interleaving."""
    steps = list(scenario.schedule)
    blocks = _blocks(steps)
    merges = [
        _by_channel(scenario, [s.record for s in steps[start:stop] if s.record])
        for start, stop in blocks
    ]
    for choice in _each_merge(merges):
        out = list(steps)
        for (start, stop), order in zip(blocks, choice, strict=True):
            out[start:stop] = [Step("deliver", r) for r in order]
        yield tuple(out)


def _each_merge(blocks: Sequence[list[list[str]]]) -> Iterator[tuple[tuple[str, ...], ...]]:
    """Every choice of one interleaving per block, generated one at a time (the
    product of the blocks' interleavings, never held in memory: its size grows
    factorially with the records)."""
    if not blocks:
        yield ()
        return
    for first in interleavings(blocks[0]):
        for rest in _each_merge(blocks[1:]):
            yield (first, *rest)


def remaining(world: World) -> list[list[str]]:
    """Every channel's records still to come, as the channels would deliver them."""
    out = []
    for channel in world.topology.channels:
        offset = world.operator.offsets.get(channel.name, 0)
        high = world.high_water.get(channel.name, 0)
        out.append(
            [
                r.identity
                for r in channel.records[offset:]
                if not (r.offset < high and r.replay is not None and r.replay.lost)
            ]
        )
    return out


def crash_variants(scenario: Scenario, contract: Contract) -> Iterator[tuple[Step, ...]]:
    """A crash after each effect of each delivery, then every full re-delivery, then the
    wait bound passing (``timeout``) before the end of input."""
    world = World(scenario.topology, scenario.agent, contract)
    for i, step in enumerate(scenario.schedule):
        if step.kind == "deliver" and step.crash_after is None and world.operator.up:
            after = apply(world, step)
            effects = sum(t.is_effect(e) for e in after.events[len(world.events) :])
            for n in range(effects + 1):
                crashed = apply(world, Step("deliver", step.record, n))
                restored = apply(crashed, Step("restore"))
                prefix = (*scenario.schedule[:i], Step("deliver", step.record, n), Step("restore"))
                for order in interleavings(remaining(restored)):
                    yield (*prefix, *(Step("deliver", r) for r in order), Step("timeout"))
        if world.ended:
            break
        world = apply(world, step)


#: How many runs go by between two calls of an exploration's ``progress``.
PROGRESS_EVERY = 1_000


def explore(
    scenario: Scenario,
    contract: Contract,
    crash_points: bool = False,
    limit: int = 200_000,
    progress: Callable[[int], None] | None = None,
) -> Exploration:
    """Every run of ``scenario`` the module's docstring describes, at most ``limit``;
    ``progress`` (if given) is told the number of runs so far every
    :data:`PROGRESS_EVERY` runs."""
    findings: dict[str, Finding] = {}
    runs = 0
    complete = True
    schedules: Iterator[tuple[Step, ...]] = redeliveries(scenario)
    if crash_points:
        schedules = _chain(schedules, crash_variants(scenario, contract))
    for schedule in schedules:
        if runs >= limit:
            complete = False
            break
        runs += 1
        if progress is not None and runs % PROGRESS_EVERY == 0:
            progress(runs)
        variant = scenario.with_schedule(schedule)
        run = Run(variant, contract, run_schedule(variant, contract))
        for verdict in check_all(run.trace):
            if not verdict.holds and verdict.property not in findings:
                name = f"{scenario.name}-{contract.name}-{verdict.property}"
                findings[verdict.property] = Finding(
                    verdict.property,
                    variant.with_schedule(schedule, name),
                    verdict.explanation,
                    verdict.witness,
                )
    return Exploration(scenario.name, contract.name, runs, tuple(findings.values()), complete)


def _chain(*its: Iterator[tuple[Step, ...]]) -> Iterator[tuple[Step, ...]]:
    for it in its:
        yield from it
