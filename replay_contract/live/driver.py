"""The live Flink job as a conformance target: :class:`LiveFlink` (``flink:kafka``,
``flink:fluss``), driven step by step by the suite like any other implementation.

:meth:`LiveFlink.open` starts the job on a local MiniCluster. Then, for each step:

- ``deliver``: a record its channel has not delivered before is written to the channel's
  own partition of the channels topic (read by its own source subtask); a record
  delivered again after a restore is the one the restarted source reads again. The
  driver names it in the attempt's release file, the gate lets it through, and the
  driver waits until the agent operator has handled it;
- ``checkpoint``: triggered through the MiniCluster's REST API on 127.0.0.1, waited for;
- ``crash``: an injected task failure (a marker the gates of the running attempt fail
  on); ``restore``: Flink's own restart from its latest completed checkpoint, waited for;
- ``end``: each key's end of input.

The events the job appended to the events file (outside the job) are replayed into the
suite's environment: the suite makes each tool call itself, with the job's input and
read values, and records every decision. Anything the target started (the job, the
topics it made) is stopped or removed by :meth:`LiveFlink.close`; a JVM or job that does
not come up is one :class:`LiveError`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from replay_contract.conformance.events import event_from_json
from replay_contract.conformance.interface import Capabilities, Environment
from replay_contract.errors import TargetUnavailable
from replay_contract.exits import InfrastructureError
from replay_contract.model.agent import Agent
from replay_contract.model.contracts import CONTRACTS, Contract
from replay_contract.model.scenario import Scenario
from replay_contract.model.topology import Key, Record, Topology, key_text
from replay_contract.runtime.state import record_json, record_of
from replay_contract.services.common import free_ports, resolve_classpath

from . import environment
from .plan import Inexpressible, plan

#: The Kafka connector the source uses (the newest built for Flink 1.19/1.20 on Central).
KAFKA_CONNECTOR = "org.apache.flink:flink-sql-connector-kafka:3.2.0-1.19"
#: Seconds to wait for one turn, a checkpoint, or the job to come up.
STEP_TIMEOUT = 180.0


class LiveError(InfrastructureError, TargetUnavailable):
    """The live job could not run (no JVM, a job that did not start or failed)."""


def _rest(port: int, path: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=data,
        method="POST" if body is not None else "GET",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"null")


def _wait(what: str, done: Callable[[], bool], failed: Callable[[], str | None]) -> None:
    deadline = time.monotonic() + STEP_TIMEOUT
    while not done():
        reason = failed()
        if reason:
            raise LiveError(f"live job: {reason} while waiting for {what}")
        if time.monotonic() > deadline:
            raise LiveError(f"live job: {what} did not happen within {STEP_TIMEOUT:.0f} s")
        time.sleep(0.01)


class _Job:
    """One running job: its REST port and id."""

    def __init__(self, port: int, job_id: str, client: Any) -> None:
        self.port, self.id, self.client = port, job_id, client

    def status(self) -> dict[str, Any]:
        return dict(_rest(self.port, f"/jobs/{self.id}"))

    def failed(self) -> str | None:
        try:
            state = self.status()["state"]
        except OSError as exc:
            return f"the MiniCluster's REST API does not answer ({exc})"
        return f"the job is {state}" if state in ("FAILED", "CANCELED", "FINISHED") else None

    def running(self) -> bool:
        try:
            status = self.status()
        except OSError:
            return False
        return status["state"] == "RUNNING" and all(
            v["status"] == "RUNNING" for v in status["vertices"]
        )

    def checkpoint(self) -> int:
        _wait("all tasks running", self.running, self.failed)
        trigger = _rest(self.port, f"/jobs/{self.id}/checkpoints", {})["request-id"]
        result: dict[str, Any] = {}

        def completed() -> bool:
            answer = _rest(self.port, f"/jobs/{self.id}/checkpoints/{trigger}")
            result.update(answer)
            return bool(answer["status"]["id"] == "COMPLETED")

        _wait("a checkpoint", completed, self.failed)
        operation = result.get("operation") or {}
        if "failure-cause" in operation:
            raise LiveError(f"live job: checkpoint failed: {operation['failure-cause']}")
        return int(operation["checkpointId"])

    def cancel(self) -> None:
        with contextlib.suppress(Exception):  # already gone: nothing left to stop
            self.client.cancel().result()

    def root_cause(self) -> str:
        """The last line naming an error in the job's latest exception."""
        try:
            history = _rest(self.port, f"/jobs/{self.id}/exceptions")
        except OSError:
            return "unknown"
        text = str(history.get("root-exception") or "")
        for entries in (history.get("exceptionHistory") or {}).get("entries", [])[:1]:
            text = str(entries.get("stacktrace") or text)
        named = [
            line.strip() for line in text.splitlines() if "Error" in line or "Exception:" in line
        ]
        return named[-1] if named else (text.splitlines() or ["unknown"])[0]

    def restarts(self) -> int:
        try:
            metrics = _rest(self.port, f"/jobs/{self.id}/metrics?get=numRestarts")
        except OSError:
            return 0
        return int(metrics[0]["value"]) if metrics else 0


