"""``replay-contract verify``: bounded Z3 proofs of the properties, or counterexamples."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from replay_contract.cli import (
    CommandError,
    comma_list,
    creatable_folder,
    free_names,
    path_argument,
    positive_number,
)
from replay_contract.commands.simulate import add_contract_options, chosen_contracts
from replay_contract.exits import BROKEN, HOLDS, NO_ANSWER, worst
from replay_contract.model.contracts import Contract
from replay_contract.spec import proofcache
from replay_contract.spec.bound import (
    DEFAULT,
    DEFAULT_ENGINE,
    ENGINES,
    MANIFEST_ENGINE,
    Bound,
    BoundError,
    parse,
    too_large,
)
from replay_contract.spec.properties import BOUNDED_WAITING, PROPERTIES
from replay_contract.spec.verify import QUERY_TIMEOUT


def register(sub: Any) -> None:
    p = sub.add_parser(
        "verify",
        help="prove the properties of a contract up to a bound, or find a counterexample",
        description="Encode the operator under a contract symbolically and ask Z3, for "
        "each property, whether any run within the bound breaks it. Each counterexample "
        "is replayed through the model, written as a scenario file and shown as a table. "
        "Exit status 0 when every property asked about is proved, 1 when one has a "
        "counterexample, 3 when one is unknown (a timeout); with --manifest, 0 when every "
        "verdict is the one spec/manifest.json records, 1 when one differs, 3 when one "
        "is unknown.",
    )
    add_contract_options(p)
    p.add_argument(
        "--property",
        default="all",
        help="a property name, a comma-separated list, or 'all' (default; bounded-waiting "
        "only at a bound with timeouts=N)",
    )
    p.add_argument(
        "--bound",
        default=str(DEFAULT),
        help="inputs=N,channels=C,keys=K,crashes=F[,changes=L][,timeouts=T][,agents=a+b] "
        f"(default {DEFAULT}; timeouts=T, the timeout steps a run may have, is what "
        "bounded-waiting needs)",
    )
    p.add_argument(
        "--out",
        type=path_argument,
        default=Path("out/counterexamples"),
        help="where counterexample scenarios are written (default out/counterexamples)",
    )
    p.add_argument(
        "--timeout",
        type=positive_number,
        default=QUERY_TIMEOUT,
        help=f"seconds per solver query before the verdict is unknown (default {QUERY_TIMEOUT:g})",
    )
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default=None,
        help="how properties are proved: 'induction' (default: an invariant kept by every "
        "micro-step of the machine, for contracts it has an invariant for; then as "
        "'unrolling'), 'unrolling' (every run of the bound unrolled into one formula; it "
        "also finds the counterexamples and checks reachability for the other two) or, "
        "opt-in, 'parametric' (proofs for every bound by hand-written models of ordered's "
        "and seqnum's rules, then as 'induction'; what they rest on: "
        "spec/everybound/README.md). With --manifest the default is the manifest's, "
        "'parametric'",
    )
    p.add_argument(
        "--deepen",
        action="store_true",
        help="cheapest answers first: counterexamples among random runs of the model, then "
        "proofs bound by bound up to --bound, each counterexample shown as soon as it is "
        "found and a progress line per bound (the default with --contract-file)",
    )
    p.add_argument(
        "--deadline",
        type=positive_number,
        default=None,
        help="with --deepen (the default with --contract-file; refused without either): "
        "stop after this many seconds; a property not decided by then is unknown, with the "
        "bound it is proved up to",
    )
    p.add_argument(
        "--no-reachability", action="store_true", help="skip the reachability (vacuity) checks"
    )
    p.add_argument(
        "--check-budget",
        action="store_true",
        help="also prove that the unrolling is long enough for every scenario of the bound",
    )
    p.add_argument(
        "--manifest",
        action="store_true",
        help="compare each verdict with the one spec/manifest.json records for its contract "
        "and property (recorded at the manifest's bound: at a smaller one a proof where the "
        "manifest has a counterexample may only mean the bound is too small)",
    )
    p.add_argument(
        "--no-proof-cache",
        action="store_true",
        help="check every step class again instead of reading the outcomes of the same "
        "checks from the proof cache (in $REPLAY_CONTRACT_PROOF_CACHE, by default proofs/ "
        "in the download cache; an outcome is reused only for the same rules, bound, "
        "properties, code and Z3)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def properties(text: str, timeouts: int = 1) -> list[str]:
    """The properties named; ``all`` leaves out ``bounded-waiting`` at a bound without a
    ``timeout`` step (``timeouts=0``), where it could only be vacuous."""
    if text == "all":
        return [p for p in PROPERTIES if timeouts or p != BOUNDED_WAITING]
    names = comma_list(text, "--property")
    for n in names:
        if n not in PROPERTIES:
            raise CommandError(f"unknown property {n!r} (known: {', '.join(PROPERTIES)})")
    return names


def run(args: argparse.Namespace) -> int:
    from replay_contract.spec.deepen import deepen
    from replay_contract.spec.induction import ClassMismatch
    from replay_contract.spec.verify import (
        EncodingMismatch,
        check_budget,
        counterexample_name,
        explanation_table,
        verify_contract,
        write_counterexample,
    )

    try:
        bound = parse(args.bound)
    except BoundError as exc:
        raise CommandError(str(exc)) from None
    refusal = too_large(bound)
    if refusal is not None:
        raise CommandError(refusal)
    deepening = args.deepen or bool(args.contract_file)
    if args.deadline is not None and not deepening:
        raise CommandError("--deadline: only with --deepen (or --contract-file)")
    if args.no_proof_cache:
        proofcache.turn_off()
    unwritable = proofcache.unwritable()
    if unwritable is not None:
        raise CommandError(f"{unwritable}; --no-proof-cache runs without the cache")
    props = properties(args.property, bound.timeouts)
    chosen = chosen_contracts(args)
    expected = manifest_verdicts(chosen, props) if args.manifest else None
    creatable_folder(args.out)  # made when a counterexample is written there
    free_names(args.out, (counterexample_name(c.name, p) for c in chosen for p in props))
    started = time.monotonic()

    def progress(message: str) -> None:
        if not args.quiet:
            # one write per line: the forked workers share standard error
            sys.stderr.write(f"[{time.monotonic() - started:6.1f}s] {message}\n")
            sys.stderr.flush()

    out: list[dict[str, Any]] = []
    statuses: list[int] = []
    if not args.json:
        # each contract's verdicts are shown as soon as they are known: a long run that
        # is stopped keeps what it found
        print(f"bound: {bound}\n", flush=True)
    engine = args.engine or (MANIFEST_ENGINE if args.manifest else DEFAULT_ENGINE)
    for contract in chosen:
        texts: list[str] = []
        shown: set[str] = set()
        begun = time.monotonic()
        if engine != "parametric":
            _opt_in_hint(contract, bound, props, progress)
        hint = (
            f"--contract-file {args.contract_file}"
            if args.contract_file
            else f"--contract {contract.name}"
        )

        def found(r: Any, shown: set[str] = shown, hint: str = hint) -> None:
            # a counterexample is shown once it is found, before the proofs go on
            write_counterexample(r, args.out)
            shown.add(r.property)
            if not args.json:
                print(_text(r, explanation_table(r), hint), flush=True)

        try:
            if deepening:
                results = deepen(
                    contract,
                    bound,
                    props,
                    deadline=args.deadline,
                    progress=progress,
                    found=found,
                    timeout=args.timeout,
                    reachability=not args.no_reachability,
                    engine=engine,
                )
            else:
                results = verify_contract(
                    contract,
                    bound,
                    props,
                    timeout=args.timeout,
                    reachability=not args.no_reachability,
                    progress=progress,
                    engine=engine,
                )
        except (EncodingMismatch, ClassMismatch) as exc:
            print(f"replay-contract verify: internal error: {exc}", file=sys.stderr)
            return NO_ANSWER
        budget = check_budget(contract, bound, args.timeout) if args.check_budget else None
        for r in results:
            if r.counterexample is not None and r.counterexample.path is None:
                write_counterexample(r, args.out)
            data = r.to_json()
            statuses.append(_status(r.verdict, expected, r.contract, r.property))
            if expected is not None:
                data["manifest"] = expected[r.contract, r.property]
            if budget is not None:
                data["budget"] = budget
            out.append(data)
            if r.property not in shown:
                texts.append(_text(r, explanation_table(r), hint))
            if expected is not None and expected[r.contract, r.property] != r.verdict:
                texts.append(
                    f"  differs from spec/manifest.json: "
                    f"{expected[r.contract, r.property]} expected"
                )
        if not args.json:
            reach = results[0].reachable if results else {}
            values = set(reach.values())
            if not reach or values == {"not checked"}:
                said = "not checked (--no-reachability)"
            elif len(values) == 1 and next(iter(values)).startswith("not checked"):
                said = next(iter(values))  # e.g. not checked (stopped)
            else:
                said = ", ".join(f"{k} {v}" for k, v in reach.items())
            texts.append(
                "  reachable within the bound: "
                + said
                + (f"; unrolling {budget}" if budget else "")
            )
            texts.append(f"  {_clock(time.monotonic() - begun, deepening)}")
            if _resumable(results):
                texts.append(f"  {RESUME}")
            texts[-1] += "\n"
            print("\n".join(texts), flush=True)
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    return worst(statuses)


def manifest_verdicts(chosen: list[Any], props: list[str]) -> dict[tuple[str, str], str]:
    """The manifest's verdict for every contract and property asked about; a contract
    it does not record (a proposed one, from --contract-file) is refused."""
    from replay_contract.spec.manifest import load

    recorded = {(e.contract, e.property): e.verdict for e in load()}
    out = {}
    for c in chosen:
        for p in props:
            if (c.name, p) not in recorded:
                raise CommandError(
                    f"--manifest: spec/manifest.json records no verdict for {c.name} / {p}"
                )
            out[c.name, p] = recorded[c.name, p]
    return out


def _opt_in_hint(
    contract: Contract, bound: Bound, props: list[str], say: Callable[[str], None]
) -> None:
    """Say when the opt-in every-bound steps would take some of ``props`` for this
    contract's rules (a waiting contract is slow at the default bound by induction)."""
    from replay_contract.spec.everybound.parametric_engine import plan

    taken = sorted({p for pairs in plan(contract, bound, props).values() for _, p in pairs})
    if taken:
        say(
            f"{contract.name}: --engine parametric (opt-in) would prove {', '.join(taken)} "
            "for every bound with hand-written models of these rules "
            "(spec/everybound/README.md)"
        )


