"""The live job's benchmark (``replay-contract live --bench N``).

One generated recovery (:func:`replay_contract.conformance.bench.recovery`: N inputs of
one key on two channels, a checkpoint at the start, all N delivered, a crash, a restore,
the N delivered again with each consecutive pair swapped) runs live under ``seqnum`` and
``ordered``. For each: the throughput of the first attempt (inputs handled per second,
from the first delivery to the last), and the recovery (Flink's restart plus the N
re-deliveries) against the number of replayed inputs.

What it measures is the job as the driver paces it: each delivery is released alone and
waited for (the gates serialise the inputs so that the interleaving is the schedule's),
so a delivery's time is a round trip through the job (driver -> Kafka -> source -> gate
-> keyBy -> agent operator -> store), not Flink's pipelined throughput. The ratio
between the contracts is the cost of ``ordered``'s extra work per input in that path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replay_contract.conformance.bench import recovery
from replay_contract.conformance.judge import judge
from replay_contract.model.contracts import CONTRACTS

from .driver import LiveError, LiveFlink


def row(contract: str, inputs: int, store: str, folder: Path | None) -> dict[str, Any]:
    scenario = recovery(inputs, 1)
    target = LiveFlink(store, folder=folder)
    result = judge(target, scenario, CONTRACTS[contract])
    if result.verdict != "passed":
        raise LiveError(f"live bench: {contract} {result.verdict}: {result.reason}")
    first = [s for kind, attempt, s in target.timings if kind == "deliver" and attempt == 0]
    restart = [s for kind, attempt, s in target.timings if kind == "restore" and attempt == 1]
    replay = [s for kind, attempt, s in target.timings if kind == "deliver" and attempt == 1]
    return {
        "contract": contract,
        "store": store,
        "inputs": inputs,
        "first_attempt_s": round(sum(first), 2),
        "inputs_per_s": round(len(first) / sum(first), 1),
        "recovery_s": round(sum(restart) + sum(replay), 2),
        "restart_s": round(sum(restart), 2),
        "replayed_inputs": inputs,
        "replay_ms_per_input": round(1000 * sum(replay) / inputs, 1),
        "tool_calls": result.tool_calls,
        "repeated_tool_calls": result.repeated,
    }


def bench(inputs: int, store: str, folder: Path | None = None) -> dict[str, Any]:
    rows = [row(c, inputs, store, folder) for c in ("seqnum", "ordered")]
    seqnum, ordered = rows
    return {
        "rows": rows,
        "throughput_ratio_ordered_to_seqnum": round(
            ordered["inputs_per_s"] / seqnum["inputs_per_s"], 2
        ),
    }
