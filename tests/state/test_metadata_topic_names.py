"""Metadata (3) for a topic that is not there: KafkaApis.getTopicMetadata answers a name
Topic.validate refuses (empty, `.`, `..`, characters other than ASCII alphanumerics, `.`,
`_` and `-`, more than 249 characters) INVALID_TOPIC_EXCEPTION at every version, with
auto-creation allowed or not, and a valid unknown name UNKNOWN_TOPIC_OR_PARTITION."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient

from broker import MockCluster
from messages.registry import request_class
from protocol.errors import ErrorCode
from tests.support.wire import round_trip

INVALID = ["", ".", "..", "a b", "bad/name", "x" * 250]


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, config={"auto.create.topics.enable": "true"}) as running:
        yield running


def metadata(cluster: MockCluster, version: int, names: list[str], auto_create: bool) -> dict[str, int]:
    Request = request_class(3)
    fields: dict[str, object] = {"topics": [Request.MetadataRequestTopic(name=n) for n in names]}
    if version >= 4:
        fields["allow_auto_topic_creation"] = auto_create
    if 8 <= version <= 10:
        fields["include_cluster_authorized_operations"] = False
    if version >= 8:
        fields["include_topic_authorized_operations"] = False
    endpoint = cluster.brokers[0].advertised_endpoint("PLAINTEXT")
    with socket.create_connection((endpoint.host, endpoint.port), timeout=10) as sock:
        answer = round_trip(sock, Request[version](**fields), 1, "names")
    return {t.name: t.error_code for t in answer.topics}


@pytest.mark.parametrize(
    ("version", "auto_create"),
    [(v, True) for v in range(1, 14)] + [(v, False) for v in range(4, 14)],  # v1-v3 always auto-create
)
def test_an_invalid_name_is_an_invalid_topic(cluster: MockCluster, version: int, auto_create: bool) -> None:
    answer = metadata(cluster, version, INVALID, auto_create)
    assert answer == dict.fromkeys(INVALID, ErrorCode.INVALID_TOPIC_EXCEPTION)


@pytest.mark.parametrize("version", [4, 9, 13])
def test_a_valid_unknown_name_is_unknown(cluster: MockCluster, version: int) -> None:
    assert metadata(cluster, version, ["not-there"], False) == {
        "not-there": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    }


def test_through_the_clients(cluster: MockCluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        described = {
            t["name"]: t["error_code"] for t in admin.describe_topics(["a b", "..", "still-not-there"])
        }
    finally:
        admin.close()
    listed = AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(
        topic="a b", timeout=10
    )
    assert described == {
        "a b": ErrorCode.INVALID_TOPIC_EXCEPTION,
        "..": ErrorCode.INVALID_TOPIC_EXCEPTION,
        "still-not-there": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    error = listed.topics["a b"].error
    assert error is not None and error.code() == ErrorCode.INVALID_TOPIC_EXCEPTION
