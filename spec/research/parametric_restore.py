"""Experimental: the ``ordered`` restore's scan of the recorded order, stated
parametrically (a sketch for a parametric step of the contracts that wait).

``Machine.restore`` (spec/encoding.py), for a waiting contract, rebuilds per key from
the store's valid order entries (``recorded_order``): ``expected[k][q]`` (the record of
the valid order entry of key ``k`` at position ``q``, or -1) for every position, and
``expected-end[k]``, the first position at or after ``next[k]`` without such an entry.
Both are a *minimum* / a *lookup over all slots*, which a parametric step has to state
without a loop over slots and positions. Here:

* the transition defines them with Skolem functions of (key, position): ``has(k, q)``
  and a witness slot ``sel(k, q)`` (``has -> sel is a matching slot``;
  ``not has -> no slot matches``: a universal over slots), and
  ``end`` by "every position of ``[next, end)`` has an entry, ``end`` has none";
* the invariant keeps the ghosts of spec/induction.py's waiting facts: ``E[k]`` (where
  the key's recorded order ends in the store) and, new here, a ghost index
  ``W[k][q]``, the slot holding the order entry at ``(k, q)`` for ``q`` in
  ``[next, E)``; that turns the invariant's "for every position there is a slot"
  (a forall-exists) into a plain universal.

It asks, after a restore, that the rebuilt ``expected-end`` is ``E`` and the rebuilt
``expected`` is the ghost order ``G`` on ``[next, E)`` (what the waiting facts of
spec/induction.py assume about a fresh restore), for a fresh key and position, with the
universals instantiated by hand (``manual``) or left to Z3 (``quant``). The broken
variant ``no-end-fact`` drops the invariant's "no valid entry at ``E``" and must fail.

Only the scan is modelled (no keys' ranks, no advance loop, no waiting inputs).

Run: ``python -m research.parametric_restore [--mode quant] [--variant
no-end-fact]``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

import z3

from replay_contract.arguments import OneLineParser, positive_int

INT = z3.IntSort()
BOOL = z3.BoolSort()


def check_scan(
    mode: str = "manual", variant: str = "", timeout_ms: int = 120_000
) -> dict[str, tuple[str, float]]:
    """Each goal after a restore: (``unsat`` = it follows, seconds). ``mode``: ``manual``
    or ``quant``; ``variant``: ``""`` or ``no-end-fact`` (must fail)."""
    keyOf = z3.Function("keyOf", INT, INT)
    pres, void, order = (z3.Array(n, INT, BOOL) for n in ("pres", "void", "order"))
    rec, ver, pos, tim = (z3.Array(n, INT, INT) for n in ("rec", "ver", "pos", "tim"))
    marker = z3.Int("marker")
    nxt = z3.Array("sv.nxt", INT, INT)  # the checkpoint's next positions (restored)
    G = z3.Array("sv.G", INT, z3.ArraySort(INT, INT))  # ghost recorded order
    E = z3.Array("ghost.E", INT, INT)  # ghost: where each key's recorded order ends
    W = z3.Array("ghost.W", INT, z3.ArraySort(INT, INT))  # ghost: the slot at (key, position)

    def valid(s: z3.ArithRef) -> z3.BoolRef:
        return z3.And(pres[s], marker <= tim[s], z3.Not(void[s]))

    def entry(s: z3.ArithRef, k: z3.ArithRef, q: z3.ArithRef) -> z3.BoolRef:
        """Slot ``s`` is a valid order entry of key ``k`` at position ``q``."""
        return z3.And(valid(s), order[s], keyOf(rec[s]) == k, pos[s] == q)

    # the invariant (before the restore), as functions of the terms to instantiate at
    def inv_slot(s: z3.ArithRef) -> list[z3.BoolRef]:
        k = keyOf(rec[s])
        facts = [
            z3.Implies(
                z3.And(valid(s), order[s], nxt[k] <= pos[s]), G[k][pos[s]] == 2 * rec[s] + ver[s]
            )
        ]
        if variant != "no-end-fact":
            facts.append(z3.Implies(z3.And(valid(s), order[s]), pos[s] != E[k]))
        return facts

    def inv_key_pos(k: z3.ArithRef, q: z3.ArithRef) -> list[z3.BoolRef]:
        return [
            nxt[k] <= E[k],
            z3.Implies(z3.And(nxt[k] <= q, q < E[k]), entry(W[k][q], k, q)),
        ]

    # the restore's scan: Skolem functions of (key, position)
    has = z3.Function("scan.has", INT, INT, BOOL)
    sel = z3.Function("scan.sel", INT, INT, INT)
    end = z3.Array("scan.end", INT, INT)
    expected = z3.Array("scan.expected", INT, z3.ArraySort(INT, INT))

    def scan_kq(k: z3.ArithRef, q: z3.ArithRef) -> list[z3.BoolRef]:
        return [
            z3.Implies(has(k, q), entry(sel(k, q), k, q)),
            expected[k][q] == z3.If(has(k, q), rec[sel(k, q)], -1),
            z3.Implies(z3.And(nxt[k] <= q, q < end[k]), has(k, q)),
        ]

    def scan_k(k: z3.ArithRef) -> list[z3.BoolRef]:
        return [nxt[k] <= end[k], z3.Not(has(k, end[k]))]

    def scan_miss(s: z3.ArithRef, k: z3.ArithRef, q: z3.ArithRef) -> z3.BoolRef:
        return z3.Implies(z3.Not(has(k, q)), z3.Not(entry(s, k, q)))

    k0, q0 = z3.Int("k0"), z3.Int("q0")
    goals = {
        "expected-end is the ghost end": end[k0] == E[k0],
        "expected is the ghost order": z3.Implies(
            z3.And(nxt[k0] <= q0, q0 < end[k0]),
            2 * expected[k0][q0] + ver[sel(k0, q0)] == G[k0][q0],
        ),
    }
    hyps: list[z3.BoolRef] = []
    if mode == "manual":
        positions = [q0, E[k0], end[k0]]
        slots = [W[k0][q] for q in positions] + [sel(k0, q) for q in positions]
        for s in slots:
            hyps += inv_slot(s)
            hyps += [scan_miss(s, k0, q) for q in positions]
        for q in positions:
            hyps += inv_key_pos(k0, q) + scan_kq(k0, q)
        hyps += scan_k(k0)
    else:
        s, k, q = z3.Ints("s k q")
        hyps += [z3.ForAll([s], f) for f in inv_slot(s)]
        hyps += [z3.ForAll([k, q], f) for f in inv_key_pos(k, q) + scan_kq(k, q)]
        hyps += [z3.ForAll([k], f) for f in scan_k(k)]
        hyps += [z3.ForAll([s, k, q], scan_miss(s, k, q))]
    out: dict[str, tuple[str, float]] = {}
    for name, goal in goals.items():
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(*hyps, z3.Not(goal))
        t0 = time.perf_counter()
        res = solver.check()
        out[name] = (str(res), time.perf_counter() - t0)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: prints each goal's answer."""
    ap = OneLineParser(
        prog="python -m research.parametric_restore",
        description="The ordered restore's scan, stated parametrically (experimental).",
    )
    ap.add_argument("--mode", default="manual", choices=("manual", "quant"))
    ap.add_argument("--variant", default="", choices=("", "no-end-fact"))
    ap.add_argument("--timeout", type=positive_int, default=120, help="seconds per query")
    args = ap.parse_args(argv)
    for name, (res, dt) in check_scan(args.mode, args.variant, args.timeout * 1000).items():
        print(
            f"restore scan mode={args.mode} variant={args.variant or 'ordered'}: "
            f"{name}: {res} ({dt:.3f} s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
