"""The request-metrics Parquet sink (issue 5, "Tests that must exist: Writer").

One row per answered request, columns as spark/schema.py defines them, written by
broker/metrics_sink.py under `broker=<id>/date=<yyyy-mm-dd>/part-*.parquet` via a hidden
temporary name. Requests are kafka-python 3's schema-generated structs sent over plain
sockets, so every frame's size, correlation id and answer is known on the client side;
clusters are in-process, thread-backed `MockCluster`s, except for SIGTERM and kill -9,
which need a `python -m broker` child process.
"""

from __future__ import annotations

import datetime
import math
import os
import re
import signal
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from kafka.protocol.admin import CreateTopicsRequest
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record.memory_records import MemoryRecordsBuilder

from broker import MockCluster
from broker.harness.metrics_sink import MetricsSink
from spark.schema import COLUMN_NAMES, SCHEMA_VERSION, SCHEMA_VERSION_KEY, arrow_schema
from tests.conftest import FAST
from tests.support.process import BrokerProcess, broker_processes
from tests.support.wire import decode_response, encode_request, read_frame

WINDOW_MS = 1000  # quota.window.size.seconds x 1000
SHORT = {"quota.window.num": "2"}  # a new sensor's rate is measured over exactly 1 s
# The sink turns the broker's monotonic receive time into wall-clock time with an offset
# taken once at import; allow for the two clock reads and the µs truncation.
CLOCK_SLACK_S = 0.002
UNKNOWN_TOPIC_OR_PARTITION = 3
OFFSET_OUT_OF_RANGE = 1
THROTTLING_QUOTA_EXCEEDED = 89
PART_NAME = re.compile(r"^part-\d{16}-\d+-\d{6}\.parquet$")
TEMP_NAME = re.compile(r"^\.part-\d{16}-\d+-\d{6}\.parquet\.tmp$")

# The column names of issue 5, in its order: fixed, other tools rely on them.
ISSUE_COLUMNS = (
    "ts broker_id listener connection_id client_host principal client_id client_software_name "
    "client_software_version api_key api_name api_version correlation_id request_bytes response_bytes "
    "handler_us total_us throttle_time_ms throttle_cause quota_user quota_client_id quota_limit quota_rate "
    "error_code error_count record_count partition_count acks"
).split()
# Issue 21 (schema 2): what the quota sensors were fed, for the what-if replay.
ISSUE_COLUMNS += (
    "run_id seq quotas_on quota_ms quota_bytes request_time request_time_after request_time_after_ms"
).split()


# ------------------------------------------------------------------ reading files


def visible_files(directory: Path) -> list[Path]:
    """Every file a reader would pick up: all whose name does not start with '.'."""
    found = []
    for folder, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found.extend(Path(folder, name) for name in files if not name.startswith("."))
    return sorted(found)


def hidden_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob(".*") if p.is_file())


def read_checked(directory: Path, path: Path) -> pa.Table:
    """One visible file: in its broker/date folder, a whole Parquet file with exactly
    the schema of spark/schema.py and SCHEMA_VERSION in its metadata."""
    relative = path.relative_to(directory).parts
    assert len(relative) == 3, path
    broker_part, date_part, name = relative
    assert re.fullmatch(r"broker=-?\d+", broker_part), path
    assert re.fullmatch(r"date=\d{4}-\d{2}-\d{2}", date_part), path
    assert PART_NAME.match(name), path
    parquet = pq.ParquetFile(path)
    metadata = parquet.schema_arrow.metadata or {}
    assert metadata.get(SCHEMA_VERSION_KEY) == str(SCHEMA_VERSION).encode(), metadata
    table = parquet.read()
    assert table.schema.equals(arrow_schema(), check_metadata=True), table.schema
    assert table.num_rows > 0, path
    broker_id = int(broker_part.removeprefix("broker="))
    day = date_part.removeprefix("date=")
    for row in table.select(["ts", "broker_id"]).to_pylist():
        assert row["broker_id"] == broker_id, path
        assert row["ts"].astimezone(datetime.UTC).date().isoformat() == day, path
    return table


def read_rows(directory: Path) -> list[dict[str, Any]]:
    """All rows of all visible files; nothing else may be visible."""
    rows: list[dict[str, Any]] = []
    for path in visible_files(directory):
        rows.extend(read_checked(directory, path).to_pylist())
    return rows


def sink_counters(sink: MetricsSink) -> dict[str, float]:
    found = {m.name: m.value for m in sink.metrics()}
    assert {m.group for m in sink.metrics()} == {"metrics-sink"}
    return found


def cluster_sink_counters(cluster: MockCluster) -> dict[str, float]:
    return {m.name: m.value for m in cluster.metrics() if m.group == "metrics-sink"}


