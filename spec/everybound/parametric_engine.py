"""``verify --engine parametric``: the parametric induction steps of spec/notes/parametric.md
as proofs that hold for every bound.

A parametric step is a transition relation over Z3 arrays and an invariant quantified
over records, keys, slots and positions (:mod:`.parametric`, :mod:`.parametric_ordered`,
:mod:`.parametric_lost`); its queries do not depend on the bound, and when the initial
state satisfies the invariant and every micro-step keeps it, the property holds at
every bound. This module runs the steps a (contract, agent, property) has, as jobs of a
process pool, and says which properties they prove:

* ``ordered`` (the published rules, whatever the name and ``give_up_after``, with either
  rule of ``record_order`` that writes the order: with the first completion, or in an
  entry of its own before the first tool call), agents
  ``stateful`` and ``chain``: all six properties. ``no-stale-reuse``, ``divergence-safeguard``,
  ``key-isolation`` and ``equivalent-outcome`` by the model of the store
  (:mod:`.parametric_ordered`, one job per agent with the facts of the properties
  asked); ``no-lost-input`` by the model of the waiting inputs
  (:mod:`.parametric_lost`, no agent); ``complete-reuse`` by both: the store's half
  (one job per agent) and the excuse (the waiting inputs' model with ``excuse``), for
  bounds of at most ``give_up_after`` inputs;
* ``seqnum``, the same agents: ``no-stale-reuse`` and ``divergence-safeguard``
  (:mod:`.parametric`).

The other properties, contracts and agents are left to the induction engine and the
unrolling (which also find the counterexamples, and check reachability).

What such a proof rests on, besides Z3: each model is a second encoding of the machine
of :mod:`..encoding`, written by hand, and its refinement of the machine (every
micro-step of the machine is a step of the model) is *tested* on runs
(``parametric_*_refine``, tests/spec), not proved; the two models of
``complete-reuse`` share ghosts (the recorded order, its end, the excuse) whose
agreement is tested the same way. The project accepts the same of the encoding itself,
whose monitors are checked against the properties' predicates on traces.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

import attrs
from attrs import evolve, frozen

from replay_contract.model.bounded import AGENTS
from replay_contract.model.contracts import ORDERED, SEQNUM, Contract

from ..agentterms import Plan
from ..bound import Bound
from ..properties import (
    COMPLETE_REUSE,
    DIVERGENCE_SAFEGUARD,
    EQUIVALENT_OUTCOME,
    KEY_ISOLATION,
    NO_LOST_INPUT,
    NO_STALE_REUSE,
)
from . import parametric, parametric_lost, parametric_ordered
from .parametric import Rows

#: the agents the models cover, with the number of entries of each one's plan (the
#: models' ``entries``: one for ``stateful``, two for ``chain``)
ENTRIES = {a: len(Plan.of(AGENTS[a]).entries) for a in ("stateful", "chain")}


@frozen
class Job:
    """One parametric step: a model (``ordered``, ``complete``, ``lost``, ``seqnum``),
    an agent (``""``: the model has none) and the options of the model."""

    model: str
    agent: str = ""
    safeguard: bool = False
    isolation: bool = False
    outcome: bool = False
    excuse: bool = False
    #: ``record_order`` before-first-tool-call (the models of the store)
    early: bool = False

    def cost(self) -> int:
        """A rough order of the jobs' times (measured: spec/notes/parametric.md)."""
        per_model = {"ordered": 4, "complete": 4, "lost": 1, "seqnum": 0}
        return per_model[self.model] * ENTRIES.get(self.agent, 1) + self.outcome


@frozen
class Done:
    job: Job
    #: the facts not kept (or not holding initially), with the solver's answer
    failed: tuple[str, ...]
    facts: int
    seconds: float


def same_rules(contract: Contract, published: Contract) -> bool:
    """Whether ``contract`` has the rules of ``published``, its name, description and
    ``give_up_after`` aside: a model is written for a contract's rules, not for its name,
    and the models let a waiting key give up at any arrival (only ``complete-reuse``'s
    excuse counts, and :func:`plan` asks it only for bounds the count never reaches)."""
    return (
        attrs.evolve(
            contract,
            name=published.name,
            description=published.description,
            give_up_after=published.give_up_after,
        )
        == published
    )


