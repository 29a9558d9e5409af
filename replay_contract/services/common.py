"""What every JVM service launcher needs: folders, Java, a Maven classpath, processes, ports.

A service keeps two folders. The *cache* (:func:`replay_contract.cache.cache_dir`,
``$REPLAY_CONTRACT_CACHE``, by default ``~/.cache/replay-contract``) holds the resolved
jars, outside the clone, so a fresh clone does not download again; Maven's own local
repository (``~/.m2``) sits below it as the download cache. The *state* folder
(``$REPLAY_CONTRACT_STATE/<name>``, by default ``.replay-contract/services/<name>`` under
the current directory) holds the running service's configuration, data, log and
``state.json``, which records the processes that ``up`` started so that ``down`` stops
exactly those.

Each failure raises :class:`ServiceError` with a one-line message; the command line prints
it and exits with status 2, or 3 for a server that died or did not answer while it
started (:class:`StartError`, an infrastructure error).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replay_contract.cache import cache_dir as cache_dir
from replay_contract.errors import ServiceError as ServiceError
from replay_contract.errors import StartError as StartError
from replay_contract.model.files import read_json

#: Pinned so that resolution does not depend on the Maven version's default plugin.
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
LOOPBACK = "127.0.0.1"
STATE_FILE = "state.json"
_COORDINATE = re.compile(r"^[\w.\-]+:[\w.\-]+:[\w.\-]+$")


def note(name: str, message: str, *, progress: bool = True) -> None:
    """Print a progress line ``<name>: <message>`` on stderr."""
    if progress:
        print(f"{name}: {message}", file=sys.stderr, flush=True)


# --- folders -----------------------------------------------------------------------------


def state_dir(name: str) -> Path:
    """The folder of the service ``name``: ``$REPLAY_CONTRACT_STATE/<name>``."""
    configured = os.environ.get("REPLAY_CONTRACT_STATE")
    root = Path(configured) if configured else Path(".replay-contract") / "services"
    return (root.expanduser() / name).absolute()


@contextlib.contextmanager
def service_lock(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``directory`` so two ``up`` calls never race."""
    lock = directory / ".lock"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle = lock.open("a")
    except OSError as exc:
        raise ServiceError(f"{lock}: cannot create the lock ({exc.strerror or exc})") from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_state(directory: Path) -> dict[str, Any] | None:
    """The recorded state of the service in ``directory``, or None if none is recorded;
    a :class:`ServiceError` naming the file when it is unreadable or not of the shape
    :func:`write_state` records (see :func:`check_state`)."""
    path = directory / STATE_FILE
    try:
        path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ServiceError(f"{path}: cannot read ({exc.strerror or exc})") from None
    data = read_json(path, ServiceError)
    problem = check_state(data)
    if problem is not None:
        raise ServiceError(f"{path}: not a service state: {problem}")
    state: dict[str, Any] = data
    return state


def check_state(data: Any) -> str | None:
    """What is wrong with a recorded state, if anything. A state is an object with
    ``bootstrap`` (``"HOST:PORT"``), ``ports`` (an object of port numbers) and
    ``processes`` (a list of :meth:`Process.to_json` objects: ``role``, ``pid`` above 1,
    ``started`` a number or null)."""
    if not isinstance(data, dict):
        return f"expected a JSON object, got {_shown(data)}"
    missing = [name for name in ("bootstrap", "ports", "processes") if name not in data]
    if missing:
        return f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing"
    bootstrap = data["bootstrap"]
    if not isinstance(bootstrap, str) or not _is_port(_port_of(bootstrap)):
        return f'bootstrap: expected "HOST:PORT", got {_shown(bootstrap)}'
    ports = data["ports"]
    if not isinstance(ports, dict):
        return f"ports: expected an object of port numbers, got {_shown(ports)}"
    for role, port in ports.items():
        if not _is_port(port):
            return f"ports.{role}: expected a port number, got {_shown(port)}"
    processes = data["processes"]
    if not isinstance(processes, list):
        return f"processes: expected a list, got {_shown(processes)}"
    for i, process in enumerate(processes):
        if not isinstance(process, dict):
            return f"processes[{i}]: expected an object, got {_shown(process)}"
        role, pid = process.get("role", _MISSING), process.get("pid", _MISSING)
        started = process.get("started")
        if not isinstance(role, str):
            return f"processes[{i}].role: expected a string, got {_shown(role)}"
        if not _is_int(pid) or pid <= 1:
            return f"processes[{i}].pid: expected a process id above 1, got {_shown(pid)}"
        if started is not None and not _is_int(started):
            return f"processes[{i}].started: expected a number or null, got {_shown(started)}"
    return None


