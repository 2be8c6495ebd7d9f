"""Quota enforcement as a client sees it on the wire (KAFKA-QUOTAS.md §2-§5, §7).

Requests are kafka-python 3's schema-generated structs sent over plain sockets (so
requests can be pipelined and every arrival timed); where the bytes of a response are
asserted, they are written out here by hand from Apache Kafka's JSON schemas, as in
tests/test_quota_wire.py. The brokers are in-process, thread-backed `MockCluster`s.

Most tests use `quota.window.num=2`: a new sensor's rate is then measured over one
padded 1 s window (not 10 s), so one request can violate a quota and throttle times are
predictable (`throttle = round((observed - bound) / bound x 1000)`).
"""

from __future__ import annotations

import math
import socket
import struct
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.errors import ThrottlingQuotaExceededError
from kafka.protocol.admin import CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from broker import MockCluster
from messages.registry import response_class
from tests.conftest import FAST
from tests.support.wire import decode_response, encode_request, read_frame

THROTTLING_QUOTA_EXCEEDED = 89
WINDOW_MS = 1000  # quota.window.size.seconds x 1000
SHORT = {"quota.window.num": "2"}  # a new sensor is measured over 1 s, not 10 s
SLACK_S = 0.020  # timer and scheduling slack allowed below a throttle expiry
ANONYMOUS = "ANONYMOUS"


# ------------------------------------------------------------------------ plumbing


@contextmanager
def running(config: dict[str, str] | None = None) -> Iterator[MockCluster]:
    with MockCluster(brokers=1, config={**FAST, **(config or {})}) as cluster:
        yield cluster


def broker_address(cluster: MockCluster, index: int = 0) -> tuple[str, int]:
    endpoint = cluster.brokers[index].advertised_endpoint("PLAINTEXT")
    return endpoint.host, endpoint.port


def java_round(value: float) -> int:
    return math.floor(value + 0.5)


class Conn:
    """One TCP connection (to broker `index`) with a fixed client id; requests may be pipelined."""

    def __init__(self, cluster: MockCluster, client_id: str, index: int = 0, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(broker_address(cluster, index), timeout=timeout)
        self.client_id = client_id
        self._correlation_id = 0
        self._in_flight: deque[tuple[Any, int]] = deque()

    def __enter__(self) -> Conn:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def frame(self, request: Any) -> bytes:
        """The size-prefixed request (header v1/v2 + body) with the next correlation id."""
        self._correlation_id += 1
        return encode_request(request, self._correlation_id, self.client_id)

    def send(self, *requests: Any) -> None:
        """Sends all `requests` in one write (pipelined); acks=0 produces get no response."""
        data = b""
        for request in requests:
            data += self.frame(request)
            if not (request.API_KEY == 0 and request.acks == 0):
                self._in_flight.append((request, self._correlation_id))
        self.sock.sendall(data)

    def receive_frame(self) -> tuple[Any, bytes]:
        """The next response frame (without its size) and the request it answers."""
        request, correlation_id = self._in_flight.popleft()
        frame = read_frame(self.sock)
        assert struct.unpack_from(">i", frame)[0] == correlation_id
        return request, frame

    def receive(self) -> Any:
        request, frame = self.receive_frame()
        return decode_response(request, frame)

    def call(self, request: Any) -> Any:
        self.send(request)
        return self.receive()


def request_size(request: Any, client_id: str) -> int:
    """Header + body without the size prefix: what producer_byte_rate counts."""
    return len(encode_request(request, 0, client_id)) - 4


def closed_by_broker(sock: socket.socket, timeout: float = 3.0) -> bytes | None:
    """Waits for the broker to close `sock`: returns b"" on close (or reset), else
    whatever was answered instead; None if still open after `timeout`."""
    sock.settimeout(timeout)
    try:
        return sock.recv(4096)
    except (ConnectionResetError, BrokenPipeError):
        return b""
    except TimeoutError:
        return None


def batch(values: list[bytes]) -> bytes:
    builder = MemoryRecordsBuilder(
        magic=2, compression_type=0, batch_size=1 << 24, producer_id=-1, producer_epoch=-1, base_sequence=-1
    )
    for value in values:
        assert builder.append(timestamp=1_700_000_000_000, key=None, value=value) is not None
    builder.close()
    return bytes(builder.buffer())


def produce_request(topic: str, records: bytes, acks: int = 1, version: int = 9, partition: int = 0) -> Any:
    data = ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=records)
    topic_data = ProduceRequest.TopicProduceData(name=topic, partition_data=[data])
    return ProduceRequest[version](transactional_id=None, acks=acks, timeout_ms=5000, topic_data=[topic_data])


def metadata_request(version: int = 12) -> Any:
    return MetadataRequest[version](topics=[])


def fetch_request(topic: str, offset: int, partition_max_bytes: int = 1 << 20, version: int = 12) -> Any:
    partition = FetchRequest.FetchTopic.FetchPartition(
        partition=0, fetch_offset=offset, partition_max_bytes=partition_max_bytes
    )
    return FetchRequest[version](
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        session_id=0,
        session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[partition])],
    )


