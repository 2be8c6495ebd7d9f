"""NaN quota values, as Apache Kafka enforces them (issue 15, item 6).

AlterClientQuotas accepts NaN for every key (no comparison with it is true, so every
check of ClientQuotaControlManager.validateQuotaKeyValue passes). What each manager then
does with it:

- connection_creation_rate: the broker narrows it to an int (ClientQuotaMetadataManager,
  `.toInt`): 0 connections/s. Every new connection violates that; QuotaUtils.throttleTime
  divides by the bound 0 (+Infinity, Long.MAX_VALUE once rounded), capped at one window:
  every connection is held for a window, then closed (ConnectionQuotas).
- consumer_byte_rate: KafkaApis caps a fetch at `maxValueInQuotaWindow(...).toInt` = 0
  bytes, and fetchMinBytes at that, so a fetch returns at once with one batch (KIP-74);
  the bytes recorded against NaN never throttle (Math.round(NaN) is 0).
- producer_byte_rate, request_percentage: always "violated", always a 0 ms throttle.
- controller_mutation_rate: the token bucket's tokens become NaN (Math.min keeps NaN),
  never below 0, so nothing is throttled; and they stay NaN after the rate is changed
  back to a number (TokenBucket keeps its tokens across a quota change).

The quotas are set over the wire with kafka-python's client (a NaN float64); traffic is
raw frames (the helpers of test_quota_enforcement_wire) or kafka-python.
"""

from __future__ import annotations

import base64
import math
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.protocol.admin import AlterClientQuotasRequest
from kafka.protocol.consumer import FetchRequest
from kafka.record.memory_records import MemoryRecords

from broker import MockCluster
from tests.quotas.test_quota_enforcement_wire import (
    SHORT,
    THROTTLING_QUOTA_EXCEEDED,
    VALUE,
    WINDOW_MS,
    Conn,
    api_versions_frame,
    batch,
    broker_address,
    client_tags,
    closed_by_broker,
    create_topics,
    metadata_request,
    metric,
    produce_request,
    record_values,
    running,
)

NAN = math.nan
Entity = dict[str, str | None]


@contextmanager
def admin_of(cluster: MockCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)
    try:
        yield client
    finally:
        client.close()


def set_over_the_wire(cluster: MockCluster, entity: Entity, key: str, value: float) -> None:
    """AlterClientQuotas through kafka-python's network client; the entity must be accepted."""
    entry = AlterClientQuotasRequest.EntryData(
        entity=[
            AlterClientQuotasRequest.EntryData.EntityData(entity_type=t, entity_name=n)
            for t, n in entity.items()
        ],
        ops=[AlterClientQuotasRequest.EntryData.OpData(key=key, value=value, remove=False)],
    )
    with admin_of(cluster) as admin:
        request = AlterClientQuotasRequest(entries=[entry], validate_only=False)
        response = admin._manager.run(admin._manager.send, request)
    assert [(e.error_code, e.error_message) for e in response.entries] == [(0, None)]
    [(_, values)] = cluster.quotas.describe(**{k.replace("-", "_"): v for k, v in entity.items()}).items()
    assert math.isnan(values[key])  # stored as sent


def batches(records: bytes | None) -> int:
    memory, count = MemoryRecords(bytes(records or b"")), 0
    while memory.has_next():
        assert memory.next_batch() is not None
        count += 1
    return count


def fill(cluster: MockCluster, topic: str, count: int) -> list[bytes]:
    """`count` one-record batches of ~1 kB."""
    cluster.create_topic(topic)
    values = [VALUE + b"%d" % i for i in range(count)]
    with Conn(cluster, "filler") as producer:
        for value in values:
            assert producer.call(produce_request(topic, batch([value]))).throttle_time_ms == 0
    return values


def fetch(topic: str, offset: int, max_wait_ms: int = 0, min_bytes: int = 1) -> Any:
    partition = FetchRequest.FetchTopic.FetchPartition(
        partition=0, fetch_offset=offset, partition_max_bytes=1 << 20
    )
    return FetchRequest[12](
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=1 << 20,
        session_id=0,
        session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[partition])],
    )


