"""Regression tests for what the fuzzer (test_fuzz_wire.py, scripts/fuzz.py) found, each
named by the input that found it, written out as the bytes sent (size prefix, request
header v1/v2 with client id "fz", body). Responses are decoded with kafka-python's
structs; what is checked is the broker's behaviour: Kafka's answer or a closed
connection, never a stall or an ERROR in the broker's log.
"""

from __future__ import annotations

import gc
import logging
import socket
import struct
from collections.abc import Iterator
from typing import Any

import pytest

from broker import MockCluster
from messages.registry import response_class
from protocol.errors import ErrorCode
from tests.conftest import FAST
from tests.support.wire import read_frame

API_VERSIONS_V0 = bytes.fromhex("0000000c 0012 0000 00000063 0002 667a")  # correlation id 99


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(config=FAST) as running:
        yield running


@pytest.fixture
def broker_errors(caplog: pytest.LogCaptureFixture) -> Iterator[list[logging.LogRecord]]:
    """The ERROR records the broker logs during the test (the clients' excluded)."""
    caplog.set_level(logging.INFO)
    errors: list[logging.LogRecord] = []
    yield errors
    errors.extend(r for r in caplog.records if r.levelno >= logging.ERROR and not r.name.startswith("kafka"))


def connect(cluster: MockCluster) -> socket.socket:
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def answer(sock: socket.socket, frame: bytes, api_key: int, version: int) -> Any:
    sock.sendall(frame)
    response = response_class(api_key).decode(read_frame(sock), version=version, header=True)
    (correlation_id,) = struct.unpack_from(">i", frame, 8)
    assert response.header.correlation_id == correlation_id
    return response


def assert_closed(sock: socket.socket) -> None:
    sock.settimeout(10)
    assert sock.recv(1) == b"", "the broker should have closed the connection"


def assert_serving(cluster: MockCluster) -> None:
    with connect(cluster) as sock:
        assert answer(sock, API_VERSIONS_V0, 18, 0).error_code == 0


# -- InitProducerId without a transactional id, at the last epoch -------------------------
# v4: size, api key 22, v4, correlation id 1, client id "fz", no tags transactional id
# null, timeout 60000, producer id 7, producer epoch 32767 (Short.MaxValue), no tags
INIT_PRODUCER_ID_LAST_EPOCH = bytes.fromhex(
    "0000001d 0016 0004 00000001 0002 667a 00 00 0000ea60 0000000000000007 7fff 00"
)


def test_init_producer_id_at_the_last_epoch_gets_a_new_id(
    cluster: MockCluster, broker_errors: list[Any]
) -> None:
    """Found: the broker bumped the named epoch to 32768, which failed to encode as an
    int16 and stalled the connection. Kafka's coordinator gives a request without a
    transactional id a new producer id at epoch 0, whatever id and epoch it names."""
    with connect(cluster) as sock:
        first = answer(sock, INIT_PRODUCER_ID_LAST_EPOCH, 22, 4)
        second = answer(
            sock, INIT_PRODUCER_ID_LAST_EPOCH.replace(b"\x00\x00\x00\x01", b"\x00\x00\x00\x02", 1), 22, 4
        )
    assert (first.error_code, first.producer_epoch) == (0, 0)
    assert (second.error_code, second.producer_epoch) == (0, 0)
    assert first.producer_id >= 0 and second.producer_id not in (first.producer_id, 7)
    assert not broker_errors


@pytest.mark.parametrize(("producer_id", "epoch"), [(7, -1), (-1, 3)])
def test_init_producer_id_with_an_id_or_an_epoch_alone_is_invalid(
    cluster: MockCluster, producer_id: int, epoch: int
) -> None:
    """KafkaApis refuses an id without an epoch (or the reverse) before the coordinator."""
    frame = INIT_PRODUCER_ID_LAST_EPOCH[:-11] + struct.pack(">qh", producer_id, epoch) + b"\x00"
    with connect(cluster) as sock:
        response = answer(sock, frame, 22, 4)
    assert (response.error_code, response.producer_id, response.producer_epoch) == (
        ErrorCode.INVALID_REQUEST,
        -1,
        -1,
    )