def wait_for(condition: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


# --------------------------------------------------------------- raw-socket client


@dataclass
class Sent:
    """One request as the client saw it."""

    request: Any
    correlation_id: int
    request_bytes: int  # the frame without its 4-byte size prefix
    sent_at: float  # wall clock just before the write
    response_bytes: int = 0  # the response frame without its prefix; 0: no response
    answered_at: float = 0.0  # wall clock once the answer was read
    response: Any = None


class RawClient:
    """One TCP connection with a fixed client id; requests are answered in order."""

    def __init__(self, address: tuple[str, int], client_id: str | None, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(address, timeout=timeout)
        self.client_id = client_id
        self.correlation_id = 0
        self.sent: list[Sent] = []

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.sock.close()

    def send(self, request: Any) -> Sent:
        self.correlation_id += 1
        frame = encode_request(request, self.correlation_id, self.client_id)
        assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
        sent = Sent(request, self.correlation_id, len(frame) - 4, time.time())
        self.sent.append(sent)
        self.sock.sendall(frame)
        return sent

    def receive(self, sent: Sent) -> Sent:
        frame = read_frame(self.sock)
        sent.answered_at = time.time()
        assert struct.unpack_from(">i", frame)[0] == sent.correlation_id
        sent.response_bytes = len(frame)
        sent.response = decode_response(sent.request, frame)
        return sent

    def call(self, request: Any) -> Sent:
        """Sends and waits for the answer (none for acks=0 produces)."""
        sent = self.send(request)
        if request.API_KEY == 0 and request.acks == 0:
            return sent
        return self.receive(sent)


def address(cluster: MockCluster, index: int = 0) -> tuple[str, int]:
    endpoint = cluster.brokers[index].advertised_endpoint("PLAINTEXT")
    return endpoint.host, endpoint.port


def batch(values: list[bytes]) -> bytes:
    builder = MemoryRecordsBuilder(
        magic=2, compression_type=0, batch_size=1 << 24, producer_id=-1, producer_epoch=-1, base_sequence=-1
    )
    for value in values:
        assert builder.append(timestamp=1_700_000_000_000, key=None, value=value) is not None
    builder.close()
    return bytes(builder.buffer())


def produce_request(partitions: dict[str, dict[int, bytes]], acks: int = 1, version: int = 9) -> Any:
    topic_data = [
        ProduceRequest.TopicProduceData(
            name=topic,
            partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=index, records=records)
                for index, records in by_index.items()
            ],
        )
        for topic, by_index in partitions.items()
    ]
    return ProduceRequest[version](transactional_id=None, acks=acks, timeout_ms=5000, topic_data=topic_data)


def fetch_request(topic: str, offset: int, version: int = 12) -> Any:
    partition = FetchRequest.FetchTopic.FetchPartition(
        partition=0, fetch_offset=offset, partition_max_bytes=1 << 20
    )
    return FetchRequest[version](
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        session_id=0,
        session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[partition])],
    )


def metadata_request(version: int = 12) -> Any:
    return MetadataRequest[version](topics=[])


def create_topics_request(name: str, partitions: int) -> Any:
    topic = CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[]
    )
    return CreateTopicsRequest[7](topics=[topic], timeout_ms=5000, validate_only=False)


def java_round(value: float) -> int:
    return math.floor(value + 0.5)


@contextmanager
def metrics_cluster(directory: Path, brokers: int = 1, **config: Any) -> Iterator[MockCluster]:
    settings = {**FAST, "metrics.dir": str(directory), **{k.replace("_", "."): v for k, v in config.items()}}
    with MockCluster(brokers=brokers, config=settings) as cluster:
        yield cluster


def check_row(row: dict[str, Any], sent: Sent, **expected: Any) -> None:
    """The columns every row has, from what the client sent and got back, plus `expected`."""
    request = sent.request
    assert row["api_key"] == request.API_KEY
    assert row["api_version"] == request.API_VERSION
    assert row["correlation_id"] == sent.correlation_id
    assert row["request_bytes"] == sent.request_bytes
    assert row["response_bytes"] == sent.response_bytes
    assert row["listener"] == "PLAINTEXT"
    assert row["principal"] == "User:ANONYMOUS"
    assert row["client_host"] == "127.0.0.1"
    # Received after it was sent and before it was answered (an acks=0 produce: before now).
    until = sent.answered_at if sent.response is not None else time.time()
    ts = row["ts"].timestamp()
    assert sent.sent_at - CLOCK_SLACK_S <= ts <= until + CLOCK_SLACK_S, (sent.sent_at, ts, until)
    assert row["total_us"] >= row["handler_us"] >= 0
    if sent.response is not None:
        assert row["total_us"] <= (until - sent.sent_at + CLOCK_SLACK_S) * 1e6
    for column, value in expected.items():
        assert row[column] == value, (
            f"{row['api_name']} #{sent.correlation_id} {column}: {row[column]!r} != {value!r}"
        )


NO_QUOTA = {
    "throttle_time_ms": 0,
    "throttle_cause": "none",
    "quota_user": None,
    "quota_client_id": None,
    "quota_limit": None,
    "quota_rate": None,
}
NOT_PRODUCE_OR_FETCH = {"record_count": None, "partition_count": None, "acks": None}
OK = {"error_code": 0, "error_count": 0}


# ------------------------------------------------------- 1. one exact row per request