_MISSING = object()


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_port(value: Any) -> bool:
    return _is_int(value) and 0 < value < 65536


def _port_of(address: str) -> int | None:
    host, _, port = address.rpartition(":")
    return int(port) if host and port.isascii() and port.isdigit() else None


def _shown(value: Any) -> str:
    """``value`` as JSON, cut short for a one-line message."""
    text = "nothing" if value is _MISSING else json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def write_state(directory: Path, state: Mapping[str, Any]) -> None:
    """Record ``state`` atomically in ``directory/state.json``."""
    temporary = directory / f".{STATE_FILE}.tmp"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        temporary.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")
        os.replace(temporary, directory / STATE_FILE)
    except OSError as exc:
        raise ServiceError(
            f"{directory / STATE_FILE}: cannot write ({exc.strerror or exc})"
        ) from None


# --- Java and Maven ----------------------------------------------------------------------


@dataclass(frozen=True)
class Java:
    """A Java runtime: the ``java`` executable and its feature version (8, 11, 17, ...)."""

    executable: str
    major: int
    version: str


def find_java(minimum: int = 17) -> Java:
    """The ``java`` of ``$JAVA_HOME``, else of ``PATH``; refuse one older than ``minimum``."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        executable = str(Path(java_home) / "bin" / "java")
        if not os.access(executable, os.X_OK):
            raise ServiceError(f"JAVA_HOME={java_home} has no bin/java; install JDK {minimum}+")
    else:
        found = shutil.which("java")
        if found is None:
            raise ServiceError(f"java not found on PATH; install JDK {minimum}+ or set JAVA_HOME")
        executable = found
    try:
        result = subprocess.run(
            [executable, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServiceError(f"cannot run {executable} -version: {exc}") from exc
    match = re.search(r'version "([^"]+)"', result.stderr + result.stdout)
    if result.returncode != 0 or match is None:
        raise ServiceError(f"{executable} -version failed; install JDK {minimum}+")
    version = match.group(1)
    parts = version.split(".")
    major = int(parts[1] if parts[0] == "1" else re.sub(r"\D.*", "", parts[0]) or 0)
    if major < minimum:
        raise ServiceError(f"{executable} is Java {version}; Java {minimum} or newer is needed")
    return Java(executable=executable, major=major, version=version)


def _pom(coordinates: Sequence[str]) -> str:
    dependencies = "".join(
        "    <dependency><groupId>{}</groupId><artifactId>{}</artifactId>"
        "<version>{}</version></dependency>\n".format(*coordinate.split(":"))
        for coordinate in coordinates
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <!-- Generated by replay-contract to resolve a service classpath. -->\n"
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>local.replay-contract</groupId>\n"
        "  <artifactId>service-classpath</artifactId>\n"
        "  <version>0</version>\n"
        "  <packaging>pom</packaging>\n"
        f"  <dependencies>\n{dependencies}  </dependencies>\n"
        "</project>\n"
    )


def resolve_classpath(name: str, coordinates: Sequence[str], *, progress: bool = True) -> Path:
    """A folder holding the jars of ``coordinates`` (``group:artifact:version``) and of
    their runtime dependencies, resolved by Maven once and then taken from the cache.

    The folder is ``<cache>/classpath/<name>-<key>/lib``, where ``key`` is a hash of the
    coordinates; ``resolved.json`` beside it marks a complete resolution.
    """
    for coordinate in coordinates:
        if not _COORDINATE.match(coordinate):
            raise ServiceError(f"not a group:artifact:version Maven coordinate: {coordinate!r}")
    key = hashlib.sha256("\n".join(sorted(coordinates)).encode()).hexdigest()[:16]
    folder = cache_dir() / "classpath" / f"{name}-{key}"
    lib, marker = folder / "lib", folder / "resolved.json"
    with service_lock(folder):
        if marker.exists() and lib.is_dir():
            note(name, f"classpath resolved from cache ({lib})", progress=progress)
            return lib
        mvn = shutil.which("mvn")
        if mvn is None:
            raise ServiceError("mvn not found on PATH; install Apache Maven 3.6+")
        note(
            name, f"resolving {len(coordinates)} Maven artifacts into {lib} ...", progress=progress
        )
        started = time.monotonic()
        (folder / "pom.xml").write_text(_pom(coordinates))
        staging = folder / "lib.partial"
        shutil.rmtree(staging, ignore_errors=True)
        log = folder / "mvn.log"
        goal = f"{DEPENDENCY_PLUGIN}:copy-dependencies"
        command = [mvn, "-B", "-q", goal, f"-DoutputDirectory={staging}", "-DincludeScope=runtime"]
        with log.open("w") as output:
            result = subprocess.run(
                command, cwd=folder, stdout=output, stderr=subprocess.STDOUT, check=False
            )
        if result.returncode != 0:
            raise ServiceError(f"Maven could not resolve the {name} classpath; see {log}")
        shutil.rmtree(lib, ignore_errors=True)
        staging.rename(lib)
        jars = sorted(path.name for path in lib.glob("*.jar"))
        marker.write_text(json.dumps({"coordinates": list(coordinates), "jars": jars}, indent=2))
        seconds = time.monotonic() - started
        note(name, f"classpath ready: {len(jars)} jars in {seconds:.1f} s", progress=progress)
        return lib


def classpath_argument(lib: Path) -> str:
    """The ``-cp`` value for every jar in ``lib``."""
    return str(lib / "*")


# --- ports -------------------------------------------------------------------------------


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports that nothing listens on right now."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOOPBACK, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def port_free(port: int) -> bool:
    """Whether a server could listen on ``port`` of the loopback address now (with
    ``SO_REUSEADDR``, as JVM servers bind, so connections left in TIME_WAIT do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def port_answers(port: int, host: str = LOOPBACK, timeout: float = 0.5) -> bool:
    """Whether something accepts a TCP connection on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


# --- processes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Process:
    """A process that ``up`` started: its role in the service, pid and start time.

    ``started`` is the kernel's start time of the pid (clock ticks since boot, None where
    ``/proc`` is missing); it tells a live process apart from a later one reusing the pid.
    """

    role: str
    pid: int
    started: int | None

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "pid": self.pid, "started": self.started}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Process:
        return cls(role=str(data["role"]), pid=int(data["pid"]), started=data.get("started"))


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """The state letter and start time of ``pid`` from ``/proc``, or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[19])


