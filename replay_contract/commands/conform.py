"""``replay-contract conform --target T``: run the conformance suite against a target.

Progress goes to stderr; stdout gets the summary table (and the full report of the
first failures), or one JSON document with ``--json``. The exit status
(:mod:`replay_contract.exits`) is 3 when a scenario ended in an ``error`` (the target's
server went away, its process died or hung) or the run stopped early (errors in a row,
``--deadline``); else 1 when a scenario failed, or when ``--fail-on-skip`` or
``--min-scenarios`` finds the run too thin; 2 when the command is refused (unknown
target or contract, a target that is not available or does not implement the contract,
an output path that cannot be written, checked before anything runs) or when the target
can run none of the scenarios (each one needs a capability it lacks); 130 on Ctrl-C,
after the partial summary and JUnit file; 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replay_contract.cli import (
    CommandError,
    creatable_folder,
    made_folder,
    path_argument,
    positive_int,
    positive_number,
    writable_file,
)
from replay_contract.exits import BROKEN, HOLDS, INTERRUPTED, NO_ANSWER, interruption
from replay_contract.model import catalogue
from replay_contract.model.contracts import Contract, contract
from replay_contract.model.files import slug

if TYPE_CHECKING:
    from replay_contract.conformance.suite import Cases
    from replay_contract.model.scenario import Scenario

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
        "--target",
        required=True,
        help="model, kafka, fluss, flink-agents:kafka|fluss[:fresh-jvm], process:<command> "
        "or mutant:<name>",
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
        "--timeout",
        type=positive_number,
        metavar="SECONDS",
        help="how long a process target, or a runtime's store, may take to answer before "
        "the scenario is an error (default: 60 for a process, 30 for a store)",
    )
    p.add_argument(
        "--deadline",
        type=positive_number,
        metavar="SECONDS",
        help="start no scenario after this many seconds; the rest are reported as not run "
        "and the exit status is 3",
    )
    p.add_argument(
        "--max-errors",
        type=positive_int,
        default=3,
        metavar="N",
        help="stop the run after N errors in a row (a server gone, a target that died; default 3)",
    )
    p.add_argument(
        "--fail-on-skip",
        action="store_true",
        help="exit 1 when the target skips any scenario (a capability it lacks)",
    )
    p.add_argument(
        "--min-scenarios",
        type=positive_int,
        metavar="N",
        help="exit 1 when fewer than N scenarios ran (passed or failed; skipped ones do not count)",
    )
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
    # a failure must not lose it to an output path that cannot be written. Nothing is
    # created until every check has passed: the writers make the folders they need.
    creatable_folder(args.out, "--out")
    # the folder the failing scenarios of this target and contract go to (suite.py);
    # created only when one fails, so only what is already there is checked
    where = args.out / slug(args.target) / slug(chosen.name)
    for part in (where.parent, where):
        if part.exists() and not part.is_dir():
            raise CommandError(f"--out {args.out}: {part.name} there is not a folder")
    if args.junit is not None:
        writable_file(args.junit, "--junit")
    if args.record_traces is not None:
        creatable_folder(args.record_traces, "--record-traces")
    fixed = [catalogue.resolve(ref) for ref in args.scenario] if args.scenario else None
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    # a process target writes its standard error under --out from its start: the folder
    # is made for it, and removed again when the target is refused
    with made_folder(args.out, "--out"):
        impl = targets.resolve(args.target, args.timeout, args.out)
        try:
            todo = admitted(impl, args, chosen, fixed, seed)
        except BaseException:
            suite.shutdown(impl)
            raise
    results: list[Any] = []
    interrupted = False
    try:
        progress = report.Progress(len(todo))
        started = time.monotonic()
        limits = suite.Limits(
            args.max_errors, None if args.deadline is None else started + args.deadline
        )
        try:
            suite.run_all(
                impl,
                todo,
                chosen,
                args.out,
                args.target,
                shrinking=not args.no_shrink,
                progress=progress.update,
                limits=limits,
                results=results,
                traces=args.record_traces,
            )
        except KeyboardInterrupt as exc:
            interrupted = True
            limits.stopped = f"interrupted ({interruption(exc)})"
        if not interrupted and len(results) == len(todo):
            limits.stopped = None  # the last scenario was the last error in a row: none left
        progress.close()
        done = report.SuiteRun(
            args.target,
            chosen.name,
            seed,
            tuple(results),
            time.monotonic() - started,
            len(todo),
            limits.stopped,
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
    if done.stopped is not None:
        print(f"replay-contract conform: {done.stopped}", file=sys.stderr)
    thin = too_thin(done, args.fail_on_skip, args.min_scenarios)
    if thin is not None:
        print(f"replay-contract conform: {thin}", file=sys.stderr)
    if args.junit is not None:
        try:
            report.junit(done, args.junit)
        except OSError as exc:
            raise CommandError(
                f"--junit {args.junit}: cannot write it ({exc.strerror or exc})"
            ) from None
    if interrupted:
        return INTERRUPTED
    if done.count(judge.ERROR) or done.stopped is not None:
        return NO_ANSWER
    return BROKEN if done.count(judge.FAILED) or thin is not None else HOLDS


def admitted(
    impl: Any,
    args: argparse.Namespace,
    chosen: Contract,
    fixed: list[Scenario] | None,
    seed: int,
) -> Cases:
    """The cases to run, once the target is known to implement the contract and to be
    able to run at least one of them; else refused."""
    from replay_contract.conformance import judge, suite

    reason = judge.unclaimed(impl.capabilities, chosen)
    if reason is not None:
        raise CommandError(
            f"target {args.target} {reason}; choose one it implements with --contract"
        )
    todo = suite.cases(
        args.examples,
        seed,
        chosen,
        sweep=not args.no_sweep,
        scenarios=fixed,
        capabilities=impl.capabilities,
    )
    runnable(impl, todo, chosen)
    return todo


def too_thin(done: Any, fail_on_skip: bool, min_scenarios: int | None) -> str | None:
    """Why the run tested too little to pass, with ``--fail-on-skip`` or
    ``--min-scenarios``: the skipped scenarios, or the scenarios that ran."""
    from replay_contract.conformance import judge

    skipped = done.count(judge.SKIPPED)
    if fail_on_skip and skipped:
        first = next(r for r in done.results if r.verdict == judge.SKIPPED)
        return f"--fail-on-skip: {skipped} scenarios skipped (the first: {first.reason})"
    ran = done.count(judge.PASSED) + done.count(judge.FAILED)
    if min_scenarios is not None and ran < min_scenarios:
        return f"--min-scenarios {min_scenarios}: only {ran} scenarios ran ({skipped} skipped)"
    return None


def runnable(impl: Any, todo: Iterable[Any], chosen: Contract) -> None:
    """Refuse a suite in which the target can run no scenario at all (each one needs a
    capability it lacks): such a run would test nothing, yet pass."""
    from replay_contract.conformance import suite

    reasons: dict[str, None] = {}
    total = 0
    for case in todo:
        total += 1
        reason = suite.skip_reason(impl.capabilities, case.build(), chosen)
        if reason is None:
            return
        reasons[reason] = None
    if not reasons:
        raise CommandError("no scenario to run")
    first, *others = reasons
    more = f"; and {len(others)} other reasons" if others else ""
    raise CommandError(f"no scenario can run: the target would skip all {total} ({first}{more})")


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
