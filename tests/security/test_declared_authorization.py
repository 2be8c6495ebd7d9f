"""What each handler module declares about authorization is what a principal without ACLs
meets: under StandardAuthorizer with no bindings, the APIs whose check does not depend on
the resources a request names refuse even an empty request, in every advertised version,
whether the pipeline's stage or the handler does the checking. (The per-resource checks
are tested with named topics, groups and transactional ids in test_authorization.py.)"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from broker import MockCluster
from broker.handlers import HANDLERS
from messages.registry import request_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.structs import new
from tests.support.wire import round_trip

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CLUSTER, GROUP, TXN = (
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
)
# The refusal an empty request gets from a principal with no ACLs.
REFUSED = {
    ApiKey.JOIN_GROUP: GROUP,
    ApiKey.HEARTBEAT: GROUP,
    ApiKey.LEAVE_GROUP: GROUP,
    ApiKey.SYNC_GROUP: GROUP,
    ApiKey.OFFSET_DELETE: GROUP,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: GROUP,
    ApiKey.INIT_PRODUCER_ID: TXN,
    ApiKey.ADD_OFFSETS_TO_TXN: TXN,
    ApiKey.END_TXN: TXN,
    ApiKey.ELECT_LEADERS: CLUSTER,
    ApiKey.DESCRIBE_LOG_DIRS: CLUSTER,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: CLUSTER,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: CLUSTER,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: CLUSTER,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: CLUSTER,
    ApiKey.DESCRIBE_QUORUM: CLUSTER,
    ApiKey.UPDATE_FEATURES: CLUSTER,
    ApiKey.UNREGISTER_BROKER: CLUSTER,
    ApiKey.LIST_CONFIG_RESOURCES: CLUSTER,
    ApiKey.ADD_RAFT_VOTER: CLUSTER,
    ApiKey.REMOVE_RAFT_VOTER: CLUSTER,
}


def error_codes(message: Any) -> set[int]:
    """Every error code anywhere in a decoded response."""
    found: set[int] = set()
    if isinstance(message, list | tuple):
        for item in message:
            found |= error_codes(item)
        return found
    for name in getattr(type(message), "fields", None) or {}:
        value = getattr(message, name, None)
        if name.endswith("error_code") and isinstance(value, int):
            found.add(value)
        elif isinstance(value, list | tuple) or hasattr(type(value), "fields"):
            found |= error_codes(value)
    return found


@pytest.fixture(scope="module")
def secured() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, config={"authorizer.class.name": STANDARD}) as cluster:
        yield cluster


# Versions whose response has no top-level error code: an empty request has nothing to
# refuse (Kafka answers it with empty results too).
FIRST_WITH_TOP_LEVEL_ERROR = {ApiKey.DESCRIBE_LOG_DIRS: 3, ApiKey.ELECT_LEADERS: 1}
CASES = [
    (key, version)
    for key in sorted(REFUSED)
    for version in range(
        max(HANDLERS[key].min_version, FIRST_WITH_TOP_LEVEL_ERROR.get(key, 0)), HANDLERS[key].max_version + 1
    )
]


@pytest.mark.parametrize(("api_key", "version"), CASES, ids=[f"{ApiKey(k).name}-v{v}" for k, v in CASES])
def test_a_principal_without_acls_is_refused(secured: MockCluster, api_key: int, version: int) -> None:
    authorization = HANDLERS[api_key].authorization
    assert authorization.check is not None or authorization.by_handler
    host, port = secured.bootstrap_servers.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        response = round_trip(sock, new(request_class(api_key), version), 1, "no-acls", version)
    body = response[1] if isinstance(response, tuple) else response
    assert REFUSED[api_key] in error_codes(body)


def test_an_unchecked_api_is_answered_without_acls(secured: MockCluster) -> None:
    """ApiVersions is declared NOT_CHECKED, as in Kafka: a principal without ACLs gets it."""
    host, port = secured.bootstrap_servers.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        response = round_trip(sock, new(request_class(ApiKey.API_VERSIONS), 3), 1, "no-acls", 3)
    body = response[1] if isinstance(response, tuple) else response
    assert body.error_code == ErrorCode.NONE and len(body.api_keys) == len(HANDLERS) - 2  # no telemetry


@pytest.mark.parametrize("transactional_id", ["payments-txn", None])
def test_a_refused_init_producer_id_names_no_producer(
    secured: MockCluster, transactional_id: str | None
) -> None:
    """Kafka's refusal (TRANSACTIONAL_ID_ or CLUSTER_AUTHORIZATION_FAILED) carries producer
    id and epoch -1, not an epoch 0 a client could take for a granted one."""
    host, port = secured.bootstrap_servers.split(",")[0].rsplit(":", 1)
    request = request_class(ApiKey.INIT_PRODUCER_ID)[4](
        transactional_id=transactional_id, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1
    )
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        response = round_trip(sock, request, 1, "no-acls")
    body = response[1] if isinstance(response, tuple) else response
    expected = TXN if transactional_id is not None else CLUSTER
    assert (body.error_code, body.producer_id, body.producer_epoch) == (expected, -1, -1)


def test_a_refused_delete_records_names_no_low_watermark(secured: MockCluster) -> None:
    """A partition refused TOPIC_AUTHORIZATION_FAILED answers low watermark -1, as Kafka's."""
    secured.create_topic("ledger")
    host, port = secured.bootstrap_servers.split(",")[0].rsplit(":", 1)
    Topic = request_class(ApiKey.DELETE_RECORDS)[2].DeleteRecordsTopic
    request = request_class(ApiKey.DELETE_RECORDS)[2](
        topics=[Topic(name="ledger", partitions=[Topic.DeleteRecordsPartition(partition_index=0, offset=0)])],
        timeout_ms=5000,
    )
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        response = round_trip(sock, request, 1, "no-acls")
    body = response[1] if isinstance(response, tuple) else response
    [partition] = body.topics[0].partitions
    assert (partition.error_code, partition.low_watermark) == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1)


