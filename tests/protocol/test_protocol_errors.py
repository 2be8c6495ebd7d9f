"""Error paths through real clients over TCP, asserting Kafka's exact error codes.

Where no client library has a way to provoke an error (a corrupt CRC, acks=2, a gap in
an idempotent producer's sequence ...), requests are kafka-python 3's schema-generated
structs sent over a plain socket, and record batches come from kafka-python's builders.
The brokers are the in-process, thread-backed `MockCluster`.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic, ResourceType
from crc32c import crc32c
from kafka import KafkaAdminClient
from kafka.protocol.admin import CreateTopicsRequest, CreateTopicsResponse
from kafka.protocol.consumer import FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
)
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from broker import MockCluster
from tests.conftest import FAST
from tests.support.wire import encode_request, read_frame

# Kafka's error codes (org.apache.kafka.common.protocol.Errors)
NONE = 0
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
NOT_LEADER_OR_FOLLOWER = 6
MESSAGE_TOO_LARGE = 10
INVALID_TOPIC_EXCEPTION = 17
INVALID_REQUIRED_ACKS = 21
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_CONFIG = 40
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_RECORD = 87

# ListOffsets special timestamps
LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3

RESPONSES: dict[int, Any] = {
    cls.API_KEY: cls
    for cls in (
        ProduceResponse,
        FetchResponse,
        ListOffsetsResponse,
        MetadataResponse,
        CreateTopicsResponse,
        InitProducerIdResponse,
    )
}

Produce = ProduceRequest
TopicData = ProduceRequest.TopicProduceData
PartitionData = TopicData.PartitionProduceData
FetchTopic = FetchRequest.FetchTopic
FetchPartition = FetchTopic.FetchPartition
ListTopic = ListOffsetsRequest.ListOffsetsTopic
ListPartition = ListTopic.ListOffsetsPartition


# -- raw wire helpers -----------------------------------------------------------------
def broker_address(cluster: MockCluster, index: int = 0) -> tuple[str, int]:
    endpoint = cluster.brokers[index].advertised_endpoint("PLAINTEXT")
    return endpoint.host, endpoint.port


class Wire:
    """One plain TCP connection speaking kafka-python's request structs."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.sock = socket.create_connection(address, timeout=10)
        self._correlation_id = 0

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.sock.close()

    def send(self, request: Any) -> int:
        """Sends `request` (a versioned struct); returns its correlation id."""
        self._correlation_id += 1
        self.sock.sendall(encode_request(request, self._correlation_id, "protocol-errors"))
        return self._correlation_id

    def receive(self, request: Any, correlation_id: int) -> Any:
        """The next response frame, decoded as the response to `request`."""
        frame = read_frame(self.sock)
        response = RESPONSES[request.API_KEY].decode(frame, version=request.API_VERSION, header=True)
        assert response.header.correlation_id == correlation_id
        return response

    def call(self, request: Any) -> Any:
        return self.receive(request, self.send(request))


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    """Overrides conftest's asyncio `cluster`: a thread-backed one-broker cluster."""
    with MockCluster(config=FAST) as running:
        yield running


def make_batch(
    values: list[bytes],
    timestamp: int = 1_700_000_000_000,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """One uncompressed v2 record batch; every record carries `timestamp`."""
    builder = MemoryRecordsBuilder(
        magic=2,
        compression_type=0,
        batch_size=1 << 24,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )
    for value in values:
        assert builder.append(timestamp=timestamp, key=None, value=value) is not None
    builder.close()
    return bytes(builder.buffer())


def produce_request(
    topic: str,
    records: bytes | None,
    partition: int = 0,
    acks: int = -1,
    version: int = 9,
    topic_id: Any = None,
) -> Any:
    data = PartitionData(index=partition, records=records)
    topic_data = (
        TopicData(topic_id=topic_id, partition_data=[data])
        if version >= 13
        else TopicData(name=topic, partition_data=[data])
    )
    return Produce[version](transactional_id=None, acks=acks, timeout_ms=5000, topic_data=[topic_data])


def produce(wire: Wire, topic: str, records: bytes | None, partition: int = 0, **kwargs: Any) -> Any:
    """Produces and returns the one partition result."""
    response = wire.call(produce_request(topic, records, partition, **kwargs))
    [topic_result] = response.responses
    [result] = topic_result.partition_responses
    return result


def fetch_request(
    topic: str,
    offset: int,
    partition: int = 0,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 1 << 20,
    partition_max_bytes: int = 1 << 20,
    session_id: int = 0,
    session_epoch: int = -1,
) -> Any:
    return FetchRequest[12](
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        session_id=session_id,
        session_epoch=session_epoch,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[
                    FetchPartition(
                        partition=partition, fetch_offset=offset, partition_max_bytes=partition_max_bytes
                    )
                ],
            )
        ],
    )