# -- CreateTopics and CreatePartitions asking for 2^31-1 partitions ---------------------------
# CreateTopics v7: topics [{name "fz-huge", num_partitions 2147483647, replication factor 1,
# no assignments, no configs}], timeout 1000, validate_only false
CREATE_TOPICS_HUGE = bytes.fromhex(
    "00000025 0013 0007 00000002 0002 667a 00 02 08 667a2d68756765 7fffffff 0001 01 01 00 000003e8 00 00"
)
# CreatePartitions v3: topics [{name "fz-grow", count 2147483647, assignments null}],
# timeout 1000, validate_only false
CREATE_PARTITIONS_HUGE = bytes.fromhex(
    "00000022 0025 0003 00000003 0002 667a 00 02 08 667a2d67726f77 7fffffff 00 00 000003e8 00 00"
)


def test_create_topics_with_2_31_partitions_is_a_policy_violation(
    cluster: MockCluster, broker_errors: list[Any]
) -> None:
    """Found: placing 2^31-1 partitions stalled the broker (and would have taken all
    memory). Kafka's controller refuses more than 10,000 partitions per request."""
    with connect(cluster) as sock:
        response = answer(sock, CREATE_TOPICS_HUGE, 19, 7)
    (topic,) = response.topics
    assert (topic.name, topic.error_code) == ("fz-huge", ErrorCode.POLICY_VIOLATION)
    assert topic.error_message == "Excessively large number of partitions per request."
    assert (topic.num_partitions, topic.replication_factor) == (-1, -1)
    assert "fz-huge" not in cluster.on_loop(lambda: set(cluster.state.topics))
    assert_serving(cluster)
    assert not broker_errors


def test_create_partitions_to_2_31_is_refused_and_adds_nothing(
    cluster: MockCluster, broker_errors: list[Any]
) -> None:
    """Found: the same stall growing an existing topic. Kafka's controller writes at most
    10,000 records per request; the overflow is answered by its catch-all."""
    cluster.create_topic("fz-grow", partitions=2)
    with connect(cluster) as sock:
        response = answer(sock, CREATE_PARTITIONS_HUGE, 37, 3)
    (result,) = response.results
    assert (result.name, result.error_code, result.error_message) == (
        "fz-grow",
        ErrorCode.UNKNOWN_SERVER_ERROR,
        None,
    )
    assert cluster.on_loop(lambda: len(cluster.state.topics["fz-grow"].partitions)) == 2
    assert_serving(cluster)
    assert not broker_errors


def test_create_topics_counts_the_partitions_of_the_whole_request(cluster: MockCluster) -> None:
    """Two topics of 5,001 partitions each: 10,002 in the request, refused whole."""
    topic = bytes.fromhex("06 667a2d6132 00001389 0001 01 01 00")  # "fz-a2", 5001 partitions
    body = bytes.fromhex("03") + topic + topic.replace(b"fz-a2", b"fz-b2") + bytes.fromhex("000003e8 00 00")
    payload = bytes.fromhex("0013 0007 00000005 0002 667a 00") + body
    with connect(cluster) as sock:
        response = answer(sock, struct.pack(">i", len(payload)) + payload, 19, 7)
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("fz-a2", ErrorCode.POLICY_VIOLATION),
        ("fz-b2", ErrorCode.POLICY_VIOLATION),
    ]


# -- a throttled response of an API without throttle_time_ms ------------------------------
SASL_HANDSHAKE_V1 = bytes.fromhex("00000013 0011 0001 00000007 0002 667a 0005 504c41494e")  # "PLAIN"
DESCRIBE_QUORUM_V0 = bytes.fromhex("0000000f 0037 0000 00000008 0002 667a 00 01 00")  # no topics


class ForcedThrottle:
    """An interceptor throttling every response by 50 ms, as a quota would."""

    def intercept(self, ctx: Any, request: Any, call: Any) -> Any:
        ctx.forced_throttle_ms = 50
        return call(ctx, request)


def test_a_throttled_response_without_a_throttle_field_is_sent(
    cluster: MockCluster, broker_errors: list[Any]
) -> None:
    """Found (a fuzzer that set a tiny request quota for the user): the pipeline set
    throttle_time_ms on SaslHandshake and DescribeQuorum responses, which have no such
    field, and the connection stalled. KafkaApis throttles them by the mute alone."""
    cluster.on_loop(lambda: cluster.brokers[0].pipeline.add_interceptor(ForcedThrottle()))
    with connect(cluster) as sock:
        assert answer(sock, SASL_HANDSHAKE_V1, 17, 1).error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert answer(sock, DESCRIBE_QUORUM_V0, 55, 0).error_code == 0
        assert answer(sock, API_VERSIONS_V0, 18, 0).error_code == 0
    assert not broker_errors