def record_values(records: bytes | None) -> list[tuple[int, bytes]]:
    found = []
    memory = MemoryRecords(bytes(records or b""))
    while memory.has_next():
        record_batch = memory.next_batch()
        assert record_batch is not None
        found.extend((record.offset, record.value) for record in record_batch)
    return found


def high_watermark(cluster: MockCluster, topic: str) -> int:
    return cluster.on_loop(lambda: cluster.state.topics[topic].partitions[0].log.high_watermark)


def metric(cluster: MockCluster, name: str, group: str, tags: dict[str, str]) -> float:
    found = [m.value for m in cluster.metrics() if (m.name, m.group, m.tags) == (name, group, tags)]
    assert len(found) == 1, f"{group}/{name}{tags}: {[m for m in cluster.metrics() if m.group == group]}"
    return found[0]


def client_tags(client_id: str, user: str = "") -> dict[str, str]:
    return {"user": user, "client-id": client_id}


# ----------------------------------------------------- hand-written response framing


def _i16(value: int) -> bytes:
    return struct.pack(">h", value)


def _i32(value: int) -> bytes:
    return struct.pack(">i", value)


def _i64(value: int) -> bytes:
    return struct.pack(">q", value)


def _string(text: str) -> bytes:
    return _i16(len(text)) + text.encode()


def _compact_string(text: str | None) -> bytes:
    if text is None:
        return b"\x00"
    raw = text.encode()
    assert len(raw) + 1 < 0x80
    return bytes([len(raw) + 1]) + raw


def _compact_count(count: int) -> bytes:
    assert count + 1 < 0x80
    return bytes([count + 1])


def produce_v3_response(correlation_id: int, topic: str, base_offset: int, throttle_ms: int) -> bytes:
    """ProduceResponse v3 (header v0): Responses[] {Name, PartitionResponses[] {Index,
    ErrorCode, BaseOffset, LogAppendTimeMs}}, ThrottleTimeMs last."""
    return (
        _i32(correlation_id)
        + _i32(1)
        + _string(topic)
        + _i32(1)
        + _i32(0)  # Index
        + _i16(0)  # ErrorCode
        + _i64(base_offset)
        + _i64(-1)  # LogAppendTimeMs: CreateTime topic
        + _i32(throttle_ms)
    )


def empty_fetch_v12_response(correlation_id: int, throttle_ms: int) -> bytes:
    """FetchResponse v12 (flexible, header v1) of a throttled fetch: no topics at all."""
    return (
        _i32(correlation_id)
        + b"\x00"  # header tags
        + _i32(throttle_ms)
        + _i16(0)  # ErrorCode NONE
        + _i32(0)  # SessionId
        + _compact_count(0)  # Responses: empty
        + b"\x00"  # body tags
    )


def named_results_response(correlation_id: int, throttle_ms: int, results: list[tuple[str, int]]) -> bytes:
    """DeleteTopicsResponse v5 and CreatePartitionsResponse v3 have the same shape
    (flexible, header v1): ThrottleTimeMs, [] {Name, ErrorCode, ErrorMessage (null here)}."""
    body = _i32(correlation_id) + b"\x00" + _i32(throttle_ms) + _compact_count(len(results))
    for name, error in results:
        body += _compact_string(name) + _i16(error) + _compact_string(None) + b"\x00"
    return body + b"\x00"


def test_hand_framing_matches_kafka_python() -> None:
    """The hand-written layouts decode with kafka-python's schema classes."""
    decoded = response_class(0).decode(produce_v3_response(5, "t", 42, 7), version=3, header=True)
    assert decoded.throttle_time_ms == 7
    assert decoded.responses[0].partition_responses[0].base_offset == 42
    decoded = response_class(1).decode(empty_fetch_v12_response(6, 9), version=12, header=True)
    assert (decoded.throttle_time_ms, decoded.error_code, decoded.session_id, decoded.responses) == (
        9,
        0,
        0,
        [],
    )
    decoded = response_class(20).decode(
        named_results_response(7, 3, [("a", 0), ("b", 89)]), version=5, header=True
    )
    assert [(r.name, r.error_code, r.error_message) for r in decoded.responses] == [
        ("a", 0, None),
        ("b", 89, None),
    ]
    decoded = response_class(37).decode(named_results_response(8, 3, [("c", 89)]), version=3, header=True)
    assert [(r.name, r.error_code, r.error_message) for r in decoded.results] == [("c", 89, None)]


# ------------------------------------------------------- 1. request_percentage


def hammer_metadata(conn: Conn, limit_s: float = 5.0) -> tuple[int, int]:
    """Sequential Metadata v12 requests until one is throttled: (requests, throttle ms)."""
    deadline = time.monotonic() + limit_s
    count = 0
    while time.monotonic() < deadline:
        count += 1
        throttle = conn.call(metadata_request()).throttle_time_ms
        if throttle:
            return count, throttle
    pytest.fail(f"not throttled after {count} Metadata requests")


