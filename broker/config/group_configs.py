"""Per-group configs (KIP-848's GroupConfig, the GROUP config resource): a consumer
group's own session timeout and heartbeat interval, set with IncrementalAlterConfigs and
checked against the broker's group.consumer.* bounds with Kafka's messages."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from broker.config.broker_config import BrokerConfig, BrokerConfigView

BrokerConfigs = BrokerConfig | BrokerConfigView

GROUP = 32  # ConfigResource.Type.GROUP
ASSIGNOR_NAMES = ("uniform", "range")
# group.consumer.assignors takes Kafka's class names as well as the short names.
ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}
MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")
SOURCE_GROUP = 8  # DescribeConfigs' GROUP_CONFIG source


@dataclass(frozen=True, slots=True)
class GroupConfig:
    name: str
    broker_default: str | None  # the broker config whose value applies when the group sets none
    documentation: str
    type: str = "int"  # DescribeConfigs' type: "int", "long", "boolean" or "string"
    default: str = ""  # the value when no broker config stands behind it
    listed: bool = True  # False: accepted and validated, but DescribeConfigs leaves it out (Kafka 4.4)


GROUP_CONFIGS: dict[str, GroupConfig] = {
    c.name: c
    for c in (
        GroupConfig(
            "consumer.session.timeout.ms",
            "group.consumer.session.timeout.ms",
            "The timeout to detect client failures when using the consumer group protocol.",
        ),
        GroupConfig(
            "consumer.heartbeat.interval.ms",
            "group.consumer.heartbeat.interval.ms",
            "The heartbeat interval given to the members of a consumer group.",
        ),
        GroupConfig(
            "share.session.timeout.ms",
            "group.share.session.timeout.ms",
            "The timeout to detect client failures when using the share group protocol.",
        ),
        GroupConfig(
            "share.heartbeat.interval.ms",
            "group.share.heartbeat.interval.ms",
            "The heartbeat interval given to the members of a share group.",
        ),
        GroupConfig(
            "share.record.lock.duration.ms",
            "group.share.record.lock.duration.ms",
            "The record acquisition lock duration in milliseconds for share groups.",
        ),
        GroupConfig(
            "share.delivery.count.limit",
            "group.share.delivery.count.limit",
            "The maximum number of delivery attempts for a record delivered to a share group.",
        ),
        GroupConfig(
            "share.partition.max.record.locks",
            "group.share.partition.max.record.locks",
            "Share-group record lock limit per share-partition.",
        ),
        GroupConfig(
            "share.auto.offset.reset",
            None,
            "The strategy to initialize the share-partition start offset.",
            type="string",
            default="latest",
        ),
        GroupConfig(
            "share.renew.acknowledge.enable",
            None,
            "Whether members of a share group may renew acquisition locks (RENEW acknowledgements).",
            type="boolean",
            default="true",
        ),
        GroupConfig(
            "share.assignment.interval.ms",
            "group.share.assignment.interval.ms",
            "The least time between two target assignments of a share group.",
        ),
        GroupConfig(
            "share.isolation.level",
            None,
            "Controls how to read records written transactionally.",
            type="string",
            default="read_uncommitted",
        ),
        GroupConfig(
            "streams.session.timeout.ms",
            "group.streams.session.timeout.ms",
            "The timeout to detect client failures when using the streams group protocol.",
        ),
        GroupConfig(
            "streams.heartbeat.interval.ms",
            "group.streams.heartbeat.interval.ms",
            "The heartbeat interval given to the members.",
        ),
        GroupConfig(
            "streams.num.standby.replicas",
            "group.streams.num.standby.replicas",
            "The number of standby replicas for each task.",
        ),
        GroupConfig(
            "streams.initial.rebalance.delay.ms",
            "group.streams.initial.rebalance.delay.ms",
            "The amount of time the group coordinator will wait for more streams clients to join a new "
            "group before performing the first rebalance.",
        ),
        GroupConfig(
            "streams.assignment.interval.ms",
            "group.streams.assignment.interval.ms",
            "The interval between assignment updates for a streams group.",
        ),
        GroupConfig(
            "streams.task.offset.interval.ms",
            "group.streams.task.offset.interval.ms",
            "The interval in which members report their task offsets (told to members in the heartbeat).",
            listed=False,
        ),
        GroupConfig(
            "streams.num.warmup.replicas",
            "group.streams.num.warmup.replicas",
            "The number of warm-up replicas for each stateful task (validated; this broker assigns none).",
            listed=False,
        ),
        GroupConfig(
            "streams.acceptable.recovery.lag",
            "group.streams.acceptable.recovery.lag",
            "The lag under which a member counts as caught up on a task (told to members in the heartbeat).",
            type="long",
            listed=False,
        ),
    )
}


def group_config(group_configs: Mapping[str, str], name: str, broker: BrokerConfigs) -> str:
    """A group config in force, as text: the group's own, else the broker's, else its default."""
    value = group_configs.get(name)
    if value is not None:
        return value
    config = GROUP_CONFIGS[name]
    return broker.get_str(config.broker_default) if config.broker_default else config.default


def effective(group_configs: Mapping[str, str], name: str, broker: BrokerConfigs) -> int:
    """The value in force for a group: its own, else the broker's default."""
    return int(group_config(group_configs, name, broker))