def test_known_requests_give_exactly_one_exact_row_each(tmp_path: Path) -> None:
    with metrics_cluster(tmp_path, node_id=3) as cluster:
        cluster.create_topic("events")
        with (
            RawClient(address(cluster), "metrics-test") as first,
            RawClient(address(cluster), None) as second,
        ):
            versions = first.call(
                ApiVersionsRequest[3](client_software_name="sink-test", client_software_version="1.2.3")
            )
            metadata = first.call(metadata_request())
            produce = first.call(produce_request({"events": {0: batch([b"a" * 10, b"b" * 20, b"c" * 30])}}))
            # Partition 7 does not exist and neither does topic "missing": two errors.
            failing = first.call(
                produce_request(
                    {"events": {0: batch([b"d", b"e"]), 7: batch([b"x"])}, "missing": {0: batch([b"y"])}},
                    acks=-1,
                )
            )
            fetch = first.call(fetch_request("events", 0))
            out_of_range = first.call(fetch_request("events", 100))
            silent = first.call(produce_request({"events": {0: batch([b"f"])}}, acks=0))
            old_metadata = first.call(metadata_request(1))  # answered after the acks=0 produce was handled
            plain_versions = second.call(ApiVersionsRequest[0]())
            second_metadata = second.call(metadata_request())
        sink = cluster.metrics_sink
        assert sink is not None

    # What the client saw, first.
    assert versions.response.error_code == 0
    produced = produce.response.responses[0].partition_responses[0]
    assert (produced.error_code, produced.base_offset) == (0, 0)
    failed = {
        (t.name, p.index): p.error_code for t in failing.response.responses for p in t.partition_responses
    }
    assert failed == {
        ("events", 0): 0,
        ("events", 7): UNKNOWN_TOPIC_OR_PARTITION,
        ("missing", 0): UNKNOWN_TOPIC_OR_PARTITION,
    }
    # 3 + 2 records: none for the failed partitions.
    assert fetch.response.responses[0].partitions[0].high_watermark == 5
    assert out_of_range.response.responses[0].partitions[0].error_code == OFFSET_OUT_OF_RANGE

    rows = read_rows(tmp_path)
    expected_sent = first.sent + second.sent
    assert len(rows) == len(expected_sent) == 10
    by_connection: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_connection.setdefault(row["connection_id"], []).append(row)
    assert len(by_connection) == 2
    first_rows, second_rows = sorted(
        (sorted(group, key=lambda r: r["correlation_id"]) for group in by_connection.values()),
        key=lambda group: -len(group),
    )
    assert [r["correlation_id"] for r in first_rows] == list(range(1, 9))
    assert [r["correlation_id"] for r in second_rows] == [1, 2]
    assert [r["ts"] for r in first_rows] == sorted(r["ts"] for r in first_rows)
    assert all(r["broker_id"] == 3 for r in rows)
    assert {p.parts[-3] for p in visible_files(tmp_path)} == {"broker=3"}

    software = {
        "client_id": "metrics-test",
        "client_software_name": "sink-test",
        "client_software_version": "1.2.3",
    }
    row = iter(first_rows)  # in correlation id order
    check_row(
        next(row), versions, api_name="ApiVersions", **software, **NO_QUOTA, **OK, **NOT_PRODUCE_OR_FETCH
    )
    check_row(next(row), metadata, api_name="Metadata", **software, **NO_QUOTA, **OK, **NOT_PRODUCE_OR_FETCH)
    check_row(
        next(row), produce, api_name="Produce", **software, **NO_QUOTA, **OK,
        record_count=3, partition_count=1, acks=1,
    )  # fmt: skip
    check_row(
        next(row), failing, api_name="Produce", **software, **NO_QUOTA,
        error_code=UNKNOWN_TOPIC_OR_PARTITION, error_count=2, record_count=2, partition_count=3, acks=-1,
    )  # fmt: skip
    check_row(
        next(row), fetch, api_name="Fetch", **software, **NO_QUOTA, **OK,
        record_count=5, partition_count=1, acks=None,
    )  # fmt: skip
    check_row(
        next(row), out_of_range, api_name="Fetch", **software, **NO_QUOTA,
        error_code=OFFSET_OUT_OF_RANGE, error_count=1, record_count=0, partition_count=1, acks=None,
    )  # fmt: skip
    check_row(
        next(row), silent, api_name="Produce", **software, **NO_QUOTA, **OK,
        response_bytes=0, record_count=1, partition_count=1, acks=0,
    )  # fmt: skip
    check_row(
        next(row), old_metadata, api_name="Metadata", **software, **NO_QUOTA, **OK, **NOT_PRODUCE_OR_FETCH
    )

    # No ApiVersions v3 on this connection, and a null client id.
    anonymous = {"client_id": None, "client_software_name": None, "client_software_version": None}
    plain = {**anonymous, **NO_QUOTA, **OK, **NOT_PRODUCE_OR_FETCH}
    check_row(second_rows[0], plain_versions, api_name="ApiVersions", **plain)
    check_row(second_rows[1], second_metadata, api_name="Metadata", **plain)

    files = visible_files(tmp_path)
    assert sink_counters(sink) == {
        "rows-added": 10.0,
        "rows-written": 10.0,
        "files-written": float(len(files)),
        "bytes-written": float(sum(p.stat().st_size for p in files)),
        "lag-rows": 0.0,
        "write-errors": 0.0,
    }
    assert hidden_files(tmp_path) == []


def test_unsupported_api_versions_version_still_gives_a_row(tmp_path: Path) -> None:
    with metrics_cluster(tmp_path) as cluster, RawClient(address(cluster), "future") as client:
        request = ApiVersionsRequest[3](client_software_name="future", client_software_version="9")
        frame = bytearray(encode_request(request, 1, "future"))
        struct.pack_into(">h", frame, 6, 99)  # request_api_version 99
        client.sock.sendall(bytes(frame))
        answer = read_frame(client.sock)
        assert struct.unpack_from(">ih", answer) == (1, 35)  # correlation id, UNSUPPORTED_VERSION in v0
    rows = read_rows(tmp_path)
    assert [(r["api_name"], r["api_version"], r["error_code"]) for r in rows] == [("ApiVersions", 99, 35)]


def test_multiple_brokers_write_their_own_folders(tmp_path: Path) -> None:
    with metrics_cluster(tmp_path, brokers=2, node_id=5) as cluster:
        for index in (0, 1, 1):
            with RawClient(address(cluster, index), "c") as client:
                client.call(metadata_request())
    rows = read_rows(tmp_path)
    assert Counter(r["broker_id"] for r in rows) == {5: 1, 6: 2}
    assert {p.parts[-3] for p in visible_files(tmp_path)} == {"broker=5", "broker=6"}