def test_request_percentage_throttles_that_client_id_only() -> None:
    with running(SHORT) as cluster:
        cluster.quotas.alter({"client-id": "hammer"}, set={"request_percentage": 1})
        with Conn(cluster, "hammer") as hammer:
            count, throttle = hammer_metadata(hammer)
        assert 0 < throttle <= WINDOW_MS
        tags = client_tags("hammer")
        assert metric(cluster, "request-time", "Request", tags) > 1.0  # over the 1 % bound
        assert metric(cluster, "throttle-time", "Request", tags) == throttle  # the one throttle given out

        # Another client id has no quota: as many requests, never a throttle.
        with Conn(cluster, "calm") as calm:
            assert [calm.call(metadata_request()).throttle_time_ms for _ in range(count + 20)] == [0] * (
                count + 20
            )
        calm_throttles = metric(cluster, "throttle-time", "Request", client_tags("calm"))
        assert math.isnan(calm_throttles) or calm_throttles == 0


def test_request_throttle_is_capped_at_one_window() -> None:
    """A tiny request_percentage: the computed throttle is far above one window, the
    response carries exactly quota.window.size.seconds x 1000."""
    with running(SHORT) as cluster:
        cluster.quotas.alter({"client-id": "tiny"}, set={"request_percentage": 1e-6})
        with Conn(cluster, "tiny") as conn:
            assert conn.call(metadata_request()).throttle_time_ms == WINDOW_MS
        assert metric(cluster, "throttle-time", "Request", client_tags("tiny")) == WINDOW_MS
        # ApiVersions is not exempt (only cluster actions, follower fetches and acks=0 are).
        with Conn(cluster, "tiny") as conn:
            versions = ApiVersionsRequest[3](client_software_name="t", client_software_version="1")
            response = conn.call(versions)
        assert (response.error_code, response.throttle_time_ms) == (0, WINDOW_MS)


def test_produce_acks0_is_exempt_from_the_request_quota() -> None:
    """With the client id's request quota violated, an acks=1 produce is throttled, but
    acks=0 produces on the same client id keep being read and appended at once."""
    with running(SHORT) as cluster:
        cluster.create_topic("fire")
        cluster.quotas.alter({"client-id": "p"}, set={"request_percentage": 1e-4})
        with Conn(cluster, "p") as metadata:
            assert metadata.call(metadata_request()).throttle_time_ms > 0  # the quota is violated
        exempt_before = metric(cluster, "exempt-request-time", "Request", {})

        count = 200
        with Conn(cluster, "p") as fire:
            started = time.monotonic()
            fire.send(*(produce_request("fire", batch([b"v%d" % i]), acks=0) for i in range(count)))
            while high_watermark(cluster, "fire") < count and time.monotonic() - started < 5:
                time.sleep(0.005)
            assert high_watermark(cluster, "fire") == count
            # None of them was throttled, so the connection was never muted.
            recorded = cluster.requests.list(api_key=0, limit=count)
            assert [r["throttle_time_ms"] for r in recorded] == [0] * count
        assert metric(cluster, "exempt-request-time", "Request", {}) > exempt_before

        # acks=1 on the same client id: the request quota applies.
        with Conn(cluster, "p") as acked:
            response = acked.call(produce_request("fire", batch([b"acked"]), acks=1))
            assert response.responses[0].partition_responses[0].error_code == 0
            assert 0 < response.throttle_time_ms <= WINDOW_MS
        assert high_watermark(cluster, "fire") == count + 1


# ----------------------------------------------------- 2. controller mutations

MUTATION_RATE = {"controller_mutation_rate": 1}  # burst: 11 tokens (11 x 1 s windows)


def creatable(name: str, partitions: int) -> Any:
    return CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[]
    )


def create_topics(conn: Conn, version: int, *topics: tuple[str, int]) -> Any:
    request = CreateTopicsRequest[version](
        topics=[creatable(name, partitions) for name, partitions in topics],
        timeout_ms=5000,
        validate_only=False,
    )
    return conn.call(request)


def topic_names(cluster: MockCluster) -> set[str]:
    return cluster.on_loop(lambda: set(cluster.state.topics))


def partition_count(cluster: MockCluster, topic: str) -> int:
    return cluster.on_loop(lambda: len(cluster.state.topics[topic].partitions))


@pytest.mark.parametrize("version", [6, 7])
def test_create_topics_strict_from_v6(version: int) -> None:
    with running() as cluster:
        cluster.quotas.alter({"client-id": "ct"}, set=MUTATION_RATE)
        with Conn(cluster, "ct") as conn:
            first = create_topics(conn, version, ("big", 20))  # 11 tokens: may overdraw to -9
            assert [(t.name, t.error_code) for t in first.topics] == [("big", 0)]
            assert first.topics[0].num_partitions == 20
            assert first.throttle_time_ms == 0  # strict: checked before recording
            second = create_topics(conn, version, ("next", 1))
        [result] = second.topics
        assert (result.name, result.error_code, result.error_message) == (
            "next",
            THROTTLING_QUOTA_EXCEEDED,
            None,
        )
        assert (result.num_partitions, result.replication_factor) == (-1, -1)
        # -9 tokens at 1 token/s: 9000 ms less the few ms since.
        assert 8000 <= second.throttle_time_ms <= 9000
        assert topic_names(cluster) == {"big"}
        tags = client_tags("ct")
        assert metric(cluster, "throttle-time", "ControllerMutation", tags) == second.throttle_time_ms
        assert metric(cluster, "tokens", "ControllerMutation", tags) < -8


