"""``replay-contract conform --target T``: run the conformance suite against a target.

Progress goes to stderr; stdout gets the summary table (and the full report of the
first failures), or one JSON document with ``--json``. The exit status is 1 when any
scenario failed, 2 when the command is refused (unknown target or contract, a target
that is not available or does not implement the contract, an output path that cannot be
written, checked before anything runs) or when the target can run none of the
scenarios (each one needs a capability it lacks), 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from replay_contract.cli import CommandError, path_argument, writable_file, writable_folder
from replay_contract.model import catalogue
from replay_contract.model.contracts import Contract, contract
from replay_contract.model.files import slug

SHOWN_FAILURES = 3


def register(sub: Any) -> None:
    p = sub.add_parser(
        "conform",
        help="run the conformance suite against an implementation",
        description="Run the built-in scenarios, their crash sweeps and generated scenarios "
        "against an implementation; compare its trace with the reference model's and check "
        "every property.",
    )
    p.add_argument(
        "--target", required=True, help="model, kafka, fluss, process:<command> or mutant:<name>"
    )
    p.add_argument(
        "--contract",
        default="ordered",
        help="the contract to hold the target to (default: ordered)",
    )
    p.add_argument(
        "--examples",
        type=int,
        default=100,
        metavar="N",
        help="generated scenarios to run (default: 100)",
    )
    p.add_argument(
        "--seed",
        type=int,
        metavar="S",
        help="seed of the first generated scenario (default: random, printed)",
    )
    p.add_argument(
        "--scenario",
        action="append",
        metavar="FILE",
        help="run this scenario file or built-in name instead of the whole "
        "catalogue (repeatable); add --examples 0 --no-sweep to run it alone",
    )
    p.add_argument(
        "--no-sweep",
        action="store_true",
        help="leave out the crash sweeps (every scenario crashed after each effect in turn)",
    )
    p.add_argument(
        "--no-shrink", action="store_true", help="do not shrink failing generated scenarios"
    )
    p.add_argument(
        "--out",
        type=path_argument,
        default=Path("out/conformance"),
        metavar="DIR",
        help="where failing scenarios and reports go (default: out/conformance)",
    )
    p.add_argument("--junit", type=path_argument, metavar="FILE", help="also write JUnit XML here")
    p.add_argument(
        "--record-traces",
        type=path_argument,
        metavar="DIR",
        help="also write every run as a trace file there (DIR/TARGET/CONTRACT/SCENARIO.ndjson), "
        "for replay-contract check",
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="list every scenario in the summary, passing generated ones too",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from replay_contract.conformance import judge, report, suite, targets

    if args.examples < 0:
        raise CommandError(f"--examples: must not be negative, got {args.examples}")
    if args.seed is not None and args.seed < 0:
        raise CommandError(f"--seed: must not be negative, got {args.seed}")
    chosen = contract(args.contract)
    # Everything the run writes is checked before the target starts: a run that found
    # a failure must not lose it to an output path that cannot be written.
    writable_folder(args.out, "--out")
    # the folder the failing scenarios of this target and contract go to (suite.py);
    # created only when one fails, so only what is already there is checked
    where = args.out / slug(args.target) / slug(chosen.name)
    for part in (where.parent, where):
        if part.exists() and not part.is_dir():
            raise CommandError(f"--out {args.out}: {part.name} there is not a folder")
    if args.junit is not None:
        writable_file(args.junit, "--junit")
    if args.record_traces is not None:
        writable_folder(args.record_traces, "--record-traces")
    fixed = [catalogue.resolve(ref) for ref in args.scenario] if args.scenario else None
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    impl = targets.resolve(args.target)
    try:
        reason = judge.unclaimed(impl.capabilities, chosen)
        if reason is not None:
            raise CommandError(
                f"target {args.target} {reason}; choose one it implements with --contract"
            )
        todo = suite.cases(args.examples, seed, chosen, sweep=not args.no_sweep, scenarios=fixed)
        runnable(impl, todo, chosen)
        progress = report.Progress(len(todo))
        started = time.monotonic()
        results = suite.run_all(
            impl,
            todo,
            chosen,
            args.out,
            args.target,
            shrinking=not args.no_shrink,
            progress=progress.update,
            traces=args.record_traces,
        )
        progress.close()
        done = report.SuiteRun(
            args.target, chosen.name, seed, tuple(results), time.monotonic() - started
        )
        # what the program wrote on its standard error helps to find a failure's cause
        keep = getattr(impl, "keep_log", None)
        log = keep() if callable(keep) and not done.ok else None
    except BrokenPipeError:
        raise
    except OSError as exc:  # a failing scenario could not be written under --out
        where = exc.filename if exc.filename is not None else f"--out {args.out}"
        raise CommandError(f"{where}: cannot write ({exc.strerror or exc})") from None
    finally:
        suite.shutdown(impl)
    if args.json:
        print(json.dumps(report.to_json(done), indent=2, ensure_ascii=False))
    else:
        print(report.summary(done, everything=args.verbose))
        failed = [r for r in results if r.verdict == "failed"]
        if failed:
            print("\n" + report.failures(failed[:SHOWN_FAILURES], args.target, chosen.name))
            if len(failed) > SHOWN_FAILURES:
                print(
                    f"\n... and {len(failed) - SHOWN_FAILURES} more failures, each "
                    f"written under {args.out}"
                )
        print(f"\nreproduce: {reproduce(args, chosen.name, seed)}")
    if log is not None:
        print(f"the target's standard error: {log}", file=sys.stderr)
    if args.junit is not None:
        try:
            report.junit(done, args.junit)
        except OSError as exc:
            raise CommandError(
                f"--junit {args.junit}: cannot write it ({exc.strerror or exc})"
            ) from None
    return 0 if done.ok else 1


def runnable(impl: Any, todo: list[Any], chosen: Contract) -> None:
    """Refuse a suite in which the target can run no scenario at all (each one needs a
    capability it lacks): such a run would test nothing, yet pass."""
    from replay_contract.conformance import suite

    reasons: dict[str, None] = {}
    for case in todo:
        reason = suite.skip_reason(impl.capabilities, case.build(), chosen)
        if reason is None:
            return
        reasons[reason] = None
    if not reasons:
        raise CommandError("no scenario to run")
    first, *others = reasons
    more = f"; and {len(others)} other reasons" if others else ""
    raise CommandError(
        f"no scenario can run: the target would skip all {len(todo)} ({first}{more})"
    )


def reproduce(args: argparse.Namespace, contract_name: str, seed: int) -> str:
    """The command line that runs the same suite again."""
    words = [
        "replay-contract",
        "conform",
        "--target",
        args.target,
        "--contract",
        contract_name,
        "--seed",
        str(seed),
        "--examples",
        str(args.examples),
    ]
    for ref in args.scenario or ():
        words += ["--scenario", ref]
    if args.no_sweep:
        words.append("--no-sweep")
    return shlex.join(words)
