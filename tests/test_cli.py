"""`kafka-mock-broker` (python -m broker) as a subprocess: start-up, configuration,
real clients through it, signals and start-up errors.

Every process is started through the `spawn` fixture, which kills whatever is still
running when the test ends, so nothing outlives a test.
"""

from __future__ import annotations

import json
import random
import signal
import socket
import struct
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from tests.support.process import START_TIMEOUT, BrokerProcess, broker_processes, run_broker
from tests.support.wire import decode_response, encode_request, read_frame, round_trip

UNKNOWN_TOPIC_OR_PARTITION = 3


@pytest.fixture
def spawn() -> Iterator[Callable[..., BrokerProcess]]:
    with broker_processes() as start:
        yield start


def run_to_exit(*args: str, timeout: float = START_TIMEOUT) -> subprocess.CompletedProcess[str]:
    """Runs a broker that is expected to exit by itself (start-up errors)."""
    return run_broker(*args, timeout=timeout)


# -- ports ------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def free_port_range(count: int) -> int:
    """A base port with `count` consecutive free ports, below the usual ephemeral ranges
    (Linux 32768-60999, macOS/Windows 49152-65535) so no client socket takes one meanwhile."""
    for _ in range(200):
        base = random.randrange(20000, 30000)
        sockets: list[socket.socket] = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                sockets.append(sock)
                sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
        return base
    raise RuntimeError(f"no {count} consecutive free ports found")


# -- raw requests -----------------------------------------------------------------------
def api_versions_ok(port: int, host: str = "127.0.0.1") -> bool:
    """An ApiVersions v0 round trip: the broker's loop is past start-up and serving."""
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.sendall(struct.pack(">ihhih", 10, 18, 0, 42, 0))
        correlation_id, error = struct.unpack_from(">ih", read_frame(sock))
    return (correlation_id, error) == (42, 0)


def raw_metadata(port: int, topic: str, auto_create: bool) -> MetadataResponse:
    request = MetadataRequest[12](
        topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=auto_create
    )
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        return round_trip(sock, request, 1, "cli-test")


