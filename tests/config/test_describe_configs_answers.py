"""DescribeConfigs answers as Kafka 4.4's (found by the differential suite): an empty error
message where there is none, INVALID_TOPIC_EXCEPTION for a name no topic can have,
INVALID_REQUEST for an empty group name and an unknown resource type, group config
synonyms named after the broker config they come from, client metrics documentation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.protocol.admin import DescribeConfigsRequest

from broker import MockCluster
from tests.conftest import FAST

TOPIC, BROKER, CLIENT_METRICS, GROUP = 2, 4, 16, 32
INVALID_TOPIC, INVALID_REQUEST, UNKNOWN_TOPIC = 17, 42, 3


@pytest.fixture
def admin() -> Iterator[KafkaAdminClient]:
    with MockCluster(brokers=1, config=FAST) as cluster:
        client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)
        yield client
        client.close()


def describe(admin: KafkaAdminClient, *resources: tuple[int, str, list[str] | None], **flags: Any) -> Any:
    request = DescribeConfigsRequest(resources=list(resources), **flags)
    return admin._manager.run(admin._manager.send, request, 0)


def test_errors_and_empty_messages_as_kafka_answers(admin: KafkaAdminClient) -> None:
    response = describe(
        admin,
        (BROKER, "0", ["message.max.bytes"]),
        (TOPIC, "no-such-topic", None),
        (TOPIC, "", None),
        (TOPIC, "a b", None),
        (TOPIC, "x" * 250, None),
        (GROUP, "", None),
        (0, "anything", None),
    )
    answers = [(r.error_code, r.error_message) for r in response.results]
    assert answers[:2] == [(0, ""), (UNKNOWN_TOPIC, "")]
    assert answers[2] == (INVALID_TOPIC, "Topic name is invalid: the empty string is not allowed")
    assert answers[3][0] == INVALID_TOPIC and "contains one or more characters" in answers[3][1]
    assert answers[4][0] == INVALID_TOPIC and "is longer than the max allowed length 249" in answers[4][1]
    assert answers[5] == (INVALID_REQUEST, "Group name must not be empty")
    assert answers[6][0] == INVALID_REQUEST and answers[6][1].startswith("This most likely occurs")


def test_group_config_synonyms_and_client_metrics_documentation(admin: KafkaAdminClient) -> None:
    response = describe(
        admin,
        (GROUP, "g", ["consumer.session.timeout.ms"]),
        (CLIENT_METRICS, "subscription", ["interval.ms"]),
        include_synonyms=True,
        include_documentation=True,
    )
    group, metrics = response.results
    [session] = group.configs
    assert [(s.name, s.value) for s in session.synonyms] == [("group.consumer.session.timeout.ms", "45000")]
    [interval] = metrics.configs
    assert interval.documentation == "Metrics push interval in milliseconds"