def _status(
    verdict: str, expected: dict[tuple[str, str], str] | None, contract: str, prop: str
) -> int:
    """A verdict's exit status (replay_contract.exits): unknown is no answer; else,
    with the manifest, a difference from it, without, a counterexample."""
    if verdict == "unknown":
        return NO_ANSWER
    if expected is not None:
        return HOLDS if expected[contract, prop] == verdict else BROKEN
    return BROKEN if verdict == "counterexample" else HOLDS


def _clock(wall: float, deepening: bool) -> str:
    """The contract's wall-clock time, and what the time of each verdict above is: the
    time from the start to it when deepening, else its share of the solver time (the
    time of every process that checked the properties together, divided among them),
    which on several cores can be far from the wall clock."""
    if deepening:
        return f"wall clock: {wall:.1f} s (the times above: from the start to each verdict)"
    return f"wall clock: {wall:.1f} s (the times above: each property's share of the solver time)"


#: What the table says under a deepening that was stopped, when the proof cache is on.
RESUME = (
    "stopped: what was proved is in the proof cache, and the same command again goes on from there"
)


def _resumable(results: list[Any]) -> bool:
    """Whether the proofs were stopped before their end and the proof cache kept them."""
    from replay_contract.spec.deepen import STOPPED

    stopped = any(r.verdict == "unknown" and f"; {STOPPED} " in r.reason for r in results)
    return stopped and proofcache.folder() is not None


def _text(r: Any, table: str, hint: str) -> str:
    line = f"{r.contract:22} {r.property:22} {r.verdict:15} {r.seconds:7.1f} s"
    if r.reason:
        line += f"  ({r.reason})"
    for engine, how in (
        ("parametric", "by a parametric step: every bound"),
        ("induction", "by induction"),
    ):
        by = sorted(a for a, e in r.engines.items() if e == engine)
        if by:
            whom = "" if len(by) == len(r.engines) else f" for agent {' and '.join(by)}"
            line += f"  ({how}{whom})"
    if r.counterexample is None:
        return line
    ce = r.counterexample
    return (
        f"{line}\n  {ce.explanation}\n  scenario: {ce.path}  (replay: replay-contract "
        f"simulate {ce.path} {hint})\n\n"
        + "\n".join("    " + row for row in table.splitlines())
        + "\n"
    )
