"""Apache Kafka itself, the reference the differential suite compares this broker with.

`classpath()` builds tests/reference/pom.xml once (`mvn -q -B package`: org.apache.kafka
kafka_2.13 and its runtime dependencies into tests/reference/target/lib, cached there and
in ~/.m2 until the pom changes). `ReferenceKafka(brokers=N)` formats N KRaft combined-mode
nodes (broker and controller in one JVM each, node ids 0..N-1 as MockCluster numbers its
brokers) in a temporary directory with one random cluster id, starts `kafka.Kafka` on free
127.0.0.1 ports, waits until every node answers Metadata listing all N brokers and a
controller, and stops them (SIGTERM to each process group, SIGKILL after a timeout). Each
JVM logs to `server.log` in its node directory, never to stdout.

A started reference is stopped at interpreter exit too (atexit), so none outlives the
session that started it, even when a test fails before its finalizer.

Imports only the stdlib, kafka-python's classes (through `messages`) and tests.support.wire.
"""

from __future__ import annotations

import atexit
import base64
import ctypes
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from messages.registry import request_class
from tests.support.wire import round_trip

PROJECT = Path(__file__).resolve().parents[1] / "reference"
LIB = PROJECT / "target" / "lib"
STAMP = LIB / ".built-from"
KAFKA_VERSION = "4.4.0"  # the <kafka.version> of tests/reference/pom.xml
HEAP = "-Xmx512m"
START_TIMEOUT = 120.0
STOP_TIMEOUT = 20.0

# Server properties both sides get (MockCluster takes the same keys): one replica for the
# internal topics (the share coordinator's too: without it a one-broker Kafka never has a
# share coordinator), groups formed at once, one partition unless asked.
SHARED_CONFIG: dict[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}


class ReferenceError(RuntimeError):
    """The reference could not be built or started (one line says why)."""


_build_lock = threading.Lock()


def _die_with_parent() -> None:
    """In the child before exec (Linux): SIGKILL when the process that started it dies, so
    a reference never outlives a runner or pytest that was itself killed (no atexit then)."""
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def require_tools() -> None:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            raise ReferenceError(
                f"{tool} is not installed: the reference Kafka needs a JDK (17+) and Maven on PATH"
            )


def classpath() -> str:
    """The reference's classpath (`target/lib/*`), built with Maven the first time."""
    require_tools()
    digest = hashlib.sha1((PROJECT / "pom.xml").read_bytes()).hexdigest()
    with _build_lock:
        if not (STAMP.exists() and STAMP.read_text() == digest):
            shutil.rmtree(PROJECT / "target", ignore_errors=True)
            built = subprocess.run(
                ["mvn", "-q", "-B", "package"], cwd=PROJECT, capture_output=True, text=True, timeout=900
            )
            if built.returncode != 0:
                raise ReferenceError(
                    f"mvn package failed in {PROJECT}:\n{built.stdout[-4000:]}{built.stderr[-4000:]}"
                )
            STAMP.write_text(digest)
    return f"{LIB}/*"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def random_cluster_id() -> str:
    """A cluster id as `kafka-storage random-uuid` prints it (Kafka's Uuid: url-safe base64
    of 16 random bytes without padding, never starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


LOG4J = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
"""


class _Node:
    def __init__(self, node_id: int, root: Path) -> None:
        self.node_id = node_id
        self.dir = root / f"node-{node_id}"
        self.port = free_port()
        self.controller_port = free_port()
        self.sasl_port = free_port()  # used only with SASL users
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.dir / "server.log"

    def java(self, cp: str, main: str, *args: str) -> list[str]:
        return [
            "java",
            HEAP,
            "-Xss1m",
            "-XX:+UseSerialGC",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}",
            "-cp",
            cp,
            main,
            *args,
        ]