# ------------------------------------------------------------ connection_creation_rate


@pytest.mark.parametrize("entity", [{"ip": "127.0.0.1"}, {"ip": None}], ids=["ip", "default-ip"])
def test_nan_connection_creation_rate_throttles_every_connection(entity: Entity) -> None:
    """NaN is 0 connections/s: even the first connection is held unanswered for one window
    (the throttle, +Infinity, capped at quota.window.size.seconds) and then closed."""
    with running(SHORT) as cluster:
        set_over_the_wire(cluster, entity, "connection_creation_rate", NAN)
        address = broker_address(cluster)
        opened = time.monotonic()
        sockets = [socket.create_connection(address, timeout=5) for _ in range(3)]
        try:
            for sock in sockets:
                sock.sendall(api_versions_frame(1))
            for sock in sockets:
                assert closed_by_broker(sock, timeout=10) == b"", "a connection was answered"
            assert time.monotonic() - opened >= 0.9 * WINDOW_MS / 1000  # held for the window first
        finally:
            for sock in sockets:
                sock.close()
        metrics = {(m.name, tuple(sorted(m.tags.items()))): m.value for m in cluster.metrics()}
        # Every throttle was exactly one window; none of the connections counts in the rate.
        assert metrics["ip-connection-accept-throttle-time", (("listener", "PLAINTEXT"),)] == WINDOW_MS
        assert metrics["connection-accept-rate", (("ip", "127.0.0.1"),)] == 0
        assert metrics["connection-count", ()] == 0


# ------------------------------------------------------------------ consumer_byte_rate


def test_nan_consumer_byte_rate_serves_one_batch_per_fetch() -> None:
    """Each fetch, though it asks for 1 MiB, gets exactly one batch and no throttle; the
    bytes are recorded (byte-rate) but never throttle."""
    with running(SHORT) as cluster:
        values = fill(cluster, "nan-feed", 4)
        set_over_the_wire(cluster, {"client-id": "nan-reader"}, "consumer_byte_rate", NAN)
        consumed: list[tuple[int, bytes]] = []
        with Conn(cluster, "nan-reader") as reader:
            for offset in range(len(values)):
                response = reader.call(fetch("nan-feed", offset))
                assert response.throttle_time_ms == 0
                [partition] = response.responses[0].partitions
                assert partition.error_code == 0
                assert batches(partition.records) == 1
                consumed.extend(record_values(partition.records))
        assert consumed == list(enumerate(values))
        assert metric(cluster, "byte-rate", "Fetch", client_tags("nan-reader")) > 0
        throttled = metric(cluster, "throttle-time", "Fetch", client_tags("nan-reader"))
        assert math.isnan(throttled)  # an Avg of nothing: never throttled


def test_nan_consumer_byte_rate_does_not_long_poll() -> None:
    """fetchMinBytes = min(min_bytes, fetchMaxBytes) = 0: a fetch at the end of the log is
    answered at once, however long max_wait_ms is."""
    with running(SHORT) as cluster:
        values = fill(cluster, "nan-end", 1)
        set_over_the_wire(cluster, {"client-id": "nan-poller"}, "consumer_byte_rate", NAN)
        with Conn(cluster, "nan-poller", timeout=60) as reader:
            started = time.monotonic()
            response = reader.call(fetch("nan-end", len(values), max_wait_ms=30_000, min_bytes=1))
            waited = time.monotonic() - started
        [partition] = response.responses[0].partitions
        assert (partition.error_code, batches(partition.records)) == (0, 0)
        assert waited < 20, f"the fetch long-polled for {waited:.1f} s"  # 30 s if it had waited