def fetch(wire: Wire, topic: str, offset: int, **kwargs: Any) -> Any:
    """Fetches one partition and returns its result."""
    response = wire.call(fetch_request(topic, offset, **kwargs))
    assert response.error_code == NONE
    [topic_result] = response.responses
    [result] = topic_result.partitions
    return result


def batches_of(records: bytes | None) -> list[tuple[int, int]]:
    """(base offset, size in bytes) of every batch in a fetched record set."""
    found = []
    memory = MemoryRecords(bytes(records or b""))
    while memory.has_next():
        batch = memory.next_batch()
        assert batch is not None
        found.append((batch.base_offset, batch.size_in_bytes))
    return found


def list_offset(wire: Wire, topic: str, timestamp: int, partition: int = 0, version: int = 7) -> Any:
    request = ListOffsetsRequest[version](
        replica_id=-1,
        isolation_level=0,
        topics=[
            ListTopic(name=topic, partitions=[ListPartition(partition_index=partition, timestamp=timestamp)])
        ],
        timeout_ms=5000,
    )
    [topic_result] = wire.call(request).topics
    [result] = topic_result.partitions
    return result


def kafka_python_admin(cluster: MockCluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=5000)


# -- Produce ----------------------------------------------------------------------------
@pytest.mark.parametrize("version", [9, 10, 12, 13])
def test_produce_to_follower_is_not_leader_or_follower(sync_cluster3: MockCluster, version: int) -> None:
    topic = sync_cluster3.create_topic("spread", partitions=3)
    leaders = {p.index: p.leader for p in topic.partitions}
    assert sorted(leaders.values()) == [0, 1, 2]  # one partition led by each broker
    for index, leader in leaders.items():
        for broker in sync_cluster3.brokers:
            with Wire(broker_address(sync_cluster3, broker.node_id)) as wire:
                result = produce(
                    wire,
                    "spread",
                    make_batch([b"x"]),
                    partition=index,
                    version=version,
                    topic_id=topic.topic_id,
                )
            if broker.node_id == leader:
                assert (result.error_code, result.base_offset) == (NONE, 0)
                continue
            assert result.error_code == NOT_LEADER_OR_FOLLOWER
            assert result.base_offset == -1
            if version >= 10:  # KIP-951: the current leader rides along as a tagged field
                assert result.current_leader.leader_id == leader
                assert result.current_leader.leader_epoch == topic.partitions[index].leader_epoch
    # Only the leaders stored anything.
    assert [p.log.log_end_offset for p in topic.partitions] == [1, 1, 1]


def test_produce_to_follower_names_leader_endpoint(sync_cluster3: MockCluster) -> None:
    # Kafka (KafkaApis.handleProduceRequest, KIP-951) returns the endpoints of the leaders
    # named in current_leader in the response's NodeEndpoints tagged field.
    topic = sync_cluster3.create_topic("spread", partitions=3)
    leader = topic.partitions[0].leader
    other = (leader + 1) % 3
    with Wire(broker_address(sync_cluster3, other)) as wire:
        response = wire.call(produce_request("spread", make_batch([b"x"]), 0, version=12))
    host, port = broker_address(sync_cluster3, leader)
    assert [(n.node_id, n.host, n.port) for n in response.node_endpoints] == [(leader, host, port)]


def test_produce_to_unknown_topic_with_auto_create_off() -> None:
    with MockCluster(config={**FAST, "auto.create.topics.enable": "false"}) as cluster:
        with Wire(broker_address(cluster)) as wire:
            result = produce(wire, "nowhere", make_batch([b"x"]))
            assert (result.error_code, result.base_offset) == (UNKNOWN_TOPIC_OR_PARTITION, -1)
            # Metadata asking for auto-creation is refused too, and nothing is created.
            metadata = wire.call(
                MetadataRequest[12](
                    topics=[MetadataRequest.MetadataRequestTopic(name="nowhere")],
                    allow_auto_topic_creation=True,
                )
            )
            assert [(t.name, t.error_code) for t in metadata.topics] == [
                ("nowhere", UNKNOWN_TOPIC_OR_PARTITION)
            ]
        assert "nowhere" not in cluster.state.topics