class ReferenceKafka:
    """N combined-mode Kafka nodes (ids 0..N-1); a context manager."""

    def __init__(
        self,
        brokers: int = 1,
        config: Mapping[str, str] | None = None,
        sasl_users: Mapping[str, str] | None = None,
    ) -> None:
        self.size = brokers
        self.config = {**SHARED_CONFIG, **(config or {})}
        # user -> password: a SASL_PLAINTEXT listener (PLAIN, these JAAS users) next to the
        # plain one, which stays the inter-broker listener (User:ANONYMOUS there)
        self.sasl_users = dict(sasl_users or {})
        self.root = Path(tempfile.mkdtemp(prefix="kafka-reference-"))
        self.nodes = [_Node(i, self.root) for i in range(brokers)]
        self.cluster_id = random_cluster_id()
        self.start_seconds = 0.0  # formatting and start-up, measured by start()

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)

    def address(self, node_id: int) -> tuple[str, int]:
        return "127.0.0.1", self.nodes[node_id].port

    def sasl_address(self, node_id: int) -> tuple[str, int]:
        return "127.0.0.1", self.nodes[node_id].sasl_port

    def properties(self, node: _Node) -> dict[str, str]:
        plain = self.plain_properties(node)
        if not self.sasl_users:
            return plain
        sasl = f"SASL_PLAINTEXT://127.0.0.1:{node.sasl_port}"
        users = " ".join(f'user_{user}="{password}"' for user, password in self.sasl_users.items())
        return {
            **plain,
            "listeners": f"{plain['listeners']},{sasl}",
            "advertised.listeners": f"{plain['advertised.listeners']},{sasl}",
            "listener.security.protocol.map": f"{plain['listener.security.protocol.map']},SASL_PLAINTEXT:SASL_PLAINTEXT",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
            ),
        }

    def plain_properties(self, node: _Node) -> dict[str, str]:
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)
        return {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(node.dir / "data"),
            **self.config,
            **self.own_config(node),
        }

    def own_config(self, node: _Node) -> dict[str, str]:
        """What differs per node: a `broker.rack` list ("r0,r1,r2", MockCluster's form of
        one rack per broker) gives each node its own entry, as each Kafka broker's
        server.properties names its own rack."""
        racks = self.config.get("broker.rack", "").split(",")
        return {"broker.rack": racks[node.node_id]} if len(racks) == self.size > 1 else {}

    def start(self) -> ReferenceKafka:
        began = time.monotonic()
        cp = classpath()
        for node in self.nodes:
            node.dir.mkdir(parents=True)
            (node.dir / "log4j2.properties").write_text(LOG4J.format(log=node.log))
            lines = (f"{key}={value}" for key, value in self.properties(node).items())
            (node.dir / "server.properties").write_text("\n".join(lines) + "\n")
        formats = [
            subprocess.Popen(
                node.java(
                    cp,
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    self.cluster_id,
                    "-c",
                    str(node.dir / "server.properties"),
                ),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            for node in self.nodes
        ]
        for node, fmt in zip(self.nodes, formats, strict=True):
            out, _ = fmt.communicate(timeout=120)
            if fmt.returncode != 0:
                raise ReferenceError(f"formatting node {node.node_id} failed: {out.decode()[-2000:]}")
        _started.append(self)
        for node in self.nodes:
            node.process = subprocess.Popen(
                node.java(cp, "kafka.Kafka", str(node.dir / "server.properties")),
                stdin=subprocess.DEVNULL,
                stdout=open(node.dir / "stdout.log", "wb"),  # noqa: SIM115 (the child owns it)
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 (no threads run in the child)
            )
        self.wait_ready(began + START_TIMEOUT)
        self.start_seconds = time.monotonic() - began
        return self

    def wait_ready(self, deadline: float) -> None:
        metadata = request_class(3)
        pending = list(self.nodes)
        while pending:
            node = pending[0]
            if node.process is not None and node.process.poll() is not None:
                raise ReferenceError(
                    f"reference node {node.node_id} exited ({node.process.returncode}); "
                    f"log {node.log}:\n{self.tail(node)}"
                )
            try:
                with socket.create_connection(("127.0.0.1", node.port), timeout=5) as sock:
                    answer = round_trip(
                        sock,
                        metadata[12](
                            topics=[],
                            allow_auto_topic_creation=False,
                            include_topic_authorized_operations=False,
                        ),
                        1,
                        "reference-ready",
                    )
                if len(answer.brokers) == self.size and answer.controller_id >= 0:
                    pending.pop(0)
                    continue
            except (OSError, ConnectionError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise ReferenceError(f"reference node {node.node_id} did not answer in time:\n{self.tail(node)}")
            time.sleep(0.2)

    @staticmethod
    def tail(node: _Node) -> str:
        try:
            return "\n".join(node.log.read_text(errors="replace").splitlines()[-30:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        running = [node.process for node in self.nodes if node.process and node.process.poll() is None]
        for process in running:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + STOP_TIMEOUT
        for process in running:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait()
        for node in self.nodes:
            node.process = None
        if self in _started:
            _started.remove(self)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ReferenceKafka:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_started: list[ReferenceKafka] = []


@atexit.register
def _stop_all() -> None:
    for reference in list(_started):
        reference.stop()
