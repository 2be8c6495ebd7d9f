"""Per-group configs (KIP-848's GroupConfig, the GROUP config resource): a consumer
group's own session timeout and heartbeat interval, set with IncrementalAlterConfigs and
checked against the broker's group.consumer.* bounds with Kafka's messages."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from broker.config.broker_config import BrokerConfig, BrokerConfigView

BrokerConfigs = BrokerConfig | BrokerConfigView

GROUP = 32  # ConfigResource.Type.GROUP
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
            "The heartbeat interval given to the members.",
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
        if value < broker.get_int(low):
            return f"{name} must be greater than or equal to {low}"
        if value > broker.get_int(high):
            return f"{name} must be less than or equal to {high}"
    if session <= heartbeat:
        return "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
    return None