def plan(
    contract: Contract, bound: Bound, properties: Sequence[str]
) -> dict[Job, set[tuple[str, str]]]:
    """The jobs for ``properties`` of ``contract`` at ``bound``, each with the
    (agent, property) pairs it serves; a pair is proved when every job serving it
    keeps its facts."""
    wanted = set(properties)
    jobs: dict[Job, set[tuple[str, str]]] = {}
    if bound.timeouts:
        # the models have no timeout step (the wait bound passing): their proofs say
        # nothing about a bound with one
        return jobs

    def serve(job: Job, agent: str, prop: str) -> None:
        jobs.setdefault(job, set()).add((agent, prop))

    agents = [a for a in bound.agents if a in ENTRIES]
    # the model of the store takes both rules of record_order that write the order
    early = contract.record_order == "before-first-tool-call"
    if same_rules(evolve(contract, record_order=ORDERED.record_order), ORDERED):
        store = {NO_STALE_REUSE, DIVERGENCE_SAFEGUARD, KEY_ISOLATION, EQUIVALENT_OUTCOME}
        complete = COMPLETE_REUSE in wanted and bound.inputs <= contract.give_up_after
        for agent in agents:
            asked = wanted & store | ({COMPLETE_REUSE} if complete else set())
            if asked:
                # the store's invariant is the base of complete-reuse's store half too
                job = Job(
                    "ordered",
                    agent,
                    safeguard=DIVERGENCE_SAFEGUARD in wanted,
                    isolation=KEY_ISOLATION in wanted,
                    outcome=EQUIVALENT_OUTCOME in wanted,
                    early=early,
                )
                for prop in asked:
                    serve(job, agent, prop)
            if complete:
                serve(Job("complete", agent, early=early), agent, COMPLETE_REUSE)
                serve(Job("lost", excuse=True), agent, COMPLETE_REUSE)
            if NO_LOST_INPUT in wanted:
                serve(Job("lost", excuse=complete), agent, NO_LOST_INPUT)
    elif same_rules(contract, SEQNUM):
        for agent in agents:
            job = Job("seqnum", agent, safeguard=DIVERGENCE_SAFEGUARD in wanted)
            for prop in wanted & {NO_STALE_REUSE, DIVERGENCE_SAFEGUARD}:
                serve(job, agent, prop)
    return jobs


def run(job: Job, timeout: float | None) -> Done:
    """The initial state and the step of one job's model."""
    ms = int((timeout or 600.0) * 1000)
    t0 = time.perf_counter()
    entries = ENTRIES.get(job.agent, 1)
    checks: list[Callable[[], Rows]]
    if job.model == "lost":
        lo = parametric_lost.Options(excuse=job.excuse)
        checks = [
            lambda: parametric_lost.check_initial(lo, ms),
            lambda: parametric_lost.check_step(lo, ms),
        ]
    elif job.model == "seqnum":
        so = parametric.Options(entries=entries, safeguard=job.safeguard)
        checks = [
            lambda: parametric.check_initial(so, ms),
            lambda: parametric.check_step(so, ms),
        ]
    else:
        if job.model == "complete":
            oo = parametric_ordered.Options(
                entries=entries,
                complete=True,
                only=parametric_ordered.COMPLETE_FACTS,
                early=job.early,
            )
        else:
            oo = parametric_ordered.Options(
                entries=entries,
                safeguard=job.safeguard,
                isolation=job.isolation,
                outcome=job.outcome,
                early=job.early,
            )
        checks = [
            lambda: parametric_ordered.check_initial(oo, ms),
            lambda: parametric_ordered.check_step(oo, ms),
        ]
    failed: list[str] = []
    facts = 0
    for check in checks:
        rows = check()
        facts = max(facts, len(rows))
        failed += [f"{name} ({res})" for name, res, _ in rows if res != "unsat"]
    return Done(job, tuple(failed), facts, time.perf_counter() - t0)


def run_all(
    jobs: Sequence[Job],
    timeout: float | None = None,
    workers: int | None = None,
) -> list[Done]:
    """Every job, the costliest first, one process per worker (default: one per core)."""
    order = sorted(jobs, key=Job.cost, reverse=True)
    count = min(len(order), workers or os.cpu_count() or 1)
    if count > 1 and "fork" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=count, mp_context=context) as pool:
            return list(pool.map(run, order, [timeout] * len(order)))
    return [run(job, timeout) for job in order]


def prove(
    contract: Contract,
    bound: Bound,
    properties: Sequence[str],
    timeout: float | None = None,
    workers: int | None = None,
    say: Callable[[str], None] | None = None,
) -> dict[tuple[str, str], tuple[bool, float, str]]:
    """Per (agent, property) that a parametric step covers: whether it is proved, its
    share of the jobs' seconds, and why not (the facts a job did not keep)."""
    jobs = plan(contract, bound, properties)
    if not jobs:
        return {}
    if say:
        count = min(len(jobs), workers or os.cpu_count() or 1)
        say(f"{contract.name} / parametric: {len(jobs)} steps on {count} workers")
    out: dict[tuple[str, str], tuple[bool, float, str]] = {}
    for d in run_all(list(jobs), timeout, workers):
        served = jobs[d.job]
        if say:
            what = "kept" if not d.failed else f"not kept: {', '.join(d.failed)}"
            say(
                f"{contract.name} / parametric {d.job.model} {d.job.agent or '-'}: "
                f"{d.facts} facts {what} ({d.seconds:.1f} s)"
            )
        for pair in served:
            ok, seconds, why = out.get(pair, (True, 0.0, ""))
            if d.failed:
                ok = False
                why = why or f"{d.job.model}: {d.failed[0]}"
            out[pair] = (ok, seconds + d.seconds / len(served), why)
    return out
