"""A broker killed (kill -9) in the middle of a conformance run: the run ends within a
bounded time, with one line naming the broker and exit status 3, and no scenario is
reported as failed on the strength of the outage.

The broker is one of its own, started with ``replay-contract services up kafka`` in a
temporary state folder, so killing it disturbs no other test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from servers import ROOT, run_services, services_json, watch

pytestmark = pytest.mark.kafka

#: Seconds the run goes on before the broker is killed.
BEFORE_KILL = 8.0
#: The protocol timeout of the run (``conform --timeout``).
TIMEOUT = 5.0


def test_a_broker_killed_mid_run_ends_the_run_with_one_line(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {**os.environ, "REPLAY_CONTRACT_STATE": str(state)}
    info = services_json("up", "kafka", env=env)
    down = ["env", f"REPLAY_CONTRACT_STATE={state}", sys.executable, "-m", "replay_contract"]
    watchdog = watch([*down, "services", "down", "kafka"])
    try:
        bootstrap = str(info["bootstrap"])
        command = [sys.executable, "-m", "replay_contract", "conform", "--target", "kafka"]
        command += ["--seed", "1", "--examples", "500", "--timeout", str(TIMEOUT), "--json"]
        command += ["--out", str(tmp_path / "out"), "--junit", str(tmp_path / "junit.xml")]
        run = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**env, "REPLAY_CONTRACT_KAFKA": bootstrap},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(BEFORE_KILL)
        assert run.poll() is None, "the run ended before the broker was killed"
        for pid in info["pids"]:
            os.kill(int(pid), signal.SIGKILL)
        killed = time.monotonic()
        out, err = run.communicate(timeout=180)
        after = time.monotonic() - killed
    finally:
        run_services("down", "kafka", env=env)
        watchdog.kill()
        watchdog.wait()
    assert run.returncode == 3, err[-2000:]
    # bounded: the scenario in flight waits for its timeout (and the store's clean-up);
    # the next ones see the broker gone at once
    assert after < 6 * TIMEOUT + 30, after
    doc = json.loads(out)
    assert doc["failed"] == 0, [r["reason"] for r in doc["results"] if r["verdict"] == "failed"]
    assert doc["errors"] == 3
    assert [r["verdict"] for r in doc["results"][-3:]] == ["error"] * 3
    port = bootstrap.rsplit(":", 1)[1]
    (line,) = [ln for ln in err.splitlines() if ln.startswith("replay-contract conform:")]
    assert line.startswith("replay-contract conform: stopped after 3 errors in a row")
    assert f"the kafka server at 127.0.0.1:{port} went away" in line