def _environment(folder: Path, port: int, jar: Path, checkpoint: str | None = None) -> Any:
    os.environ.setdefault("FLINK_LOG_DIR", str(folder / "log"))
    # The Python functions run in worker processes of their own (``python.executable``),
    # as on a cluster, not in threads of this process.
    os.environ["_python_worker_execution_mode"] = "process"  # noqa: SIM112 (PyFlink's name)
    environment.use()
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment

    try:
        conf = Configuration()  # the first use of the JVM starts it
    except Exception as exc:
        raise LiveError(_did_not_start("the Flink JVM", exc)) from None
    settings = {
        "rest.port": str(port),
        "rest.address": "127.0.0.1",
        "rest.bind-address": "127.0.0.1",
        "python.executable": sys.executable,
        "python.client.executable": sys.executable,
        "python.fn-execution.bundle.size": "1",
        "execution.buffer-timeout": "0 ms",
        # checkpoints only when the driver asks for them (REST), never on a timer
        "execution.checkpointing.interval": "1 h",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "1000",
        "restart-strategy.fixed-delay.delay": "200 ms",
        "jobmanager.execution.failover-strategy": "full",
        "state.checkpoints.dir": (folder / "checkpoints").as_uri(),
        # kept when the job is cancelled, for a restore with another parallelism
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        "pipeline.jars": jar.as_uri(),
        # the Kafka client's threads outlive a cancelled job's class loader for a moment
        "classloader.check-leaked-classloader": "false",
    }
    if checkpoint is not None:
        settings["execution.state-recovery.path"] = checkpoint
        settings["execution.state-recovery.ignore-unclaimed-state"] = "true"
    for name, value in settings.items():
        conf.set_string(name, value)
    try:
        return StreamExecutionEnvironment.get_execution_environment(conf)
    except Exception as exc:
        raise LiveError(_did_not_start("the Flink JVM", exc)) from None


