"""The benchmark of ``verify``: ``python -m replay_contract.spec.bench``.

Not a test: it measures and prints (``--json`` for a machine-readable record).

- ``proofs``: every property of the chosen contracts at a bound, with the time of each;
- ``counterexamples``: the time to the first counterexample of each known violation;
- ``explorer``: Z3 time against the exhaustive explorer's time at the same bound;
- ``growth``: the time of one contract's proofs as each bound dimension grows by one
  from a base bound, the others fixed.

Each solver query gets ``--timeout`` seconds; a query that runs out is reported as
``unknown``, so the benchmark always ends.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from attrs import evolve

from replay_contract.model.bounded import explore
from replay_contract.model.contracts import CONTRACTS, contracts

from .bound import parse
from .verify import verify_contract

KNOWN = (
    ("seqnum", "complete-reuse"),
    ("stable-id", "no-stale-reuse"),
    ("no-divergence-check", "divergence-safeguard"),
)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def proofs(names: str, bound: str, timeout: float) -> list[dict[str, Any]]:
    out = []
    for c in contracts(names):
        started = time.monotonic()
        results = verify_contract(c, parse(bound), timeout=timeout, reachability=False)
        total = time.monotonic() - started
        out.append(
            {
                "contract": c.name,
                "bound": bound,
                "seconds": round(total, 2),
                "verdicts": {r.property: r.verdict for r in results},
            }
        )
        _say(f"proofs {c.name} at {bound}: {total:.1f} s {out[-1]['verdicts']}")
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
            }
        )
        _say(f"counterexample {name}/{prop} at {bound}: {r.verdict} {out[-1]['seconds']} s")
    return out


def versus_explorer(names: str, bound: str, timeout: float) -> list[dict[str, Any]]:
    out = []
    for c in contracts(names):
        b = parse(bound)
        started = time.monotonic()
        results = verify_contract(c, b, timeout=timeout, reachability=False)
        z3_seconds = time.monotonic() - started
        explored = explore(b, c)
        agree = all(r.verdict == explored.verdict(r.property) for r in results)
        out.append(
            {
                "contract": c.name,
                "bound": bound,
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


def growth(name: str, base: str, timeout: float, steps: int) -> list[dict[str, Any]]:
    out = []
    b0 = parse(base)
    for dimension in ("inputs", "channels", "keys", "crashes"):
        for extra in range(steps + 1):
            if extra == 0 and dimension != "inputs":
                continue
            b = evolve(b0, **{dimension: getattr(b0, dimension) + extra})
            started = time.monotonic()
            results = verify_contract(CONTRACTS[name], b, timeout=timeout, reachability=False)
            seconds = time.monotonic() - started
            out.append(
                {
                    "contract": name,
                    "dimension": dimension,
                    "bound": str(b),
                    "seconds": round(seconds, 2),
                    "unknown": sum(r.verdict == "unknown" for r in results),
                }
            )
            _say(f"growth {name} {dimension} {b}: {seconds:.1f} s")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m replay_contract.spec.bench",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    p.add_argument("--bound", default="inputs=2,channels=2,keys=2,crashes=1")
    p.add_argument("--contracts", default="seqnum,stable-id,read-set,no-divergence-check")
    p.add_argument(
        "--ordered-bound",
        default="inputs=2,channels=2,keys=1,crashes=1",
        help="bound of the ordered proofs (the issue's goal: inputs=8,channels=3,keys=2,crashes=2)",
    )
    p.add_argument("--growth-contract", default="seqnum")
    p.add_argument("--growth-steps", type=int, default=1)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--only", default="proofs,ordered,counterexamples,explorer,growth")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    only = set(args.only.split(","))
    record: dict[str, Any] = {"cores": os.cpu_count(), "timeout": args.timeout}
    if "proofs" in only:
        record["proofs"] = proofs(args.contracts, args.bound, args.timeout)
    if "ordered" in only:
        record["ordered"] = proofs("ordered", args.ordered_bound, args.timeout)
    if "counterexamples" in only:
        record["counterexamples"] = counterexamples(args.bound, args.timeout)
    if "explorer" in only:
        record["explorer"] = versus_explorer(args.contracts, args.bound, args.timeout)
    if "growth" in only:
        record["growth"] = growth(args.growth_contract, args.bound, args.timeout, args.growth_steps)
    print(json.dumps(record, indent=2) if args.json else _text(record))
    return 0


def _text(record: dict[str, Any]) -> str:
    lines = [f"cores: {record['cores']}, timeout per query: {record['timeout']} s"]
    for section, rows in record.items():
        if isinstance(rows, list):
            lines.append(f"\n{section}:")
            lines.extend("  " + json.dumps(row) for row in rows)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