def test_nan_consumer_byte_rate_kafka_python_consumer_reads_batch_by_batch() -> None:
    """A real consumer still reads everything, one batch per fetch response."""
    with running(SHORT) as cluster:
        values = fill(cluster, "nan-client", 5)
        set_over_the_wire(cluster, {"client-id": "kp-nan"}, "consumer_byte_rate", NAN)
        cluster.requests.clear()
        consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers,
            client_id="kp-nan",
            enable_auto_commit=False,
            consumer_timeout_ms=10_000,
        )
        try:
            partition = TopicPartition("nan-client", 0)
            consumer.assign([partition])
            consumer.seek(partition, 0)
            got = []
            for message in consumer:
                got.append(message.value)
                if len(got) == len(values):
                    break
        finally:
            consumer.close()
        assert got == values
        fetched = [
            batches(base64.b64decode(p["records"]) if isinstance(p["records"], str) else p["records"])
            for r in cluster.requests.list(api_key=1)
            for t in r["response"]["responses"]
            for p in t["partitions"]
        ]
        assert max(fetched) == 1 and sum(fetched) == len(values), fetched


# ------------------------------------------------------- producer_byte_rate, request_percentage


def test_nan_producer_byte_rate_records_and_never_throttles() -> None:
    with running(SHORT) as cluster:
        cluster.create_topic("nan-in")
        set_over_the_wire(cluster, {"client-id": "nan-writer"}, "producer_byte_rate", NAN)
        with Conn(cluster, "nan-writer") as writer:
            throttles = [
                writer.call(produce_request("nan-in", batch([VALUE]))).throttle_time_ms for _ in range(30)
            ]
        assert throttles == [0] * 30
        assert metric(cluster, "byte-rate", "Produce", client_tags("nan-writer")) > 0


def test_nan_request_percentage_records_and_never_throttles() -> None:
    with running(SHORT) as cluster:
        set_over_the_wire(cluster, {"client-id": "nan-busy"}, "request_percentage", NAN)
        with Conn(cluster, "nan-busy") as busy:
            busy.send(*(metadata_request() for _ in range(50)))
            throttles = [busy.receive().throttle_time_ms for _ in range(50)]
        assert throttles == [0] * 50
        assert metric(cluster, "request-time", "Request", client_tags("nan-busy")) > 0


# ------------------------------------------------------------- controller_mutation_rate


def test_nan_controller_mutation_rate_never_throttles_and_sticks() -> None:
    """NaN tokens are never below 0: 60 partitions in one go pass (a rate of 1 allows a
    burst of 11). Set back to 1, the same sensor's tokens stay NaN, as Kafka's
    TokenBucket keeps them, so it is still not throttled; a fresh client id is."""
    with running() as cluster:
        entity: Entity = {"client-id": "nan-admin"}
        set_over_the_wire(cluster, entity, "controller_mutation_rate", NAN)
        with Conn(cluster, "nan-admin") as conn:
            first = create_topics(conn, 7, ("nan-a", 30), ("nan-b", 30))
        assert [t.error_code for t in first.topics] == [0, 0] and first.throttle_time_ms == 0
        tags = client_tags("nan-admin")
        assert math.isnan(metric(cluster, "tokens", "ControllerMutation", tags))

        cluster.quotas.alter(entity, set={"controller_mutation_rate": 1})
        cluster.quotas.alter({"client-id": "fresh-admin"}, set={"controller_mutation_rate": 1})
        with Conn(cluster, "nan-admin") as conn:
            again = create_topics(conn, 7, ("nan-c", 30), ("nan-d", 30))
        assert [t.error_code for t in again.topics] == [0, 0] and again.throttle_time_ms == 0
        assert math.isnan(metric(cluster, "tokens", "ControllerMutation", tags))
        with Conn(cluster, "fresh-admin") as conn:  # control: a rate of 1 does throttle
            fresh = create_topics(conn, 7, ("fresh-a", 30), ("fresh-b", 30))
        assert [t.error_code for t in fresh.topics] == [0, THROTTLING_QUOTA_EXCEEDED]
        assert fresh.throttle_time_ms > 0