def test_create_topics_strict_within_one_request() -> None:
    """Topics before the bucket ran dry succeed, later ones in the same request get 89."""
    with running() as cluster:
        cluster.quotas.alter({"client-id": "one"}, set=MUTATION_RATE)
        with Conn(cluster, "one") as conn:
            response = create_topics(conn, 6, ("a", 5), ("b", 20), ("c", 1), ("d", 1))
        assert [(t.name, t.error_code, t.error_message) for t in response.topics] == [
            ("a", 0, None),
            ("b", 0, None),  # 6 tokens left: still >= 0, so b overdraws to -14
            ("c", THROTTLING_QUOTA_EXCEEDED, None),
            ("d", THROTTLING_QUOTA_EXCEEDED, None),
        ]
        assert 13000 <= response.throttle_time_ms <= 14000
        assert topic_names(cluster) == {"a", "b"}


def test_create_topics_v5_is_permissive_but_throttled() -> None:
    with running() as cluster:
        cluster.quotas.alter({"client-id": "old"}, set=MUTATION_RATE)
        with Conn(cluster, "old") as conn:
            first = create_topics(conn, 5, ("big", 20))
        assert [(t.name, t.error_code) for t in first.topics] == [("big", 0)]
        assert 8500 <= first.throttle_time_ms <= 9000  # recorded, then -9 tokens
        # The first connection is muted for ~9 s: the next request goes on a new one.
        with Conn(cluster, "old") as conn:
            second = create_topics(conn, 5, ("next", 1))
        assert [(t.name, t.error_code) for t in second.topics] == [("next", 0)]
        assert 9000 <= second.throttle_time_ms <= 10000
        assert topic_names(cluster) == {"big", "next"}


def test_delete_topics_v5_strict_v4_permissive() -> None:
    with running() as cluster:
        for name, partitions in [("x5", 20), ("y5", 1), ("x4", 20), ("y4", 1)]:
            cluster.create_topic(name, partitions)
        cluster.quotas.alter({"client-id": None}, set=MUTATION_RATE)  # each client id its own bucket
        with Conn(cluster, "strict") as conn:
            request = DeleteTopicsRequest[5](topic_names=["x5", "y5"], timeout_ms=5000)
            conn.send(request)
            _, frame = conn.receive_frame()
        response = decode_response(request, frame)
        assert 8000 <= response.throttle_time_ms <= 9000
        assert frame == named_results_response(
            1, response.throttle_time_ms, [("x5", 0), ("y5", THROTTLING_QUOTA_EXCEEDED)]
        )
        assert topic_names(cluster) == {"y5", "x4", "y4"}

        with Conn(cluster, "permissive") as conn:
            response = conn.call(DeleteTopicsRequest[4](topic_names=["x4", "y4"], timeout_ms=5000))
        assert [(r.name, r.error_code) for r in response.responses] == [("x4", 0), ("y4", 0)]
        assert 9000 <= response.throttle_time_ms <= 10000
        assert topic_names(cluster) == {"y5"}


def grow_request(version: int, name: str, count: int) -> Any:
    return CreatePartitionsRequest[version](
        topics=[CreatePartitionsRequest.CreatePartitionsTopic(name=name, count=count, assignments=None)],
        timeout_ms=5000,
        validate_only=False,
    )


def test_create_partitions_v3_strict_v2_permissive() -> None:
    with running() as cluster:
        for name in ("p3", "q3", "p2", "q2"):
            cluster.create_topic(name, 1)
        cluster.quotas.alter({"client-id": None}, set=MUTATION_RATE)

        with Conn(cluster, "strict") as conn:
            first = conn.call(grow_request(3, "p3", 21))  # adds 20: overdraws 11 tokens to -9
            assert [(r.name, r.error_code) for r in first.results] == [("p3", 0)]
            assert first.throttle_time_ms == 0
            request = grow_request(3, "q3", 2)
            conn.send(request)
            _, frame = conn.receive_frame()
        response = decode_response(request, frame)
        assert 8000 <= response.throttle_time_ms <= 9000
        assert frame == named_results_response(
            2, response.throttle_time_ms, [("q3", THROTTLING_QUOTA_EXCEEDED)]
        )
        assert (partition_count(cluster, "p3"), partition_count(cluster, "q3")) == (21, 1)

        with Conn(cluster, "permissive") as conn:
            first = conn.call(grow_request(2, "p2", 21))
        assert [(r.name, r.error_code) for r in first.results] == [("p2", 0)]
        assert 8500 <= first.throttle_time_ms <= 9000
        with Conn(cluster, "permissive") as conn:
            second = conn.call(grow_request(2, "q2", 2))
        assert [(r.name, r.error_code) for r in second.results] == [("q2", 0)]
        assert 9000 <= second.throttle_time_ms <= 10000
        assert (partition_count(cluster, "p2"), partition_count(cluster, "q2")) == (21, 2)


