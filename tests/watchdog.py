"""Run a command when the process that started this one ends.

``python tests/watchdog.py PID COMMAND...`` waits until its parent process, whose pid
is ``PID``, is gone, then runs ``COMMAND`` and exits with its status. The server
fixtures of ``tests/servers.py`` start one for each server they start, in a session of
its own, and stop it after their own teardown. A test run that ends without that
teardown (pytest-timeout's thread method ends the process with ``os._exit``, or the
process is killed) would otherwise leave the Kafka and Fluss servers running; the
watchdog then stops them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time


def main(args: list[str], poll: float = 0.5) -> int:
    if len(args) < 2 or not args[0].isdigit():
        print("watchdog: usage: watchdog.py PARENT-PID COMMAND...", file=sys.stderr)
        return 2
    parent, command = int(args[0]), args[1:]
    # once the parent is gone this process is handed to another one (init or a
    # subreaper), so the check holds even if the parent's pid is reused; the parent's
    # pid comes from the parent, as it may be gone before this process gets here
    while os.getppid() == parent:
        time.sleep(poll)
    return subprocess.run(command, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
