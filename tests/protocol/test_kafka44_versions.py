"""The versions Kafka 4.4 added to APIs kafka-python 3's schemas stop short of, served
from the bundled schemas (messages/schemas/): ApiVersions v5 (KIP-1242), TxnOffsetCommit
v6 (topic ids), DeleteGroups v3 (per-group error messages); and Produce advertised from
v0, as Kafka 4.4 advertises it, with v0-2 still refused.

kafka-python's admin client reads the advertised ranges; it sends none of these versions
(its schemas end below them), so they go as raw frames (tests/support/wire.py) here; the
Java client 4.4 sends them in tests/java/test_java_clients.py.
"""

from __future__ import annotations

import json
import socket
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, OffsetAndMetadata, TopicPartition
from kafka.protocol.admin import DeleteGroupsRequest as KafkaPythonDeleteGroupsRequest
from kafka.protocol.metadata import ApiVersionsRequest as KafkaPythonApiVersionsRequest
from kafka.protocol.metadata import ApiVersionsResponse as KafkaPythonApiVersionsResponse

from broker import MockCluster
from messages import bundled_schemas, registry
from messages.registry import request_class, response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.conftest import FAST
from tests.support.wire import encode_request, read_frame, round_trip

CAPTURED = Path(__file__).resolve().parents[1] / "differential" / "data" / "apiversions-kafka-4.4.0.json"
ApiVersions = request_class(ApiKey.API_VERSIONS)
TxnOffsetCommit = request_class(ApiKey.TXN_OFFSET_COMMIT)
Topic = TxnOffsetCommit.TxnOffsetCommitRequestTopic
Partition = Topic.TxnOffsetCommitRequestPartition


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, config=FAST) as cluster:
        cluster.create_topic("orders", partitions=2)
        yield cluster


def _connect(cluster: MockCluster) -> socket.socket:
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


# -- the bundled schemas take precedence ------------------------------------------------
def test_a_bundled_schema_replaces_kafka_pythons_for_its_api() -> None:
    assert bundled_schemas.OVERRIDDEN >= {
        "ApiVersionsRequest",
        "ApiVersionsResponse",
        "TxnOffsetCommitRequest",
        "TxnOffsetCommitResponse",
        "DeleteGroupsRequest",
        "DeleteGroupsResponse",
    }
    for name in bundled_schemas.OVERRIDDEN:
        bundled = bundled_schemas.CLASSES[name]
        api_key = bundled.API_KEY
        chosen = request_class(api_key) if bundled.is_request() else response_class(api_key)
        assert chosen is bundled
        # ...and keeps what kafka-python's class adds (ApiVersions' non-flexible header)
        assert bundled.__mro__[1].__module__.startswith("kafka.protocol")
    assert issubclass(response_class(ApiKey.API_VERSIONS), KafkaPythonApiVersionsResponse)
    assert registry.schema_versions(ApiKey.API_VERSIONS) == (0, 5)
    assert registry.schema_versions(ApiKey.TXN_OFFSET_COMMIT) == (0, 6)
    assert registry.schema_versions(ApiKey.DELETE_GROUPS) == (0, 3)


def test_precedence_does_not_depend_on_the_order_classes_are_found() -> None:
    upstream = KafkaPythonDeleteGroupsRequest
    bundled = bundled_schemas.CLASSES["DeleteGroupsRequest"]
    for order in ([upstream, bundled], [bundled, upstream]):
        requests, _ = registry._by_api_key(order)
        assert requests[ApiKey.DELETE_GROUPS] is bundled


# -- what ApiVersions advertises --------------------------------------------------------
def test_a_client_sees_kafka_44s_ranges_for_the_new_versions(cluster: MockCluster) -> None:
    """Read as a client connecting reads them (kafka-python's KafkaAdminClient.api_versions()
    cannot be used: it fails on key 93, which kafka-python 3 does not know, against this
    broker as against Kafka 4.4)."""
    captured = json.loads(CAPTURED.read_text())["apis"]
    host, port = cluster.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        answer = round_trip(
            sock, KafkaPythonApiVersionsRequest[3](client_software_name="t", client_software_version="1"), 1, "raw"
        )
    advertised = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    for api in (ApiKey.PRODUCE, ApiKey.API_VERSIONS, ApiKey.TXN_OFFSET_COMMIT, ApiKey.DELETE_GROUPS):
        assert advertised[api] == tuple(captured[str(int(api))])
    assert advertised[ApiKey.PRODUCE] == (0, 13)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_below_v3_is_advertised_but_closes_the_connection(cluster: MockCluster, version: int) -> None:
    produce = request_class(ApiKey.PRODUCE)(
        version=3, transactional_id=None, acks=1, timeout_ms=1000, topic_data=[]
    )
    frame = bytearray(encode_request(produce, 1, "old-producer"))
    frame[6:8] = struct.pack(">h", version)  # after the size and the API key
    with _connect(cluster) as sock:
        sock.sendall(bytes(frame))
        with pytest.raises(ConnectionError):
            read_frame(sock)