def test_kafka_python_admin_raises_throttling_quota_exceeded() -> None:
    with running() as cluster:
        cluster.quotas.alter({"client-id": "admin"}, set=MUTATION_RATE)
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="admin")
        try:
            created = admin.create_topics({"big": {"num_partitions": 20, "replication_factor": 1}})
            assert [(t["name"], t["error_code"]) for t in created["topics"]] == [("big", 0)]
            with pytest.raises(ThrottlingQuotaExceededError):
                admin.create_topics({"next": {"num_partitions": 1, "replication_factor": 1}})
        finally:
            admin.close()
        assert topic_names(cluster) == {"big"}


# ----------------------------------------------------------------- 3. muting


def producer_quota_for(request_bytes: int, throttle_ms: int) -> int:
    """A producer_byte_rate under which one request of `request_bytes` (the first on a
    new sensor, measured over exactly 1 s) is throttled for about `throttle_ms`."""
    return round(request_bytes / (1 + throttle_ms / WINDOW_MS))


@pytest.mark.parametrize("version", [3, 9])
def test_throttled_produce_answered_at_once_then_pipelined_request_waits(version: int) -> None:
    with running(SHORT) as cluster:
        cluster.create_topic("slow")
        with Conn(cluster, "tiny-producer") as conn:
            produce = produce_request("slow", batch([b"x" * 100]), acks=1, version=version)
            size = request_size(produce, "tiny-producer")
            quota = producer_quota_for(size, 500)
            cluster.quotas.alter({"client-id": "tiny-producer"}, set={"producer_byte_rate": quota})
            expected_throttle = java_round((size - quota) / quota * WINDOW_MS)  # observed = size / 1 s

            probe = metadata_request(1)  # an old version without a throttle field
            conn.send(produce, probe)
            _, frame = conn.receive_frame()
            first_at = time.monotonic()
            conn.receive_frame()
            second_at = time.monotonic()

        response = decode_response(produce, frame)
        assert response.throttle_time_ms == expected_throttle
        if version == 3:
            assert frame == produce_v3_response(1, "slow", 0, expected_throttle)
        # The throttled response is not held back: the request pipelined behind it is
        # what waits for the throttle (were the response held, both would come together).
        assert second_at - first_at >= expected_throttle / 1000 - SLACK_S
        assert second_at - first_at < expected_throttle / 1000 + 3.0
        assert metric(cluster, "throttle-time", "Produce", client_tags("tiny-producer")) == expected_throttle


def test_acks0_produce_over_producer_byte_rate_mutes_without_a_response() -> None:
    """acks=0 gets no response, but its bytes count and the connection is muted: a
    request pipelined behind it waits out the throttle."""
    with running(SHORT) as cluster:
        cluster.create_topic("silent")
        produce = produce_request("silent", batch([b"y" * 100]), acks=0)
        size = request_size(produce, "quiet")
        quota = producer_quota_for(size, 400)
        cluster.quotas.alter({"client-id": "quiet"}, set={"producer_byte_rate": quota})
        expected_throttle = java_round((size - quota) / quota * WINDOW_MS)
        with Conn(cluster, "quiet") as conn:
            started = time.monotonic()
            conn.send(produce, metadata_request())
            response = conn.receive()
            waited = time.monotonic() - started
        assert response.throttle_time_ms == 0  # Metadata itself is under no quota
        assert waited >= expected_throttle / 1000 - SLACK_S
        assert waited < expected_throttle / 1000 + 3.0
        assert high_watermark(cluster, "silent") == 1
        assert metric(cluster, "throttle-time", "Produce", client_tags("quiet")) == expected_throttle


def test_throttled_metadata_v1_answered_at_once_then_pipelined_request_waits() -> None:
    """Metadata v1 has no throttle field and its clients never back off: the broker still
    answers it at once and then mutes the connection for the (capped) throttle."""
    with running(SHORT) as cluster:
        cluster.quotas.alter({"client-id": "old-client"}, set={"request_percentage": 1e-6})
        with Conn(cluster, "old-client") as conn:
            started = time.monotonic()
            conn.send(metadata_request(1), metadata_request(1))
            first = conn.receive()
            first_at = time.monotonic()
            second = conn.receive()
            second_at = time.monotonic()
            # Muted again after the second: a request sent now also waits a whole window.
            conn.send(ApiVersionsRequest[0]())
            third = conn.receive()
            third_at = time.monotonic()
        assert first.brokers and second.brokers and third.error_code == 0
        # Answered at once, then muted: the second waits a window behind the first.
        assert second_at - first_at >= WINDOW_MS / 1000 - SLACK_S
        assert third_at - second_at >= WINDOW_MS / 1000 - SLACK_S
        assert third_at - started < 3 * WINDOW_MS / 1000 + 3.0
        assert metric(cluster, "throttle-time", "Request", client_tags("old-client")) == WINDOW_MS