def test_kafka_python_clients_rows_carry_the_library_name(tmp_path: Path) -> None:
    import kafka
    from kafka import KafkaConsumer, KafkaProducer

    count = 20
    with metrics_cluster(tmp_path) as cluster:
        cluster.create_topic("lib")
        producer = KafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers, client_id="kp-producer", linger_ms=5
        )
        for i in range(count):
            producer.send("lib", value=b"v%d" % i)
        producer.flush(timeout=30)
        producer.close()
        consumer = KafkaConsumer(
            "lib",
            bootstrap_servers=cluster.bootstrap_servers,
            client_id="kp-consumer",
            group_id="g",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        received = 0
        deadline = time.monotonic() + 30
        while received < count and time.monotonic() < deadline:
            received += sum(len(records) for records in consumer.poll(timeout_ms=200).values())
        consumer.commit()
        consumer.close()
        assert received == count
        sink = cluster.metrics_sink
        assert sink is not None
    answered = sum(stats[0] for stats in cluster.brokers[0].throttle_stats.by_api.values())

    rows = read_rows(tmp_path)
    assert len(rows) == answered == sink.rows_added == sink.rows_written
    assert {r["client_software_name"] for r in rows} == {"kafka-python"}
    assert {r["client_software_version"] for r in rows} == {kafka.__version__}
    assert {r["client_id"] for r in rows} == {"kp-producer", "kp-consumer"}
    names = {r["api_name"] for r in rows}
    assert {"ApiVersions", "Metadata", "Produce", "Fetch", "JoinGroup", "OffsetCommit"} <= names
    assert sum(r["record_count"] for r in rows if r["api_name"] == "Produce") == count
    assert sum(r["record_count"] for r in rows if r["api_name"] == "Fetch") >= count
    # One row per request: (connection, correlation id) never repeats.
    keys = Counter((r["connection_id"], r["correlation_id"]) for r in rows)
    assert keys.most_common(1)[0][1] == 1


def test_confluent_kafka_rows_carry_the_library_name(tmp_path: Path) -> None:
    import confluent_kafka

    with metrics_cluster(tmp_path) as cluster:
        cluster.create_topic("lib")
        producer = confluent_kafka.Producer(
            {"bootstrap.servers": cluster.bootstrap_servers, "client.id": "ck", "linger.ms": 5}
        )
        for i in range(10):
            producer.produce("lib", b"v%d" % i)
        assert producer.flush(30) == 0
        del producer
        wait_for(lambda: not cluster.brokers[0].connections, what="the producer to disconnect")
    answered = sum(stats[0] for stats in cluster.brokers[0].throttle_stats.by_api.values())
    rows = read_rows(tmp_path)
    assert len(rows) == answered
    assert {r["client_software_name"] for r in rows} == {"confluent-kafka-python"}
    version = f"{confluent_kafka.__version__}-rdkafka-{confluent_kafka.libversion()[0]}"
    assert {r["client_software_version"] for r in rows} == {version}
    assert {r["client_id"] for r in rows} == {"ck"}
    assert sum(r["record_count"] for r in rows if r["api_name"] == "Produce") == 10


# --------------------------------------------------------------- 2. throttle times


def test_throttled_requests_carry_the_throttle_time_sent(tmp_path: Path) -> None:
    with metrics_cluster(tmp_path, **SHORT) as cluster:
        cluster.create_topic("q")
        with RawClient(address(cluster), "seed") as seed:
            seed.call(produce_request({"q": {0: batch([b"s" * 50, b"t"])}}))
        cluster.quotas.alter({"client-id": "x"}, set={"producer_byte_rate": 10})
        cluster.quotas.alter({"client-id": "big"}, set={"producer_byte_rate": 1e6})
        cluster.quotas.alter({"client-id": "quiet"}, set={"producer_byte_rate": 10})
        cluster.quotas.alter({"client-id": "reader"}, set={"consumer_byte_rate": 10})
        cluster.quotas.alter({"client-id": "busy"}, set={"request_percentage": 1e-6})
        cluster.quotas.alter({"client-id": "creator"}, set={"controller_mutation_rate": 1})
        # Every request on its own connection: a throttle mutes the one it came on.
        with RawClient(address(cluster), "x") as client:
            unthrottled = client.call(metadata_request())  # no request quota of its own
        with RawClient(address(cluster), "x") as client:
            throttled = client.call(produce_request({"q": {0: batch([b"p" * 40])}}))
        with RawClient(address(cluster), "big") as client:
            within = client.call(produce_request({"q": {0: batch([b"p" * 40])}}))
        with RawClient(address(cluster), "quiet") as client:
            muted = client.call(produce_request({"q": {0: batch([b"p" * 40])}}, acks=0))
        with RawClient(address(cluster), "reader") as client:
            fetched = client.call(fetch_request("q", 0))
        with RawClient(address(cluster), "busy") as client:
            requested = client.call(metadata_request())
        with RawClient(address(cluster), "creator") as client:
            created = client.call(create_topics_request("c1", 20))
        with RawClient(address(cluster), "creator") as client:
            refused = client.call(create_topics_request("c2", 1))
        # acks=0 has no answer: wait for its row before stopping.
        wait_for(lambda: cluster_sink_counters(cluster)["rows-added"] == 9, what="9 rows")

    by_client: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in sorted(read_rows(tmp_path), key=lambda r: r["ts"]):
        by_client.setdefault((row["client_id"], row["api_name"]), []).append(row)
    assert sum(len(found) for found in by_client.values()) == 9

    size = throttled.request_bytes
    expected_ms = java_round((size - 10) / 10 * WINDOW_MS)  # a new sensor: observed = size / 1 s
    assert throttled.response.throttle_time_ms == expected_ms > WINDOW_MS
    [produce_row] = by_client["x", "Produce"]
    check_row(
        produce_row, throttled, **OK,
        throttle_time_ms=expected_ms, throttle_cause="produce",
        quota_user="", quota_client_id="x", quota_limit=10.0,
        record_count=1, partition_count=1, acks=1,
    )  # fmt: skip
    assert produce_row["quota_rate"] == pytest.approx(size)
    [metadata_row] = by_client["x", "Metadata"]
    # Measured by the request quota manager ("busy" has a quota), under no limit of its own.
    check_row(
        metadata_row, unthrottled, **OK,
        throttle_time_ms=0, throttle_cause="none", quota_user="", quota_client_id="x", quota_limit=None, quota_rate=None,
    )  # fmt: skip

    assert within.response.throttle_time_ms == 0
    [within_row] = by_client["big", "Produce"]
    check_row(
        within_row, within, **OK,
        throttle_time_ms=0, throttle_cause="none", quota_user="", quota_client_id="big", quota_limit=1e6,
    )  # fmt: skip
    assert within_row["quota_rate"] == pytest.approx(within.request_bytes)

    # acks=0: no response, but the connection is muted for the throttle, which the row keeps.
    [muted_row] = by_client["quiet", "Produce"]
    check_row(
        muted_row, muted, **OK,
        response_bytes=0, throttle_cause="produce", quota_client_id="quiet", quota_limit=10.0, acks=0,
        throttle_time_ms=java_round((muted.request_bytes - 10) / 10 * WINDOW_MS),
    )  # fmt: skip

    assert fetched.response.throttle_time_ms > WINDOW_MS and fetched.response.responses == []
    [fetch_row] = by_client["reader", "Fetch"]
    check_row(
        fetch_row, fetched, **OK,
        throttle_time_ms=fetched.response.throttle_time_ms, throttle_cause="fetch",
        quota_user="", quota_client_id="reader", quota_limit=10.0, partition_count=1,
    )  # fmt: skip
    assert fetch_row["quota_rate"] > 10.0
    assert fetched.response.throttle_time_ms == java_round((fetch_row["quota_rate"] - 10) / 10 * WINDOW_MS)

    assert requested.response.throttle_time_ms == WINDOW_MS  # capped at one window
    [request_row] = by_client["busy", "Metadata"]
    check_row(
        request_row, requested, **OK,
        throttle_time_ms=WINDOW_MS, throttle_cause="request", quota_user="", quota_client_id="busy", quota_limit=1e-6,
    )  # fmt: skip
    assert request_row["quota_rate"] > 1e-6

    created_row, refused_row = by_client["creator", "CreateTopics"]
    assert created.response.throttle_time_ms == 0
    check_row(created_row, created, **OK, throttle_time_ms=0, throttle_cause="none", quota_limit=1.0)
    assert refused.response.topics[0].error_code == THROTTLING_QUOTA_EXCEEDED
    assert refused.response.throttle_time_ms > 0
    check_row(
        refused_row, refused,
        error_code=THROTTLING_QUOTA_EXCEEDED, error_count=1,
        throttle_time_ms=refused.response.throttle_time_ms, throttle_cause="mutation",
        quota_user="", quota_client_id="creator", quota_limit=1.0,
    )  # fmt: skip


def test_throttled_fetch_row_counts_no_records(tmp_path: Path) -> None:
    with metrics_cluster(tmp_path, **SHORT) as cluster:
        cluster.create_topic("q")
        with RawClient(address(cluster), "seed") as seed:
            seed.call(produce_request({"q": {0: batch([b"s" * 50, b"t"])}}))
        cluster.quotas.alter({"client-id": "reader"}, set={"consumer_byte_rate": 10})
        with RawClient(address(cluster), "reader") as client:
            fetched = client.call(fetch_request("q", 0))
    assert fetched.response.throttle_time_ms > 0 and fetched.response.responses == []
    [row] = [r for r in read_rows(tmp_path) if r["api_name"] == "Fetch"]
    assert row["record_count"] == 0


def test_mutation_throttled_row_has_the_measured_rate(tmp_path: Path) -> None:
    with metrics_cluster(tmp_path, **SHORT) as cluster:
        cluster.quotas.alter({"client-id": "creator"}, set={"controller_mutation_rate": 1})
        with RawClient(address(cluster), "creator") as client:
            client.call(create_topics_request("c1", 20))
        with RawClient(address(cluster), "creator") as client:
            refused = client.call(create_topics_request("c2", 1))
    assert refused.response.throttle_time_ms > 0
    rows = [r for r in read_rows(tmp_path) if r["throttle_cause"] == "mutation"]
    assert len(rows) == 1 and rows[0]["quota_rate"] is not None and rows[0]["quota_rate"] > 1.0


# ------------------------------------------------------------ 3. only whole files


def client_load(cluster: MockCluster, client_id: str, requests: int, answered: list[Sent]) -> None:
    """`requests` requests one after the other (metadata and produces), appended to
    `answered` once answered."""
    with RawClient(address(cluster), client_id) as client:
        for i in range(requests):
            if i % 2:
                request = produce_request({"load": {0: batch([b"%s-%d" % (client_id.encode(), i)])}})
            else:
                request = metadata_request()
            answered.append(client.call(request))


def test_only_whole_files_are_visible_while_requests_flow(tmp_path: Path) -> None:
    roll, clients, per_client = 5, 4, 50
    stop = threading.Event()
    seen: dict[Path, int] = {}  # visible file -> rows, as the poller first read it
    seen_while_loading: list[Path] = []
    problems: list[str] = []
    loading = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            for path in visible_files(tmp_path):
                if path in seen:
                    continue
                try:
                    seen[path] = read_checked(tmp_path, path).num_rows
                except Exception as exc:  # collected: the assertion is made on the test's thread
                    problems.append(f"{path}: {exc!r}")
                    seen[path] = -1
                if loading.is_set():
                    seen_while_loading.append(path)

    def load(cluster: MockCluster, client_id: str) -> None:
        """Blocks of `roll` requests, at least `per_client`, until the poller has read a
        file while requests flowed (the broker may answer them all faster than the
        writer's first file appears)."""
        done = 0
        while done < per_client or (not seen_while_loading and done < 100 * per_client):
            client_load(cluster, client_id, roll, answered)
            done += roll

    poller = threading.Thread(target=poll, name="metrics-poller")
    with metrics_cluster(tmp_path, metrics_roll_rows=roll, metrics_roll_ms=600_000) as cluster:
        cluster.create_topic("load")
        poller.start()
        answered: list[Sent] = []
        loading.set()
        threads = [threading.Thread(target=load, args=(cluster, f"c{i}")) for i in range(clients)]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=120)
            loading.clear()
            total = len(answered)
            assert total >= clients * per_client and total % roll == 0
            # total is a multiple of roll: every row is written without a flush.
            wait_for(lambda: cluster_sink_counters(cluster)["rows-written"] == total, what="all rows written")
            counters = cluster_sink_counters(cluster)
            wait_for(lambda: len(seen) >= counters["files-written"], what="the poller to see every file")
        finally:
            stop.set()
            poller.join(timeout=30)
        assert counters["lag-rows"] == 0 and counters["write-errors"] == 0
    assert problems == []
    assert seen_while_loading, "the poller saw no file while requests flowed"
    assert sum(seen.values()) == total
    assert all(1 <= rows <= roll for rows in seen.values())
    if len({p.parent for p in seen}) == 1:  # not across UTC midnight: exactly `roll` rows a file
        assert set(seen.values()) == {roll} and len(seen) == total // roll == counters["files-written"]
    # Whole files stay whole: read again, nothing changed.
    assert {p: read_checked(tmp_path, p).num_rows for p in visible_files(tmp_path)} == seen
    assert hidden_files(tmp_path) == []


