"""List-type topic configs (issue 15, item 12) as Kafka 4.x validates them, through
confluent-kafka's AdminClient (librdkafka): the empty list, what APPEND/SUBTRACT make of a
list (ConfigurationControlManager.incrementalAlterConfigResource) and what LogConfig's
validators refuse, with Kafka's code and message.

cleanup.policy is `ValidList.in(compact, delete)`: the empty list is allowed (a topic that
neither deletes nor compacts), members must be distinct, non-empty and one of the two.
leader/follower.replication.throttled.replicas take ThrottledReplicaListValidator: the
empty list, "*", or partition:broker pairs. Other values are checked against LogConfig's
ranges, then LogConfig.validateValues' cross-check of the compaction lags.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from broker import MockCluster
from tests.conftest import FAST

INVALID_CONFIG = 40
DYNAMIC_TOPIC_CONFIG = 1
SET, APPEND, SUBTRACT = AlterConfigOpType.SET, AlterConfigOpType.APPEND, AlterConfigOpType.SUBTRACT
THROTTLED = "leader.replication.throttled.replicas"
THROTTLED_FORMAT = (
    "must be the literal '*' or a list of replicas in the following format: "
    "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
)


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(config=FAST) as running:
        yield running


@pytest.fixture
def admin(cluster: MockCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def alter(admin: AdminClient, topic: str, *ops: tuple[str, str, AlterConfigOpType]) -> tuple[int, str] | None:
    """IncrementalAlterConfigs of one topic: None when accepted, else (code, message)."""
    entries = [ConfigEntry(name, value, incremental_operation=op) for name, value, op in ops]
    [future] = admin.incremental_alter_configs(
        [ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)]
    ).values()
    try:
        future.result(timeout=10)
    except KafkaException as exc:
        return exc.args[0].code(), exc.args[0].str()
    return None


def described(admin: AdminClient, topic: str, name: str) -> Any:
    [future] = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    return future.result(timeout=10)[name]


def create(admin: AdminClient, topic: str, config: dict[str, str]) -> tuple[int, str] | None:
    [future] = admin.create_topics([NewTopic(topic, 1, 1, config=config)], operation_timeout=5).values()
    error = future.exception(timeout=10)
    return None if error is None else (error.args[0].code(), error.args[0].str())


def test_subtract_that_empties_cleanup_policy_is_accepted(cluster: MockCluster, admin: AdminClient) -> None:
    """confluent-kafka-python's test_incremental_alter_configs: SUBTRACT delete from the
    default policy leaves the empty list, which Kafka 4.x keeps and describes as ""."""
    cluster.create_topic("emptied", config={"compression.type": "gzip"})
    assert (
        alter(admin, "emptied", ("cleanup.policy", "delete", SUBTRACT), ("retention.ms", "5000", SET)) is None
    )
    policy = described(admin, "emptied", "cleanup.policy")
    assert (policy.value, policy.source, policy.is_default) == ("", DYNAMIC_TOPIC_CONFIG, False)
    assert str(policy) == 'cleanup.policy=""'
    assert cluster.state.topics["emptied"].configs == {
        "compression.type": "gzip",
        "cleanup.policy": "",
        "retention.ms": "5000",
    }
    # APPEND starts again from the stored (empty) list, not from the default.
    assert alter(admin, "emptied", ("cleanup.policy", "compact", APPEND)) is None
    assert described(admin, "emptied", "cleanup.policy").value == "compact"


def test_empty_list_configs_set_and_created(cluster: MockCluster, admin: AdminClient) -> None:
    assert create(admin, "keeps-all", {"cleanup.policy": "", THROTTLED: ""}) is None
    assert cluster.state.topics["keeps-all"].configs == {"cleanup.policy": "", THROTTLED: ""}
    cluster.create_topic("throttled")
    assert alter(admin, "throttled", (THROTTLED, "0:0,1:0", APPEND)) is None
    assert described(admin, "throttled", THROTTLED).value == "0:0,1:0"
    assert alter(admin, "throttled", (THROTTLED, "0:0,1:0", SUBTRACT)) is None
    assert described(admin, "throttled", THROTTLED).value == ""
    assert (
        alter(admin, "throttled", (THROTTLED, "*", SET), ("cleanup.policy", " compact , delete ", SET))
        is None
    )


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        (
            [("cleanup.policy", "delete,delete", SET)],
            "Configuration 'cleanup.policy' values must not be duplicated.",
        ),
        # APPEND "" adds an empty member ("delete,"), which the list refuses.
        ([("cleanup.policy", "", APPEND)], "Configuration 'cleanup.policy' values must not be empty."),
        (
            [("cleanup.policy", "delete,Compact", SET)],
            "Invalid value Compact for configuration cleanup.policy: String must be one of: compact, delete",
        ),
        (
            [(THROTTLED, "0:1,,1:2", SET)],
            f"Invalid value [0:1, , 1:2] for configuration {THROTTLED}: {THROTTLED} {THROTTLED_FORMAT}",
        ),
        (
            [(THROTTLED, "*,0:1", SET)],
            f"Invalid value [*, 0:1] for configuration {THROTTLED}: {THROTTLED} {THROTTLED_FORMAT}",
        ),
        (
            [("min.cleanable.dirty.ratio", "2", SET)],
            "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1",
        ),
        (
            [("segment.bytes", "1000", SET)],
            "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576",
        ),
        (
            [("min.compaction.lag.ms", "10", SET), ("max.compaction.lag.ms", "5", SET)],
            "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)",
        ),
        (
            [("compression.gzip.level", "0", SET)],
            "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1",
        ),
        (
            [("compression.lz4.level", "18", SET)],
            "Invalid value 18 for configuration compression.lz4.level: Value must be no more than 17",
        ),
        (
            [("compression.zstd.level", "23", SET)],
            "Invalid value 23 for configuration compression.zstd.level: Value must be no more than 22",
        ),
        (
            [("compression.type", "GZIP", SET)],
            "Invalid value GZIP for configuration compression.type: "
            "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
        ),
    ],
)
def test_refused_values(
    cluster: MockCluster, admin: AdminClient, ops: list[tuple[str, str, AlterConfigOpType]], message: str
) -> None:
    cluster.create_topic("refuses")
    assert alter(admin, "refuses", *ops) == (INVALID_CONFIG, message)
    assert cluster.state.topics["refuses"].configs == {}


def test_create_topics_checks_names_before_values(admin: AdminClient) -> None:
    """LogConfig.validate checks every name, then the values."""
    assert create(admin, "both-wrong", {"retention.ms": "soon", "no.such.config": "1"}) == (
        INVALID_CONFIG,
        "Unknown topic config name: no.such.config",
    )
    assert create(admin, "dup-policy", {"cleanup.policy": "compact,compact"}) == (
        INVALID_CONFIG,
        "Configuration 'cleanup.policy' values must not be duplicated.",
    )


def test_list_parsing_as_config_def() -> None:
    from broker.config.topic_configs import parse_list, topic_configs_error

    assert parse_list("") == parse_list("  ") == []
    assert parse_list(" a , b ") == ["a", "b"]
    assert parse_list("a,,b,") == ["a", "", "b", ""]
    assert parse_list(",a") == ["", "a"]
    assert topic_configs_error({THROTTLED: "0:1, 2:3,"}) is None  # trailing empties end the list
    assert topic_configs_error({THROTTLED: " * "}) is None
    assert topic_configs_error({THROTTLED: "0:99999999999"}) is not None  # not an int
    assert topic_configs_error({"cleanup.policy": ",delete"}) == (
        "Configuration 'cleanup.policy' values must not be empty."
    )
    assert topic_configs_error({"min.cleanable.dirty.ratio": "1e10"}) == (
        "Invalid value 1.0E10 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"
    )
    assert topic_configs_error({"min.cleanable.dirty.ratio": "0.5d"}) is None
