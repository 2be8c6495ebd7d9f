"""Frames cut anywhere by TCP: the connection reassembles them the same way.

A client's byte stream reaches the broker in reads that end anywhere: inside a size
prefix, inside a header, inside a produce request's records. These tests hand the
connection the same pipelined requests cut at every point (and at several random points
at once), in one turn of the broker's loop, and check every answer and every stored
record, the records read back by a real consumer.
"""

from __future__ import annotations

import random
import socket
import struct
import time
from collections.abc import Callable, Iterator

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kafka.record.default_records import DefaultRecordBatchBuilder

from broker import MockCluster
from broker.connection import Connection
from tests.conftest import FAST
from tests.support.wire import encode_request, read_frame

TOPIC = "framing"
RECORDS_PER_BATCH = 3
TopicData = ProduceRequest.TopicProduceData
PartitionData = TopicData.PartitionProduceData


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, config=FAST) as cluster:
        cluster.create_topic(TOPIC, partitions=1)
        yield cluster


def _batch(values: list[bytes]) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    for offset, value in enumerate(values):
        builder.append(offset, int(time.time() * 1000), None, value, [])
    return bytes(builder.build())


def _produce(correlation_id: int, values: list[bytes]) -> bytes:
    request = ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout_ms=5000,
        topic_data=[TopicData(name=TOPIC, partition_data=[PartitionData(index=0, records=_batch(values))])],
    )
    return encode_request(request, correlation_id, "framing", version=9)


def _stream(round_: int) -> tuple[bytes, list[bytes]]:
    """ApiVersions, a produce, Metadata and another produce, pipelined; the values produced."""
    values = [f"r{round_}-{i}".encode() * (1 + i * 40) for i in range(2 * RECORDS_PER_BATCH)]
    stream = b"".join(
        [
            encode_request(
                ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                1,
                "framing",
                version=3,
            ),
            _produce(2, values[:RECORDS_PER_BATCH]),
            encode_request(
                MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)]),
                3,
                "framing",
                version=12,
            ),
            _produce(4, values[RECORDS_PER_BATCH:]),
        ]
    )
    return stream, values


def _pieces_fed(cluster: MockCluster, sock: socket.socket) -> Callable[[list[bytes]], None]:
    """Feeds byte strings to `sock`'s connection as separate reads, in one turn of the loop."""
    local = sock.getsockname()
    server = cluster.brokers[0]

    def feed(pieces: list[bytes]) -> None:
        def reads() -> None:
            conn: Connection = next(c for c in server.connections if c.peer == local)
            for piece in pieces:
                conn.data_received(piece)

        cluster.on_loop(reads)

    return feed


def _check_answers(sock: socket.socket, first_offset: int) -> None:
    """Four answers in order; the two produces stored at consecutive offsets."""
    correlation_ids = []
    produced = []
    for _ in range(4):
        frame = read_frame(sock)
        (correlation_id,) = struct.unpack_from(">i", frame)
        correlation_ids.append(correlation_id)
        if correlation_id in (2, 4):
            response = ProduceResponse.decode(frame, version=9, header=True)
            partition = response.responses[0].partition_responses[0]
            produced.append((partition.error_code, partition.base_offset))
    assert correlation_ids == [1, 2, 3, 4]
    assert produced == [(0, first_offset), (0, first_offset + RECORDS_PER_BATCH)]


def _consumed(cluster: MockCluster, count: int) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, consumer_timeout_ms=5000)
    try:
        partition = TopicPartition(TOPIC, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        values: list[bytes] = []
        while len(values) < count:
            polled = consumer.poll(timeout_ms=5000)
            assert polled, f"only {len(values)} of {count} records came back"
            values += [record.value for records in polled.values() for record in records]
        return values
    finally:
        consumer.close()


def _connect(cluster: MockCluster) -> socket.socket:
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(encode_request(ApiVersionsRequest(), 0, "framing", version=0))
    read_frame(sock)  # the connection is accepted and known to the server
    return sock


def test_a_pipeline_cut_at_every_byte_gets_the_same_answers(cluster: MockCluster) -> None:
    expected: list[bytes] = []
    with _connect(cluster) as sock:
        feed = _pieces_fed(cluster, sock)
        stream, _ = _stream(0)
        for cut in range(1, len(stream)):
            stream, values = _stream(cut)
            feed([stream[:cut], stream[cut:]])
            _check_answers(sock, first_offset=len(expected))
            expected += values
    assert _consumed(cluster, len(expected)) == expected


def test_a_pipeline_in_many_pieces_and_byte_by_byte(cluster: MockCluster) -> None:
    rng = random.Random(20)
    expected: list[bytes] = []
    with _connect(cluster) as sock:
        feed = _pieces_fed(cluster, sock)
        for round_ in range(200):
            stream, values = _stream(round_)
            cuts = sorted(rng.sample(range(1, len(stream)), rng.randrange(2, 12)))
            feed([stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)])
            _check_answers(sock, first_offset=len(expected))
            expected += values
        stream, values = _stream(200)
        feed([stream[i : i + 1] for i in range(len(stream))])
        _check_answers(sock, first_offset=len(expected))
        expected += values
    assert _consumed(cluster, len(expected)) == expected


def test_an_oversized_size_prefix_split_across_reads_closes_the_connection(cluster: MockCluster) -> None:
    """socket.request.max.bytes is checked on the size once its four bytes are in, however
    they came: Kafka's InvalidReceiveException closes the connection."""
    with _connect(cluster) as sock:
        feed = _pieces_fed(cluster, sock)
        stream, _ = _stream(0)
        feed([stream + b"\x7f", b"\xff", b"\xff\xff" + b"x" * 10])
        _check_answers(sock, first_offset=0)  # what came before it is answered
        sock.settimeout(10)
        assert sock.recv(1) == b""