def pipelined(client: RawClient, count: int) -> None:
    """`count` metadata requests in one write, then their answers."""
    frames = b""
    for _ in range(count):
        client.correlation_id += 1
        frames += encode_request(metadata_request(), client.correlation_id, client.client_id)
    client.sock.sendall(frames)
    for _ in range(count):
        read_frame(client.sock)


def test_files_roll_by_time_before_reaching_roll_rows(tmp_path: Path) -> None:
    with metrics_cluster(tmp_path, metrics_roll_rows=1000, metrics_roll_ms=100) as cluster:
        with RawClient(address(cluster), "timed") as client:
            started = time.monotonic()
            pipelined(client, 3)  # handled together: all in the first roll
            wait_for(lambda: len(visible_files(tmp_path)) == 1, timeout=5, what="a file rolled by time")
            assert time.monotonic() - started >= 0.1 - CLOCK_SLACK_S
            [first] = visible_files(tmp_path)
            assert read_checked(tmp_path, first).num_rows == 3
            assert cluster_sink_counters(cluster) == {
                "rows-added": 3.0,
                "rows-written": 3.0,
                "files-written": 1.0,
                "bytes-written": float(first.stat().st_size),
                "lag-rows": 0.0,
                "write-errors": 0.0,
            }
            # The timer starts again with the next row.
            pipelined(client, 2)
            wait_for(
                lambda: len(visible_files(tmp_path)) == 2, timeout=5, what="a second file rolled by time"
            )
            [second] = [p for p in visible_files(tmp_path) if p != first]
            assert read_checked(tmp_path, second).num_rows == 2
    assert len(read_rows(tmp_path)) == 5


