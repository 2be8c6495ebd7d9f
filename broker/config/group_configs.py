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
    broker_default: str  # the broker config whose value applies when the group sets none
    documentation: str


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
    )
}


def effective(group_configs: Mapping[str, str], name: str, broker: BrokerConfigs) -> int:
    """The value in force for a group: its own, else the broker's default."""
    value = group_configs.get(name)
    return int(value) if value is not None else broker.get_int(GROUP_CONFIGS[name].broker_default)


def group_configs_error(configs: Mapping[str, str], broker: BrokerConfigs) -> str | None:
    """GroupConfig.validate (4.1): unknown names, types, then the broker's bounds, in
    Kafka's order and words; None when valid."""
    for name in configs:
        if name not in GROUP_CONFIGS:
            return f"Unknown group config name: {name}"
    values: dict[str, int] = {}
    for name in GROUP_CONFIGS:
        raw = configs.get(name)
        if raw is None:
            values[name] = broker.get_int(GROUP_CONFIGS[name].broker_default)
            continue
        try:
            values[name] = int(raw.strip())
        except ValueError:
            return f"Invalid value {raw} for configuration {name}: Not a number of type INT"
        if not -(2**31) <= values[name] < 2**31:
            return f"Invalid value {raw} for configuration {name}: Not a number of type INT"
        if values[name] < 1:
            return f"Invalid value {raw} for configuration {name}: Value must be at least 1"
    heartbeat, session = values["consumer.heartbeat.interval.ms"], values["consumer.session.timeout.ms"]
    bounds = (
        (
            heartbeat,
            "consumer.heartbeat.interval.ms",
            "group.consumer.min.heartbeat.interval.ms",
            "group.consumer.max.heartbeat.interval.ms",
        ),
        (
            session,
            "consumer.session.timeout.ms",
            "group.consumer.min.session.timeout.ms",
            "group.consumer.max.session.timeout.ms",
        ),
    )
    for value, name, low, high in bounds:
        if not broker.get_int(low) <= value <= broker.get_int(high):
            return f"{name} must be in the range {broker.get_int(low)} to {broker.get_int(high)} inclusive."
    if session <= heartbeat:
        return "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
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
            return f"group.consumer.max.{kind}.ms must be greater than or equal to group.consumer.min.{kind}.ms"
        if not low <= value <= high:
            return (
                f"group.consumer.{kind}.ms must be greater than or equal to group.consumer.min.{kind}.ms"
                if value < low
                else f"group.consumer.{kind}.ms must be less than or equal to group.consumer.max.{kind}.ms"
            )
    if broker.get_int("group.consumer.heartbeat.interval.ms") >= broker.get_int("group.consumer.session.timeout.ms"):
        return "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"
    return None