# -- null elements and short strings: Kafka's readers refuse them ---------------------------
# DescribeGroups v0: groups [null]
DESCRIBE_GROUPS_NULL_ELEMENT = bytes.fromhex("00000012 000f 0000 00000004 0002 667a 00000001 ffff")
# Metadata v1: topics [a name of 50 bytes, 3 of them present]
METADATA_SHORT_NAME = bytes.fromhex("00000015 0003 0001 00000006 0002 667a 00000001 0032 616263")


@pytest.mark.parametrize(
    "frame",
    [DESCRIBE_GROUPS_NULL_ELEMENT, METADATA_SHORT_NAME],
    ids=["null-array-element", "string-past-the-end"],
)
def test_what_kafka_cannot_parse_closes_the_connection(
    cluster: MockCluster, broker_errors: list[Any], frame: bytes
) -> None:
    """Found: a null element of DescribeGroups' groups reached the coordinator's hash
    (AttributeError, UNKNOWN_SERVER_ERROR); a string claiming more bytes than the frame
    holds was read short and answered. Kafka's generated readers refuse both while
    parsing, and the connection closes."""
    with connect(cluster) as sock:
        sock.sendall(frame)
        assert_closed(sock)
    assert_serving(cluster)
    assert not broker_errors


# -- a response that cannot be encoded ------------------------------------------------------
class BadResponse:
    """Answers InitProducerId with an epoch beyond int16 (what the bug above produced)."""

    def intercept(self, ctx: Any, request: Any, call: Any) -> Any:
        if ctx.api_key == 22:
            return ctx.response(throttle_time_ms=0, error_code=0, producer_id=1, producer_epoch=40_000)
        return call(ctx, request)


def test_a_response_that_fails_to_encode_closes_the_connection(
    cluster: MockCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug that makes a response unencodable is logged as one, and the connection
    closes instead of stalling with the request unanswered (and every later one)."""
    cluster.on_loop(lambda: cluster.brokers[0].pipeline.add_interceptor(BadResponse()))
    with connect(cluster) as sock:
        sock.sendall(INIT_PRODUCER_ID_LAST_EPOCH)
        assert_closed(sock)
    assert_serving(cluster)
    assert any("failed to encode" in r.getMessage() for r in caplog.records if r.levelno == logging.ERROR)


# -- a request that waits, then a bad size prefix in the same turn of the loop ---------------
# The mutate engine sends a bad size prefix once the frames before it expecting an answer
# were answered; a mutated frame before it (answered or not) may be a request that waits
# (here AlterClientQuotas, whose handler is a coroutine). When both reads reach the broker
# in one turn of its loop, the first frame's task is created and the second read's bad
# size closes the connection before that task ever ran.
ALTER_QUOTAS_WAITING = bytes.fromhex(
    # AlterClientQuotas v1, correlation id 5, client id "fz": entity user "fz-q" (compact
    # strings), op producer_byte_rate = 1000.0 (float64), not remove, validate_only false
    "0000003b 0031 0001 00000005 0002 667a 00"
    "02 02 05 75736572 05 667a2d71 00"
    "02 13 70726f64756365725f627974655f72617465 408f400000000000 00 00 00"
    "00 00"
)
BAD_SIZE = struct.pack(">i", -1)


def test_a_request_read_before_a_bad_size_prefix_is_carried_out(
    cluster: MockCluster, broker_errors: list[Any], recwarn: pytest.WarningsRecorder
) -> None:
    """Found by scripts/fuzz.py (RuntimeWarning: coroutine 'RequestPipeline._finish' /
    'handle' was never awaited): the close cancelled the request's task before its first
    step, so the coroutine was dropped unawaited and the request silently not done (its
    handler's own cleanup never ran either). Kafka reads one request at a time and carries
    out what it read; the close now cancels such a task only once it has started, so the
    handler runs (and the quota store applies what it started writing)."""
    with connect(cluster) as sock:
        answer(sock, API_VERSIONS_V0, 18, 0)  # accepted and served
        local = sock.getsockname()
        server = cluster.brokers[0]

        def two_reads_in_one_turn() -> None:
            conn = next(c for c in server.connections if c.peer == local)
            conn.data_received(ALTER_QUOTAS_WAITING)
            conn.data_received(BAD_SIZE)

        cluster.on_loop(two_reads_in_one_turn)
        assert_closed(sock)
    assert list(cluster.quotas.describe(user="fz-q").values()) == [{"producer_byte_rate": 1000.0}]
    gc.collect()
    assert not [w for w in recwarn if "never awaited" in str(w.message)]
    assert_serving(cluster)
