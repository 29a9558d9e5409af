"""``replay-contract bench``: throughput and recovery of the runtime on a store backend.

For each backend: the throughput of ``ordered`` and ``seqnum`` on the same server and on
the memory store (the ceiling of the runtime itself), in ``--repeat`` rounds that run the
four alternately; each round gives the ratio of ``ordered`` to ``seqnum`` and the
backend's share of the ceiling, by wall clock and by CPU time per input, and the report
has the median of each over the rounds (a load that changes between rounds moves both
sides of a round's ratio alike); durable writes and round trips per input; recovery time
as a function of the inputs replayed for one key;
and recovery time as the namespace grows before the checkpoint's marker (recovery figures
are the median of ``--repeat`` runs too). Progress goes to
stderr; stdout gets tables, or JSON with ``--json``. Backends come from
:mod:`replay_contract.runtime.backends` (``all``: every one that is available; the others
are listed as skipped, with the reason, except one whose server address the user set
(``REPLAY_CONTRACT_KAFKA``, ``REPLAY_CONTRACT_FLUSS``): that one not answering is an
error). Every backend is reached before any is measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from replay_contract.cli import CommandError, comma_list, positive_int
from replay_contract.model.contracts import ORDERED, SEQNUM
from replay_contract.model.narrate import render


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="measure the runtime: ordered vs seqnum throughput, recovery time",
        description="Throughput of ordered vs seqnum, writes and round trips per input, and "
        "recovery time vs replayed inputs and vs what the store holds before the marker.",
    )
    parser.add_argument(
        "--backend",
        default="memory",
        help="kafka, memory, fluss or all (default: memory); all skips, with the reason, "
        "a backend whose server is not running, unless its address was set in "
        "REPLAY_CONTRACT_KAFKA or REPLAY_CONTRACT_FLUSS",
    )
    parser.add_argument(
        "--inputs",
        type=positive_int,
        default=2000,
        help="inputs per throughput run (default: 2000)",
    )
    parser.add_argument("--keys", type=positive_int, default=16, help="keys (default: 16)")
    parser.add_argument(
        "--repeat",
        type=positive_int,
        default=5,
        help="rounds of the throughput runs (each contract on the backend and on the "
        "memory store, alternating), and runs of each other figure (default: 5)",
    )
    parser.add_argument(
        "--replayed",
        default="10,100,1000",
        help="inputs replayed for one key after a crash (default: 10,100,1000)",
    )
    parser.add_argument(
        "--pad",
        default="0,10000,100000",
        help="entries before the marker (default: 0,10000,100000)",
    )
    parser.add_argument(
        "--by-keys",
        default="1,16,1024",
        help="keys of the throughput-vs-keys rows, ordered (default: 1,16,1024)",
    )
    parser.add_argument(
        "--payloads",
        default="0,1000,10000",
        help="payload sizes in characters of the throughput-vs-payload rows, ordered "
        "(default: 0,1000,10000)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.set_defaults(func=run)


def _sizes(text: str, what: str) -> list[int]:
    try:
        sizes = [int(part) for part in comma_list(text, f"--{what}")]
    except ValueError:
        raise CommandError(f"--{what}: expected comma-separated integers, got {text!r}") from None
    if not sizes or any(s < 0 for s in sizes):
        raise CommandError(f"--{what}: expected non-negative integers, got {text!r}")
    return sizes


def progress(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from replay_contract.runtime import backends

    replayed, pads = _sizes(args.replayed, "replayed"), _sizes(args.pad, "pad")
    by_keys, payloads = _sizes(args.by_keys, "by-keys"), _sizes(args.payloads, "payloads")
    if 0 in by_keys:
        raise CommandError(f"--by-keys: expected positive integers, got {args.by_keys!r}")
    names = backends.names() if args.backend == "all" else [args.backend]
    results: dict[str, Any] = {}
    loaded: dict[str, Any] = {}
    try:
        # Reach every backend first: one the user asked for that does not answer is
        # refused before anything is measured.
        for name in names:
            try:
                loaded[name] = backends.load(name)
            except CommandError as exc:
                if args.backend != "all":
                    raise
                address = backends.configured(name)
                if address is not None:
                    raise CommandError(
                        f"{exc} ({address} is set; unset it to skip {name})"
                    ) from None
                results[name] = {"skipped": str(exc)}
        for name, figures in results.items():
            progress(f"{name}: skipped ({figures['skipped']})")
        for name, backend in loaded.items():
            results[name] = measure(
                backend, name, args.inputs, args.keys, args.repeat, replayed, pads
            )
            results[name].update(
                sweeps(backend, name, args.inputs, args.keys, args.repeat, by_keys, payloads)
            )
    finally:
        for backend in loaded.values():
            backend.close()
    results = {name: results[name] for name in names}
    if args.json:
        print(json.dumps({"backends": results}, indent=2))
    else:
        print(report(results))
    return 0


def measure(
    backend: Any,
    name: str,
    inputs: int,
    keys: int,
    repeat: int,
    replayed: list[int],
    pads: list[int],
) -> dict[str, Any]:
    from replay_contract.runtime import bench
    from replay_contract.runtime.memory_store import MemoryBackend

    memory = MemoryBackend()
    ceiling_is_own = isinstance(backend, MemoryBackend) and not backend.lag
    contracts = (SEQNUM, ORDERED)
    runs: dict[tuple[str, str], list[bench.Throughput]] = {}
    for i in range(repeat):
        for contract in contracts if i % 2 == 0 else contracts[::-1]:
            for on, where in ((backend, "own"), (memory, "memory")):
                if where == "memory" and ceiling_is_own:
                    runs[(where, contract.name)] = runs[("own", contract.name)]
                    continue
                progress(
                    f"{name}: throughput {contract.name} on "
                    f"{name if where == 'own' else 'memory (the ceiling)'} "
                    f"round {i + 1}/{repeat} ({inputs} inputs, {keys} keys)"
                )
                runs.setdefault((where, contract.name), []).append(
                    bench.throughput(on, contract, inputs, keys)
                )

    def rounds(where: str, contract: str, cpu: bool = False) -> list[float]:
        return [r.cpu_us_per_input if cpu else r.per_second for r in runs[(where, contract)]]

    def median_row(where: str, contract: str) -> dict[str, Any]:
        rs = runs[(where, contract)]
        row = sorted(rs, key=lambda r: r.per_second)[len(rs) // 2].to_json()
        row["inputs_per_s"] = round(statistics.median(rounds(where, contract)), 1)
        row["cpu_us_per_input"] = round(statistics.median(rounds(where, contract, True)), 2)
        row["runs_inputs_per_s"] = [round(x, 1) for x in rounds(where, contract)]
        row["runs_cpu_us_per_input"] = [round(x, 2) for x in rounds(where, contract, True)]
        return row

    def ratio(a: list[float], b: list[float]) -> float:
        """The median over the rounds of ``a / b``."""
        return round(statistics.median(x / y if y else 0.0 for x, y in zip(a, b, strict=True)), 3)

    s_name, o_name = SEQNUM.name, ORDERED.name
    throughput = [median_row("own", c.name) for c in contracts]
    ceiling = {
        "inputs": inputs,
        "keys": keys,
        "memory_inputs_per_s": {
            c: round(statistics.median(rounds("memory", c)), 1) for c in (s_name, o_name)
        },
        "memory_cpu_us_per_input": {
            c: round(statistics.median(rounds("memory", c, True)), 2) for c in (s_name, o_name)
        },
        "inputs_per_s": {r["contract"]: r["inputs_per_s"] for r in throughput},
        "cpu_us_per_input": {r["contract"]: r["cpu_us_per_input"] for r in throughput},
        # the backend's throughput over the memory store's, and the memory store's CPU
        # time per input over the backend's: the backend's share of the ceiling
        "share_of_ceiling": {
            c: ratio(rounds("own", c), rounds("memory", c)) for c in (s_name, o_name)
        },
        "cpu_share_of_ceiling": {
            c: ratio(rounds("memory", c, True), rounds("own", c, True)) for c in (s_name, o_name)
        },
    }

    def recovery(contract: Any, n: int, pad: int) -> dict[str, Any]:
        """The median run (by recovery time) of ``repeat``."""
        runs = sorted(
            (bench.recovery(backend, contract, n, pad) for _ in range(repeat)),
            key=lambda r: r.restore_seconds + r.replay_seconds,
        )
        return runs[len(runs) // 2].to_json()

    by_replayed = []
    for n in replayed:
        for contract in (ORDERED, SEQNUM):
            progress(
                f"{name}: recovery of {n} replayed inputs under {contract.name} ({repeat} runs)"
            )
            by_replayed.append(recovery(contract, n, 0))
    fixed = min(100, max(replayed)) if replayed else 100
    by_pad = []
    for pad in pads:
        progress(
            f"{name}: recovery of {fixed} replayed inputs after {pad} older entries ({repeat} runs)"
        )
        by_pad.append(recovery(ORDERED, fixed, pad))
    return {
        "throughput": throughput,
        # ordered's throughput over seqnum's, and seqnum's CPU time per input over
        # ordered's (both at least 1 when ordered costs no more)
        "ratio_ordered_to_seqnum": ratio(rounds("own", o_name), rounds("own", s_name)),
        "cpu_ratio_ordered_to_seqnum": ratio(
            rounds("own", s_name, True), rounds("own", o_name, True)
        ),
        "ceiling": ceiling,
        "recovery_by_replayed": by_replayed,
        "recovery_by_entries_before_marker": by_pad,
    }


def sweeps(
    backend: Any,
    name: str,
    inputs: int,
    keys: int,
    repeat: int,
    by_keys: list[int],
    payloads: list[int],
) -> dict[str, Any]:
    """Throughput (``ordered``, the median of ``repeat`` runs) against the number of keys
    and against the payload size."""
    from replay_contract.runtime import bench

    def median(on: Any, contract: Any, k: int, payload: int = 0) -> dict[str, Any]:
        runs = sorted(
            (bench.throughput(on, contract, inputs, k, payload) for _ in range(repeat)),
            key=lambda r: r.per_second,
        )
        return runs[len(runs) // 2].to_json()

    by_key_rows = []
    for k in by_keys:
        progress(f"{name}: throughput ordered with {k} keys ({repeat} runs)")
        by_key_rows.append(median(backend, ORDERED, k))
    by_payload_rows = []
    for size in payloads:
        progress(f"{name}: throughput ordered with payloads of {size} characters ({repeat} runs)")
        by_payload_rows.append(median(backend, ORDERED, keys, size))
    return {"throughput_by_keys": by_key_rows, "throughput_by_payload": by_payload_rows}


def report(results: dict[str, Any]) -> str:
    """The figures as readable tables."""
    parts = []
    for name, figures in results.items():
        if "skipped" in figures:
            parts.append(f"{name}: skipped ({figures['skipped']})")
            continue
        rows: list[tuple[str, ...]] = [
            (
                name,
                r["contract"],
                str(r["inputs"]),
                str(r["keys"]),
                f"{r['inputs_per_s']:.0f}",
                f"{r['cpu_us_per_input']:.1f}",
                f"{r['writes_per_input']:.2f}",
                f"{r['round_trips_per_input']:.2f}",
            )
            for r in figures["throughput"]
        ]
        parts.append(
            render(
                (
                    "backend",
                    "contract",
                    "inputs",
                    "keys",
                    "inputs/s",
                    "CPU us/input",
                    "writes/input",
                    "round trips/input",
                ),
                rows,
            )
        )
        parts.append(
            f"{name}: ordered/seqnum throughput ratio {figures['ratio_ordered_to_seqnum']:.3f}"
            f" (by CPU time per input {figures['cpu_ratio_ordered_to_seqnum']:.3f}; the "
            "median over the rounds)"
        )
        parts.append(_sweep_tables(name, figures))
        rows = [
            (
                r["contract"],
                str(r["replayed"]),
                f"{r['restore_ms']:.1f}",
                f"{r['replay_ms']:.1f}",
                f"{r['recovery_ms']:.1f}",
                str(r["entries_read"]),
                str(r["reused"]),
                str(r["tool_calls_repeated"]),
            )
            for r in figures["recovery_by_replayed"]
        ]
        parts.append(
            f"{name}: recovery vs inputs replayed for one key\n"
            + render(
                (
                    "contract",
                    "replayed",
                    "restore ms",
                    "replay ms",
                    "total ms",
                    "entries read",
                    "reused",
                    "tools repeated",
                ),
                rows,
            )
        )
        rows = [
            (
                str(r["entries_before_marker"]),
                str(r["replayed"]),
                f"{r['restore_ms']:.1f}",
                f"{r['recovery_ms']:.1f}",
                str(r["entries_read"]),
            )
            for r in figures["recovery_by_entries_before_marker"]
        ]
        parts.append(
            f"{name}: recovery (ordered) vs entries before the marker\n"
            + render(
                ("entries before marker", "replayed", "restore ms", "total ms", "entries read"),
                rows,
            )
        )
    measured = {name: f for name, f in results.items() if "skipped" not in f}
    if len(measured) > 1:
        parts.append(side_by_side(measured))
    return "\n\n".join(parts)


def _sweep_tables(name: str, figures: dict[str, Any]) -> str:
    def row(first: str, r: dict[str, Any]) -> tuple[str, ...]:
        return (
            first,
            f"{r['inputs_per_s']:.0f}",
            f"{r['writes_per_input']:.2f}",
            f"{r['round_trips_per_input']:.3f}",
        )

    head = ("inputs/s", "writes/input", "round trips/input")
    c = figures["ceiling"]
    share, cpu_share = c["share_of_ceiling"], c["cpu_share_of_ceiling"]
    return "\n\n".join(
        [
            f"{name}: throughput (ordered) vs keys\n"
            + render(
                ("keys", *head), [row(str(r["keys"]), r) for r in figures["throughput_by_keys"]]
            ),
            f"{name}: throughput (ordered) vs payload size\n"
            + render(
                ("payload chars", *head),
                [row(str(r["payload"]), r) for r in figures["throughput_by_payload"]],
            ),
            f"{name}: the ceiling (the memory store in the same rounds, {c['inputs']} inputs, "
            f"{c['keys']} keys; each share is the median over the rounds)\n"
            + render(
                (
                    "contract",
                    "memory inputs/s",
                    f"{name} inputs/s",
                    "share",
                    "memory CPU us/input",
                    f"{name} CPU us/input",
                    "share by CPU",
                ),
                [
                    (
                        contract,
                        f"{c['memory_inputs_per_s'][contract]:.0f}",
                        f"{c['inputs_per_s'][contract]:.0f}",
                        f"{share[contract]:.2f}",
                        f"{c['memory_cpu_us_per_input'][contract]:.1f}",
                        f"{c['cpu_us_per_input'][contract]:.1f}",
                        f"{cpu_share[contract]:.2f}",
                    )
                    for contract in (SEQNUM.name, ORDERED.name)
                ],
            ),
        ]
    )


def side_by_side(results: dict[str, Any]) -> str:
    """One row per backend: throughput of both contracts, their ratio, the cost per input
    under ``ordered`` and the recovery of the most replayed inputs and of the largest
    store (``ordered``)."""
    rows = []
    for name, f in results.items():
        tp = {r["contract"]: r for r in f["throughput"]}
        replayed = [r for r in f["recovery_by_replayed"] if r["contract"] == ORDERED.name]
        most = max(replayed, key=lambda r: r["replayed"]) if replayed else None
        padded = max(
            f["recovery_by_entries_before_marker"],
            key=lambda r: r["entries_before_marker"],
            default=None,
        )
        rows.append(
            (
                name,
                f"{tp[SEQNUM.name]['inputs_per_s']:.0f}",
                f"{tp[ORDERED.name]['inputs_per_s']:.0f}",
                f"{f['ratio_ordered_to_seqnum']:.3f}",
                f"{tp[ORDERED.name]['writes_per_input']:.2f}",
                f"{tp[ORDERED.name]['round_trips_per_input']:.2f}",
                f"{most['recovery_ms']:.1f} ({most['replayed']})" if most else "-",
                f"{padded['recovery_ms']:.1f} ({padded['entries_before_marker']})"
                if padded
                else "-",
            )
        )
    return "side by side\n" + render(
        (
            "backend",
            "seqnum inputs/s",
            "ordered inputs/s",
            "ratio",
            "writes/input",
            "round trips/input",
            "recovery ms (replayed)",
            "recovery ms (entries before)",
        ),
        rows,
    )