def test_unthrottled_client_is_not_muted() -> None:
    """Control for the above: without a quota, pipelined requests come back together."""
    with running(SHORT) as cluster:
        with Conn(cluster, "free") as conn:
            started = time.monotonic()
            conn.send(*(metadata_request() for _ in range(10)))
            throttles = [conn.receive().throttle_time_ms for _ in range(10)]
        assert throttles == [0] * 10
        assert time.monotonic() - started < 3.0  # a muted connection would wait a window per request


# ------------------------------------------------------- 4. fetch under consumer_byte_rate

VALUE = b"v" * 1000


def test_throttled_fetch_is_empty_and_loses_nothing() -> None:
    with running(SHORT) as cluster:
        cluster.create_topic("feed")
        values = [VALUE + b"%d" % i for i in range(4)]
        with Conn(cluster, "producer") as producer:
            for value in values:  # one batch (~1.1 kB) each
                assert producer.call(produce_request("feed", batch([value]))).throttle_time_ms == 0
        # ~1.1 kB per one-batch fetch: the first passes, the second is over 2000 B/s.
        cluster.quotas.alter({"client-id": "reader"}, set={"consumer_byte_rate": 2000})

        consumed: list[tuple[int, bytes]] = []
        throttles = []
        offset = 0
        with Conn(cluster, "reader") as reader:
            deadline = time.monotonic() + 10
            while offset < len(values) and time.monotonic() < deadline:
                request = fetch_request("feed", offset, partition_max_bytes=1100)
                reader.send(request)
                _, frame = reader.receive_frame()
                response = decode_response(request, frame)
                if response.throttle_time_ms:
                    # Throttled: nothing at all, error NONE, session 0 (byte for byte).
                    assert frame == empty_fetch_v12_response(
                        reader._correlation_id, response.throttle_time_ms
                    )
                    throttles.append((offset, response.throttle_time_ms))
                    time.sleep(response.throttle_time_ms / 1000 + 0.05)
                    continue
                [topic] = response.responses
                [partition] = topic.partitions
                assert partition.error_code == 0
                got = record_values(partition.records)
                assert got and got[0][0] == offset
                consumed.extend(got)
                offset = got[-1][0] + 1
        assert throttles, "the quota never throttled a fetch"
        assert throttles[0][0] == 1  # the second fetch was the first over the quota
        # The offset that drew an empty response was served by the next fetch: nothing lost.
        assert consumed == list(enumerate(values))
        tags = client_tags("reader")
        assert metric(cluster, "throttle-time", "Fetch", tags) > 0


def test_fetch_size_capped_at_quota_times_window() -> None:
    """fetchMaxBytes is capped at quota x (samples - 1) x window: 2500 bytes here, so a
    fetch asking for 1 MiB gets two ~1.1 kB batches, not all four."""
    with running(SHORT) as cluster:
        cluster.create_topic("capped")
        values = [VALUE + b"%d" % i for i in range(4)]
        with Conn(cluster, "producer") as producer:
            for value in values:
                producer.call(produce_request("capped", batch([value])))
        cluster.quotas.alter({"client-id": "capped-reader"}, set={"consumer_byte_rate": 2500})
        with Conn(cluster, "capped-reader") as reader:
            response = reader.call(fetch_request("capped", 0))
        assert response.throttle_time_ms == 0
        [partition] = response.responses[0].partitions
        assert record_values(partition.records) == list(enumerate(values[:2]))


# ------------------------------------------------------------- 5. connection quotas


def api_versions_frame(correlation_id: int) -> bytes:
    payload = struct.pack(">hhih", 18, 0, correlation_id, 3) + b"raw"
    return struct.pack(">i", len(payload)) + payload


def answers_api_versions(sock: socket.socket, correlation_id: int = 1) -> bool:
    sock.sendall(api_versions_frame(correlation_id))
    frame = read_frame(sock)
    return struct.unpack_from(">ih", frame) == (correlation_id, 0)


