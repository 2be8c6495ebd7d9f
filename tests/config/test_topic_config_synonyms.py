"""A topic's DescribeConfigs synonyms through kafka-python's KafkaAdminClient, as Kafka's
ConfigHelper.createTopicConfigEntry lists them: the topic's override, then the broker
config's layers (configSynonyms over DynamicBrokerConfig.brokerConfigSynonyms, so
log.retention.ms, .minutes and .hours together), each layer in that order, dropping the
entries before the first one named as the broker config; a null default (log.retention.ms,
log.roll.ms, log.roll.jitter.ms, log.flush.interval.ms) is no synonym. Checked against
Kafka 4.4."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from broker import MockCluster
from tests.conftest import FAST

TOPIC_CONFIG, STATIC, DEFAULT = "DYNAMIC_TOPIC_CONFIG", "STATIC_BROKER_CONFIG", "DEFAULT_CONFIG"
TIMES = ("retention.ms", "segment.ms", "segment.jitter.ms", "flush.ms")


def topic_configs(config: dict[str, str], overrides: dict[str, str] | None = None) -> dict[str, Any]:
    """{name: (value, source, [(synonym, value, source)])} of a new topic."""
    with MockCluster(config={**FAST, **config}) as cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)
        try:
            admin.create_topics([NewTopic("t", 1, 1, topic_configs=overrides or {})])
            described = admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, "t")], include_synonyms=True, config_filter="all"
            )
        finally:
            admin.close()
    return {
        name: (c["value"], c["config_source"], [(s["name"], s["value"], s["source"]) for s in c["synonyms"]])
        for name, c in described["topic"]["t"].items()
    }


@pytest.fixture(scope="module")
def defaults() -> Iterator[dict[str, Any]]:
    yield topic_configs({})


def test_time_configs_whose_broker_config_defaults_to_null_have_no_synonym(defaults: dict[str, Any]) -> None:
    assert defaults["retention.ms"] == ("604800000", DEFAULT, [])
    assert defaults["segment.ms"] == ("604800000", DEFAULT, [])
    assert defaults["segment.jitter.ms"] == ("0", DEFAULT, [])
    assert defaults["flush.ms"] == ("9223372036854775807", DEFAULT, [])
    # a broker config with a default is its synonym; a topic config without one has none
    assert defaults["segment.bytes"] == (
        "1073741824",
        DEFAULT,
        [("log.segment.bytes", "1073741824", DEFAULT)],
    )
    assert defaults["compression.type"] == ("producer", DEFAULT, [("compression.type", "producer", DEFAULT)])
    assert defaults["leader.replication.throttled.replicas"] == ("", DEFAULT, [])


def test_static_broker_configs_and_their_group_in_kafkas_order() -> None:
    configs = topic_configs(
        {
            "log.retention.ms": "5000",
            "log.retention.hours": "24",
            "log.roll.hours": "12",
            "log.flush.scheduler.interval.ms": "7777",
        }
    )
    retention = [
        ("log.retention.ms", "5000", STATIC),
        ("log.retention.hours", "24", STATIC),
        ("log.retention.hours", "168", DEFAULT),
    ]
    assert configs["retention.ms"] == ("5000", STATIC, retention)
    # log.roll.hours gives segment.ms its value, but the group's first member (log.roll.ms)
    # is unset, so Kafka lists no synonym and calls it the default
    assert configs["segment.ms"] == ("43200000", DEFAULT, [])
    assert configs["flush.ms"] == ("7777", DEFAULT, [])


def test_topic_overrides_come_first() -> None:
    configs = topic_configs(
        {"log.retention.ms": "5000"},
        {"retention.ms": "1000", "segment.ms": "2000", "max.message.bytes": "5000"},
    )
    assert configs["retention.ms"] == (
        "1000",
        TOPIC_CONFIG,
        [
            ("retention.ms", "1000", TOPIC_CONFIG),
            ("log.retention.ms", "5000", STATIC),
            ("log.retention.hours", "168", DEFAULT),
        ],
    )
    assert configs["segment.ms"] == ("2000", TOPIC_CONFIG, [("segment.ms", "2000", TOPIC_CONFIG)])
    assert configs["max.message.bytes"] == (
        "5000",
        TOPIC_CONFIG,
        [("max.message.bytes", "5000", TOPIC_CONFIG), ("message.max.bytes", "1048588", DEFAULT)],
    )


def test_kafka_44_topic_configs(defaults: dict[str, Any]) -> None:
    """The topic configs Kafka 4.4 added, with their defaults and broker synonyms."""
    assert defaults["errors.deadletterqueue.group.enable"] == ("false", DEFAULT, [])
    assert defaults["max.decompressed.message.bytes"] == (
        "2147483639",
        DEFAULT,
        [("max.decompressed.message.bytes", "2147483639", DEFAULT)],
    )
    assert defaults["remote.copy.lag.bytes"] == (
        "-1",
        DEFAULT,
        [("log.remote.copy.lag.bytes", "-1", DEFAULT)],
    )
    assert defaults["remote.copy.lag.ms"] == ("0", DEFAULT, [("log.remote.copy.lag.ms", "0", DEFAULT)])
    assert defaults["remote.log.copy.disable"] == ("false", DEFAULT, [])
    assert defaults["remote.log.delete.on.disable"] == ("false", DEFAULT, [])


def test_kafka_44_topic_configs_set_and_validated() -> None:
    """Set on a topic they are its own; LogConfig's validators refuse what Kafka 4.4 refuses."""
    overrides = {"max.decompressed.message.bytes": "1048576", "remote.copy.lag.ms": "-1"}
    configs = topic_configs({}, overrides)
    assert configs["max.decompressed.message.bytes"][:2] == ("1048576", TOPIC_CONFIG)
    assert configs["remote.copy.lag.ms"][:2] == ("-1", TOPIC_CONFIG)
    with MockCluster(config=FAST) as cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)
        try:
            refused = {
                value: admin.create_topics(
                    {f"t{i}": {"num_partitions": 1, "configs": {key: value}}}, raise_errors=False
                )["topics"][0]["error_message"]
                for i, (key, value) in enumerate(
                    [
                        ("remote.copy.lag.bytes", "-2"),
                        ("max.decompressed.message.bytes", "0"),
                        ("max.decompressed.message.bytes", "2147483647"),
                        ("remote.log.copy.disable", "yes"),
                    ]
                )
            }
        finally:
            admin.close()
    assert refused == {
        "-2": "Invalid value -2 for configuration remote.copy.lag.bytes: Value must be at least -1",
        "0": "Invalid value 0 for configuration max.decompressed.message.bytes: Value must be at least 1",
        "2147483647": (
            "Invalid value 2147483647 for configuration max.decompressed.message.bytes: "
            "Value must be no more than 2147483639"
        ),
        "yes": "Invalid value yes for configuration remote.log.copy.disable: Expected value to be either true or false",
    }