def test_api_versions_below_v4_leaves_out_features_whose_minimum_is_0(cluster: MockCluster) -> None:
    with _connect(cluster) as sock:
        v3 = round_trip(
            sock, ApiVersions(version=3, client_software_name="t", client_software_version="1"), 1, "t"
        )
        v4 = round_trip(
            sock, ApiVersions(version=4, client_software_name="t", client_software_version="1"), 2, "t"
        )
    assert [(f.name, f.min_version) for f in v3.supported_features] == [("metadata.version", 7)]
    assert {f.name for f in v4.supported_features} >= {
        "metadata.version",
        "transaction.version",
        "kraft.version",
    }
    assert {f.name: f.max_version_level for f in v3.finalized_features} == {
        f.name: f.max_version_level for f in v4.finalized_features
    }


def _api_versions_v5(sock: socket.socket, cluster_id: str | None, node_id: int, correlation_id: int) -> bytes:
    request = ApiVersions(
        version=5,
        client_software_name="t",
        client_software_version="1",
        cluster_id=cluster_id,
        node_id=node_id,
    )
    sock.sendall(encode_request(request, correlation_id, "t"))
    return read_frame(sock)


def test_api_versions_v5_checks_the_cluster_and_node_the_client_means(cluster: MockCluster) -> None:
    cluster_id = cluster.describe()["cluster_id"]
    with _connect(cluster) as sock:
        answered = response_class(ApiKey.API_VERSIONS).decode(
            _api_versions_v5(sock, cluster_id, 0, 1), version=5, header=True
        )
        assert answered.error_code == ErrorCode.NONE
        assert {a.api_key: a.max_version for a in answered.api_keys}[ApiKey.API_VERSIONS] == 5
        unnamed = response_class(ApiKey.API_VERSIONS).decode(
            _api_versions_v5(sock, None, -1, 2), version=5, header=True
        )
        assert unnamed.error_code == ErrorCode.NONE
        # The error answers are v5 bodies with no APIs (Kafka's bytes: error, an empty
        # compact array, throttle time 0, no tagged fields); the connection stays open.
        body = struct.pack(">h", ErrorCode.REBOOTSTRAP_REQUIRED) + b"\x01" + bytes(5)
        assert _api_versions_v5(sock, cluster_id, 7, 3) == struct.pack(">i", 3) + body
        assert _api_versions_v5(sock, "another-cluster", 0, 4) == struct.pack(">i", 4) + body
        half = struct.pack(">h", ErrorCode.INVALID_REQUEST) + b"\x01" + bytes(5)
        assert _api_versions_v5(sock, cluster_id, -1, 5) == struct.pack(">i", 5) + half
        assert _api_versions_v5(sock, None, 0, 6) == struct.pack(">i", 6) + half
        again = round_trip(
            sock, ApiVersions(version=4, client_software_name="t", client_software_version="1"), 7, "t"
        )
        assert again.error_code == ErrorCode.NONE


# -- DeleteGroups v3 --------------------------------------------------------------------
def test_delete_groups_v3_answers_a_null_error_message_per_group(cluster: MockCluster) -> None:
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="emptied")
    try:
        consumer.assign([TopicPartition("orders", 0)])
        consumer.commit({TopicPartition("orders", 0): OffsetAndMetadata(3, "", -1)})
    finally:
        consumer.close()
    delete = request_class(ApiKey.DELETE_GROUPS)
    with _connect(cluster) as sock:
        answer = round_trip(sock, delete(version=3, groups_names=["emptied", "never"]), 1, "t")
    assert [(r.group_id, r.error_code, r.error_message) for r in answer.results] == [
        ("emptied", ErrorCode.NONE, None),
        ("never", ErrorCode.GROUP_ID_NOT_FOUND, None),
    ]
    assert cluster.describe_group("emptied") is None


# -- TxnOffsetCommit v6 -----------------------------------------------------------------
def _producer(sock: socket.socket, transactional_id: str) -> Any:
    init = request_class(ApiKey.INIT_PRODUCER_ID)
    answer = round_trip(
        sock,
        init(
            version=5,
            transactional_id=transactional_id,
            transaction_timeout_ms=60_000,
            producer_id=-1,
            producer_epoch=-1,
        ),
        1,
        "t",
    )
    assert answer.error_code == ErrorCode.NONE
    return transactional_id, answer