@pytest.mark.parametrize(
    "entity",
    [{"ip": "127.0.0.1"}, {"ip": "localhost"}, {"ip": None}],
    ids=["ip", "host-name", "default-ip"],  # a host name is enforced on its address, as in Kafka
)
def test_connection_creation_rate_closes_later_connections_after_a_delay(
    entity: dict[str, str | None],
) -> None:
    with running(SHORT) as cluster:
        cluster.quotas.alter(entity, set={"connection_creation_rate": 2})
        address = broker_address(cluster)
        first = socket.create_connection(address, timeout=5)
        second = socket.create_connection(address, timeout=5)
        opened = time.monotonic()
        third = socket.create_connection(address, timeout=5)  # 3 in ~1 s > 2/s
        try:
            third.sendall(api_versions_frame(1))
            assert closed_by_broker(third) == b"", "the over-rate connection was answered"
            closed_after = time.monotonic() - opened
            # Closed after the throttle (~500 ms: (3 - 2) / 2 x 1 s), never more than one window.
            assert 0.3 <= closed_after <= WINDOW_MS / 1000 + 3.0, closed_after
            assert answers_api_versions(first) and answers_api_versions(second)
        finally:
            for sock in (first, second, third):
                sock.close()
        metrics = cluster.metrics()
        [rate] = [m for m in metrics if m.name == "connection-accept-rate"]
        assert (rate.group, rate.tags) == ("socket-server-metrics", {"ip": "127.0.0.1"})
        assert rate.value > 0
        [throttle] = [m for m in metrics if m.name == "ip-connection-accept-throttle-time"]
        assert (throttle.group, throttle.tags) == ("socket-server-metrics", {"listener": "PLAINTEXT"})
        assert 300 <= throttle.value <= WINDOW_MS


def test_max_connections_per_ip_closes_at_once() -> None:
    with running({"max.connections.per.ip": "2"}) as cluster:
        address = broker_address(cluster)
        first = socket.create_connection(address, timeout=5)
        second = socket.create_connection(address, timeout=5)
        try:
            assert answers_api_versions(first) and answers_api_versions(second)
            third = socket.create_connection(address, timeout=5)
            opened = time.monotonic()
            with third:
                third.sendall(api_versions_frame(1))
                assert closed_by_broker(third) == b""
                assert time.monotonic() - opened < 3.0  # at once (no rate quota to wait out)
            first.close()
            # Once the broker has seen the close, a new connection is served.
            deadline = time.monotonic() + 2
            while True:
                with socket.create_connection(address, timeout=5) as fresh:
                    try:
                        if answers_api_versions(fresh):
                            break
                    except ConnectionError:
                        pass
                assert time.monotonic() < deadline, "no connection admitted after one closed"
                time.sleep(0.02)
            assert answers_api_versions(second, 2)
        finally:
            first.close()
            second.close()


def test_max_connections_waits_for_a_free_slot() -> None:
    with running({"max.connections": "2"}) as cluster:
        address = broker_address(cluster)
        first = socket.create_connection(address, timeout=5)
        second = socket.create_connection(address, timeout=5)
        third = socket.create_connection(address, timeout=5)
        try:
            assert answers_api_versions(first) and answers_api_versions(second)
            third.sendall(api_versions_frame(7))
            third.settimeout(0.4)
            with pytest.raises(TimeoutError):
                third.recv(1)  # neither answered nor closed: waiting for a slot
            freed = time.monotonic()
            first.close()
            third.settimeout(5)
            frame = read_frame(third)
            assert struct.unpack_from(">ih", frame) == (7, 0)
            assert time.monotonic() - freed < 3.0
            assert answers_api_versions(second, 2)
        finally:
            for sock in (first, second, third):
                sock.close()


# --------------------------------------------------------------------- 6. metrics


def test_metrics_after_throttling_every_client_quota_type() -> None:
    """One (user, client-id) entity throttled on all four quota types: every metric of
    KAFKA-QUOTAS §7 is there, tagged user=ANONYMOUS (unauthenticated) and the client id."""
    with running(SHORT) as cluster:
        cluster.create_topic("m")
        with Conn(cluster, "seed") as seed:
            seed.call(produce_request("m", batch([VALUE])))
        entity = {"user": ANONYMOUS, "client-id": "metered"}
        cluster.quotas.alter(
            entity,
            set={
                # Each bandwidth throttle is far above the capped 1000 ms request throttle,
                # so its own manager mutes and records it.
                "producer_byte_rate": 10,
                "consumer_byte_rate": 10,
                "request_percentage": 1e-6,
                "controller_mutation_rate": 1,
            },
        )
        with Conn(cluster, "metered") as conn:
            assert conn.call(metadata_request()).throttle_time_ms == WINDOW_MS
        with Conn(cluster, "metered") as conn:
            assert conn.call(produce_request("m", batch([b"p"]))).throttle_time_ms > WINDOW_MS
        with Conn(cluster, "metered") as conn:
            response = conn.call(fetch_request("m", 0))
            assert response.throttle_time_ms > WINDOW_MS and response.responses == []
        with Conn(cluster, "metered") as conn:  # muted by the request quota afterwards
            assert create_topics(conn, 7, ("t1", 20)).topics[0].error_code == 0
        with Conn(cluster, "metered") as conn:
            throttled = create_topics(conn, 7, ("t2", 1))
            assert throttled.topics[0].error_code == THROTTLING_QUOTA_EXCEEDED
            assert throttled.throttle_time_ms > WINDOW_MS

        tags = client_tags("metered", user=ANONYMOUS)
        found = {(m.group, m.name): m for m in cluster.metrics() if m.tags == tags}
        assert set(found) == {
            ("Produce", "byte-rate"),
            ("Produce", "throttle-time"),
            ("Fetch", "byte-rate"),
            ("Fetch", "throttle-time"),
            ("Request", "request-time"),
            ("Request", "throttle-time"),
            ("ControllerMutation", "mutation-rate"),
            ("ControllerMutation", "tokens"),
            ("ControllerMutation", "throttle-time"),
        }
        assert found["Produce", "byte-rate"].value > 0
        assert found["Fetch", "byte-rate"].value == 0  # the throttled fetch's bytes were taken back
        assert found["Request", "request-time"].value > 0
        assert found["ControllerMutation", "mutation-rate"].value > 0
        assert found["ControllerMutation", "tokens"].value < 0
        assert found["Request", "throttle-time"].value == WINDOW_MS
        for group in ("Produce", "Fetch", "ControllerMutation"):
            assert found[group, "throttle-time"].value > WINDOW_MS, group
        untagged = {(m.group, m.name) for m in cluster.metrics() if m.tags == {}}
        assert ("Request", "exempt-request-time") in untagged
        for group in ("Produce", "Fetch", "Request", "ControllerMutation"):
            assert (group, "queue-size") in untagged, group
        per_api = {
            (m.tags["request"], m.tags["stat"]): m.value
            for m in cluster.metrics()
            if m.name == "ThrottleTimeMs"
        }
        assert per_api["Metadata", "Max"] == WINDOW_MS
        assert per_api["Produce", "Max"] > WINDOW_MS
        assert (
            0 < per_api["Produce", "Mean"] < per_api["Produce", "Max"]
        )  # the seed's produce was not throttled
        assert per_api["CreateTopics", "Max"] > WINDOW_MS


