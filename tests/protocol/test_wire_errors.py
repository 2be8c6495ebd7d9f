"""Malformed input over raw sockets: answered or closed as Kafka does, never a crash.

Frames here are built by hand with `struct`, independently of kafka-python's codecs.
"""

from __future__ import annotations

import dataclasses
import socket
import struct

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from broker import MockCluster
from protocol.api_keys import ApiKey
from tests.support.wire import read_frame


def connect(cluster: MockCluster) -> socket.socket:
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5)
    return sock


def request_frame(
    api_key: int, version: int, correlation_id: int, body: bytes = b"", client_id: bytes = b"raw"
) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def assert_closed(sock: socket.socket) -> None:
    sock.settimeout(5)
    try:
        assert sock.recv(1) == b""
    except ConnectionResetError:
        pass


def parse_api_versions_v0(frame: bytes) -> tuple[int, int, dict[int, tuple[int, int]]]:
    correlation_id, error_code, count = struct.unpack_from(">ihi", frame, 0)
    apis = {}
    for i in range(count):
        key, low, high = struct.unpack_from(">hhh", frame, 10 + 6 * i)
        apis[key] = (low, high)
    return correlation_id, error_code, apis


def healthy_round_trip(cluster: MockCluster) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    errors: list[object] = []
    producer.produce("healthy", b"still served", on_delivery=lambda err, _m: errors.append(err))
    assert producer.flush(10) == 0
    assert errors == [None]


def test_api_versions_v0_by_hand(sync_cluster: MockCluster) -> None:
    with connect(sync_cluster) as sock:
        sock.sendall(request_frame(18, 0, 7))
        correlation_id, error, apis = parse_api_versions_v0(read_frame(sock))
    assert (correlation_id, error) == (7, 0)
    assert apis[0] == (0, 13)  # Produce: as Apache Kafka 4.4 advertises it (v0-2 not served)
    assert apis[1] == (4, 18)
    assert apis[18] == (0, 5)
    assert apis[48] == apis[49] == (0, 1)  # client quota administration (KIP-546)
    assert apis[50] == apis[51] == (0, 0)  # SCRAM credential administration (KIP-554)
    assert apis[26] == (0, 5)  # EndTxn, transaction version 2 (v5) included
    assert apis[23] == (2, 4)  # OffsetForLeaderEpoch: Kafka 4.x dropped v0-1
    assert apis[78] == (1, 2)  # ShareFetch (KIP-932)
    assert apis[88] == apis[89] == (0, 1)  # streams groups (KIP-1071)
    assert 94 not in apis  # only what is implemented is advertised (UnregisterController: not)


def test_api_versions_unsupported_version_answered_in_v0(sync_cluster: MockCluster) -> None:
    with connect(sync_cluster) as sock:
        sock.sendall(request_frame(18, 99, 11))
        correlation_id, error, apis = parse_api_versions_v0(read_frame(sock))
        assert (correlation_id, error) == (11, 35)  # UNSUPPORTED_VERSION
        assert apis[18] == (0, 5)
        # The connection stays usable: the client retries with a supported version.
        sock.sendall(request_frame(18, 0, 12))
        assert parse_api_versions_v0(read_frame(sock))[:2] == (12, 0)


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"\x00\x00\x00\x04GARB", id="garbage-unknown-api-key"),
        pytest.param(struct.pack(">i", -1), id="negative-size"),
        pytest.param(struct.pack(">i", 104857600 + 1), id="size-above-socket.request.max.bytes"),
        pytest.param(struct.pack(">i", 3) + b"\x00\x03\x00", id="frame-shorter-than-header"),
        pytest.param(request_frame(9999, 0, 1), id="unknown-api-key"),
        pytest.param(request_frame(3, 99, 1), id="unsupported-metadata-version"),
        pytest.param(request_frame(0, 1, 1), id="produce-below-kafka-4-minimum"),
        pytest.param(request_frame(3, 1, 1, body=b"\x00\x00\x00\x05\x00"), id="truncated-metadata-body"),
        pytest.param(struct.pack(">ihhihc", 11, 3, 1, 1, 9, b"x"), id="client-id-overruns-frame"),
    ],
)
def test_malformed_input_closes_only_that_connection(sync_cluster: MockCluster, payload: bytes) -> None:
    with connect(sync_cluster) as bystander, connect(sync_cluster) as sock:
        sock.sendall(payload)
        assert_closed(sock)
        # Another connection opened before the bad one is unaffected ...
        bystander.sendall(request_frame(18, 0, 1))
        assert parse_api_versions_v0(read_frame(bystander))[:2] == (1, 0)
    # ... and so are real clients.
    healthy_round_trip(sync_cluster)


def test_truncated_frame_then_disconnect(sync_cluster: MockCluster) -> None:
    with connect(sync_cluster) as sock:
        sock.sendall(request_frame(18, 0, 1)[:9])  # size says more is coming
        sock.shutdown(socket.SHUT_WR)
        assert_closed(sock)
    healthy_round_trip(sync_cluster)


def test_pipelined_requests_answered_in_order(sync_cluster: MockCluster) -> None:
    with connect(sync_cluster) as sock:
        sock.sendall(b"".join(request_frame(18, 0, cid) for cid in range(100, 150)))
        answered = [parse_api_versions_v0(read_frame(sock))[0] for _ in range(50)]
    assert answered == list(range(100, 150))


# -- a handler that fails ------------------------------------------------------------------
def _failing(cluster: MockCluster, api_key: int) -> None:
    """Every broker's handler for `api_key` raises, as a bug would."""

    def explode(ctx: object, request: object) -> object:
        raise RuntimeError("handler bug")

    for broker in cluster.brokers:
        spec = broker.pipeline.handlers[api_key]
        broker.pipeline.handlers = {
            **broker.pipeline.handlers,
            api_key: dataclasses.replace(spec, handler=explode),
        }


def test_a_failing_handler_answers_unknown_server_error_per_entry(
    sync_cluster: MockCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """KafkaApis.handleError: the request's error response, each topic answered with
    UNKNOWN_SERVER_ERROR, and the connection stays usable."""
    _failing(sync_cluster, ApiKey.CREATE_TOPICS)
    admin = AdminClient({"bootstrap.servers": sync_cluster.bootstrap_servers})
    futures = admin.create_topics([NewTopic("a", 1, 1), NewTopic("b", 1, 1)])
    for future in futures.values():
        with pytest.raises(KafkaException) as failed:
            future.result(10)
        assert failed.value.args[0].code() == KafkaError.UNKNOWN
    assert admin.list_topics(timeout=10).cluster_id == sync_cluster.state.cluster_id  # still served
    assert "handler bug" in caplog.text


def test_a_failing_acks0_produce_closes_the_connection(sync_cluster: MockCluster) -> None:
    """ProduceRequest.getErrorResponse is null for acks=0: Kafka closes the connection."""
    _failing(sync_cluster, ApiKey.PRODUCE)
    records = struct.pack(">i", 0)  # the handler never looks
    body = (
        struct.pack(">hhii", -1, 0, 1000, 1)
        + struct.pack(">h", 1)
        + b"t"
        + struct.pack(">ii", 1, 0)
        + records
    )
    with connect(sync_cluster) as sock:
        sock.sendall(request_frame(ApiKey.PRODUCE, 3, 1, body))
        assert_closed(sock)