def _commit(
    sock: socket.socket, producer: Any, version: int, group: str, topics: list[Any], generation: int = -1
) -> Any:
    transactional_id, answer = producer
    request = TxnOffsetCommit(
        version=version,
        transactional_id=transactional_id,
        group_id=group,
        producer_id=answer.producer_id,
        producer_epoch=answer.producer_epoch,
        generation_id_or_member_epoch=generation,
        member_id="member" if generation >= 0 else "",
        group_instance_id=None,
        topics=topics,
    )
    return round_trip(sock, request, 2, "t")


def _topic_id(cluster: MockCluster) -> uuid.UUID:
    return next(uuid.UUID(t["topic_id"]) for t in cluster.describe()["topics"] if t["name"] == "orders")


def _offset(index: int, offset: int) -> Any:
    return Partition(
        partition_index=index, committed_offset=offset, committed_leader_epoch=-1, committed_metadata=""
    )


def test_txn_offset_commit_v6_names_topics_by_id_and_commits_with_the_transaction(
    cluster: MockCluster,
) -> None:
    topic_id = _topic_id(cluster)
    with _connect(cluster) as sock:
        producer = _producer(sock, "tx")
        answer = _commit(
            sock,
            producer,
            6,
            "readers",
            [Topic(topic_id=topic_id, partitions=[_offset(0, 5), _offset(9, 1)])],
        )
        assert [
            (t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions]) for t in answer.topics
        ] == [(topic_id, [(0, ErrorCode.NONE), (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)])]
        unknown = _commit(
            sock, producer, 6, "readers", [Topic(topic_id=uuid.uuid4(), partitions=[_offset(0, 1)])]
        )
        assert unknown.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
        end = request_class(ApiKey.END_TXN)
        ended = round_trip(
            sock,
            end(
                version=5,
                transactional_id="tx",
                producer_id=producer[1].producer_id,
                producer_epoch=producer[1].producer_epoch,
                committed=True,
            ),
            3,
            "t",
        )
        assert ended.error_code == ErrorCode.NONE
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10_000)
    try:
        committed = admin.list_group_offsets("readers")
    finally:
        admin.close()
    assert committed["readers"][TopicPartition("orders", 0)].offset == 5


def test_txn_offset_commit_v6_says_group_id_not_found_where_v5_says_illegal_generation(
    cluster: MockCluster,
) -> None:
    with _connect(cluster) as sock:
        producer = _producer(sock, "tx")
        v5 = _commit(
            sock, producer, 5, "absent", [Topic(name="orders", partitions=[_offset(0, 1)])], generation=3
        )
        assert v5.topics[0].partitions[0].error_code == ErrorCode.ILLEGAL_GENERATION
    topic_id = _topic_id(cluster)
    with _connect(cluster) as sock:
        producer = _producer(sock, "tx2")
        v6 = _commit(
            sock, producer, 6, "absent", [Topic(topic_id=topic_id, partitions=[_offset(0, 1)])], generation=3
        )
        assert v6.topics[0].partitions[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_txn_offset_commit_v6_says_stale_member_epoch_where_v5_says_illegal_generation(
    cluster: MockCluster,
) -> None:
    """A consumer-group member committing in a transaction with an old epoch
    (OffsetMetadataManager.validateTransactionalOffsetCommit)."""
    heartbeat = request_class(ApiKey.CONSUMER_GROUP_HEARTBEAT)
    with _connect(cluster) as sock:
        joined = round_trip(
            sock,
            heartbeat(
                version=1,
                group_id="modern",
                member_id=str(uuid.uuid4()),
                member_epoch=0,
                instance_id=None,
                rack_id=None,
                rebalance_timeout_ms=30_000,
                subscribed_topic_names=["orders"],
                subscribed_topic_regex=None,
                server_assignor=None,
                topic_partitions=[],
            ),
            1,
            "t",
        )
        assert joined.error_code == ErrorCode.NONE and joined.member_epoch >= 1
        member = joined.member_id
        topic_id = _topic_id(cluster)
        answers = {}
        for version, transactional_id in ((5, "tx5"), (6, "tx6")):
            producer = _producer(sock, transactional_id)
            topic = (
                Topic(topic_id=topic_id, partitions=[_offset(0, 1)])
                if version >= 6
                else Topic(name="orders", partitions=[_offset(0, 1)])
            )
            request = TxnOffsetCommit(
                version=version,
                transactional_id=transactional_id,
                group_id="modern",
                producer_id=producer[1].producer_id,
                producer_epoch=producer[1].producer_epoch,
                generation_id_or_member_epoch=joined.member_epoch + 5,
                member_id=member,
                group_instance_id=None,
                topics=[topic],
            )
            answers[version] = round_trip(sock, request, 2, "t").topics[0].partitions[0].error_code
    assert answers == {5: ErrorCode.ILLEGAL_GENERATION, 6: ErrorCode.STALE_MEMBER_EPOCH}