def test_produce_to_unknown_partition(cluster: MockCluster) -> None:
    cluster.create_topic("one", partitions=1)
    with Wire(broker_address(cluster)) as wire:
        result = produce(wire, "one", make_batch([b"x"]), partition=5)
    assert result.error_code == UNKNOWN_TOPIC_OR_PARTITION


def test_corrupt_crc_is_corrupt_message(cluster: MockCluster) -> None:
    cluster.create_topic("crc")
    batch = bytearray(make_batch([b"payload"]))
    batch[-1] ^= 0xFF  # a flipped bit in the last record's value: covered by the CRC-32C
    with Wire(broker_address(cluster)) as wire:
        result = produce(wire, "crc", bytes(batch))
        assert (result.error_code, result.base_offset) == (CORRUPT_MESSAGE, -1)
        # Nothing was stored, and the connection still serves the intact batch.
        assert list_offset(wire, "crc", LATEST).offset == 0
        assert produce(wire, "crc", make_batch([b"payload"])).error_code == NONE


def test_batch_above_message_max_bytes_is_message_too_large() -> None:
    fits = make_batch([b"v" * 500])
    too_big = make_batch([b"v" * 501])
    assert len(too_big) == len(fits) + 1
    # The limit is the whole batch including its 12-byte log overhead, as Kafka's.
    with MockCluster(config={**FAST, "message.max.bytes": str(len(fits))}) as cluster:
        cluster.create_topic("big")
        with Wire(broker_address(cluster)) as wire:
            result = produce(wire, "big", too_big)
            assert (result.error_code, result.base_offset) == (MESSAGE_TOO_LARGE, -1)
            assert produce(wire, "big", fits).error_code == NONE
            assert list_offset(wire, "big", LATEST).offset == 1


def test_topic_max_message_bytes_is_enforced(cluster: MockCluster) -> None:
    # Kafka's UnifiedLog.analyzeAndValidateRecords checks the topic's LogConfig.maxMessageSize.
    cluster.create_topic("small", config={"max.message.bytes": "200"})
    with Wire(broker_address(cluster)) as wire:
        assert produce(wire, "small", make_batch([b"v" * 500])).error_code == MESSAGE_TOO_LARGE


def test_acks_2_is_invalid_required_acks(cluster: MockCluster) -> None:
    cluster.create_topic("acks")
    with Wire(broker_address(cluster)) as wire:
        result = produce(wire, "acks", make_batch([b"x"]), acks=2)
        assert (result.error_code, result.base_offset) == (INVALID_REQUIRED_ACKS, -1)
        assert list_offset(wire, "acks", LATEST).offset == 0


def test_acks_0_gets_no_response_but_stores(cluster: MockCluster) -> None:
    cluster.create_topic("fire")
    with Wire(broker_address(cluster)) as wire:
        first = wire.send(produce_request("fire", make_batch([b"a", b"b"]), acks=0))
        second = wire.send(produce_request("fire", make_batch([b"c"]), acks=0))
        probe = ListOffsetsRequest[7](
            replica_id=-1,
            isolation_level=0,
            topics=[ListTopic(name="fire", partitions=[ListPartition(partition_index=0, timestamp=LATEST)])],
        )
        probe_id = wire.send(probe)
        # The first frame back answers the ListOffsets (receive() checks the id), so the
        # two produces were silent; and both were stored, in order.
        response = wire.receive(probe, probe_id)
        assert (first, second, probe_id) == (1, 2, 3)
        assert response.topics[0].partitions[0].offset == 3
        wire.sock.settimeout(0.2)
        with pytest.raises(TimeoutError):
            wire.sock.recv(1)
    [(base, _)] = batches_of(fetch_via_new_connection(cluster, "fire", 2))
    assert base == 2


def fetch_via_new_connection(cluster: MockCluster, topic: str, offset: int) -> bytes:
    with Wire(broker_address(cluster)) as wire:
        result = fetch(wire, topic, offset)
    assert result.error_code == NONE
    return bytes(result.records or b"")


def test_failed_acks_0_produce_closes_connection(cluster: MockCluster) -> None:
    # Kafka (KafkaApis.handleProduceRequest) closes the connection when an acks=0 produce
    # has any partition error, so that the producer notices and refreshes its metadata.
    with Wire(broker_address(cluster)) as wire:
        wire.send(produce_request("missing", make_batch([b"x"]), acks=0))
        wire.sock.settimeout(1)
        assert wire.sock.recv(1) == b""


