"""The benchmark of ``verify``: ``python -m replay_contract.spec.bench``.

Not a test: it measures and prints (``--json`` for a machine-readable record). The
proof cache (:mod:`.proofcache`) is off: every figure is of checks made during the run.

- ``proofs``: every property of the chosen contracts at a bound, with the time of each
  (solver time summed over the agents) and whether the verdict is the one the project
  expects (:data:`EXPECTED`), then the wall-clock time of all of them;
- ``ordered``: the same for the waiting contract, at its own bound, under both rules of
  ``record_order`` (``ordered`` and ``ordered-before-first-tool-call``);
- ``counterexamples``: the time to the first counterexample of each known violation;
- ``explorer``: Z3 time against the exhaustive explorer's time at the same bound, and
  whether their verdicts agree;
- ``growth``: the time of one contract's proofs as each bound dimension grows by one
  from a base bound, the others fixed;
- ``frontier``: the bounds the explorer finishes within a deadline (five minutes unless
  told), found by growing one dimension at a time from a base bound, and Z3 against the
  explorer at each largest one (no dimension can grow without the explorer running out
  of time); the row with the most runs is the largest bound the explorer finishes;
- ``deepen``: what a user runs for a proposed change, ``verify --deepen`` (the default
  with ``--contract-file``), for each contract file of ``--contract-files`` and each
  published contract at ``--bound`` with ``--deepen-engine`` (``verify``'s default,
  induction, unless told; ``parametric`` opts in to the every-bound steps): the seconds to
  the first counterexample, to the first proof at ``--bound`` and to all verdicts (or to
  ``--deepen-deadline``), the
  verdicts and the largest bound every open property is proved at; each bound begun or
  proved and each counterexample is said on stderr as it comes;
- ``parametric``: the opt-in every-bound steps of ``ordered`` (spec/everybound/) that
  ``verify --engine parametric`` runs for its six properties at ``--ordered-bound``;
  their queries do not depend on the bound: each model and agent as a job of its own,
  one worker per core, and the wall-clock time of all of them; then (``parametric
  verify``) the whole of ``verify --contract ordered`` with that engine and the
  reachability checks, as a user runs it. ``complete-reuse`` is
  covered by two models (the store's half, and the excuse a divergence leaves), and the
  models' refinement of the machine is tested on runs, not proved.

``--engine induction`` proves the ``proofs``, ``ordered``, ``explorer``, ``growth`` and
``frontier`` sections with the induction engine where it applies (:mod:`.induction`),
the unrolling elsewhere, and ``--engine parametric`` with the parametric steps first;
the ``engine`` column says which answered.

Each solver query gets ``--timeout`` seconds (two minutes unless told; the ``deepen``
section ``verify``'s own ten minutes, since the largest queries of its waiting contracts at the
default bound take two minutes and more, and its deadline ends it); a query that runs out
is reported as ``unknown``, so the benchmark always ends.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from attrs import evolve

from replay_contract.arguments import OneLineParser, one_line, positive_int, positive_number
from replay_contract.model.contracts import CONTRACTS, ORDERED, Contract, contract_from_json
from replay_contract.model.errors import UnknownContractError
from replay_contract.model.files import read_json
from replay_contract.model.mutants import MUTANTS

from . import proofcache
from .bound import DEFAULT_ENGINE, ENGINES, Bound, BoundError, parse
from .bounded_explore import Exploration, explore
from .everybound import parametric_engine
from .properties import COMPLETE_REUSE, PROPERTIES
from .verify import QUERY_TIMEOUT, Result, verify_contract

KNOWN = (
    ("seqnum", "complete-reuse"),
    ("stable-id", "no-stale-reuse"),
    ("no-divergence-check", "divergence-safeguard"),
)


#: The named contracts, and ``ordered`` with its position durable before the first tool
#: call (the other rule of ``record_order``).
VARIANTS: dict[str, Contract] = {
    **CONTRACTS,
    "ordered-before-first-tool-call": evolve(
        ORDERED, name="ordered-before-first-tool-call", record_order="before-first-tool-call"
    ),
}

#: The verdicts the project expects at its default bound (unlisted: not stated).
EXPECTED: dict[tuple[str, str], str] = {
    **{("ordered", p): "proved" for p in PROPERTIES},
    **{("ordered-before-first-tool-call", p): "proved" for p in PROPERTIES},
    **{("seqnum", p): "proved" for p in PROPERTIES if p != COMPLETE_REUSE},
    ("seqnum", COMPLETE_REUSE): "counterexample",
    ("stable-id", "no-stale-reuse"): "counterexample",
    ("no-divergence-check", "divergence-safeguard"): "counterexample",
    ("read-set", "no-stale-reuse"): "proved",
    ("read-set", "equivalent-outcome"): "proved",
}


def contracts(names: str) -> list[Contract]:
    """Comma-separated names of :data:`VARIANTS`, or ``all``."""
    if names == "all":
        return list(VARIANTS.values())
    chosen = [one(n.strip()) for n in names.split(",") if n.strip()]
    if not chosen:
        raise UnknownContractError(f"no contract named in {names!r}")
    return chosen


def one(name: str) -> Contract:
    """The contract of :data:`VARIANTS` or of the mutants (one rule of ``ordered``
    changed, as a proposed change may) called ``name``."""
    named = {**VARIANTS, **MUTANTS}
    if name not in named:
        known = ", ".join(named)
        raise UnknownContractError(f"unknown contract {name!r} (known: {known})")
    return named[name]


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _engines(results: list[Result]) -> str:
    """The engines that answered ``results``, as ``induction+unrolling``."""
    return "+".join(sorted({e for r in results for e in r.engines.values()}))


def proofs(
    names: str,
    bound: str,
    timeout: float,
    engine: str = "unrolling",
    reachability: bool = False,
) -> list[dict[str, Any]]:
    """Every property of each contract; with ``reachability``, the wall-clock row
    says which behaviours the reachability checks reached."""
    out = []
    for c in contracts(names):
        started = time.monotonic()
        results = verify_contract(
            c, parse(bound), timeout=timeout, reachability=reachability, engine=engine
        )
        total = time.monotonic() - started
        reached = [b for b, v in results[0].reachable.items() if v == "reached"]
        for r in results:
            expected = EXPECTED.get((c.name, r.property), "")
            out.append(
                {
                    "contract": c.name,
                    "property": r.property,
                    "bound": bound,
                    "verdict": r.verdict,
                    "expected": expected or "-",
                    "met": "-" if not expected else "yes" if expected == r.verdict else "NO",
                    "seconds": round(r.seconds, 2),
                    "engine": _engines([r]),
                }
            )
        out.append(
            {
                "contract": c.name,
                "property": "all (wall clock)",
                "bound": bound,
                "verdict": f"reached: {','.join(reached) or 'nothing'}" if reachability else "-",
                "expected": "-",
                "met": "-",
                "seconds": round(total, 2),
                "engine": engine,
            }
        )
        _say(f"proofs {c.name} at {bound}: {total:.1f} s")
    return out


def deepened(files: str, names: str) -> list[Contract]:
    """The contracts of the deepen section: those of the comma-separated contract files,
    then the named ones (:func:`one`)."""
    return [
        contract_from_json(read_json(Path(f), UnknownContractError), f)
        for f in (f.strip() for f in files.split(","))
        if f
    ] + [one(n) for n in (n.strip() for n in names.split(",")) if n]


def deepening(
    files: str, names: str, bound: str, deadline: float, timeout: float, engine: str
) -> list[dict[str, Any]]:
    """``verify --deepen --engine ENGINE`` for each contract file and each named
    contract: one row each."""
    from .deepen import deepen

    chosen = deepened(files, names)
    out = []
    for c in chosen:
        started = time.monotonic()
        first: list[float] = []

        def found(_r: Result, first: list[float] = first, started: float = started) -> None:
            first.append(time.monotonic() - started)

        steps: list[str] = []
        at_bound: list[str] = []  # the first proof at the bound asked

        def step(line: str, steps: list[str] = steps, at_bound: list[str] = at_bound) -> None:
            # "<contract>: proved up to <bound>: <properties> (<seconds> s)"
            if ": proved up to " in line:
                upto = line.split(": proved up to ", 1)[1]
                reached, when = upto.split(":", 1)[0], upto.rsplit("(", 1)[1].rstrip(")")
                steps.append(f"{reached} at {when}")
                if reached == str(parse(bound)) and not at_bound:
                    at_bound.append(when.removesuffix(" s"))

        results = deepen(
            c,
            parse(bound),
            deadline=deadline,
            progress=step,
            found=found,
            milestones=lambda line: _say(f"deepen {line}"),
            timeout=timeout,
            engine=engine,
        )
        total = time.monotonic() - started
        verdicts = [r.verdict for r in results]
        upto = sorted({r.reason for r in results if r.verdict == "unknown"})
        out.append(
            {
                "contract": c.name,
                "bound": bound,
                "engine": engine,
                "proved": verdicts.count("proved"),
                "counterexamples": verdicts.count("counterexample"),
                "unknown": verdicts.count("unknown"),
                "first counterexample s": round(first[0], 2) if first else "-",
                "first proof at the bound s": at_bound[0] if at_bound else "-",
                "all verdicts s": round(total, 1) if not upto else "-",
                "stopped s": round(total, 1) if upto else "-",
                "open": "; ".join(upto) or "-",
                "bounds proved (wall clock)": "; ".join(steps) or "-",
            }
        )
        _say(f"deepen {c.name} at {bound}: {total:.1f} s, {verdicts}")
    return out


def counterexamples(bound: str, timeout: float) -> list[dict[str, Any]]:
    out = []
    for name, prop in KNOWN:
        started = time.monotonic()
        (r,) = verify_contract(
            CONTRACTS[name], parse(bound), [prop], timeout=timeout, reachability=False
        )
        out.append(
            {
                "contract": name,
                "property": prop,
                "bound": bound,
                "verdict": r.verdict,
                "seconds": round(time.monotonic() - started, 2),
                "within 5 s": "yes" if time.monotonic() - started <= 5 else "NO",
            }
        )
        _say(f"counterexample {name}/{prop} at {bound}: {r.verdict} {out[-1]['seconds']} s")
    return out


def versus_explorer(
    names: str, bound: str, timeout: float, engine: str = "unrolling"
) -> list[dict[str, Any]]:
    out = []
    for c in contracts(names):
        b = parse(bound)
        started = time.monotonic()
        results = verify_contract(c, b, timeout=timeout, reachability=False, engine=engine)
        z3_seconds = time.monotonic() - started
        explored = explore(b, c)
        agree = all(r.verdict == explored.verdict(r.property) for r in results)
        if not agree:
            agree_text = ", ".join(
                f"{r.property}: z3 {r.verdict}, explorer {explored.verdict(r.property)}"
                for r in results
                if r.verdict != explored.verdict(r.property)
            )
            _say(f"DISAGREE {c.name} at {bound}: {agree_text}")
        out.append(
            {
                "contract": c.name,
                "bound": bound,
                "engine": _engines(results),
                "z3_seconds": round(z3_seconds, 2),
                "explorer_seconds": round(explored.seconds, 2),
                "runs": explored.runs,
                "ratio": round(explored.seconds / max(z3_seconds, 1e-9), 2),
                "agree": agree,
            }
        )
        _say(
            f"explorer {c.name} at {bound}: z3 {z3_seconds:.1f} s, explorer "
            f"{explored.seconds:.1f} s over {explored.runs} runs, agree={agree}"
        )
    return out


DIMENSIONS = ("inputs", "channels", "keys", "crashes")


def growth(
    name: str, base: str, timeout: float, steps: int, engine: str = "unrolling"
) -> list[dict[str, Any]]:
    out = []
    contract = one(name)
    b0 = parse(base)
    for dimension in DIMENSIONS:
        for extra in range(steps + 1):
            if extra == 0 and dimension != "inputs":
                continue
            b = evolve(b0, **{dimension: getattr(b0, dimension) + extra})
            started = time.monotonic()
            results = verify_contract(
                contract, b, timeout=timeout, reachability=False, engine=engine
            )
            seconds = time.monotonic() - started
            out.append(
                {
                    "contract": name,
                    "dimension": dimension,
                    "bound": str(b),
                    "seconds": round(seconds, 2),
                    "unknown": sum(r.verdict == "unknown" for r in results),
                    "engine": _engines(results),
                }
            )
            _say(f"growth {name} {dimension} {b}: {seconds:.1f} s")
    return out


def _grown(bound: Bound, dimension: str) -> Bound | None:
    """``bound`` with one more of ``dimension``, or None where that is no bound (more
    channels or keys than inputs add nothing: each record has one)."""
    try:
        b = parse(f"{dimension}={getattr(bound, dimension) + 1}", bound)
    except BoundError:
        return None
    return b if _meaningful(b) else None


def _meaningful(bound: Bound) -> bool:
    return bound.channels <= bound.inputs and bound.keys <= bound.inputs


def _smaller(bound: Bound, base: Bound) -> list[Bound]:
    """The bounds that grow into ``bound`` in one dimension, from ``base`` on."""
    out = []
    for d in DIMENSIONS:
        if getattr(bound, d) > getattr(base, d):
            b = evolve(bound, **{d: getattr(bound, d) - 1})
            if _meaningful(b):
                out.append(b)
    return out


def frontier(
    name: str, base: str, deadline: float, timeout: float, engine: str = "unrolling"
) -> list[dict[str, Any]]:
    """Z3 against the explorer at each largest bound the explorer finishes within
    ``deadline`` seconds, growing one dimension at a time from ``base``. A bound is
    tried only when every smaller one it grows from finished (a larger bound has every
    run of a smaller one, so it would not finish either)."""
    contract = one(name)
    first = parse(base)
    explored: dict[Bound, Exploration] = {}
    pending = [first]
    while pending:
        b = pending.pop(0)
        if b in explored:
            continue
        if any(x not in explored or not explored[x].finished for x in _smaller(b, first)):
            continue
        _say(f"frontier {name}: exploring {b} (deadline {deadline:g} s)")
        e = explore(b, contract, deadline=deadline)
        explored[b] = e
        state = "finished" if e.finished else "ran out of time"
        _say(f"frontier {name}: {b} {state} after {e.seconds:.1f} s, {e.runs} runs")
        if e.finished:
            pending.extend(g for d in DIMENSIONS if (g := _grown(b, d)) is not None)
    done = {b: e for b, e in explored.items() if e.finished}
    if not done:
        _say(f"frontier {name}: the explorer did not finish {first} within {deadline:g} s")
    largest = [
        b
        for b in done
        if not any((g := _grown(b, d)) is not None and g in done for d in DIMENSIONS)
    ]
    most = max(largest, key=lambda b: done[b].runs, default=None)
    out = []
    for b in sorted(largest, key=lambda b: done[b].runs, reverse=True):
        e = done[b]
        started = time.monotonic()
        results = verify_contract(contract, b, timeout=timeout, reachability=False, engine=engine)
        z3_seconds = time.monotonic() - started
        agree = all(r.verdict == e.verdict(r.property) for r in results)
        out.append(
            {
                "contract": name,
                "bound": str(b),
                "runs": e.runs,
                "explorer_seconds": round(e.seconds, 2),
                "engine": _engines(results),
                "z3_seconds": round(z3_seconds, 2),
                "ratio": round(e.seconds / max(z3_seconds, 1e-9), 2),
                "agree": agree,
                "largest": "yes" if b == most else "-",
            }
        )
        _say(
            f"frontier {name} at {b}: explorer {e.seconds:.1f} s over {e.runs} runs, "
            f"z3 {z3_seconds:.1f} s, {out[-1]['ratio']}x, agree={agree}"
        )
    return out


def parametric(bound: str, timeout: float) -> list[dict[str, Any]]:
    """The parametric steps ``verify --engine parametric`` runs for ``ordered``'s six
    properties at ``bound`` (:func:`.parametric_engine.plan`), one worker per core, and
    the wall-clock time of all of them."""
    jobs = parametric_engine.plan(ORDERED, parse(bound), PROPERTIES)
    _say(f"parametric: {len(jobs)} steps on {os.cpu_count()} cores")
    t0 = time.perf_counter()
    done = parametric_engine.run_all(list(jobs), timeout)
    wall = time.perf_counter() - t0
    rows: list[dict[str, Any]] = []
    for d in done:
        rows.append(
            {
                "model": d.job.model,
                "agent": d.job.agent or "-",
                "properties": ",".join(sorted({p for _, p in jobs[d.job]})),
                "facts": d.facts,
                "kept": d.facts - len(d.failed),
                "not kept": ",".join(d.failed) or "-",
                "seconds": round(d.seconds, 2),
            }
        )
    facts = sum(r["facts"] for r in rows)
    kept = sum(r["kept"] for r in rows)
    rows.append(
        {
            "model": "all (wall clock)",
            "agent": "-",
            "properties": f"{len({p for pairs in jobs.values() for _, p in pairs})} of six",
            "facts": facts,
            "kept": kept,
            "not kept": "-" if kept == facts else "see above",
            "seconds": round(wall, 2),
        }
    )
    return rows


#: Seconds a solver query may take in every section but ``deepen`` unless told: a query
#: that runs out is ``unknown``, so the benchmark ends.
TIMEOUT = 120.0

#: The sections of the benchmark, in the order they run.
SECTIONS = (
    "proofs",
    "deepen",
    "ordered",
    "counterexamples",
    "explorer",
    "growth",
    "frontier",
    "parametric",
)


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(
        prog="python -m replay_contract.spec.bench",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    p.add_argument("--bound", default="inputs=6,channels=2,keys=2,crashes=2")
    p.add_argument("--contracts", default="seqnum,stable-id,read-set,no-divergence-check")
    p.add_argument(
        "--ordered-bound",
        default="inputs=3,channels=2,keys=2,crashes=1",
        help="bound of the ordered and parametric sections (the issue's goal: "
        "inputs=8,channels=3,keys=2,crashes=2; the ordered section's "
        "ordered-before-first-tool-call has no parametric step)",
    )
    p.add_argument(
        "--explorer-bound",
        default="inputs=2,channels=2,keys=2,crashes=1",
        help="bound of the comparison with the explorer (it must finish there)",
    )
    p.add_argument(
        "--explorer-contracts",
        default="seqnum,ordered,ordered-before-first-tool-call,stable-id,read-set,"
        "no-divergence-check",
    )
    p.add_argument(
        "--contract-files",
        default="docs/examples/earlier-order.json,docs/examples/no-wait.json",
        help="comma-separated contract files of the deepen section",
    )
    p.add_argument(
        "--deepen-contracts",
        default=",".join(CONTRACTS),
        help="comma-separated contracts of the deepen section: published ones, or the "
        "mutants of ordered (model/mutants.py)",
    )
    p.add_argument(
        "--deepen-deadline",
        type=positive_number,
        default=120.0,
        help="seconds the deepen section gives each contract (the goal: 2 minutes)",
    )
    p.add_argument(
        "--deepen-engine",
        choices=ENGINES,
        default=DEFAULT_ENGINE,
        help="the engine of the deepen section (default verify's, induction; "
        "'parametric' opts in to the every-bound steps)",
    )
    p.add_argument("--growth-contract", default="ordered")
    p.add_argument("--growth-bound", default="inputs=2,channels=2,keys=1,crashes=1")
    p.add_argument("--growth-steps", type=positive_int, default=1)
    p.add_argument("--frontier-contract", default="ordered")
    p.add_argument("--frontier-bound", default="inputs=2,channels=2,keys=1,crashes=1")
    p.add_argument(
        "--frontier-deadline",
        type=positive_number,
        default=300.0,
        help="seconds the explorer may take at a bound of the frontier",
    )
    p.add_argument(
        "--timeout",
        type=positive_number,
        default=None,
        help=f"seconds a solver query may take (default {TIMEOUT:g}; the deepen section, "
        f"which runs verify as a user does: verify's own, {QUERY_TIMEOUT:g})",
    )
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="unrolling",
        help="the engine of the proofs, ordered, explorer, growth and frontier sections "
        "(see verify --engine)",
    )
    p.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"comma-separated sections to run (default all: {', '.join(SECTIONS)})",
    )
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in only if s not in SECTIONS]
    if unknown or not only:
        p.error(
            f"--only: unknown section {unknown[0]!r}" if unknown else "--only: no section named"
        )
    try:
        # refuse bad input before any section runs (the whole benchmark takes hours)
        for text in (
            args.bound,
            args.ordered_bound,
            args.explorer_bound,
            args.growth_bound,
            args.frontier_bound,
        ):
            parse(text)
        contracts(args.contracts)
        contracts(args.explorer_contracts)
        one(args.growth_contract)
        one(args.frontier_contract)
        if "deepen" in only:
            deepened(args.contract_files, args.deepen_contracts)
        proofcache.turn_off()  # every figure is of checks made now, none read back
        return _run(args)
    except (BoundError, UnknownContractError) as e:
        print(f"bench: {one_line(str(e))}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    only = {s.strip() for s in args.only.split(",")}
    deepen_timeout = QUERY_TIMEOUT if args.timeout is None else args.timeout
    args.timeout = TIMEOUT if args.timeout is None else args.timeout
    record: dict[str, Any] = {"cores": os.cpu_count(), "timeout": args.timeout}
    if "proofs" in only:
        record["proofs"] = proofs(args.contracts, args.bound, args.timeout, args.engine)
    if "deepen" in only:
        record["deepen timeout"] = deepen_timeout
        record["deepen"] = deepening(
            args.contract_files,
            args.deepen_contracts,
            args.bound,
            args.deepen_deadline,
            deepen_timeout,
            args.deepen_engine,
        )
    if "ordered" in only:
        record["ordered"] = proofs(
            "ordered,ordered-before-first-tool-call", args.ordered_bound, args.timeout, args.engine
        )
    if "counterexamples" in only:
        record["counterexamples"] = counterexamples(args.bound, args.timeout)
    if "explorer" in only:
        record["explorer"] = versus_explorer(
            args.explorer_contracts, args.explorer_bound, args.timeout, args.engine
        )
    if "growth" in only:
        record["growth"] = growth(
            args.growth_contract, args.growth_bound, args.timeout, args.growth_steps, args.engine
        )
    if "frontier" in only:
        record["frontier"] = frontier(
            args.frontier_contract,
            args.frontier_bound,
            args.frontier_deadline,
            args.timeout,
            args.engine,
        )
    if "parametric" in only:
        record["parametric"] = parametric(args.ordered_bound, args.timeout)
        # and what a user runs: verify --contract ordered with its default engine and
        # every reachability check
        record["parametric verify"] = proofs(
            "ordered", args.ordered_bound, args.timeout, "parametric", reachability=True
        )
    print(json.dumps(record, indent=2) if args.json else _text(record))
    return 0


def _table(rows: list[dict[str, Any]]) -> list[str]:
    """Rows of the same keys as aligned columns, with a header."""
    columns = list(rows[0])
    cells = [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    return [line.format(*columns), line.format(*("-" * w for w in widths))] + [
        line.format(*r) for r in cells
    ]


def _text(record: dict[str, Any]) -> str:
    lines = [f"cores: {record['cores']}, timeout per query: {record['timeout']} s"]
    if "deepen timeout" in record:
        lines[0] += f" (the deepen section: {record['deepen timeout']} s)"
    for section, rows in record.items():
        if isinstance(rows, list) and rows:
            lines.append(f"\n{section}:")
            lines.extend("  " + line for line in _table(rows))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