def group_configs_error(configs: Mapping[str, str], broker: BrokerConfigs) -> str | None:
    """GroupConfig.validate (4.1): unknown names, types, then the broker's bounds, in
    Kafka's order and words; None when valid."""
    for name in configs:
        if name not in GROUP_CONFIGS:
            return f"Unknown group config name: {name}"
    values: dict[str, int] = {}
    for name, config in GROUP_CONFIGS.items():
        raw = configs.get(name)
        if config.type not in ("int", "long") or config.broker_default is None:
            if raw is not None and (reason := _string_config_error(name, raw)) is not None:
                return reason
            continue
        if raw is None:
            values[name] = broker.get_int(config.broker_default)
            continue
        try:
            values[name] = int(raw.strip())
        except ValueError:
            return f"Invalid value {raw} for configuration {name}: Not a number of type {config.type.upper()}"
        if config.type == "int" and not -(2**31) <= values[name] < 2**31:
            return f"Invalid value {raw} for configuration {name}: Not a number of type INT"
        at_least = 0 if name in _MAY_BE_ZERO else 1
        if values[name] < at_least:
            return f"Invalid value {raw} for configuration {name}: Value must be at least {at_least}"
    for name, least, most in _BOUNDS:
        if name not in configs:
            # a broker default outside Kafka's bounds (a test's short share lock) stands:
            # only what the request sets is checked
            continue
        low = broker.get_int(least) if isinstance(least, str) else least
        high = broker.get_int(most) if isinstance(most, str) else most
        value = values[name]
        if low is not None and high is not None and not low <= value <= high:
            return f"{name} must be in the range {low} to {high} inclusive."
        if low is not None and high is None and value < low:
            return f"{name} must be greater than or equal to {low}"
        if high is not None and low is None and value > high:
            return f"{name} must be less than or equal to {high}"
    for kind in ("consumer", "share", "streams"):
        if values[f"{kind}.session.timeout.ms"] <= values[f"{kind}.heartbeat.interval.ms"]:
            return f"{kind}.session.timeout.ms must be greater than {kind}.heartbeat.interval.ms"
    return None