def produce_and_consume(bootstrap: str, topic: str, count: int) -> list[bytes]:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    errors: list[KafkaError] = []

    def delivered(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            errors.append(error)

    for i in range(count):
        producer.produce(topic, b"value-%d" % i, on_delivery=delivered)
    assert producer.flush(10) == 0
    assert errors == []
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cli", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        values: list[bytes] = []
        deadline = time.monotonic() + 10
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            value = message.value()
            assert value is not None
            values.append(value)
        return values
    finally:
        consumer.close()


# -- start-up ---------------------------------------------------------------------------
def test_logs_one_line_naming_every_listener(spawn: Callable[..., BrokerProcess]) -> None:
    broker = spawn(
        "--brokers",
        "2",
        "--override",
        "listeners=PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
        "--override",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
    )
    brokers = broker.wait_listening(2)
    assert sorted(brokers) == [0, 1]
    ports = set()
    for listeners in brokers.values():
        assert sorted(listeners) == ["INTERNAL", "PLAINTEXT"]
        for host, port in listeners.values():
            assert host == "127.0.0.1" and port > 0
            assert api_versions_ok(port)
            ports.add(port)
    assert len(ports) == 4  # port 0: every listener of every broker bound its own free port
    # One start-up line names them all.
    assert len([line for line in broker.lines if "listening on" in line]) == 1


def test_port_0_and_a_real_client(spawn: Callable[..., BrokerProcess]) -> None:
    broker = spawn("--port", "0")
    [(node_id, listeners)] = broker.wait_listening(1).items()
    assert node_id == 0
    host, port = listeners["PLAINTEXT"]
    values = produce_and_consume(f"{host}:{port}", "through-cli", 50)
    assert values == [b"value-%d" % i for i in range(50)]


def test_three_brokers_on_consecutive_ports(spawn: Callable[..., BrokerProcess]) -> None:
    base = free_port_range(3)
    broker = spawn("--port", str(base), "--brokers", "3", "--override", "node.id=5")
    brokers = broker.wait_listening(3)
    assert brokers == {5 + i: {"PLAINTEXT": ("127.0.0.1", base + i)} for i in range(3)}
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{base}"})
    metadata = admin.list_topics(timeout=10)
    assert {b.id: (b.host, b.port) for b in metadata.brokers.values()} == {
        5 + i: ("127.0.0.1", base + i) for i in range(3)
    }
    # Leaders are spread over all three brokers, and clients route to them.
    for future in admin.create_topics([NewTopic("spread", 3, 1)], operation_timeout=10).values():
        future.result(timeout=10)
    leaders = {
        p.leader for p in admin.list_topics(topic="spread", timeout=10).topics["spread"].partitions.values()
    }
    assert leaders == {5, 6, 7}
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{base + 2}"})
    for partition in range(3):
        producer.produce("spread", b"x", partition=partition)
    assert producer.flush(10) == 0


def test_config_file_sets_num_partitions(spawn: Callable[..., BrokerProcess], tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("# a server.properties file\nnum.partitions=4\nauto.create.topics.enable = true\n")
    broker = spawn("--config", str(config), "--port", "0")
    [listeners] = broker.wait_listening(1).values()
    _, port = listeners["PLAINTEXT"]
    bootstrap = f"127.0.0.1:{port}"
    # A producer's Metadata request auto-creates the topic, with num.partitions from the file.
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce("auto-created", b"x")
    assert producer.flush(10) == 0
    topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    assert len(topics["auto-created"].partitions) == 4


def test_override_beats_config_file(spawn: Callable[..., BrokerProcess], tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("num.partitions=4\nauto.create.topics.enable=true\n")
    broker = spawn("--config", str(config), "--override", "auto.create.topics.enable=false", "--port", "0")
    [listeners] = broker.wait_listening(1).values()
    _, port = listeners["PLAINTEXT"]
    # Even a Metadata request that allows auto-creation leaves an unknown topic unknown ...
    response = raw_metadata(port, "never-created", auto_create=True)
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("never-created", UNKNOWN_TOPIC_OR_PARTITION)
    ]
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    assert "never-created" not in admin.list_topics(timeout=10).topics
    # ... while the rest of the file still applies: CreateTopics without a count gets 4.
    for future in admin.create_topics([NewTopic("defaults")], operation_timeout=10).values():
        future.result(timeout=10)
    assert len(admin.list_topics(timeout=10).topics["defaults"].partitions) == 4


def test_listeners_override_wins_over_host_and_port(spawn: Callable[..., BrokerProcess]) -> None:
    wanted = free_port()
    ignored = free_port()
    while ignored == wanted:
        ignored = free_port()
    broker = spawn(
        "--host", "0.0.0.0", "--port", str(ignored), "--override", f"listeners=PLAINTEXT://127.0.0.1:{wanted}"
    )
    assert broker.wait_listening(1) == {0: {"PLAINTEXT": ("127.0.0.1", wanted)}}
    assert api_versions_ok(wanted)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", ignored), timeout=5).close()


# -- signals ----------------------------------------------------------------------------
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_exits_zero(spawn: Callable[..., BrokerProcess], sig: signal.Signals) -> None:
    broker = spawn("--port", "0", "--brokers", "2")
    brokers = broker.wait_listening(2)
    # A round trip first: the start-up line is logged just before the signal handlers
    # are installed, so a signal sent on seeing it can still meet the default action.
    for listeners in brokers.values():
        assert api_versions_ok(listeners["PLAINTEXT"][1])
    started = time.monotonic()
    broker.proc.send_signal(sig)
    assert broker.wait(timeout=10) == 0, broker.stderr
    assert time.monotonic() - started < 3
    assert "Traceback" not in broker.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_while_consumer_long_polls(spawn: Callable[..., BrokerProcess], sig: signal.Signals) -> None:
    broker = spawn("--port", "0")
    [listeners] = broker.wait_listening(1).values()
    _, port = listeners["PLAINTEXT"]
    bootstrap = f"127.0.0.1:{port}"
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce("polled", b"first")
    assert producer.flush(10) == 0
    # A real consumer whose fetches wait up to 10 s at the broker ...
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "polling",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 10000,
        }
    )
    try:
        consumer.assign([TopicPartition("polled", 0, OFFSET_BEGINNING)])
        message = None
        deadline = time.monotonic() + 10
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(0.2)
        assert message is not None and message.value() == b"first"
        # ... and a raw fetch parked for 30 s, known to be waiting when the signal comes.
        request = FetchRequest[12](
            max_wait_ms=30000,
            min_bytes=1,
            topics=[
                FetchRequest.FetchTopic(
                    topic="polled",
                    partitions=[
                        FetchRequest.FetchTopic.FetchPartition(
                            partition=0, fetch_offset=1, partition_max_bytes=1 << 20
                        )
                    ],
                )
            ],
        )
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(encode_request(request, 9, "parked"))
            time.sleep(0.3)
            started = time.monotonic()
            broker.proc.send_signal(sig)
            # The parked fetch is answered (empty) before its connection closes.
            response = decode_response(request, read_frame(sock))
            assert response.header.correlation_id == 9
            assert response.error_code == 0
            assert not response.responses[0].partitions[0].records
            assert broker.wait(timeout=10) == 0, broker.stderr
            assert time.monotonic() - started < 3
    finally:
        consumer.close()
    assert "Traceback" not in broker.stderr