# -- Fetch ------------------------------------------------------------------------------
def test_fetch_beyond_high_watermark_is_offset_out_of_range(cluster: MockCluster) -> None:
    cluster.create_topic("hw")
    with Wire(broker_address(cluster)) as wire:
        produce(wire, "hw", make_batch([b"a", b"b", b"c"]))
        beyond = fetch(wire, "hw", 4)
        # as Kafka answers an error: no offsets (-1), not the log's
        assert (beyond.error_code, beyond.high_watermark) == (OFFSET_OUT_OF_RANGE, -1)
        assert not beyond.records
        # At the high watermark itself: no error, just nothing yet.
        at_end = fetch(wire, "hw", 3)
        assert (at_end.error_code, at_end.high_watermark) == (NONE, 3)
        assert not at_end.records
        # An offset inside a batch returns that whole batch.
        assert batches_of(fetch(wire, "hw", 1).records)[0][0] == 0


def test_fetch_with_unknown_session_id(cluster: MockCluster) -> None:
    cluster.create_topic("sessions")
    with Wire(broker_address(cluster)) as wire:
        response = wire.call(fetch_request("sessions", 0, session_id=123456, session_epoch=1))
    assert response.error_code == FETCH_SESSION_ID_NOT_FOUND
    assert response.session_id == 0
    assert response.responses == []


def test_full_fetch_naming_a_session_id_is_served(cluster: MockCluster) -> None:
    # Kafka's FetchManager.newContext: epoch 0 (INITIAL) or -1 (FINAL) is a full fetch;
    # the named session is closed and the fetch served. FETCH_SESSION_ID_NOT_FOUND is
    # only for incremental fetches (epoch > 0).
    cluster.create_topic("sessions")
    with Wire(broker_address(cluster)) as wire:
        response = wire.call(fetch_request("sessions", 0, session_id=123456, session_epoch=-1))
    assert response.error_code == NONE


def test_long_poll_returns_when_another_client_produces(cluster: MockCluster) -> None:
    cluster.create_topic("wake")
    with Wire(broker_address(cluster)) as wire:
        started = time.monotonic()
        correlation_id = wire.send(fetch_request("wake", 0, max_wait_ms=5000, min_bytes=1))
        time.sleep(0.2)  # the fetch is parked now
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
        producer.produce("wake", b"hello")
        assert producer.flush(5) == 0
        response = wire.receive(fetch_request("wake", 0), correlation_id)
        elapsed = time.monotonic() - started
    assert elapsed < 2.0
    [result] = response.responses[0].partitions
    assert result.error_code == NONE
    assert [base for base, _ in batches_of(result.records)] == [0]


def test_long_poll_returns_empty_after_max_wait(cluster: MockCluster) -> None:
    cluster.create_topic("quiet")
    with Wire(broker_address(cluster)) as wire:
        started = time.monotonic()
        result = fetch(wire, "quiet", 0, max_wait_ms=300, min_bytes=1)
        elapsed = time.monotonic() - started
    assert 0.28 <= elapsed < 2.0
    assert (result.error_code, result.high_watermark) == (NONE, 0)
    assert not result.records


@pytest.mark.parametrize(("max_bytes", "partition_max_bytes"), [(10, 1 << 20), (1 << 20, 10), (1, 1)])
def test_fetch_limit_below_first_batch_returns_that_batch(
    cluster: MockCluster, max_bytes: int, partition_max_bytes: int
) -> None:
    cluster.create_topic("kip74")
    first = make_batch([b"a" * 100, b"b" * 100])
    with Wire(broker_address(cluster)) as wire:
        produce(wire, "kip74", first)
        produce(wire, "kip74", make_batch([b"c" * 100]))
        result = fetch(wire, "kip74", 0, max_bytes=max_bytes, partition_max_bytes=partition_max_bytes)
    assert result.error_code == NONE
    assert batches_of(result.records) == [(0, len(first))]  # whole, and only the first (KIP-74)


