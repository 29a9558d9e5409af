"""Witnesses for ``verify``: runs of the model that show a behaviour of the
reachability checks or break a property, as values for the encoding's free variables.

A reachability check asks whether some run of the bound reaches a crash, a restore, a
reuse, a wait or an invalidation. Left free, the solver searches the whole unrolled
schedule for one, which grows fast with the bound (for ``ordered``, agent
``stateful``: 1-12 s per behaviour at ``inputs=4,channels=2,keys=2,crashes=2``, none
found within 600 s at ``inputs=8,channels=3,keys=2,crashes=2``). A witness is a hint:
random runs of the model (:func:`replay_contract.model.bounded.random_run`, from a fixed
seed, so the same bound gets the same witnesses) are run through the machine as an
interpreter, and a run the machine accepts (every assumption holds, the run finishes)
and that reaches a behaviour gives the values of the shape and of every idle
micro-step's move. ``verify`` asks the solver for the behaviour *under* those values;
a ``sat`` answer is a model of the whole encoding, so the behaviour is reached whatever
the hint was, and anything else falls back to the free search.

The same goes for a property: a random run the model's predicate finds broken, and the
machine's monitor too, pins the solver's search for a counterexample, which is then
decoded, replayed through the model and shrunk like any other. A property no random
run breaks goes to the free search (and to a proof, when it holds).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

import z3

from replay_contract.model import bounded
from replay_contract.model.contracts import Contract
from replay_contract.model.trace import Trace

from . import encoding as enc
from .bound import Bound
from .properties import check

#: How many random runs, and how many seconds, the search for witnesses may take.
TRIES = 500
SECONDS = 10.0

MODES = {"same": 0, "lost": 1, "changed": 2}


def _growth(rng: random.Random, length: int, most: int) -> tuple[int, ...]:
    """A random restricted growth string (labels in order of first appearance)."""
    out = [0] if length else []
    top = 0
    for _ in range(length - 1):
        label = rng.randrange(min(top + 2, most))
        out.append(label)
        top = max(top, label)
    return tuple(out)


def _modes(rng: random.Random, length: int, most: int) -> tuple[bounded.Mode, ...]:
    mode: list[bounded.Mode] = ["same"] * length
    for r in rng.sample(range(length), rng.randrange(min(most, length) + 1)):
        mode[r] = rng.choice(("lost", "changed"))
    return tuple(mode)


def random_shape(rng: random.Random, bound: Bound, agent: str) -> bounded.Shape:
    """A random shape of the bound for ``agent``."""
    return bounded.Shape(
        _growth(rng, bound.inputs, bound.channels),
        _growth(rng, bound.inputs, bound.keys),
        _modes(rng, bound.inputs, bound.changes),
        agent,
    )


def _pins(
    machine: enc.Machine, shape: bounded.Shape, moves: dict[int, enc.Move]
) -> list[z3.BoolRef]:
    """The values of the symbolic machine's shape and moves that are those of a run."""
    s = machine.shape
    out: list[z3.BoolRef] = []
    for r in range(shape.inputs):
        out += [
            s.channel[r] == shape.channel[r],
            s.key[r] == shape.key[r],
            s.mode[r] == MODES[shape.mode[r]],
        ]
    for t, move in sorted(moves.items()):
        free = enc.symbolic_env(t, True)
        out += [
            free.checkpoint == bool(move.checkpoint),
            free.crash == bool(move.crash),
            free.main == move.main,
            free.channel == move.channel,
            free.cut == move.cut,
        ]
    return out


def find(
    contract: Contract,
    agent: str,
    bound: Bound,
    machine: enc.Machine,
    behaviours: Sequence[str] = (),
    properties: Sequence[str] = (),
    seed: int = 0,
    tries: int = TRIES,
    seconds: float = SECONDS,
) -> dict[str, list[z3.BoolRef]]:
    """For each behaviour some random run of the bound reaches, and each property one
    breaks, the values that pin the symbolic ``machine`` (built with ``one_checkpoint``)
    to that run."""
    rng = random.Random(f"{contract.name}/{agent}/{bound}/{seed}")
    need = set(behaviours) | set(properties)
    out: dict[str, list[z3.BoolRef]] = {}
    started = time.monotonic()
    for _ in range(tries):
        if not need or time.monotonic() - started > seconds:
            break
        shape = random_shape(rng, bound, agent)
        node = bounded.random_run(shape, contract, bound, rng.randrange)
        events = node.world.events
        shown = {n for n, test in bounded.REACH.items() if n in need and any(map(test, events))}
        asked = [p for p in properties if p in need]
        if asked:
            trace = Trace(node.world.agent, contract.basis, events)
            shown |= {p for p in asked if not check(p, trace).holds}
        if not shown:
            continue
        run = enc.run_concrete(contract, bound, shape, node.steps, one_checkpoint=True)
        if run.assumptions or run.finished is not True:
            continue  # a run the bounded machine does not take as it is (e.g. two checkpoints)
        for name in sorted(shown):
            flag = run.reach[name] if name in bounded.REACH else run.monitors.broken(name)
            if flag is True:
                assert isinstance(run.env, enc.ScheduleEnv)
                out[name] = _pins(machine, shape, run.env.given)
                need.discard(name)
    return out
