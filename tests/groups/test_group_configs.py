"""Per-group configs (GROUP resources, KIP-848): kafka-python's admin client sets a
group's session timeout and heartbeat interval, the group's members get them, and values
outside the broker's group.consumer.* bounds are refused with Kafka's messages."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from broker import MockCluster
from tests.groups.test_consumer_group_heartbeat_wire import Wire

CONFIG = {
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.min.session.timeout.ms": "1000",
}


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, config=CONFIG) as running:
        running.create_topic("t", 1)
        yield running


def test_group_configs_are_set_described_and_used(cluster: MockCluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        group = ConfigResource(
            ConfigResourceType.GROUP,
            "g",
            configs={"consumer.heartbeat.interval.ms": "200", "consumer.session.timeout.ms": "1500"},
        )
        admin.alter_configs([group], raise_on_unknown=False, incremental=True)
        described = admin.describe_configs(
            [ConfigResource(ConfigResourceType.GROUP, "g")], config_filter="all"
        )
        values = {name: (c["value"], c["config_source"]) for name, c in described["group"]["g"].items()}
    finally:
        admin.close()
    assert values == {
        "consumer.session.timeout.ms": ("1500", "DYNAMIC_GROUP_CONFIG"),
        "consumer.heartbeat.interval.ms": ("200", "DYNAMIC_GROUP_CONFIG"),
        # a share group's configs (KIP-932), at their defaults
        "share.session.timeout.ms": ("45000", "DEFAULT_CONFIG"),
        "share.heartbeat.interval.ms": ("5000", "DEFAULT_CONFIG"),
        "share.record.lock.duration.ms": ("30000", "DEFAULT_CONFIG"),
        "share.delivery.count.limit": ("5", "DEFAULT_CONFIG"),
        "share.partition.max.record.locks": ("2000", "DEFAULT_CONFIG"),
        "share.auto.offset.reset": ("latest", "DEFAULT_CONFIG"),
        "share.renew.acknowledge.enable": ("true", "DEFAULT_CONFIG"),
        "share.assignment.interval.ms": ("1000", "DEFAULT_CONFIG"),
        "share.isolation.level": ("read_uncommitted", "DEFAULT_CONFIG"),
        # a streams group's (KIP-1071)
        "streams.session.timeout.ms": ("45000", "DEFAULT_CONFIG"),
        "streams.heartbeat.interval.ms": ("5000", "DEFAULT_CONFIG"),
        "streams.num.standby.replicas": ("0", "DEFAULT_CONFIG"),
        "streams.initial.rebalance.delay.ms": ("3000", "DEFAULT_CONFIG"),
        "streams.assignment.interval.ms": ("1000", "DEFAULT_CONFIG"),
    }
    wire = Wire(cluster)
    assert wire.join("a").heartbeat_interval_ms == 200
    assert cluster.groups.consumer.session_timeout_ms("g") == 1500
    assert cluster.groups.consumer.heartbeat_interval_ms("other") == 5000  # the broker's default


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        (
            {"consumer.session.timeout.ms": "500"},
            "consumer.session.timeout.ms must be in the range 1000 to 60000 inclusive.",
        ),
        (
            {"consumer.heartbeat.interval.ms": "20000"},
            "consumer.heartbeat.interval.ms must be in the range 100 to 15000 inclusive.",
        ),
        (
            {"consumer.session.timeout.ms": "1000", "consumer.heartbeat.interval.ms": "1000"},
            "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms",
        ),
        (
            {"consumer.session.timeout.ms": "soon"},
            "Invalid value soon for configuration consumer.session.timeout.ms: Not a number of type INT",
        ),
        ({"share.fancy": "1"}, "Unknown group config name: share.fancy"),
        (
            {"share.record.lock.duration.ms": "1000"},
            "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.",
        ),
        (
            {"share.delivery.count.limit": "11"},
            "share.delivery.count.limit must be in the range 2 to 10 inclusive.",
        ),
        (
            {"streams.session.timeout.ms": "1000"},
            "streams.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
        ),
        (
            {"streams.num.standby.replicas": "5"},
            "streams.num.standby.replicas must be less than or equal to 2",
        ),
        (
            {"streams.task.offset.interval.ms": "1000"},
            "streams.task.offset.interval.ms must be greater than or equal to 15000",
        ),
        (
            {"streams.acceptable.recovery.lag": "-1"},
            "Invalid value -1 for configuration streams.acceptable.recovery.lag: Value must be at least 0",
        ),
        (
            {"share.isolation.level": "dirty"},
            "Invalid value dirty for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted",
        ),
    ],
)
def test_group_configs_outside_the_broker_bounds_are_refused(
    cluster: MockCluster, configs: dict[str, str], message: str
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        result = admin.alter_configs(
            [ConfigResource(ConfigResourceType.GROUP, "g", configs=configs)],
            raise_on_unknown=False,
            incremental=True,
        )
    finally:
        admin.close()
    assert result == {"group": {"g": f"[Error 40] InvalidConfigurationError: {message}"}}
    assert "g" not in cluster.state.group_configs


def test_a_broker_default_outside_kafkas_bounds_leaves_other_group_configs_settable() -> None:
    """A test's short share lock (the broker default, under Kafka's 15 s minimum) does not
    make every other share group config refused: only the values set are bounded."""
    with MockCluster(brokers=1, config={"group.share.record.lock.duration.ms": "2000"}) as cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            result = admin.alter_configs(
                [ConfigResource(ConfigResourceType.GROUP, "g", configs={"share.auto.offset.reset": "earliest"})],
                raise_on_unknown=False,
                incremental=True,
            )
        finally:
            admin.close()
        assert result == {"group": {"g": "OK"}}
        assert cluster.state.group_configs["g"] == {"share.auto.offset.reset": "earliest"}