# -- ListOffsets ------------------------------------------------------------------------
@pytest.mark.parametrize("version", [7, 8, 9, 10, 11])
def test_list_offsets(cluster: MockCluster, version: int) -> None:
    cluster.create_topic("times")
    with Wire(broker_address(cluster)) as wire:
        empty = list_offset(wire, "times", MAX_TIMESTAMP, version=version)
        assert (empty.error_code, empty.offset, empty.timestamp) == (NONE, -1, -1)
        for value, timestamp in ((b"a", 1000), (b"b", 3000), (b"c", 2000)):
            produce(wire, "times", make_batch([value], timestamp=timestamp))

        def lookup(timestamp: int) -> tuple[int, int, int]:
            result = list_offset(wire, "times", timestamp, version=version)
            return result.error_code, result.offset, result.timestamp

        assert lookup(EARLIEST) == (NONE, 0, -1)
        assert lookup(LATEST) == (NONE, 3, -1)
        assert lookup(MAX_TIMESTAMP) == (NONE, 1, 3000)
        assert lookup(500) == (NONE, 0, 1000)
        assert lookup(1000) == (NONE, 0, 1000)
        assert lookup(1500) == (NONE, 1, 3000)  # the first record at or after, in offset order
        assert lookup(3000) == (NONE, 1, 3000)
        assert lookup(3001) == (NONE, -1, -1)


def test_list_offsets_on_follower_and_unknown_partition(sync_cluster3: MockCluster) -> None:
    topic = sync_cluster3.create_topic("where", partitions=1)
    follower = (topic.partitions[0].leader + 1) % 3
    with Wire(broker_address(sync_cluster3, follower)) as wire:
        assert list_offset(wire, "where", LATEST).error_code == NOT_LEADER_OR_FOLLOWER
        assert list_offset(wire, "where", LATEST, partition=3).error_code == UNKNOWN_TOPIC_OR_PARTITION
        assert list_offset(wire, "nowhere", LATEST).error_code == UNKNOWN_TOPIC_OR_PARTITION


# -- retention --------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["broker", "topic"])
def test_retention_bytes_advances_log_start(where: str) -> None:
    batch = make_batch([b"r" * 100])
    limit = 3 * len(batch)
    broker_config = {"log.retention.bytes": str(limit)} if where == "broker" else {}
    with MockCluster(config={**FAST, **broker_config}) as cluster:
        cluster.create_topic("kept", config={"retention.bytes": str(limit)} if where == "topic" else None)
        with Wire(broker_address(cluster)) as wire:
            for _ in range(10):
                assert produce(wire, "kept", batch).error_code == NONE
            # Whole batches are dropped oldest first until at most `limit` bytes remain.
            earliest = list_offset(wire, "kept", EARLIEST)
            assert (earliest.error_code, earliest.offset) == (NONE, 7)
            assert list_offset(wire, "kept", LATEST).offset == 10
            below = fetch(wire, "kept", 6)
            # as Kafka answers an error: no offsets (-1); ListOffsets above tells the start
            assert (below.error_code, below.log_start_offset, below.high_watermark) == (
                OFFSET_OUT_OF_RANGE,
                -1,
                -1,
            )
            kept = fetch(wire, "kept", 7)
            assert kept.error_code == NONE
            assert [base for base, _ in batches_of(kept.records)] == [7, 8, 9]
            # Produce responses report the new log start offset (v5+).
            assert produce(wire, "kept", batch).log_start_offset == 8


# -- admin APIs -------------------------------------------------------------------------
def test_create_topics_errors(cluster: MockCluster) -> None:
    cluster.create_topic("taken")
    admin = kafka_python_admin(cluster)
    try:
        result = admin.create_topics(
            {
                "taken": {"num_partitions": 1},
                "rf3": {"num_partitions": 1, "replication_factor": 3},
                "zero": {"num_partitions": 0},
                "bad/name": {},
                "odd-config": {"configs": {"no.such.config": "1"}},
                "fine": {"num_partitions": 2},
            },
            raise_errors=False,
        )
    finally:
        admin.close()
    codes = {t["name"]: t["error_code"] for t in result["topics"]}
    assert codes == {
        "taken": TOPIC_ALREADY_EXISTS,
        "rf3": INVALID_REPLICATION_FACTOR,
        "zero": INVALID_PARTITIONS,
        "bad/name": INVALID_TOPIC_EXCEPTION,
        "odd-config": INVALID_CONFIG,
        "fine": NONE,
    }
    assert sorted(cluster.state.topics) == ["fine", "taken"]
    assert len(cluster.state.topics["fine"].partitions) == 2