def _did_not_start(what: str, exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"live: {what} did not come up ({type(exc).__name__}: {lines[0] if lines else ''})"


def connector_jar() -> Path:
    lib = resolve_classpath("flink-kafka-connector", [KAFKA_CONNECTOR], progress=False)
    jars = sorted(lib.glob("flink-sql-connector-kafka-*.jar"))
    if not jars:
        raise LiveError(f"live: no Kafka connector jar in {lib}")
    return jars[0]


def _store_namespace(store: str) -> tuple[str, str, Callable[[], None]]:
    """(bootstrap, namespace name, drop) of a new store namespace on ``store``."""
    if store == "kafka":
        from replay_contract.runtime import kafka

        k = kafka.backend()
        ns = k.namespace()
        return k.bootstrap, ns.topic, ns.drop
    if store == "fluss":
        from replay_contract.runtime import fluss

        f = fluss.backend()
        fns = f.namespace()
        return f.bootstrap, fns.database, fns.drop
    raise LiveError(f"live: unknown store {store!r} (known: kafka, fluss)")


def _create_channels(channels: Any, topic: str, partitions: int) -> None:
    """The channels topic: one partition per channel, records kept in order (no keys)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.cimpl import NewTopic

    new = NewTopic(topic, num_partitions=partitions, replication_factor=1)
    try:
        channels.admin.create_topics([new], operation_timeout=30)[topic].result(30)
    except KafkaException as exc:
        raise LiveError(f"live: cannot create the channels topic {topic}: {exc}") from None


def _submit(
    env: Any,
    config: dict[str, Any],
    bootstrap: str,
    topic: str,
    channels: int,
    parallelism: int,
    port: int,
) -> _Job:
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.common.serialization import SimpleStringSchema
    from pyflink.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaSource

    from .job import AgentOperator, Gate, channel_of, key_of

    n = channels
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(topic)
        .set_group_id(topic)
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "channels")
    stream = stream.uid("channels").set_parallelism(n)
    gated = stream.key_by(channel_of, key_type=Types.STRING()).process(
        Gate(config), output_type=Types.STRING()
    )
    gated = gated.name("gate").uid("gate").set_parallelism(n)
    agent = gated.key_by(key_of, key_type=Types.STRING()).process(
        AgentOperator(config), output_type=Types.STRING()
    )
    agent.name("agent").uid("agent").set_parallelism(parallelism).print()
    try:
        client = env.execute_async("replay-contract live")
    except Exception as exc:
        raise LiveError(_did_not_start("the job", exc)) from None
    job = _Job(port, str(client.get_job_id()), client)
    Path(config["run"], "job.json").write_text(json.dumps({"rest": port, "job": job.id}))
    _wait("the job to run", job.running, job.failed)
    return job


def expresses(scenario: Scenario, contract: Contract) -> str | None:
    """Why a live job cannot run ``scenario`` under ``contract`` (:func:`.plan.plan`)."""
    try:
        plan(scenario, contract)
    except Inexpressible as exc:
        return f"cannot run live: {exc}"
    return None


class LiveFlink:
    """The live Flink job as an implementation of the suite (see the module docstring)."""

    def __init__(
        self,
        store: str = "kafka",
        *,
        parallelism: int = 2,
        folder: Path | None = None,
        rescale: tuple[int, ...] = (),
    ) -> None:
        if store not in ("kafka", "fluss"):
            raise LiveError(f"live: unknown store {store!r} (known: kafka, fluss)")
        self.store, self.parallelism = store, parallelism
        #: The agent operator's parallelism after each restore (in order): such a restore
        #: is a new job from the latest retained checkpoint, not a restart in place.
        self.rescale = rescale
        self.base = Path(folder or Path.cwd() / ".replay-contract" / "live").absolute()
        self.capabilities = Capabilities(
            contracts=tuple(CONTRACTS),
            crash_points=False,
            non_replayable=True,
            rescaling=False,
            expresses=expresses,
        )
        self.folder: Path | None = None
        #: Each step's kind, attempt and seconds (for the benchmark).
        self.timings: list[tuple[str, int, float]] = []
        self._job: _Job | None = None
        self._cleanups: list[Callable[[], None]] = []

    # -- the Implementation protocol ------------------------------------------------------

    def open(self, agent: Agent, topology: Topology, contract: Contract, env: Environment) -> None:
        from confluent_kafka import Producer

        from replay_contract.runtime import kafka
        from replay_contract.runtime.kafka_store import KafkaBackend

        self._env, self._topology = env, topology
        self._attempt = self._turn = self._checkpoints = self._position = 0
        self._restores = self._base = 0
        self._latest: str | None = None
        self._written = {c.name: 0 for c in topology.channels}
        self._partition = {c.name: i for i, c in enumerate(topology.channels)}
        self.base.mkdir(parents=True, exist_ok=True)
        self.folder = run_dir = Path(tempfile.mkdtemp(prefix=f"{contract.name}-", dir=self.base))
        (run_dir / "events.jsonl").touch()
        jar = connector_jar()
        bootstrap = kafka.bootstrap_address()
        kafka.probe(bootstrap)
        channels = KafkaBackend(bootstrap)
        self._topic = topic = f"replay-contract-live-{uuid.uuid4().hex[:12]}"
        _create_channels(channels, topic, len(topology.channels))
        self._cleanups.append(lambda: channels.delete_topic(topic))
        store_bootstrap, namespace, drop = _store_namespace(self.store)
        self._cleanups.append(drop)
        scenario = Scenario("live", agent, topology, ())
        self._config = {
            "attempt_base": 0,
            "run": str(run_dir),
            "scenario": scenario.to_json(),
            "contract": contract.name
            if CONTRACTS.get(contract.name) == contract
            else contract.to_json(),
            "store": self.store,
            "bootstrap": store_bootstrap,
            "namespace": namespace,
        }
        self._jar, self._bootstrap = jar, bootstrap
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        self._start(self.parallelism, None)

    def _start(self, parallelism: int, checkpoint: str | None) -> None:
        (port,) = free_ports(1)
        flink = _environment(self._dir(), port, self._jar, checkpoint)
        channels = len(self._topology.channels)
        self._job = _submit(
            flink, self._config, self._bootstrap, self._topic, channels, parallelism, port
        )

    def deliver(self, record: Record) -> None:
        started = time.monotonic()
        if record.offset >= self._written[record.channel]:
            self._send(
                self._partition[record.channel],
                {
                    "kind": "record",
                    "id": record.identity,
                    "channel": record.channel,
                    "offset": record.offset,
                    "k": key_text(record.key),
                },
            )
            self._written[record.channel] = record.offset + 1
        self._release({"record": record_json(record)}, f"the delivery of {record.identity}")
        self.timings.append(("deliver", self._attempt, time.monotonic() - started))

    def checkpoint(self) -> int:
        job = self._running_job()
        number = job.checkpoint()
        self._latest = (self._dir() / "checkpoints" / job.id / f"chk-{number}").as_uri()
        self._checkpoints += 1
        return self._checkpoints

    def crash(self) -> None:
        if self._restores < len(self.rescale):
            # the whole job goes (its checkpoints stay); the restore starts a new one
            job, self._job = self._running_job(), None
            job.cancel()
            self._attempt += 1
            self._turn = 0
            return
        from .job import crash_file

        crash_file(self._dir(), self._attempt).touch()
        for channel, part in self._partition.items():
            self._send(part, {"kind": "crash", "attempt": self._attempt, "channel": channel})
        self._attempt += 1
        self._turn = 0

    def restore(self) -> None:
        started = time.monotonic()
        attempt = self._attempt
        if self._restores < len(self.rescale):
            parallelism = self.rescale[self._restores]
            self._restores += 1
            self._base = self._config["attempt_base"] = attempt
            self._start(parallelism, self._latest)
        else:
            self._restores += 1
            job, base = self._running_job(), self._base
            _wait(
                f"Flink's restart {attempt}",
                lambda: job.restarts() + base >= attempt and job.running(),
                job.failed,
            )
        for key in self._topology.keys:
            self._marker("touch", key)
        self.timings.append(("restore", attempt, time.monotonic() - started))

    def end(self) -> Mapping[Key, Mapping[str, Any]]:
        for key in self._topology.keys:
            self._marker("end", key)
        memory_file = self._dir() / "memory.jsonl"
        lines = memory_file.read_text().splitlines() if memory_file.exists() else []
        return {m["key"]: m["memory"] for m in map(json.loads, lines)}

    def close(self) -> None:
        job, self._job = self._job, None
        if job is not None:
            job.cancel()
        cleanups, self._cleanups = self._cleanups, []
        for cleanup in reversed(cleanups):
            cleanup()

    # -- driving the job ----------------------------------------------------------------

    def _dir(self) -> Path:
        assert self.folder is not None, "the target is not open"
        return self.folder

    def _failed(self) -> str | None:
        """Why the job cannot go on: it stopped, or it failed on its own (a restart the
        driver did not inject), with the error."""
        job = self._running_job()
        reason = job.failed()
        if reason is None and job.restarts() + self._base > self._attempt:
            reason = f"the job failed on its own ({job.root_cause()})"
        return reason

    def _running_job(self) -> _Job:
        if self._job is None:
            raise LiveError("live: the job is not running")
        return self._job

    def _send(self, part: int, message: dict[str, Any]) -> None:
        failures: list[str] = []

        def delivered(err: Any, _: Any) -> None:
            if err is not None:
                failures.append(str(err))

        self._producer.produce(
            self._topic, json.dumps(message), partition=part, on_delivery=delivered
        )
        if self._producer.flush(10) or failures:
            raise LiveError(f"live: cannot write to the channels topic: {failures}")

    def _marker(self, kind: str, key: Key) -> None:
        """A key's end of input, or its look after a restore (``touch``), through the
        first channel's partition and gate, in its turn."""
        first = self._topology.channels[0].name
        message = {"kind": kind, "attempt": self._attempt, "key": key, "k": key_text(key)}
        self._send(self._partition[first], {**message, "channel": first})
        self._release({kind: key}, f"the {kind} of key {key!r}")

    def _release(self, what: dict[str, Any], label: str) -> None:
        run_dir, attempt, turn = self._dir(), self._attempt, self._turn
        from .job import read_turn, release_file, write_json

        write_json(release_file(run_dir, attempt), {"turn": turn, **what})
        _wait(label, lambda: read_turn(run_dir, attempt) > turn, self._failed)
        self._turn += 1
        self._replay()

    def _replay(self) -> None:
        """Hand the events the job appended since the last step to the environment."""
        with (self._dir() / "events.jsonl").open() as events:
            events.seek(self._position)
            text = events.read()
            self._position = events.tell()
        for line in text.splitlines():
            data = json.loads(line)
            kind = data["event"]
            if kind == "deliver":
                continue  # the suite records the delivery itself
            if kind == "tool":
                call = data["call"]
                self._env.tool(
                    data["key"],
                    data["position"],
                    record_of(call["record"]),
                    tuple(data["path"]),
                    data["tool"],
                    tuple(call["reads"]),
                )
            elif kind == "output":
                self._env.output(data["key"], data["identity"], tuple(data["path"]), data["value"])
            else:
                self._env.report(event_from_json(data))


def implementation(store: str) -> LiveFlink:
    """The ``flink:<store>`` conformance target."""
    return LiveFlink(store)
