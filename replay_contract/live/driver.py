"""The driver of a live run: it starts the job on a local MiniCluster and plays the plan.

Outside the job, the driver writes each channel's records to its own partition of a
channels topic (one partition per channel, read by its own source subtask), just in time
for their turn; triggers each checkpoint through the MiniCluster's REST API on 127.0.0.1
and waits until it completed; injects each crash as a task failure (a marker the gates
of the running attempt fail on), after which Flink restarts the job from its latest
completed checkpoint; and at the end sends each key an end of input. It writes the run
down as a trace (``trace.jsonl`` in the run's folder) that
:func:`replay_contract.conformance.check.check` judges against the reference model.

Anything the driver started (the job, the topics it made) is stopped or removed when the
run ends, also when it fails; a JVM or job that does not come up is one
:class:`LiveError`.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attrs import frozen

from replay_contract.exits import InfrastructureError
from replay_contract.model import trace as t
from replay_contract.model.contracts import CONTRACTS, Contract
from replay_contract.model.scenario import Scenario
from replay_contract.model.topology import key_text
from replay_contract.services.common import free_ports, resolve_classpath

from .job import AgentOperator, Gate, append_lines, key_of, read_turn
from .plan import Plan, plan

#: The Kafka connector the source uses (the newest built for Flink 1.19/1.20 on Central).
KAFKA_CONNECTOR = "org.apache.flink:flink-sql-connector-kafka:3.2.0-1.19"
#: Seconds to wait for one turn, a checkpoint, or the job to come up.
STEP_TIMEOUT = 180.0


class LiveError(InfrastructureError):
    """The live job could not run (no JVM, a job that did not start or failed)."""


@frozen
class LiveRun:
    scenario: Scenario
    contract: Contract
    store: str
    events: tuple[t.Event, ...]
    folder: Path
    seconds: float
    attempts: int


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
        try:
            self.client.cancel().result()
        except Exception:  # noqa: BLE001 (already gone: nothing left to stop)
            pass


def _environment(folder: Path, port: int, attempts: int, jar: Path) -> Any:
    os.environ.setdefault("FLINK_LOG_DIR", str(folder / "log"))
    # The Python functions run in worker processes of their own (``python.executable``),
    # as on a cluster, not in threads of this process.
    os.environ["_python_worker_execution_mode"] = "process"
    try:
        from pyflink.common import Configuration
        from pyflink.datastream import StreamExecutionEnvironment
    except ImportError:
        raise LiveError(
            "live: PyFlink is not installed (pip install -e '.[live]')"
        ) from None
    conf = Configuration()
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
        "restart-strategy.fixed-delay.attempts": str(attempts + 1),
        "restart-strategy.fixed-delay.delay": "200 ms",
        "jobmanager.execution.failover-strategy": "full",
        "state.checkpoints.dir": (folder / "checkpoints").as_uri(),
        "pipeline.jars": jar.as_uri(),
        # the Kafka client's threads outlive a cancelled job's class loader for a moment
        "classloader.check-leaked-classloader": "false",
    }
    for name, value in settings.items():
        conf.set_string(name, value)
    try:
        return StreamExecutionEnvironment.get_execution_environment(conf)
    except Exception as exc:  # noqa: BLE001 (py4j: the JVM did not come up)
        raise LiveError(f"live: the Flink JVM did not come up ({str(exc).splitlines()[0]})") from None


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


def run(
    scenario: Scenario,
    contract: Contract,
    store: str = "kafka",
    *,
    parallelism: int = 2,
    folder: Path | None = None,
) -> LiveRun:
    """Run ``scenario`` under ``contract`` as a live Flink job (see the module docstring)."""
    from confluent_kafka import Producer

    from replay_contract.runtime import kafka
    from replay_contract.runtime.kafka_store import KafkaBackend

    the_plan = plan(scenario, contract)
    started = time.monotonic()
    base = Path(folder or Path.cwd() / ".replay-contract" / "live").absolute()
    base.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix=f"{scenario.name}-{contract.name}-", dir=base))
    jar = connector_jar()
    channels_bootstrap = kafka.bootstrap_address()
    kafka.probe(channels_bootstrap)
    channels = KafkaBackend(channels_bootstrap)
    topic = f"replay-contract-live-{uuid.uuid4().hex[:12]}"
    cleanups: list[Callable[[], None]] = []
    job: _Job | None = None
    try:
        _create_channels(channels, topic, len(scenario.topology.channels))
        cleanups.append(lambda: channels.delete_topic(topic))
        bootstrap, namespace, drop = _store_namespace(store)
        cleanups.append(drop)
        config = {
            "run": str(run_dir),
            "plan": the_plan.to_json(),
            "scenario": scenario.to_json(),
            "contract": contract.name
            if CONTRACTS.get(contract.name) == contract
            else contract.to_json(),
            "store": store,
            "bootstrap": bootstrap,
            "namespace": namespace,
        }
        (port,) = free_ports(1)
        env = _environment(run_dir, port, len(the_plan.attempts), jar)
        job = _submit(env, config, channels_bootstrap, topic, the_plan, parallelism, port)
        producer = Producer({"bootstrap.servers": channels_bootstrap, "linger.ms": 0})
        _play(the_plan, job, producer, topic, run_dir)
    finally:
        if job is not None:
            job.cancel()
        for cleanup in reversed(cleanups):
            cleanup()
    events = tuple(
        t.event_from_json(json.loads(line))
        for line in (run_dir / "events.jsonl").read_text().splitlines()
    )
    return LiveRun(
        scenario, contract, store, events, run_dir, time.monotonic() - started,
        len(the_plan.attempts),
    )


def _create_channels(channels: Any, topic: str, partitions: int) -> None:
    """The channels topic: one partition per channel, records kept in order (no keys)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

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
    the_plan: Plan,
    parallelism: int,
    port: int,
) -> _Job:
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.common.serialization import SimpleStringSchema
    from pyflink.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaSource

    n = len(the_plan.scenario.topology.channels)
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
    stream = stream.set_parallelism(n)
    gated = stream.flat_map(Gate(config), output_type=Types.STRING()).name("gate")
    gated = gated.set_parallelism(n)
    agent = gated.key_by(key_of, key_type=Types.STRING()).process(
        AgentOperator(config), output_type=Types.STRING()
    )
    agent.name("agent").set_parallelism(parallelism).print()
    try:
        client = env.execute_async(f"replay-contract live {the_plan.scenario.name}")
    except Exception as exc:  # noqa: BLE001 (the JVM's error, as one line)
        raise LiveError(f"live: the job did not start ({str(exc).splitlines()[0]})") from None
    job = _Job(port, str(client.get_job_id()), client)
    Path(config["run"], "job.json").write_text(json.dumps({"rest": port, "job": job.id}))
    _wait("the job to run", job.running, job.failed)
    return job


