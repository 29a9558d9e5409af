"""Benchmark of ``replay-contract check``: how long judging a recorded trace takes, and
how much memory it needs, as the trace grows.

Each row is a generated recovery: N inputs over K keys on two channels, a checkpoint at
the start, all N delivered and saved, a crash, a restore, and the N delivered again
with each pair of consecutive inputs swapped (the reversed interleaving of
docs/contract.md, N/2 times over). The trace is the reference model's run under
``ordered`` (about ten events an input), written as a trace file; a fresh process then
reads and judges it, and reports the time and its peak resident memory. ::

    python -m replay_contract.conformance.bench            # 1k, 10k, 100k inputs x 1, 16, 1024 keys
    python -m replay_contract.conformance.bench --inputs 1000,10000 --keys 1 --json

The goal (issue 32): 10,000 inputs in under 5 s and 1,000,000 trace events in under
60 s on 2 cores, memory growing linearly.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from replay_contract.model.agent import Action, Agent
from replay_contract.model.contracts import ORDERED
from replay_contract.model.run import simulate
from replay_contract.model.scenario import Scenario, Step
from replay_contract.model.topology import Channel, Record, Topology

from . import tracefile

AGENT = Agent((Action("respond", "input", ("notes",), ("notes",), ("llm",), (), True),))


def recovery(inputs: int, keys: int) -> Scenario:
    """The generated recovery of the module's docstring."""
    ids = [f"r{i}" for i in range(inputs)]
    channels = tuple(
        Channel(
            f"upstream-{c + 1}",
            tuple(
                Record(identity, f"K{int(identity[1:]) % keys}", identity, f"upstream-{c + 1}", j)
                for j, identity in enumerate(ids[c::2])
            ),
        )
        for c in range(2)
    )
    swapped = [identity for i in range(0, inputs, 2) for identity in reversed(ids[i : i + 2])]
    schedule = (
        Step("checkpoint"),
        *(Step("deliver", i) for i in ids),
        Step("crash"),
        Step("restore"),
        *(Step("deliver", i) for i in swapped),
    )
    return Scenario(f"recovery-{inputs}-{keys}", AGENT, Topology(channels), schedule)


def record(inputs: int, keys: int, path: Path) -> int:
    """Write the row's trace to ``path``; the number of events."""
    scenario = recovery(inputs, keys)
    events = simulate(scenario, ORDERED).world.events
    tracefile.write(path, scenario, ORDERED, events)
    return len(events)


def judge_file(path: Path) -> dict[str, Any]:
    """Read and judge a trace file in this process: wall-clock and CPU seconds (on a
    loaded machine the CPU time is what an idle one would take), verdict, peak memory."""
    from .check import check, paused_collection

    started, cpu = time.perf_counter(), time.process_time()
    with paused_collection():
        run = tracefile.read(path)
        judgement = check(run)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "events": len(run.events),
        "verdict": judgement.verdict,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "peak_mb": round(peak_kb / 1024, 1),
    }


def _in_a_child(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "replay_contract.conformance.bench", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr else "failed")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def row(inputs: int, keys: int, folder: Path) -> dict[str, Any]:
    path = folder / f"recovery-{inputs}-{keys}.ndjson"
    _in_a_child("--record", str(inputs), str(keys), str(path))
    judged = _in_a_child("--judge", str(path))
    path.unlink()
    return {"inputs": inputs, "keys": keys, **judged}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m replay_contract.conformance.bench")
    p.add_argument("--inputs", default="1000,10000,100000", help="comma-separated")
    p.add_argument("--keys", default="1,16,1024", help="comma-separated")
    p.add_argument("--json", action="store_true")
    p.add_argument("--record", nargs=3, metavar=("INPUTS", "KEYS", "PATH"), help=argparse.SUPPRESS)
    p.add_argument("--judge", metavar="PATH", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.record:
        events = record(int(args.record[0]), int(args.record[1]), Path(args.record[2]))
        print(json.dumps({"events": events}))
        return 0
    if args.judge:
        print(json.dumps(judge_file(Path(args.judge))))
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for inputs in (int(n) for n in args.inputs.split(",")):
            for keys in (int(k) for k in args.keys.split(",")):
                result = row(inputs, keys, Path(folder))
                rows.append(result)
                if not args.json:
                    print(
                        f"{result['inputs']:>8,} inputs {result['keys']:>5} keys "
                        f"{result['events']:>10,} events {result['seconds']:>8.2f} s "
                        f"({result['cpu_seconds']:.2f} s CPU) "
                        f"{result['peak_mb']:>8.1f} MB  {result['verdict']}",
                        flush=True,
                    )
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
