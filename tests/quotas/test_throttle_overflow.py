"""Throttle times of 2^31 ms or more, as Kafka sends them: ClientQuotaManager narrows
the long throttle to an int (Java's `(int)`: the low 32 bits), and KafkaApis sends
max(bandwidth, request) throttle and mutes only when that is positive. So a wrapped
negative throttle means no throttle and no mute, and a wrapped positive one is sent
and served. With `quota.window.num=2` a first request of S bytes against
producer_byte_rate=1 measures S bytes/s over one 1 s window, so its throttle is
round((S - 1) / 1 x 1000) = 1000 S - 1000 ms."""

from __future__ import annotations

from kafka import KafkaProducer

from broker import MockCluster
from tests.conftest import FAST
from tests.quotas.test_quota_enforcement_wire import (
    Conn,
    batch,
    closed_by_broker,
    metadata_request,
    produce_request,
    request_size,
)

CONFIG = {
    **FAST,
    "quota.window.num": "2",
    "quota.window.size.seconds": "1",
    "message.max.bytes": str(8 << 20),
}


def as_java_int(value: int) -> int:
    """Java's (int) of a long, written out: keep the low 32 bits, read them signed."""
    low = value % 2**32
    return low - 2**32 if low >= 2**31 else low


def test_the_expected_values_wrap() -> None:
    assert as_java_int(2_999_999_000) == 2_999_999_000 - 2**32 < 0
    assert 0 < as_java_int(4_999_999_000) == 4_999_999_000 - 2**32 < 2**31


def test_a_throttle_that_wraps_negative_is_no_throttle_for_a_real_producer() -> None:
    """A 3 MB record against 1 byte/s: Kafka's throttle wraps negative, so the
    producer gets its answer with no throttle and goes on at once."""
    with MockCluster(config=CONFIG) as cluster:
        cluster.create_topic("big")
        cluster.quotas.alter({"client-id": "wraps"}, set={"producer_byte_rate": 1})
        producer = KafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers,
            client_id="wraps",
            max_request_size=4 << 20,
            linger_ms=0,
        )
        try:
            first = producer.send("big", b"x" * 3_000_000).get(timeout=30)
            second = producer.send("big", b"small").get(timeout=30)
        finally:
            producer.close(timeout=10)
        throttles = [r["throttle_time_ms"] for r in cluster.requests.list(api_key=0)]
    assert (first.offset, second.offset) == (0, 1)
    assert throttles == [0, 0]


def test_a_throttle_that_wraps_positive_is_sent_and_mutes() -> None:
    """A 5 MB produce: 1000 x S - 1000 ms wraps to a positive int, which the response
    carries and the broker serves by muting (a Metadata request behind it waits)."""
    with MockCluster(config=CONFIG) as cluster:
        cluster.create_topic("big")
        cluster.quotas.alter({"client-id": "mutes"}, set={"producer_byte_rate": 1})
        with Conn(cluster, "mutes", timeout=30) as conn:
            request = produce_request("big", batch([b"y" * 5_000_000]))
            expected = as_java_int(1000 * request_size(request, "mutes") - 1000)
            assert 0 < expected < 2**31
            response = conn.call(request)
            assert response.throttle_time_ms == expected
            assert response.responses[0].partition_responses[0].error_code == 0
            conn.send(metadata_request())
            assert closed_by_broker(conn.sock, timeout=1.0) is None  # muted: no answer


def test_a_throttle_that_wraps_negative_is_not_muted_on_the_wire() -> None:
    with MockCluster(config=CONFIG) as cluster:
        cluster.create_topic("big")
        cluster.quotas.alter({"client-id": "free"}, set={"producer_byte_rate": 1})
        with Conn(cluster, "free", timeout=30) as conn:
            request = produce_request("big", batch([b"z" * 3_000_000]))
            assert as_java_int(1000 * request_size(request, "free") - 1000) < 0
            assert conn.call(request).throttle_time_ms == 0
            assert conn.call(metadata_request()).throttle_time_ms == 0  # not muted