@pytest.mark.parametrize("version", [1, 5, 6])
def test_a_refused_topic_deletion_says_why(secured: MockCluster, version: int) -> None:
    """DeleteTopics (v5+ has a message) and DescribeProducers answer a refused topic with
    the error's own message, as Kafka builds them from `new ApiError(error)`."""
    topic = f"kept-v{version}"  # the cluster is the module's
    secured.create_topic(topic)
    host, port = secured.bootstrap_servers.split(",")[0].rsplit(":", 1)
    Delete = request_class(ApiKey.DELETE_TOPICS)[version]
    if version >= 6:
        delete = Delete(topics=[Delete.DeleteTopicState(name=topic)], timeout_ms=5000)
    else:
        delete = Delete(topic_names=[topic], timeout_ms=5000)
    Producers = request_class(ApiKey.DESCRIBE_PRODUCERS)[0]
    describe = Producers(topics=[Producers.TopicRequest(name=topic, partition_indexes=[0])])
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        deleted = round_trip(sock, delete, 1, "no-acls")
        described = round_trip(sock, describe, 2, "no-acls")
    [refused] = deleted.responses
    assert (refused.name, refused.error_code) == (topic, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if version >= 5:
        assert refused.error_message == "Topic authorization failed."
    [partition] = described.topics[0].partitions
    assert (partition.error_code, partition.error_message) == (
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        "Topic authorization failed.",
    )
    assert topic in secured.state.topics  # nothing was deleted


def test_a_refused_topic_creation_says_why(secured: MockCluster) -> None:
    """CreateTopics answers a topic the principal may not create with Kafka's message."""
    admin = AdminClient({"bootstrap.servers": secured.bootstrap_servers})
    future = admin.create_topics([NewTopic("refused-new", num_partitions=1, replication_factor=1)])[
        "refused-new"
    ]
    with pytest.raises(KafkaException) as refused:
        future.result(timeout=30)
    error = refused.value.args[0]
    assert error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert error.str() == "Authorization failed."


def test_a_refused_join_names_no_protocol(secured: MockCluster) -> None:
    """A refused JoinGroup (v7+, where the protocol name is nullable) names none, as Kafka."""
    host, port = secured.bootstrap_servers.split(",")[0].rsplit(":", 1)
    Join = request_class(ApiKey.JOIN_GROUP)[9]
    join = Join(
        group_id="refused-group",
        session_timeout_ms=30000,
        rebalance_timeout_ms=30000,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[Join.JoinGroupRequestProtocol(name="range", metadata=b"")],
        reason=None,
    )
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        response = round_trip(sock, join, 1, "no-acls")
    body = response[1] if isinstance(response, tuple) else response
    assert (body.error_code, body.protocol_name) == (GROUP, None)
