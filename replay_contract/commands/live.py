"""``replay-contract live SCENARIO``: run a scenario as a real Flink job."""

from __future__ import annotations

import argparse
import json
from typing import Any

import replay_contract.model.catalogue as catalogue
from replay_contract.cli import CommandError, positive_int
from replay_contract.exits import BROKEN, HOLDS
from replay_contract.model.contracts import contracts


def register(sub: Any) -> None:
    p = sub.add_parser(
        "live",
        help="run a scenario as a real Apache Flink job (needs the 'live' extra)",
        description="Run a scenario as a real Flink job on a local MiniCluster: one source "
        "subtask per channel (a Kafka partition each), the agent operator after keyBy "
        "running the project's runtime with its state in Flink keyed state, the crash an "
        "injected task failure, the restore Flink's restart from its latest checkpoint. "
        "Prints simulate's figures and the checker's verdict on the run's trace. Exit "
        "status 1 when a property breaks or the run differs from the model, 2 when the "
        "scenario cannot be expressed live (the reason is printed), 3 when the job or a "
        "server did not come up.",
    )
    p.add_argument("scenario", nargs="?", help="a scenario file, or a built-in scenario name")
    p.add_argument("--contract", default="ordered", help="a contract name or a comma list")
    p.add_argument("--store", choices=("kafka", "fluss"), default="kafka")
    p.add_argument(
        "--parallelism", type=int, default=2, help="the agent operator's parallelism (2)"
    )
    p.add_argument(
        "--bench",
        type=positive_int,
        metavar="N",
        help="instead of a scenario: the benchmark, a recovery of N inputs under seqnum "
        "and ordered (throughput ratio, recovery time against replayed inputs)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from replay_contract.live.driver import expresses
    from replay_contract.live.report import run as run_live

    if args.bench is not None:
        return run_bench(args)
    if args.scenario is None:
        raise CommandError("give a SCENARIO (or --bench N)")
    scenario = catalogue.resolve(args.scenario)
    chosen = contracts(args.contract)
    if args.parallelism < 1:
        raise CommandError("--parallelism must be at least 1")
    for c in chosen:
        reason = expresses(scenario, c)
        if reason is not None:
            raise CommandError(f"{scenario.name} under {c.name}: {reason}")
    results = [run_live(scenario, c, args.store, parallelism=args.parallelism) for c in chosen]
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else results, indent=2))
    else:
        for r in results:
            print(
                f"{r['scenario']} live on Flink ({r['store']}), {r['contract']}: "
                f"{r['tool_calls']} tool calls, {r['repeated_tool_calls']} repeated, "
                f"{r['reused']} reused; violations: {', '.join(r['violations']) or 'none'}; "
                f"against the model: {r['verdict']}"
                + (f" ({r['reason']})" if r["reason"] else "")
                + f"; {r['seconds']} s"
            )
    bad = any(r["violations"] or r["verdict"] != "pass" for r in results)
    return BROKEN if bad else HOLDS


def run_bench(args: argparse.Namespace) -> int:
    from replay_contract.live.bench import bench

    if args.scenario is not None:
        raise CommandError("give a SCENARIO or --bench N, not both")
    result = bench(args.bench, args.store)
    if args.json:
        print(json.dumps(result, indent=2))
        return HOLDS
    for r in result["rows"]:
        print(
            f"{r['contract']:8} {r['inputs']} inputs: {r['inputs_per_s']} inputs/s "
            f"(first attempt {r['first_attempt_s']} s); recovery {r['recovery_s']} s: "
            f"Flink's restart {r['restart_s']} s, then {r['replayed_inputs']} replayed inputs "
            f"at {r['replay_ms_per_input']} ms each; "
            f"{r['tool_calls']} tool calls, {r['repeated_tool_calls']} repeated"
        )
    print(f"throughput ordered/seqnum: {result['throughput_ratio_ordered_to_seqnum']}")
    return HOLDS
