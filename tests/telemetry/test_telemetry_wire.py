"""GetTelemetrySubscriptions and PushTelemetry in raw frames: the answers to pushes no
client sends on purpose (a wrong subscription id, too early, too large, an unknown
compression, undecodable bytes, after terminating), each with Kafka's error code. The
broker's clock is set by the test, so intervals are exact and nothing waits."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.codec import gzip_encode, lz4_encode, snappy_encode, zstd_encode
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.proto.resource.v1 import resource_pb2

from broker import MockCluster
from messages.registry import request_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.uuids import uuid_string
from tests.support.wire import round_trip

GetTelemetrySubscriptionsRequest = request_class(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS)
PushTelemetryRequest = request_class(ApiKey.PUSH_TELEMETRY)

INTERVAL = 60_000


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Wire:
    def __init__(self, cluster: MockCluster, client_id: str = "wire") -> None:
        host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.correlation_id = 0
        self.client_id = client_id

    def __call__(self, request: Any) -> Any:
        self.correlation_id += 1
        return round_trip(self.sock, request, self.correlation_id, self.client_id)

    def get(self, instance_id: uuid.UUID | None = None) -> Any:
        return self(GetTelemetrySubscriptionsRequest[0](client_instance_id=instance_id or uuid.UUID(int=0)))

    def push(self, instance_id: uuid.UUID, subscription_id: int, **fields: Any) -> int:
        values: dict[str, Any] = {"terminating": False, "compression_type": 0, "metrics": b"", **fields}
        request = PushTelemetryRequest[0](
            client_instance_id=instance_id, subscription_id=subscription_id, **values
        )
        return int(self(request).error_code)


def metrics_data(*names: str, value: float = 1.5) -> bytes:
    """A MetricsData as librdkafka builds it: one resource, one scope, gauges."""
    data = metrics_pb2.MetricsData()
    resource = data.resource_metrics.add()
    resource.resource.CopyFrom(
        resource_pb2.Resource(
            attributes=[common_pb2.KeyValue(key="client_rack", value=common_pb2.AnyValue(string_value="r1"))]
        )
    )
    scope = resource.scope_metrics.add()
    for name in names:
        metric = scope.metrics.add(name=name)
        point = metric.gauge.data_points.add(time_unix_nano=1_700_000_000_000_000_000, as_double=value)
        point.attributes.add(key="node.id", value=common_pb2.AnyValue(int_value=0))
    return data.SerializeToString()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cluster(clock: Clock) -> Iterator[MockCluster]:
    with MockCluster(config={"telemetry.enabled": "true", "telemetry.max.bytes": "2000"}) as running:
        running.client_metrics.set("all", ["org.apache.kafka.producer."], interval_ms=INTERVAL)
        telemetry = running.brokers[0].telemetry
        assert telemetry is not None
        telemetry.clock = clock
        yield running


@pytest.fixture
def wire(cluster: MockCluster) -> Iterator[Wire]:
    connection = Wire(cluster)
    yield connection
    connection.sock.close()


def test_a_new_client_gets_an_instance_id_and_the_subscription(wire: Wire) -> None:
    answer = wire.get()
    assert answer.error_code == ErrorCode.NONE
    assert answer.client_instance_id not in (None, uuid.UUID(int=0))
    assert answer.accepted_compression_types == [4, 3, 1, 2]  # zstd, lz4, gzip, snappy
    assert (answer.push_interval_ms, answer.telemetry_max_bytes, answer.delta_temporality) == (
        INTERVAL,
        2000,
        True,
    )
    assert answer.requested_metrics == ["org.apache.kafka.producer."]
    assert answer.subscription_id != 0


def test_accepted_pushes_are_decoded_whatever_the_compression(
    cluster: MockCluster, wire: Wire, clock: Clock
) -> None:
    payload = metrics_data("org.apache.kafka.producer.request.latency.avg")
    answer = wire.get()
    instance, subscription = answer.client_instance_id, answer.subscription_id
    for compression, encode in (
        (0, bytes),
        (1, gzip_encode),
        (2, snappy_encode),
        (3, lz4_encode),
        (4, zstd_encode),
    ):
        clock.now += INTERVAL
        assert wire.push(instance, subscription, compression_type=compression, metrics=encode(payload)) == 0
    pushes = cluster.client_metrics.pushes()
    assert [push.compression for push in pushes] == [0, 1, 2, 3, 4]
    [point] = pushes[-1].points
    assert (point.name, point.kind, point.value) == (
        "org.apache.kafka.producer.request.latency.avg",
        "gauge",
        1.5,
    )
    assert point.attributes == {"client_rack": "r1", "node.id": "0"}
    assert pushes[-1].client.client_id == "wire"


def test_a_push_before_the_interval_is_throttled(wire: Wire, clock: Clock) -> None:
    answer = wire.get()
    instance, subscription = answer.client_instance_id, answer.subscription_id
    assert wire.push(instance, subscription) == 0  # the first push after a Get: at once
    clock.now += INTERVAL - 1
    assert wire.push(instance, subscription) == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    clock.now += 1
    assert wire.push(instance, subscription) == 0


def test_asking_again_before_the_interval_is_throttled(wire: Wire, clock: Clock) -> None:
    instance = wire.get().client_instance_id
    early = wire.get(instance)
    assert early.error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    assert (early.client_instance_id, early.requested_metrics, early.push_interval_ms) == (None, [], 0)
    clock.now += INTERVAL
    assert wire.get(instance).error_code == 0


def test_an_unknown_subscription_id_lets_the_client_ask_again_at_once(wire: Wire) -> None:
    answer = wire.get()
    instance = answer.client_instance_id
    assert wire.push(instance, answer.subscription_id + 1) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    again = wire.get(instance)  # before the interval: allowed after UNKNOWN_SUBSCRIPTION_ID
    assert (again.error_code, again.subscription_id) == (0, answer.subscription_id)


def test_a_changed_subscription_changes_the_id(cluster: MockCluster, wire: Wire) -> None:
    answer = wire.get()
    cluster.client_metrics.set("all", ["org.apache.kafka.consumer."], interval_ms=INTERVAL)
    assert wire.push(answer.client_instance_id, answer.subscription_id) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    renewed = wire.get(answer.client_instance_id)
    assert renewed.error_code == 0
    assert renewed.subscription_id != answer.subscription_id
    assert renewed.requested_metrics == ["org.apache.kafka.consumer."]


def test_too_large_pushes_get_telemetry_too_large(wire: Wire, clock: Clock) -> None:
    answer = wire.get()
    instance, subscription = answer.client_instance_id, answer.subscription_id
    assert wire.push(instance, subscription, metrics=b"x" * 2001) == ErrorCode.TELEMETRY_TOO_LARGE
    clock.now += INTERVAL
    # Small once compressed, too large once decompressed (Kafka 4.1's check).
    bomb = zstd_encode(metrics_data(*(f"org.apache.kafka.producer.m{i}" for i in range(200))))
    assert len(bomb) <= 2000
    assert (
        wire.push(instance, subscription, compression_type=4, metrics=bomb) == ErrorCode.TELEMETRY_TOO_LARGE
    )


def test_bad_compression_and_bad_bytes(cluster: MockCluster, wire: Wire, clock: Clock) -> None:
    answer = wire.get()
    instance, subscription = answer.client_instance_id, answer.subscription_id
    assert (
        wire.push(instance, subscription, compression_type=9, metrics=b"x")
        == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    )
    assert wire.get(instance).error_code == 0  # asking again is allowed at once after it
    # ... but, as in Kafka, that early Get does not count as one: the push stays paced.
    assert wire.push(instance, subscription) == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    clock.now += INTERVAL
    assert (
        wire.push(instance, subscription, compression_type=4, metrics=b"not zstd") == ErrorCode.INVALID_RECORD
    )
    clock.now += INTERVAL
    # Bytes that decompress but are no MetricsData: accepted, as Kafka's exporters get them.
    assert wire.push(instance, subscription, compression_type=1, metrics=gzip_encode(b"\xff\xff")) == 0
    assert cluster.client_metrics.pushes() == []
    telemetry = cluster.brokers[0].telemetry
    assert telemetry is not None and telemetry.undecodable == 1


def test_nothing_is_accepted_after_a_terminating_push(wire: Wire) -> None:
    answer = wire.get()
    instance, subscription = answer.client_instance_id, answer.subscription_id
    assert wire.push(instance, subscription) == 0
    # A terminating push is never throttled ...
    assert wire.push(instance, subscription, terminating=True) == 0
    # ... and the next one is refused.
    assert wire.push(instance, subscription) == ErrorCode.INVALID_REQUEST


def test_reserved_instance_ids_are_invalid(wire: Wire) -> None:
    for reserved in (uuid.UUID(int=0), uuid.UUID(int=1)):
        assert wire.push(reserved, 0) == ErrorCode.INVALID_REQUEST


def test_match_patterns_choose_the_clients(cluster: MockCluster) -> None:
    cluster.client_metrics.delete("all")
    cluster.client_metrics.set(
        "apps", ["org.apache.kafka.consumer."], interval_ms=1000, match={"client_id": "app-.*"}
    )
    cluster.client_metrics.set("all", ["*"], interval_ms=5000, match={"client_software_name": ".*"})
    app, other = Wire(cluster, "app-1"), Wire(cluster, "batch")
    try:
        matched = app.get()
        assert (matched.requested_metrics, matched.push_interval_ms) == (["org.apache.kafka.consumer."], 1000)
        # client_software_name comes from ApiVersions v3+: this client sent none.
        unmatched = other.get()
        assert (unmatched.requested_metrics, unmatched.push_interval_ms) == ([], 300_000)
        by_id = Wire(cluster, "batch")
        try:
            cluster.client_metrics.set(
                "one", ["org.apache.kafka.producer."], interval_ms=2000,
                match={"client_instance_id": uuid_string(unmatched.client_instance_id)},
            )  # fmt: skip
            mine = by_id.get(unmatched.client_instance_id)
            assert (mine.requested_metrics, mine.push_interval_ms) == (["org.apache.kafka.producer."], 2000)
        finally:
            by_id.sock.close()
    finally:
        app.sock.close()
        other.sock.close()


def test_the_instance_is_forgotten_when_its_connection_closes(cluster: MockCluster) -> None:
    wire = Wire(cluster)
    instance = wire.get().client_instance_id
    assert [i["client_instance_id"] for i in cluster.client_metrics.instances()] == [str(instance)]
    wire.sock.close()
    deadline = time.monotonic() + 30
    while cluster.client_metrics.instances() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cluster.client_metrics.instances() == []