def test_create_topics_errors_through_confluent_admin(cluster: MockCluster) -> None:
    cluster.create_topic("taken")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics(
        [NewTopic("taken", 1, 1), NewTopic("rf3", 1, 3), NewTopic("bad/name", 1, 1)], operation_timeout=5
    )
    codes = {}
    for name, future in futures.items():
        error = future.exception(timeout=10)
        assert error is not None
        codes[name] = error.args[0].code()
    assert codes == {
        "taken": KafkaError.TOPIC_ALREADY_EXISTS,
        "rf3": KafkaError.INVALID_REPLICATION_FACTOR,
        "bad/name": KafkaError.TOPIC_EXCEPTION,
    }
    assert (KafkaError.TOPIC_ALREADY_EXISTS, KafkaError.TOPIC_EXCEPTION) == (
        TOPIC_ALREADY_EXISTS,
        INVALID_TOPIC_EXCEPTION,
    )


def test_create_topics_validate_only_creates_nothing(cluster: MockCluster) -> None:
    admin = kafka_python_admin(cluster)
    try:
        result = admin.create_topics(
            {"dry": {"num_partitions": 4}, "dry-rf3": {"num_partitions": 1, "replication_factor": 3}},
            validate_only=True,
            raise_errors=False,
        )
    finally:
        admin.close()
    by_name = {t["name"]: t for t in result["topics"]}
    assert by_name["dry"]["error_code"] == NONE
    assert by_name["dry"]["num_partitions"] == 4
    assert by_name["dry-rf3"]["error_code"] == INVALID_REPLICATION_FACTOR  # still validated
    assert cluster.state.topics == {}
    with Wire(broker_address(cluster)) as wire:
        metadata = wire.call(MetadataRequest[12](topics=None))
    assert metadata.topics == []


def test_create_topics_validate_only_through_confluent_admin(cluster: MockCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics([NewTopic("dry", 3, 1)], validate_only=True, operation_timeout=5)
    assert futures["dry"].result(timeout=10) is None
    assert "dry" not in admin.list_topics(timeout=5).topics


def test_create_topics_invalid_config_value(cluster: MockCluster) -> None:
    # Kafka validates config values (LogConfig.validate) and answers INVALID_CONFIG;
    # here int() raises in ClusterState._add_partitions and the connection is closed.
    with Wire(broker_address(cluster)) as wire:
        request = CreateTopicsRequest[7](
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name="bad-value",
                    num_partitions=1,
                    replication_factor=1,
                    assignments=[],
                    configs=[
                        CreateTopicsRequest.CreatableTopic.CreatableTopicConfig(
                            name="retention.bytes", value="x"
                        )
                    ],
                )
            ],
            timeout_ms=5000,
            validate_only=False,
        )
        [result] = wire.call(request).topics
    assert result.error_code == INVALID_CONFIG


def test_delete_unknown_topic(cluster: MockCluster) -> None:
    admin = kafka_python_admin(cluster)
    try:
        result = admin.delete_topics(["never-created"], raise_errors=False)
    finally:
        admin.close()
    assert [(t["name"], t["error_code"]) for t in result["topics"]] == [
        ("never-created", UNKNOWN_TOPIC_OR_PARTITION)
    ]


def test_create_partitions_errors(cluster: MockCluster) -> None:
    cluster.create_topic("three", partitions=3)
    admin = kafka_python_admin(cluster)
    try:
        decrease = admin.create_partitions({"three": 2}, raise_errors=False)
        same = admin.create_partitions({"three": 3}, raise_errors=False)
        unknown = admin.create_partitions({"nothing": 5}, raise_errors=False)
        grow = admin.create_partitions({"three": 5}, raise_errors=False)
    finally:
        admin.close()
    assert [r.error_code for r in decrease.results] == [INVALID_PARTITIONS]
    assert [r.error_code for r in same.results] == [INVALID_PARTITIONS]
    assert [r.error_code for r in unknown.results] == [UNKNOWN_TOPIC_OR_PARTITION]
    assert [r.error_code for r in grow.results] == [NONE]
    assert len(cluster.state.topics["three"].partitions) == 5


def describe(admin: AdminClient, resource: ConfigResource) -> dict[str, Any]:
    [future] = admin.describe_configs([resource]).values()
    configs: dict[str, Any] = future.result(timeout=10)
    return configs