# -- start-up errors --------------------------------------------------------------------
def test_override_without_equals_sign() -> None:
    result = run_to_exit("--port", "0", "--override", "num.partitions")
    assert result.returncode != 0
    assert "--override expects key=value" in result.stderr
    assert "num.partitions" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("listeners=not-a-listener", "invalid listener"),
        ("listeners=SSL://127.0.0.1:0", "set ssl.certfile"),
        ("listeners=CLIENT://127.0.0.1:0", "security protocol CLIENT is not supported"),
    ],
)
def test_invalid_listener_config(override: str, message: str) -> None:
    result = run_to_exit("--override", override)
    assert result.returncode != 0
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_port_in_use() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = run_to_exit("--port", str(port))
    assert result.returncode != 0
    assert "address already in use" in result.stderr.lower()
    assert str(port) in result.stderr
    assert "Traceback" not in result.stderr


def test_port_of_a_later_broker_in_use() -> None:
    """Broker 0 has bound when broker 1 fails: still a clean error exit."""
    base = free_port_range(2)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", base + 1))
        holder.listen()
        result = run_to_exit("--port", str(base), "--brokers", "2")
    assert result.returncode != 0
    assert "address already in use" in result.stderr.lower()
    assert "Traceback" not in result.stderr


# -- harness flags ----------------------------------------------------------------------
def test_admin_port_record_and_conformance_report(
    spawn: Callable[..., BrokerProcess], tmp_path: Path
) -> None:
    """--admin-port serves the control plane, --record writes each request as a JSON line
    and --conformance-report names the client software on shutdown."""
    record, report = tmp_path / "requests.jsonl", tmp_path / "conformance.json"
    broker = spawn(
        "--port", "0", "--admin-port", "0", "--record", str(record), "--conformance-report", str(report)
    )  # fmt: skip
    [listeners] = broker.wait_listening(1).values()
    admin_port = int(broker.wait_line(r"admin API on http://127\.0\.0\.1:(\d+)").group(1))
    _, port = listeners["PLAINTEXT"]
    assert produce_and_consume(f"127.0.0.1:{port}", "recorded", 3) == [b"value-0", b"value-1", b"value-2"]
    with urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/v1/cluster", timeout=10) as answer:
        cluster = json.load(answer)
    assert cluster["brokers"] == [{"id": 0, "host": "127.0.0.1", "port": port, "up": True}]
    assert [t["name"] for t in cluster["topics"]] == ["recorded"]

    broker.proc.send_signal(signal.SIGTERM)
    assert broker.wait(timeout=10) == 0, broker.stderr
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    produced = [line for line in lines if line["api"] == "Produce"]
    assert produced and produced[0]["request"]["topic_data"][0]["name"] == "recorded"
    assert all(line["client_software_name"] == "confluent-kafka-python" for line in produced)
    clients = json.loads(report.read_text())["clients"]
    assert [c["software_name"] for c in clients] == ["confluent-kafka-python"]
    assert {a["api"] for a in clients[0]["apis"]} >= {"ApiVersions", "Metadata", "Produce", "Fetch"}