# ----------------------------------------------------------- 7. sharing an allowance


def test_connections_with_one_client_id_share_its_quota() -> None:
    with running(SHORT) as cluster:
        cluster.create_topic("shared")
        size = request_size(produce_request("shared", batch([VALUE])), "twin")
        quota = round(size * 1.5)  # one request fits, two in the same second do not
        cluster.quotas.alter({"client-id": "twin"}, set={"producer_byte_rate": quota})
        with Conn(cluster, "twin") as one, Conn(cluster, "twin") as other:
            assert one.call(produce_request("shared", batch([VALUE]))).throttle_time_ms == 0
            # A different connection, never used before: throttled by the first one's bytes.
            throttle = other.call(produce_request("shared", batch([VALUE]))).throttle_time_ms
        assert 0 < throttle <= java_round((2 * size - quota) / quota * WINDOW_MS)
        assert metric(cluster, "byte-rate", "Produce", client_tags("twin")) > quota


def test_default_client_id_quota_gives_each_client_id_its_own_allowance() -> None:
    with running(SHORT) as cluster:
        cluster.create_topic("apart")
        size = request_size(produce_request("apart", batch([VALUE])), "aa")  # same length for "bb"
        quota = round(size * 1.5)
        cluster.quotas.alter({"client-id": None}, set={"producer_byte_rate": quota})
        with Conn(cluster, "aa") as first, Conn(cluster, "bb") as second:
            assert first.call(produce_request("apart", batch([VALUE]))).throttle_time_ms == 0
            assert second.call(produce_request("apart", batch([VALUE]))).throttle_time_ms == 0
            # The quota is real: a second request of "aa" in the same second is throttled.
            assert first.call(produce_request("apart", batch([VALUE]))).throttle_time_ms > 0
        assert metric(cluster, "throttle-time", "Produce", client_tags("aa")) > 0
        throttled_bb = metric(cluster, "throttle-time", "Produce", client_tags("bb"))
        assert math.isnan(throttled_bb) or throttled_bb == 0


def test_each_broker_measures_its_own_connections() -> None:
    """Quotas are enforced per broker (each its own sensors): the same client id's bytes
    on broker 0 do not count on broker 1."""
    with MockCluster(brokers=2, config={**FAST, **SHORT}) as cluster:
        cluster.create_topic("spread", partitions=2)
        leaders = cluster.on_loop(lambda: [p.leader for p in cluster.state.topics["spread"].partitions])
        assert sorted(leaders) == [0, 1]
        size = request_size(produce_request("spread", batch([VALUE])), "roaming")
        quota = round(size * 1.5)
        cluster.quotas.alter({"client-id": "roaming"}, set={"producer_byte_rate": quota})

        def to(node: int) -> Any:
            return produce_request("spread", batch([VALUE]), partition=leaders.index(node))

        with Conn(cluster, "roaming", index=0) as zero, Conn(cluster, "roaming", index=1) as one:
            assert zero.call(to(0)).throttle_time_ms == 0
            assert one.call(to(1)).throttle_time_ms == 0  # broker 1 has not seen "roaming"
            assert zero.call(to(0)).throttle_time_ms > 0  # broker 0 has seen it twice
        throttled = {
            m.broker: m.value for m in cluster.metrics() if (m.group, m.name) == ("Produce", "throttle-time")
        }
        assert throttled[0] > 0
        assert math.isnan(throttled[1])