def _play(the_plan: Plan, job: _Job, producer: Any, topic: str, run_dir: Path) -> None:
    """Play the plan's attempts against the running job."""
    topology = the_plan.scenario.topology
    partition = {c.name: i for i, c in enumerate(topology.channels)}
    events = run_dir / "events.jsonl"
    events.touch()
    latest = 0

    def send(part: int, message: dict[str, Any]) -> None:
        failures: list[str] = []

        def delivered(err: Any, _: Any) -> None:
            if err is not None:
                failures.append(str(err))

        producer.produce(topic, json.dumps(message), partition=part, on_delivery=delivered)
        if producer.flush(10) or failures:
            raise LiveError(f"live: cannot write to the channels topic {topic}: {failures}")

    def turn(attempt: int, value: int) -> None:
        _wait(
            f"turn {value} of attempt {attempt}",
            lambda: read_turn(run_dir, attempt) >= value,
            job.failed,
        )

    for attempt in the_plan.attempts:
        a, done = attempt.number, 0
        for action in attempt.actions:
            if action.kind == "deliver":
                record = action.record
                assert record is not None
                if action.first:
                    turn(a, done)
                    send(
                        partition[record.channel],
                        {"kind": "record", "id": record.identity, "k": key_text(record.key)},
                    )
                done += 1
            elif action.kind == "checkpoint":
                turn(a, done)
                latest = job.checkpoint()
                append_lines(events, [t.event_to_json(t.Checkpoint(latest))])
            elif action.kind == "crash":
                turn(a, done)
                append_lines(
                    events, [t.event_to_json(t.Crash()), t.event_to_json(t.Restore(latest))]
                )
                for part in partition.values():
                    send(part, {"kind": "crash", "attempt": a})
    last = the_plan.attempts[-1]
    done = len(last.deliveries)
    turn(last.number, done)
    for key in topology.keys:
        send(0, {"kind": "end", "attempt": last.number, "key": key, "k": key_text(key)})
        done += 1
        turn(last.number, done)
    memory = [
        json.loads(line) for line in (run_dir / "memory.jsonl").read_text().splitlines()
    ] if (run_dir / "memory.jsonl").exists() else []
    end = t.End(
        tuple((m["key"], tuple(sorted(m["memory"].items()))) for m in memory)
    )
    append_lines(events, [t.event_to_json(end)])