def test_nothing_is_visible_before_a_roll_and_stop_flushes(tmp_path: Path) -> None:
    """The control of the above: neither roll reached, nothing is written until stop."""
    with metrics_cluster(tmp_path, metrics_roll_rows=1000, metrics_roll_ms=600_000) as cluster:
        with RawClient(address(cluster), "held") as client:
            for _ in range(7):
                client.call(metadata_request())
        time.sleep(0.3)
        assert visible_files(tmp_path) == [] and hidden_files(tmp_path) == []
        assert cluster_sink_counters(cluster)["lag-rows"] == 7
    assert len(read_rows(tmp_path)) == 7


# -------------------------------------------------------------- 6. backpressure


@contextmanager
def blocked_writer(sink: MetricsSink, monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The sink's writer thread waits for the event before each write."""
    release = threading.Event()
    write = sink._write

    def wait_then_write(rows: Any, sequence: int) -> tuple[int, int]:
        assert release.wait(timeout=60), "writer never released"
        return write(rows, sequence)

    monkeypatch.setattr(sink, "_write", wait_then_write)
    try:
        yield release
    finally:
        release.set()


def unanswered(client: RawClient, wait: float = 0.5) -> bool:
    """True when nothing arrives within `wait` s (what does arrive is left to read)."""
    client.sock.settimeout(wait)
    try:
        client.sock.recv(1, socket.MSG_PEEK)
    except TimeoutError:
        return True
    finally:
        client.sock.settimeout(10)
    return False


def test_backlogged_sink_stops_reading_until_the_writer_catches_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    roll, buffer, total = 2, 4, 20
    with metrics_cluster(tmp_path, metrics_roll_rows=roll, metrics_buffer_rows=buffer) as cluster:
        sink = cluster.metrics_sink
        assert sink is not None
        with blocked_writer(sink, monkeypatch) as release, RawClient(address(cluster), "pressed") as client:
            for _ in range(buffer):
                client.call(metadata_request())
            # The buffer is full (rows waiting + rows handed to the writer): the next one is not read.
            waiting = client.send(metadata_request())
            assert unanswered(client)
            assert cluster_sink_counters(cluster) == {
                "rows-added": float(buffer),
                "rows-written": 0.0,
                "files-written": 0.0,
                "bytes-written": 0.0,
                "lag-rows": float(buffer),
                "write-errors": 0.0,
            }
            assert unanswered(client, wait=0.2)  # still not
            release.set()
            client.receive(waiting)
            for _ in range(total - buffer - 1):
                client.call(metadata_request())
            assert len(client.sent) == total and all(s.response is not None for s in client.sent)
    rows = read_rows(tmp_path)
    assert len(rows) == total == sink.rows_added == sink.rows_written
    assert sorted(r["correlation_id"] for r in rows) == list(range(1, total + 1))


def test_backlog_pauses_every_connection_and_drops_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Several clients at once: while the writer is blocked, the broker answers about
    the buffer's worth and then nothing; after release, everything, and every row is kept."""
    roll, buffer, clients, per_client = 5, 20, 4, 30
    with metrics_cluster(tmp_path, metrics_roll_rows=roll, metrics_buffer_rows=buffer) as cluster:
        cluster.create_topic("load")
        sink = cluster.metrics_sink
        assert sink is not None
        answered: list[Sent] = []
        threads = [
            threading.Thread(target=client_load, args=(cluster, f"p{i}", per_client, answered))
            for i in range(clients)
        ]
        with blocked_writer(sink, monkeypatch) as release:
            for thread in threads:
                thread.start()
            wait_for(lambda: cluster.on_loop(lambda: sink.backlogged), what="the sink to be backlogged")
            time.sleep(0.3)
            stalled = len(answered)
            # Each connection may finish the request it was handling when the buffer filled.
            assert buffer <= stalled <= buffer + clients
            time.sleep(0.3)
            assert len(answered) == stalled
            written, lag, added = cluster.on_loop(lambda: (sink.rows_written, sink.lag_rows, sink.rows_added))
            assert written == 0 and lag == added == stalled
            release.set()
            for thread in threads:
                thread.join(timeout=60)
        assert len(answered) == clients * per_client
    rows = read_rows(tmp_path)
    assert len(rows) == clients * per_client == sink.rows_written
    assert Counter(r["client_id"] for r in rows) == {f"p{i}": per_client for i in range(clients)}


def test_a_failed_write_is_retried_and_loses_no_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails (a full disk) keeps its rows for the next roll."""
    with metrics_cluster(tmp_path, metrics_roll_rows=2, metrics_roll_ms=600_000) as cluster:
        sink = cluster.metrics_sink
        assert sink is not None
        write = sink._write
        failures = [OSError("No space left on device")]

        def fail_once(rows: Any, sequence: int) -> tuple[int, int]:
            if failures:
                raise failures.pop()
            return write(rows, sequence)

        monkeypatch.setattr(sink, "_write", fail_once)
        with RawClient(address(cluster), "retry") as client:
            client.call(metadata_request())
            client.call(metadata_request())
            wait_for(lambda: cluster_sink_counters(cluster)["write-errors"] == 1, what="the failed write")
            assert visible_files(tmp_path) == []
            client.call(metadata_request())  # the next roll writes all three
            wait_for(lambda: cluster_sink_counters(cluster)["rows-written"] == 3, what="the retry")
    assert sorted(r["correlation_id"] for r in read_rows(tmp_path)) == [1, 2, 3]


def test_a_failed_write_while_backlogged_does_not_stop_the_broker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with metrics_cluster(
        tmp_path, metrics_roll_rows=4, metrics_buffer_rows=4, metrics_roll_ms=100
    ) as cluster:
        sink = cluster.metrics_sink
        assert sink is not None
        write = sink._write
        failures = [OSError("No space left on device")]

        def fail_once(rows: Any, sequence: int) -> tuple[int, int]:
            if failures:
                raise failures.pop()
            return write(rows, sequence)

        monkeypatch.setattr(sink, "_write", fail_once)
        with RawClient(address(cluster), "stuck", timeout=1.5) as client:
            for _ in range(4):  # the 4th rolls (and fills the buffer); that write fails
                client.call(metadata_request())
            wait_for(lambda: cluster_sink_counters(cluster)["write-errors"] == 1, what="the failed write")
            # The disk is fine again: within a few roll.ms the rows should be retried and
            # the connection read again.
            client.call(metadata_request())
    assert len(read_rows(tmp_path)) == 5


@pytest.mark.parametrize("how", ["pipelined", "new-connections"])
def test_backlog_holds_every_request_not_yet_handled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    roll, buffer, more = 2, 4, 20
    with metrics_cluster(tmp_path, metrics_roll_rows=roll, metrics_buffer_rows=buffer) as cluster:
        sink = cluster.metrics_sink
        assert sink is not None
        with blocked_writer(sink, monkeypatch) as release, RawClient(address(cluster), "first") as client:
            later: list[RawClient] = []
            if how == "pipelined":
                # One short of full, then a burst the broker reads in one go: the first
                # of it fills the buffer, the rest should wait.
                for _ in range(buffer - 1):
                    client.call(metadata_request())
                assert not cluster.on_loop(lambda: sink.backlogged)
                # One write: the broker reads them together; answers are read after release.
                burst = threading.Thread(target=pipelined, args=(client, more))
                burst.start()
            else:
                for _ in range(buffer):
                    client.call(metadata_request())
                assert cluster.on_loop(lambda: sink.backlogged)
                for i in range(more):
                    later.append(RawClient(address(cluster), f"late-{i}"))
                    later[-1].send(metadata_request())
            time.sleep(0.5)
            handled = cluster.on_loop(lambda: sink.rows_added)
            release.set()
            if how == "pipelined":
                burst.join(timeout=30)
                assert not burst.is_alive()
            for late in later:
                read_frame(late.sock)
                late.sock.close()
    assert len(read_rows(tmp_path)) == client.correlation_id + len(later)  # nothing dropped
    assert handled == buffer


# ------------------------------------------------------------------ 7. the schema


def test_arrow_and_spark_schemas_agree() -> None:
    from pyspark.sql import types  # no SparkSession: no JVM

    from spark.jobs import spark_schema

    arrow = arrow_schema()
    spark = spark_schema()
    assert list(COLUMN_NAMES) == ISSUE_COLUMNS
    assert arrow.names == ISSUE_COLUMNS
    assert [f.name for f in spark.fields] == ISSUE_COLUMNS
    assert [f.nullable for f in arrow] == [f.nullable for f in spark.fields]
    corresponding = {
        pa.timestamp("us", tz="UTC"): types.TimestampType(),
        pa.int16(): types.ShortType(),
        pa.int32(): types.IntegerType(),
        pa.int64(): types.LongType(),
        pa.float64(): types.DoubleType(),
        pa.string(): types.StringType(),
    }
    for arrow_field, spark_field in zip(arrow, spark.fields, strict=True):
        assert corresponding[arrow_field.type] == spark_field.dataType, (arrow_field, spark_field)
    assert arrow.metadata == {SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode()}
    assert arrow.field("ts").type == pa.timestamp("us", tz="UTC")  # µs precision, UTC
    required = {"ts", "broker_id", "api_key", "api_name", "correlation_id", "request_bytes", "throttle_cause"}
    assert not any(arrow.field(name).nullable for name in required)


def test_written_files_carry_the_schema_version(tmp_path: Path) -> None:
    with (
        metrics_cluster(tmp_path, metrics_roll_rows=2) as cluster,
        RawClient(address(cluster), "v") as client,
    ):
        for _ in range(5):
            client.call(metadata_request())
    files = visible_files(tmp_path)
    assert len(files) == 3
    for path in files:
        assert pq.read_schema(path).metadata[SCHEMA_VERSION_KEY] == str(SCHEMA_VERSION).encode()
        assert pq.read_metadata(path).metadata[SCHEMA_VERSION_KEY] == str(SCHEMA_VERSION).encode()
        assert pq.read_schema(path).remove_metadata().equals(arrow_schema().remove_metadata())


# ------------------------------------------------- 4, 5. SIGTERM and kill -9 (a child)


@pytest.fixture
def spawn() -> Iterator[Callable[..., BrokerProcess]]:
    with broker_processes() as start_broker:

        def start(directory: Path, *overrides: str) -> BrokerProcess:
            args = ["--port", "0", "--metrics-dir", str(directory)]
            for override in overrides:
                args += ["--override", override]
            return start_broker(*args)

        yield start


def rows_by_client(rows: list[dict[str, Any]]) -> Counter[tuple[str, int]]:
    return Counter((r["client_id"], r["correlation_id"]) for r in rows)


class LoadThread(threading.Thread):
    """Requests one after the other until the broker goes away; `answered` holds the
    correlation ids whose answer arrived, `sent` the ones written."""

    def __init__(self, broker_address: tuple[str, int], client_id: str) -> None:
        super().__init__(name=f"load-{client_id}", daemon=True)
        self.client = RawClient(broker_address, client_id)
        self.answered: list[int] = []
        self.sent: list[int] = []

    def run(self) -> None:
        client = self.client
        try:
            while True:
                request = (
                    metadata_request()
                    if client.correlation_id % 3
                    else ApiVersionsRequest[3](client_software_name="load", client_software_version="1")
                )
                sent = client.send(request)
                self.sent.append(sent.correlation_id)
                client.receive(sent)
                self.answered.append(sent.correlation_id)
        except (OSError, ConnectionError):
            pass  # the broker stopped or died
        finally:
            client.sock.close()

    def keys(self, ids: list[int]) -> set[tuple[str, int]]:
        assert self.client.client_id is not None
        return {(self.client.client_id, i) for i in ids}


def test_sigterm_writes_every_buffered_row(tmp_path: Path, spawn: Callable[..., BrokerProcess]) -> None:
    roll, per_client = 7, 20
    broker = spawn(tmp_path, f"metrics.roll.rows={roll}", "metrics.roll.ms=600000")
    where = broker.address()
    clients = [RawClient(where, f"t{i}") for i in range(2)]
    for client in clients:
        for _ in range(per_client):
            client.call(metadata_request())
    answered = 2 * per_client
    # Whole rolls are on disk; the remainder waits in the buffer for the flush.
    on_disk = answered // roll * roll
    wait_for(lambda: len(read_rows(tmp_path)) == on_disk, what=f"{on_disk} rows on disk")
    time.sleep(0.2)
    assert len(read_rows(tmp_path)) == on_disk < answered
    broker.proc.send_signal(signal.SIGTERM)
    assert broker.wait(timeout=15) == 0, broker.stderr
    for client in clients:
        client.sock.close()
    assert "Traceback" not in broker.stderr
    rows = read_rows(tmp_path)
    assert len(rows) == answered
    expected = {(c.client_id, s.correlation_id) for c in clients for s in c.sent}
    assert rows_by_client(rows) == Counter(expected)
    assert hidden_files(tmp_path) == []


def test_sigterm_under_load_rows_equal_requests_answered(
    tmp_path: Path, spawn: Callable[..., BrokerProcess]
) -> None:
    broker = spawn(tmp_path, "metrics.roll.rows=50", "metrics.roll.ms=600000")
    where = broker.address()
    threads = [LoadThread(where, f"l{i}") for i in range(4)]
    for thread in threads:
        thread.start()
    wait_for(lambda: sum(len(t.answered) for t in threads) >= 500, what="500 answers")
    broker.proc.send_signal(signal.SIGTERM)
    assert broker.wait(timeout=15) == 0, broker.stderr
    for thread in threads:
        thread.join(timeout=10)
        assert not thread.is_alive()
    assert "Traceback" not in broker.stderr
    answered = set().union(*(t.keys(t.answered) for t in threads))
    rows = read_rows(tmp_path)
    # Counted on the client side: every answer received has its row, and no other row exists.
    assert len(rows) == len(answered) >= 500
    assert rows_by_client(rows) == Counter(answered)
    assert hidden_files(tmp_path) == []


@pytest.mark.parametrize("files_before_kill", [3, 20])
def test_kill_9_leaves_no_partial_visible_file(
    tmp_path: Path, spawn: Callable[..., BrokerProcess], files_before_kill: int
) -> None:
    roll = 3
    broker = spawn(tmp_path, f"metrics.roll.rows={roll}", "metrics.roll.ms=600000")
    where = broker.address()
    threads = [LoadThread(where, f"k{i}") for i in range(4)]
    for thread in threads:
        thread.start()
    wait_for(lambda: len(visible_files(tmp_path)) >= files_before_kill, what=f"{files_before_kill} files")
    broker.proc.send_signal(signal.SIGKILL)
    assert broker.wait(timeout=15) == -signal.SIGKILL
    for thread in threads:
        thread.join(timeout=10)
        assert not thread.is_alive()

    for path in hidden_files(tmp_path):  # a write the kill interrupted
        assert TEMP_NAME.match(path.name), path
    files = visible_files(tmp_path)
    assert len(files) >= files_before_kill
    rows: list[dict[str, Any]] = []
    for path in files:  # each one whole: readable, its schema and version, 1..roll rows
        table = read_checked(tmp_path, path)
        assert 1 <= table.num_rows <= roll
        rows.extend(table.to_pylist())
    # Rows are written after their answers: each names a request sent, none twice.
    sent = set().union(*(t.keys(t.sent) for t in threads))
    counted = rows_by_client(rows)
    assert set(counted) <= sent
    assert max(counted.values()) == 1