def is_alive(process: Process) -> bool:
    """Whether ``process`` still runs (a zombie or a reused pid does not count)."""
    stat = _proc_stat(process.pid)
    if stat is None:
        if Path("/proc/self/stat").exists():
            return False
        try:
            os.kill(process.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    state, started = stat
    if process.started is not None and started != process.started:
        return False
    if state in ("Z", "X"):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(process.pid, os.WNOHANG)  # reap our own child
        return False
    return True


def start_process(
    role: str,
    argv: Sequence[str],
    *,
    cwd: Path,
    log: Path,
    env: Mapping[str, str] | None = None,
) -> Process:
    """Start ``argv`` detached, in its own process group, appending its output to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as output:
        output.write(f"==== {time.strftime('%Y-%m-%d %H:%M:%S')} starting {role}\n")
        output.flush()
        try:
            child = subprocess.Popen(
                list(argv),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **env} if env else None,
            )
        except OSError as exc:
            raise ServiceError(f"cannot start {role}: {exc}") from exc
    stat = _proc_stat(child.pid)
    return Process(role=role, pid=child.pid, started=stat[1] if stat else None)


def _signal(process: Process, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        if os.getpgid(process.pid) == process.pid:
            os.killpg(process.pid, signum)  # the whole group it leads
        else:
            os.kill(process.pid, signum)


def _wait_gone(process: Process, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while is_alive(process):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def stop_processes(processes: Sequence[Process], *, timeout: float = 30.0) -> list[Process]:
    """Stop each of ``processes`` that still runs, in the order given: SIGTERM, wait up to
    ``timeout`` seconds, then SIGKILL. Returns those that were running."""
    stopped = []
    for process in processes:
        if not is_alive(process):
            continue
        stopped.append(process)
        _signal(process, signal.SIGTERM)
        if not _wait_gone(process, timeout):
            _signal(process, signal.SIGKILL)
            if not _wait_gone(process, 10.0):
                raise ServiceError(f"{process.role} (pid {process.pid}) survived SIGKILL")
    return stopped


def wait_for_port(
    port: int, *, what: str, process: Process, log: Path, timeout: float = 60.0
) -> None:
    """Wait until ``port`` answers on loopback while ``process`` runs."""
    deadline = time.monotonic() + timeout
    while not port_answers(port):
        if not is_alive(process):
            raise StartError(f"{what} exited during start-up; see {log}")
        if time.monotonic() >= deadline:
            raise StartError(f"{what} did not open port {port} within {timeout:.0f} s; see {log}")
        time.sleep(0.1)


def rss_mb(process: Process) -> float | None:
    """The resident memory of ``process`` in MiB, where ``/proc`` tells it."""
    try:
        status = Path(f"/proc/{process.pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    return round(int(match.group(1)) / 1024, 1) if match else None