# GroupConfig.validate's bounds (Kafka 4.4), in its order: (config, least, most), each
# bound a broker config, a number (the default of a broker config this broker keeps
# fixed) or None (unbounded).
_BOUNDS: tuple[tuple[str, str | int | None, str | int | None], ...] = (
    ("consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"),
    ("consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
    ("share.heartbeat.interval.ms", 5000, 15000),
    ("share.session.timeout.ms", 45000, 60000),
    ("share.record.lock.duration.ms", 15000, 60000),
    ("share.delivery.count.limit", 2, 10),
    ("share.partition.max.record.locks", 100, 4000),
    ("streams.heartbeat.interval.ms", 5000, 15000),
    ("streams.session.timeout.ms", 45000, 60000),
    ("streams.num.standby.replicas", None, 2),
    ("streams.assignment.interval.ms", 0, 15000),
    ("streams.task.offset.interval.ms", 15000, None),
    ("streams.num.warmup.replicas", None, 20),
)  # fmt: skip


_ISOLATION_LEVELS = ("read_committed", "read_uncommitted")
_MAY_BE_ZERO = frozenset(
    {
        "share.assignment.interval.ms",
        "streams.num.standby.replicas",
        "streams.initial.rebalance.delay.ms",
        "streams.assignment.interval.ms",
        "streams.num.warmup.replicas",
        "streams.acceptable.recovery.lag",
    }
)


def _string_config_error(name: str, raw: str) -> str | None:
    if name == "share.renew.acknowledge.enable" and raw.strip().lower() not in ("true", "false"):
        return f"Invalid value {raw} for configuration {name}: Expected value to be either true or false"
    if name == "share.isolation.level" and raw.strip().lower() not in _ISOLATION_LEVELS:
        return (
            f"Invalid value {raw} for configuration {name}: String must be one of: "
            f"{', '.join(_ISOLATION_LEVELS)}"
        )
    if name == "share.auto.offset.reset":
        value = raw.strip().lower()
        if value not in ("latest", "earliest") and not value.startswith("by_duration:"):
            return (
                f"Invalid value {raw} for configuration {name}: Invalid value `{raw}` for "
                "configuration share.auto.offset.reset. The value must be either 'earliest', "
                "'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."
            )
    return None


def assignor_names(value: str) -> list[str]:
    """group.consumer.assignors as short names, in order (the first is the default)."""
    return [ASSIGNOR_CLASSES.get(n.strip(), n.strip()) for n in value.split(",") if n.strip()]


def coordinator_config_error(broker: BrokerConfigs) -> str | None:
    """What Kafka's GroupCoordinatorConfig refuses at start-up: unknown or repeated
    assignors, an unknown migration policy, intervals outside their bounds."""
    raw = broker.get_str("group.consumer.assignors")
    names = assignor_names(raw)
    unknown = [n for n in names if n not in ASSIGNOR_NAMES]
    if not names or unknown or len(set(names)) != len(names):
        why = f"Class {unknown[0]} cannot be found" if unknown else "Empty or duplicate assignors"
        return f"Invalid value {raw} for configuration group.consumer.assignors: {why}"
    policy = broker.get_str("group.consumer.migration.policy")
    if policy.strip().lower() not in MIGRATION_POLICIES:
        return (
            f"Invalid value {policy} for configuration group.consumer.migration.policy: "
            f"String must be one of (case insensitive): {', '.join(p.upper() for p in MIGRATION_POLICIES)}"
        )
    for kind in ("heartbeat.interval", "session.timeout"):
        value, low, high = (
            broker.get_int(f"group.consumer.{prefix}{kind}.ms") for prefix in ("", "min.", "max.")
        )
        if high < low:
            return (
                f"group.consumer.max.{kind}.ms must be greater than or equal to group.consumer.min.{kind}.ms"
            )
        if not low <= value <= high:
            return (
                f"group.consumer.{kind}.ms must be greater than or equal to group.consumer.min.{kind}.ms"
                if value < low
                else f"group.consumer.{kind}.ms must be less than or equal to group.consumer.max.{kind}.ms"
            )
    if broker.get_int("group.consumer.heartbeat.interval.ms") >= broker.get_int(
        "group.consumer.session.timeout.ms"
    ):
        return "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"
    return None
