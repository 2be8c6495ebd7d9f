"""Fields Kafka 4.4 leaves at its message schemas' defaults, answered as Kafka answers them
(the differential suite found each): an empty error message `""` where Kafka sets none,
and zeros for an unknown transactional id. Raw frames where no client shows the field;
kafka-python's admin client where it does."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.errors import TransactionalIdNotFoundError

from broker import MockCluster
from messages.registry import request_class
from protocol.errors import ErrorCode
from tests.support.wire import round_trip

FIND_COORDINATOR, ALTER_PARTITION_REASSIGNMENTS, DESCRIBE_TRANSACTIONS = 10, 45, 65
MALFORMED = (
    "This most likely occurs because of a request being malformed by the client library or the message was "
    "sent to an incompatible broker. See the broker logs for more details."
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=1) as running:
        running.create_topic("t", 1)
        yield running


def call(cluster: MockCluster, api_key: int, version: int, **fields: Any) -> Any:
    endpoint = cluster.brokers[0].advertised_endpoint("PLAINTEXT")
    with socket.create_connection((endpoint.host, endpoint.port), timeout=10) as sock:
        return round_trip(sock, request_class(api_key)[version](**fields), 1, "defaults")


@pytest.mark.parametrize("version", [4, 5, 6])
def test_find_coordinator_v4_plus_messages(cluster: MockCluster, version: int) -> None:
    """KafkaApis sets no message on a v4+ coordinator it looks up, found or refused; an
    unknown key type fails the whole request, Errors.message() on every key."""
    found = call(cluster, FIND_COORDINATOR, version, key_type=0, coordinator_keys=["g", ""])
    share = call(
        cluster, FIND_COORDINATOR, version, key_type=2, coordinator_keys=["g"]
    )  # share groups: not served
    unknown = call(cluster, FIND_COORDINATOR, version, key_type=7, coordinator_keys=["g", "h"])
    assert [(c.key, c.error_code, c.error_message) for c in found.coordinators] == [
        ("g", ErrorCode.NONE, ""),
        ("", ErrorCode.NONE, ""),
    ]
    assert [(c.error_code, c.error_message) for c in share.coordinators] == [(ErrorCode.INVALID_REQUEST, "")]
    assert [(c.key, c.error_code, c.error_message) for c in unknown.coordinators] == [
        (key, ErrorCode.INVALID_REQUEST, MALFORMED) for key in ("g", "h")
    ]


def test_find_coordinator_before_v4_names_the_error(cluster: MockCluster) -> None:
    answer = call(cluster, FIND_COORDINATOR, 3, key_type=0, key="g")
    assert (answer.error_code, answer.error_message) == (ErrorCode.NONE, "NONE")


@pytest.mark.parametrize("version", [0, 1])
def test_alter_partition_reassignments_of_nothing_has_an_empty_message(
    cluster: MockCluster, version: int
) -> None:
    """QuorumController answers no topics with a fresh response ("" from the schema);
    ReplicationControlManager sets null once it walked any topic."""
    nothing = call(
        cluster,
        ALTER_PARTITION_REASSIGNMENTS,
        version,
        timeout_ms=1000,
        topics=[],
        allow_replication_factor_change=True,
    )
    Topic = request_class(ALTER_PARTITION_REASSIGNMENTS).ReassignableTopic
    unknown = call(
        cluster,
        ALTER_PARTITION_REASSIGNMENTS,
        version,
        timeout_ms=1000,
        allow_replication_factor_change=True,
        topics=[
            Topic(name="nope", partitions=[Topic.ReassignablePartition(partition_index=0, replicas=[0])])
        ],
    )
    assert (nothing.error_code, nothing.error_message) == (ErrorCode.NONE, "")
    assert (unknown.error_code, unknown.error_message) == (ErrorCode.NONE, None)
    partition = unknown.responses[0].partitions[0]
    assert (partition.error_code, partition.error_message) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        "Unable to find a topic named nope.",
    )


def test_describe_transactions_of_an_unknown_id_is_all_zeros(cluster: MockCluster) -> None:
    """TransactionCoordinator sets the error code alone: producer id, epoch, start time and
    timeout stay 0, the state ""."""
    answer = call(cluster, DESCRIBE_TRANSACTIONS, 0, transactional_ids=["nobody", ""])
    assert [
        (
            s.transactional_id,
            s.error_code,
            s.producer_id,
            s.producer_epoch,
            s.transaction_start_time_ms,
            s.transaction_timeout_ms,
            s.transaction_state,
        )
        for s in answer.transaction_states
    ] == [
        ("nobody", ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, 0, 0, 0, 0, ""),
        ("", ErrorCode.INVALID_REQUEST, 0, 0, 0, 0, ""),
    ]


def test_describe_transactions_of_an_unknown_id_through_kafka_python(cluster: MockCluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        with pytest.raises(TransactionalIdNotFoundError):
            admin.describe_transactions(["nobody"])
    finally:
        admin.close()
