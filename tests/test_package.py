"""A wheel built from the checkout runs ``simulate``, ``verify`` and ``conform`` from a
folder outside it: model/, spec/ and conformance/ install as subpackages, and the
catalogue, the manifest and its counterexamples come with them as package data."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, check=False
    )


def test_a_wheel_runs_the_commands_outside_the_checkout(tmp_path: Path) -> None:
    dist, away = tmp_path / "dist", tmp_path / "elsewhere"
    away.mkdir()
    built = run(
        sys.executable, "-m", "pip", "wheel", "--no-deps",
        "-w", dist, ROOT, cwd=tmp_path,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = dist.glob("replay_contract-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "replay_contract/spec/manifest.json" in names
    assert "replay_contract/spec/counterexamples/seqnum-complete-reuse.json" in names
    assert "replay_contract/model/catalogue/reversed-interleaving.json" in names
    assert "replay_contract/conformance/runner.py" in names
    assert not any(n.startswith(("model/", "spec/", "conformance/")) for n in names)

    venv = tmp_path / "venv"
    made = run(sys.executable, "-m", "venv", "--system-site-packages", venv, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    python, tool = venv / "bin" / "python", venv / "bin" / "replay-contract"
    installed = run(python, "-m", "pip", "install", "-q", "--no-deps", wheel, cwd=away)
    assert installed.returncode == 0, installed.stderr[-3000:]
    where = run(python, "-c", "import replay_contract.model.run as m; print(m.__file__)", cwd=away)
    assert str(venv) in where.stdout, where.stdout + where.stderr

    sim = run(tool, "simulate", "reversed-interleaving", "--contract", "all", "--json", cwd=away)
    assert sim.returncode == 1, sim.stderr  # exit 1: seqnum breaks complete-reuse here
    broken = {r["contract"]: r["violations"] for r in json.loads(sim.stdout)}
    assert broken["ordered"] == []
    assert broken["seqnum"] == ["complete-reuse"]

    cx = away / "cx"
    small = "inputs=4,channels=2,keys=1,crashes=1"
    verify = run(
        tool, "verify", "--contract", "seqnum", "--property", "complete-reuse",
        "--bound", small, "--quiet", "--json", "--out", cx, cwd=away,
    )  # fmt: skip
    assert verify.returncode == 1, verify.stderr[-3000:]  # a counterexample
    (result,) = json.loads(verify.stdout)
    assert result["verdict"] == "counterexample"
    assert (cx / "seqnum-complete-reuse.json").exists()

    # the opt-in every-bound steps are in the wheel too (spec/everybound)
    every = run(
        tool, "verify", "--contract", "ordered", "--property", "no-lost-input",
        "--engine", "parametric", "--bound", "inputs=2,channels=2,keys=1,crashes=1",
        "--no-reachability", "--quiet", "--json", cwd=away,
    )  # fmt: skip
    assert every.returncode == 0, every.stderr[-3000:]
    (proved,) = json.loads(every.stdout)
    assert set(proved["engines"].values()) == {"parametric"}

    manifest = run(
        python, "-c",
        "from replay_contract.spec import manifest as m\n"
        "from replay_contract.model.run import simulate\n"
        "from replay_contract.spec.summary import summary\n"
        "from replay_contract.model.contracts import CONTRACTS\n"
        "es = [e for e in m.load() if e.counterexample]\n"
        "run = simulate(m.counterexample(es[0]), CONTRACTS[es[0].contract])\n"
        "print(len(es), summary(run)['violations'])",
        cwd=away,
    )  # fmt: skip
    assert manifest.returncode == 0, manifest.stderr[-3000:]
    count, first = manifest.stdout.split(" ", 1)
    assert int(count) >= 10 and "complete-reuse" in first

    conform = run(
        tool, "conform", "--target", "model", "--examples", "2", "--seed", "1",
        "--json", "--out", away / "conformance", cwd=away,
    )  # fmt: skip
    assert conform.returncode == 0, conform.stderr[-3000:]
    summary = json.loads(conform.stdout)
    assert summary["failed"] == 0 and summary["passed"] > 10
