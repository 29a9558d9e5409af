"""PyFlink for the live job, installed once into the user cache, beside the project.

PyFlink cannot be an extra of the project: every release pins pandas and numpy below
what ``pyfluss`` needs, so pip finds no set of versions that holds both. It is installed
instead with ``pip install --target`` into ``<cache>/pyflink/<key>/lib`` (the cache of
:func:`replay_contract.services.common.cache_dir`, outside the clone; ``key`` hashes the
requirement and the Python version), the first time a live job runs, with a progress
line, and taken from there afterwards. ``installed.json`` beside it marks a complete
install.

This process finds PyFlink *after* its own packages on ``sys.path`` (what it imported
already, numpy or pyarrow, stays); PyFlink's Python workers, processes of their own,
find the folder *first* on ``PYTHONPATH``, so they run on the versions PyFlink was
built for, with the project's packages (``replay_contract``, the store clients) from
this environment.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from replay_contract.exits import InfrastructureError
from replay_contract.services.common import cache_dir, note, service_lock

#: The PyFlink release the live job is written against (its Kafka connector matches).
REQUIREMENT = "apache-flink==1.20.3"


class PyFlinkUnavailable(InfrastructureError):
    """PyFlink could not be installed into the cache."""


def folder() -> Path:
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    key = hashlib.sha256(f"{REQUIREMENT}\n{version}".encode()).hexdigest()[:16]
    return cache_dir() / "pyflink" / key


def installed(*, progress: bool = True) -> Path:
    """The folder holding PyFlink and its dependencies, installed on first use."""
    home = folder()
    lib, marker = home / "lib", home / "installed.json"
    with service_lock(home):
        if marker.exists() and lib.is_dir():
            return lib
        note("pyflink", f"installing {REQUIREMENT} into {lib} (once) ...", progress=progress)
        started = time.monotonic()
        staging = home / "lib.partial"
        shutil.rmtree(staging, ignore_errors=True)
        log = home / "pip.log"
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-input"]
        command += ["--target", str(staging), REQUIREMENT]
        with log.open("w") as output:
            done = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT, check=False)
        if done.returncode != 0:
            raise PyFlinkUnavailable(
                f"live: pip could not install {REQUIREMENT} (exit {done.returncode}; see {log})"
            )
        shutil.rmtree(lib, ignore_errors=True)
        staging.rename(lib)
        marker.write_text(json.dumps({"requirement": REQUIREMENT}) + "\n")
        seconds = time.monotonic() - started
        note("pyflink", f"installed in {seconds:.0f} s", progress=progress)
    return lib


def use(*, progress: bool = True) -> Path:
    """Make PyFlink importable here (after this environment's packages) and first for
    PyFlink's workers; returns its folder."""
    lib = installed(progress=progress)
    if str(lib) not in sys.path:
        sys.path.append(str(lib))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(lib) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(lib), *paths])
    return lib
