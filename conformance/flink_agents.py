"""The ``flink-agents:<backend>`` targets: the real Apache Flink Agents runtime under test.

``flink-agents:kafka`` and ``flink-agents:fluss`` run the adapter of
``conformance/flink-agents/`` (a small Maven project): a Java program that speaks the
process protocol and drives upstream's ``ActionExecutionOperator`` inside Flink's keyed
operator test harness, with upstream's own Kafka or Fluss action state store pointed at the
server that ``replay-contract services up kafka|fluss`` started. A suffix picks how a
restore happens: ``:same-jvm`` (the default: a new harness in the same JVM, from the last
checkpoint) or ``:fresh-jvm`` (a new JVM per incarnation, the checkpoint passed as a file,
as after a TaskManager failover).

The first use builds upstream and the adapter in the cache folder (outside the clone) and
later uses take the build from there. Where upstream comes from:

``REPLAY_CONTRACT_FLINK_AGENTS_SOURCE``
    a source checkout of apache/flink-agents (copied into the cache, never changed in
    place); by default ``../shared/upstream/flink-agents`` beside the repository.
``REPLAY_CONTRACT_FLINK_AGENTS_VERSION``
    a released version to take from Maven instead of building a source checkout.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from replay_contract.services import common

NAME = "flink-agents"
SOURCE_ENV = "REPLAY_CONTRACT_FLINK_AGENTS_SOURCE"
VERSION_ENV = "REPLAY_CONTRACT_FLINK_AGENTS_VERSION"
BACKENDS = ("kafka", "fluss")
RESTORES = ("same-jvm", "fresh-jvm")
ADAPTER = Path(__file__).resolve().parent / "flink-agents"
MAIN_CLASS = "io.replaycontract.flinkagents.Main"
#: Upstream modules the adapter needs, built from the source checkout (``plan`` needs
#: ``integrations/mcp`` for its tests, which Maven resolves even when they are skipped),
#: and the parent poms they name.
MODULES = ("api", "integrations/mcp", "plan", "runtime")
PARENTS = ("pom.xml", "integrations/pom.xml")
#: Overrides this machine's registry needs (see the snapshot's README): cel 0.12.0 and
#: fluss-client 0.9.0-incubating are not served; with cel 0.11.1 one import moved.
OVERRIDES = {"cel.version": "0.11.1", "fluss.version": "0.9.1-incubating"}
CEL_IMPORT = ("import dev.cel.common.Operator;", "import dev.cel.parser.Operator;")
SKIPS = (
    "-Dmaven.test.skip=true",
    "-Dspotless.check.skip=true",
    "-Dspotless.skip=true",
    "-Drat.skip=true",
    "-Dcheckstyle.skip=true",
    "-Denforcer.skip=true",
)
#: What Flink itself opens on JDK 17 for its serializers.
JVM_OPTIONS = (
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.time=ALL-UNNAMED",
    "-XX:+UseSerialGC",
    "-Xss2m",
)


class FlinkAgentsError(common.ServiceError):
    """The adapter cannot be built or started; the message is one line."""


def default_source() -> Path:
    """The upstream snapshot beside a checkout of this repository."""
    return ADAPTER.parents[2] / "shared" / "upstream" / "flink-agents"


def parse_target(target: str) -> tuple[str, str]:
    """``flink-agents:<backend>[:<restore>]`` as (backend, restore)."""
    parts = target.split(":")
    if len(parts) not in (2, 3) or parts[0] != NAME or parts[1] not in BACKENDS:
        raise FlinkAgentsError(
            f"target {target}: expected flink-agents:kafka or flink-agents:fluss, "
            "optionally followed by :same-jvm or :fresh-jvm"
        )
    restore = parts[2] if len(parts) == 3 else "same-jvm"
    if restore not in RESTORES:
        raise FlinkAgentsError(f"target {target}: restore is same-jvm or fresh-jvm, not {restore}")
    return parts[1], restore


# --- the build ----------------------------------------------------------------------------


def _files(root: Path, names: Iterable[str]) -> list[Path]:
    found: list[Path] = []
    for name in names:
        path = root / name
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(
                p for p in sorted(path.rglob("*")) if p.is_file() and "target" not in p.parts
            )
    return found


def _digest(root: Path, files: Iterable[Path]) -> str:
    sha = hashlib.sha256()
    for path in files:
        sha.update(str(path.relative_to(root)).encode())
        sha.update(path.read_bytes())
    return sha.hexdigest()


def _label(source: Path) -> str:
    """ "Apache Flink Agents 0.4-SNAPSHOT (8ad3a32b)": the version and, where known, commit."""
    pom = (source / "pom.xml").read_text(encoding="utf-8")
    match = re.search(
        r"<artifactId>flink-agents</artifactId>.*?<version>([^<]+)</version>", pom, re.S
    )
    version = match.group(1) if match else "unknown version"
    commit = ""
    if (source / ".git").exists():
        result = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "--short=8", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        )
        commit = result.stdout.strip()
    else:
        readme = source.parent / "README.md"
        if readme.is_file():
            found = re.search(r"commit ([0-9a-f]{7,40})", readme.read_text(encoding="utf-8"))
            commit = found.group(1)[:8] if found else ""
    return f"Apache Flink Agents {version}" + (f" ({commit})" if commit else "")


def _aggregator(modules: Iterable[str]) -> str:
    listed = "".join(f"    <module>{m}</module>\n" for m in modules)
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <!-- Generated by replay-contract: upstream's modules and the adapter, one build. -->\n"
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>io.replaycontract</groupId>\n"
        "  <artifactId>flink-agents-under-test</artifactId>\n"
        "  <version>1</version>\n"
        "  <packaging>pom</packaging>\n"
        f"  <modules>\n{listed}  </modules>\n"
        "</project>\n"
    )


def upstream() -> tuple[str, Path | None]:
    """Where upstream comes from: ``(version, None)`` for a released version, else
    ``("", source folder)``; a one-line error when the source folder is not one."""
    version = os.environ.get(VERSION_ENV, "").strip()
    if version:
        if not re.fullmatch(r"[\w.\-]+", version):
            raise FlinkAgentsError(f"{VERSION_ENV}={version!r} is not a Maven version")
        return version, None
    configured = os.environ.get(SOURCE_ENV, "").strip()
    source = Path(configured).expanduser() if configured else default_source()
    if not all((source / p).is_file() for p in PARENTS) or not all(
        (source / m).is_dir() for m in MODULES
    ):
        how = f"{SOURCE_ENV}={configured}" if configured else f"the default {source}"
        raise FlinkAgentsError(
            f"no Flink Agents source at {how} (a checkout of apache/flink-agents with "
            f"{', '.join((*PARENTS, *MODULES))}); set {SOURCE_ENV} to one, or "
            f"{VERSION_ENV} to a released version"
        )
    return "", source


def build(*, progress: bool = True) -> dict[str, Any]:
    """Build upstream (or take a released version) and the adapter, once; return what
    starting the adapter needs: ``classpath``, ``label``, ``java``."""
    java = common.find_java(17)
    if shutil.which("mvn") is None:
        raise FlinkAgentsError("mvn not found on PATH; install Apache Maven 3.6+")
    adapter_files = _files(ADAPTER, ["pom.xml", "src"])
    if not adapter_files:
        raise FlinkAgentsError(f"the adapter's sources are missing ({ADAPTER})")
    version, source = upstream()
    if source is None:
        label = f"Apache Flink Agents {version}"
        identity = f"version {version}"
    else:
        label = _label(source)
        identity = _digest(source, _files(source, [*PARENTS, *MODULES]))
    key = hashlib.sha256(
        "\n".join(
            [identity, _digest(ADAPTER, adapter_files), json.dumps(OVERRIDES), java.version]
        ).encode()
    ).hexdigest()[:16]
    folder = common.cache_dir() / NAME / key
    ready = folder / "ready.json"
    with common.service_lock(folder):
        if ready.is_file():
            common.note(NAME, f"adapter built before ({folder})", progress=progress)
            return {**json.loads(ready.read_text()), "java": java.executable}
        started = time.monotonic()
        for stale in ("upstream", "adapter", "pom.xml"):
            target = folder / stale
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
        modules = ["adapter"]
        if source is not None:
            common.note(NAME, f"copying {label} from {source} into the cache", progress=progress)
            copy = folder / "upstream"
            for parent in PARENTS:
                (copy / parent).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source / parent, copy / parent)
            for module in MODULES:
                shutil.copytree(
                    source / module, copy / module, ignore=shutil.ignore_patterns("target")
                )
            for path in [copy, *copy.rglob("*")]:
                path.chmod(path.stat().st_mode | 0o200)
            for java_file in copy.rglob("ConditionExpressionCompiler.java"):
                text = java_file.read_text(encoding="utf-8")
                java_file.write_text(text.replace(*CEL_IMPORT), encoding="utf-8")
            modules = [f"upstream/{m}" for m in MODULES] + modules
        shutil.copytree(ADAPTER, folder / "adapter", ignore=shutil.ignore_patterns("target"))
        (folder / "pom.xml").write_text(_aggregator(modules))
        properties = [f"-D{k}={v}" for k, v in OVERRIDES.items()]
        if version:
            properties.append(f"-Dflink-agents.version={version}")
        command = ["mvn", "-B", "package", *SKIPS, *properties]
        common.note(NAME, f"building {label} and the adapter with Maven ...", progress=progress)
        _run_maven(command, folder, progress=progress)
        jars = sorted(
            (folder / "adapter" / "target").glob("replay-contract-flink-agents-adapter-*.jar")
        )
        classpath_file = folder / "adapter" / "target" / "classpath.txt"
        if not jars or not classpath_file.is_file():
            raise FlinkAgentsError(f"the Maven build left no adapter jar; see {folder / 'mvn.log'}")
        classpath = os.pathsep.join([str(jars[0]), classpath_file.read_text().strip()])
        seconds = time.monotonic() - started
        built = {"classpath": classpath, "label": label, "seconds": round(seconds, 1)}
        ready.write_text(json.dumps(built, indent=2))
        common.note(NAME, f"built in {seconds:.0f} s", progress=progress)
        return {**built, "java": java.executable}


def _run_maven(command: list[str], folder: Path, *, progress: bool) -> None:
    log = folder / "mvn.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert process.stdout is not None
        for line in process.stdout:
            output.write(line)
            building = re.match(r"\[INFO\] Building (.+?) \S+\s+\[(\d+/\d+)\]", line)
            if building:
                common.note(NAME, f"  {building.group(2)} {building.group(1)}", progress=progress)
        status = process.wait()
    if status != 0:
        errors = [
            line[8:].strip()
            for line in log.read_text().splitlines()
            if line.startswith("[ERROR]") and line[8:].strip() not in ("", "COMPILATION ERROR :")
        ]
        first = errors[0][:240] if errors else f"exit status {status}"
        raise FlinkAgentsError(f"the Maven build failed: {first} (log: {log})")


# --- the target ---------------------------------------------------------------------------


def bootstrap(backend: str) -> str:
    """The address of the reachable server the store of ``backend`` is to use."""
    from replay_contract.runtime import fluss, kafka

    module: Any = kafka if backend == "kafka" else fluss
    address: str = module.bootstrap_address()
    module.probe(address)
    return address


def command(target: str, *, progress: bool = True) -> list[str]:
    """The adapter's command line for ``target`` (building it first when needed)."""
    backend, restore = parse_target(target)
    upstream()
    address = bootstrap(backend)
    built = build(progress=progress)
    work = common.cache_dir() / NAME / "runs"
    work.mkdir(parents=True, exist_ok=True)
    return [
        built["java"],
        *JVM_OPTIONS,
        "-cp",
        built["classpath"],
        MAIN_CLASS,
        "--backend",
        backend,
        "--bootstrap",
        address,
        "--restore",
        restore,
        "--work",
        str(work),
        "--label",
        built["label"],
    ]


def implementation(
    backend: str, timeout: float | None = None, log_folder: Path | None = None
) -> Any:
    """The ``flink-agents:<backend>[:<restore>]`` targets (the entry point's function):
    the adapter as a process implementation."""
    import shlex

    from .process import TIMEOUT, ProcessImplementation

    command_line = shlex.join(command(f"{NAME}:{backend}"))
    return ProcessImplementation(command_line, timeout or TIMEOUT, log_folder)