def test_describe_configs_sources(cluster: MockCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    created = admin.create_topics(
        [NewTopic("tuned", 1, 1, config={"retention.bytes": "123456"}), NewTopic("plain", 1, 1)],
        operation_timeout=5,
    )
    for future in created.values():
        future.result(timeout=10)
    tuned = describe(admin, ConfigResource(ResourceType.TOPIC, "tuned"))["retention.bytes"]
    assert (tuned.value, tuned.source) == ("123456", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert not tuned.is_default
    plain = describe(admin, ConfigResource(ResourceType.TOPIC, "plain"))["retention.bytes"]
    assert (plain.value, plain.source) == ("-1", ConfigSource.DEFAULT_CONFIG.value)
    assert plain.is_default
    with pytest.raises(KafkaException) as missing:
        describe(admin, ConfigResource(ResourceType.TOPIC, "missing"))
    assert missing.value.args[0].code() == UNKNOWN_TOPIC_OR_PARTITION


def test_describe_configs_static_broker_config() -> None:
    with MockCluster(config={**FAST, "log.retention.bytes": "5000"}) as cluster:
        cluster.create_topic("inherits")
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        broker = describe(admin, ConfigResource(ResourceType.BROKER, "0"))["log.retention.bytes"]
        assert (broker.value, broker.source) == ("5000", ConfigSource.STATIC_BROKER_CONFIG.value)
        default = describe(admin, ConfigResource(ResourceType.BROKER, "0"))["num.partitions"]
        assert (default.value, default.source) == ("1", ConfigSource.DEFAULT_CONFIG.value)
        # A topic without an override shows the broker's value, from the broker's config.
        topic = describe(admin, ConfigResource(ResourceType.TOPIC, "inherits"))["retention.bytes"]
        assert (topic.value, topic.source) == ("5000", ConfigSource.STATIC_BROKER_CONFIG.value)


# -- idempotent producers ---------------------------------------------------------------
def init_producer_id(wire: Wire) -> tuple[int, int]:
    response = wire.call(InitProducerIdRequest[4](transactional_id=None, transaction_timeout_ms=60000))
    assert response.error_code == NONE
    return response.producer_id, response.producer_epoch


def test_idempotent_duplicate_and_gap(cluster: MockCluster) -> None:
    cluster.create_topic("idem")
    with Wire(broker_address(cluster)) as wire:
        producer_id, epoch = init_producer_id(wire)
        assert producer_id >= 0 and epoch == 0

        def send(values: list[bytes], sequence: int) -> Any:
            return produce(
                wire,
                "idem",
                make_batch(values, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence),
            )

        first = send([b"a", b"b", b"c"], 0)
        assert (first.error_code, first.base_offset) == (NONE, 0)
        second = send([b"d"], 3)
        assert (second.error_code, second.base_offset) == (NONE, 3)
        # A retry of either batch: acknowledged again with its original offset, not stored twice.
        retry_first = send([b"a", b"b", b"c"], 0)
        assert (retry_first.error_code, retry_first.base_offset) == (NONE, 0)
        retry_second = send([b"d"], 3)
        assert (retry_second.error_code, retry_second.base_offset) == (NONE, 3)
        assert list_offset(wire, "idem", LATEST).offset == 4
        # A gap in the sequence is refused and stores nothing.
        gap = send([b"f"], 5)
        assert (gap.error_code, gap.base_offset) == (OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
        assert list_offset(wire, "idem", LATEST).offset == 4
        # The expected next sequence still works.
        assert (send([b"e"], 4).error_code, list_offset(wire, "idem", LATEST).offset) == (NONE, 5)


def test_idempotent_first_batch_may_start_anywhere(cluster: MockCluster) -> None:
    # Kafka's ProducerAppendInfo: a producer id the partition has no state for may start
    # at any sequence; the next batch must follow it, and a retry is answered with the
    # original's offset and timestamp as its log-append time.
    cluster.create_topic("idem")
    with Wire(broker_address(cluster)) as wire:
        producer_id, epoch = init_producer_id(wire)

        def send(sequence: int) -> Any:
            batch = make_batch([b"x"], producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence)
            return produce(wire, "idem", batch)

        first = send(7)
        assert (first.error_code, first.base_offset, first.log_append_time_ms) == (NONE, 0, -1)
        assert send(0).error_code == OUT_OF_ORDER_SEQUENCE_NUMBER
        assert (send(8).error_code, list_offset(wire, "idem", LATEST).offset) == (NONE, 2)
        retry = send(7)
        assert (retry.error_code, retry.base_offset) == (NONE, 0)
        assert retry.log_append_time_ms > 0  # the original batch's timestamp
        assert list_offset(wire, "idem", LATEST).offset == 2


def test_malformed_batches_answered_as_kafka(cluster: MockCluster) -> None:
    # What no client sends: ProduceRequest.validateRecords and LogValidator's answers.
    cluster.create_topic("malformed")
    good = make_batch([b"a", b"b"])
    with Wire(broker_address(cluster)) as wire:
        for records in (
            good[:-5],  # the batch length runs past the records: no whole batch
            good[:8] + (len(good) + 50).to_bytes(4, "big") + good[12:],
            (7).to_bytes(8, "big") + good[8:],  # a base offset other than 0
        ):
            result = produce(wire, "malformed", records)
            assert (result.error_code, result.error_message) == (INVALID_RECORD, None)
        bad_magic = bytearray(good)
        bad_magic[16] = 3
        result = produce(wire, "malformed", bytes(bad_magic))
        assert (result.error_code, result.log_start_offset) == (CORRUPT_MESSAGE, -1)
        assert result.error_message == "Invalid magic found in record: 3"
        no_sequence = bytearray(make_batch([b"x"], producer_id=5, producer_epoch=0, base_sequence=0))
        no_sequence[53:57] = (-1).to_bytes(4, "big", signed=True)  # baseSequence, then the CRC again
        no_sequence[17:21] = crc32c(bytes(no_sequence[21:])).to_bytes(4, "big")
        assert produce(wire, "malformed", bytes(no_sequence)).error_code == INVALID_RECORD
        assert list_offset(wire, "malformed", LATEST).offset == 0
        # Bytes after the last whole batch are ignored: the batch before is appended.
        result = produce(wire, "malformed", good + b"\x00\x01\x02")
        assert (result.error_code, result.base_offset) == (NONE, 0)
        assert list_offset(wire, "malformed", LATEST).offset == 2


# -- metadata ---------------------------------------------------------------------------
def test_metadata_for_partition_of_stopped_leader(sync_cluster3: MockCluster) -> None:
    topic = sync_cluster3.create_topic("orphaned", partitions=3)
    stopped = sync_cluster3.brokers[2].node_id
    orphaned = {p.index for p in topic.partitions if p.leader == stopped}
    assert len(orphaned) == 1
    sync_cluster3.call(sync_cluster3.brokers[2].stop())
    admin = AdminClient({"bootstrap.servers": sync_cluster3.bootstrap_servers})
    metadata = admin.list_topics(topic="orphaned", timeout=10)
    assert sorted(metadata.brokers) == [0, 1]
    for index, partition in metadata.topics["orphaned"].partitions.items():
        if index in orphaned:
            assert partition.leader == -1
            assert partition.error is not None
            assert partition.error.code() == KafkaError.LEADER_NOT_AVAILABLE == LEADER_NOT_AVAILABLE
        else:
            assert partition.leader == topic.partitions[index].leader
            assert partition.error is None
    # The same seen in the raw response, with the stopped broker listed offline.
    with Wire(broker_address(sync_cluster3, 0)) as wire:
        response = wire.call(
            MetadataRequest[12](
                topics=[MetadataRequest.MetadataRequestTopic(name="orphaned")],
                allow_auto_topic_creation=False,
            )
        )
    [entry] = response.topics
    for partition in entry.partitions:
        if partition.partition_index in orphaned:
            assert (partition.error_code, partition.leader_id) == (LEADER_NOT_AVAILABLE, -1)
            assert partition.offline_replicas == [stopped]
        else:
            assert partition.error_code == NONE


def test_stopped_leader_wakes_nothing_else(sync_cluster3: MockCluster) -> None:
    """A long poll on a live broker is not disturbed when another broker stops."""
    topic = sync_cluster3.create_topic("calm", partitions=3)
    [index] = [p.index for p in topic.partitions if p.leader == 0]
    with Wire(broker_address(sync_cluster3, 0)) as wire:
        started = time.monotonic()
        correlation_id = wire.send(fetch_request("calm", 0, partition=index, max_wait_ms=400))
        stopper = threading.Thread(target=lambda: sync_cluster3.call(sync_cluster3.brokers[2].stop()))
        stopper.start()
        response = wire.receive(fetch_request("calm", 0), correlation_id)
        stopper.join()
    assert time.monotonic() - started >= 0.38
    assert response.responses[0].partitions[0].error_code == NONE


def test_produce_to_unknown_topic_id(cluster: MockCluster) -> None:
    """Produce v13 addresses topics by id; an unknown id is UNKNOWN_TOPIC_ID (100)."""
    cluster.create_topic("by-id")
    with Wire(broker_address(cluster)) as wire:
        result = produce(wire, "", make_batch([b"x"]), version=13, topic_id=uuid.uuid4())
    assert result.error_code == 100
