"""``tests/watchdog.py``: a command runs once the process that started the watchdog
ends, and not before."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

PARENT = """
import os, sys, time
sys.path.insert(0, {tests!r})
from servers import watch
watch([sys.executable, "-c", "open({marker!r}, 'w').write('ran')"])
print("watching", flush=True)
time.sleep(float(sys.argv[1]))
os._exit(0)
"""


def _wait_for(path: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return path.exists()


def _parent(marker: Path, seconds: float) -> subprocess.Popen[str]:
    """A process that starts a watchdog writing ``marker``, then lives ``seconds``."""
    code = PARENT.format(tests=str(Path(__file__).parent), marker=str(marker))
    parent = subprocess.Popen(
        [sys.executable, "-c", code, str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    assert parent.stdout.readline().strip() == "watching"
    return parent


def test_the_command_runs_when_the_parent_ends_with_os_exit(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    parent = _parent(marker, 3)
    time.sleep(1.5)
    assert not marker.exists(), "the command ran while its parent was alive"
    assert parent.wait(timeout=30) == 0
    assert _wait_for(marker, 30), "the command did not run after the parent ended"
    assert marker.read_text() == "ran"


def test_the_command_runs_when_the_parent_is_killed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    parent = _parent(marker, 600)
    parent.kill()
    parent.wait(timeout=30)
    assert _wait_for(marker, 30), "the command did not run after the parent was killed"


def test_without_a_command_it_says_so() -> None:
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("watchdog.py")), "1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == "watchdog: usage: watchdog.py PARENT-PID COMMAND..."
