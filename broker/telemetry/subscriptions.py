"""KIP-714 client metrics subscriptions: the CLIENT_METRICS config resource.

A subscription is a named set of configs (`metrics`, `interval.ms`, `match`) set with
IncrementalAlterConfigs or AlterConfigs, checked as Kafka's ClientMetricsConfigs.validate
checks them, and matched against each client's attributes as ClientMetricsManager does:
every `match` pattern must match the whole attribute value, a subscription without
patterns matches every client.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import crc32c

from broker.config.topic_configs import parse_list
from protocol.errors import ErrorCode

CLIENT_METRICS = 16  # ConfigResource.Type.CLIENT_METRICS
SOURCE_CLIENT_METRICS = 7  # DescribeConfigs' CLIENT_METRICS_CONFIG source
METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
DEFAULT_INTERVAL_MS = 300_000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
ALL_METRICS = "*"
_INTEGER = re.compile(r"[+-]?[0-9]+")
# Config name: (type as DescribeConfigs reports it, default)
CONFIGS: dict[str, tuple[str, str]] = {
    METRICS: ("list", ""),
    INTERVAL_MS: ("int", str(DEFAULT_INTERVAL_MS)),
    MATCH: ("list", ""),
}
MATCH_KEYS = (
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
)


class SubscriptionError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Subscription:
    name: str
    metrics: tuple[str, ...] = ()
    interval_ms: int = DEFAULT_INTERVAL_MS
    patterns: Mapping[str, re.Pattern[str]] = field(default_factory=dict)

    def matches(self, attributes: Mapping[str, str | None]) -> bool:
        """Every pattern matches its attribute's whole value; a missing one never does."""
        for key, pattern in self.patterns.items():
            value = attributes.get(key)
            if value is None or pattern.fullmatch(value) is None:
                return False
        return True


def _java_split(entry: str) -> list[str]:
    """String.split("="): trailing empty strings dropped."""
    parts = entry.split("=")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_subscription(name: str, configs: Mapping[str, str]) -> Subscription:
    """ClientMetricsConfigs.validate, in its order and words, then the parsed
    subscription; raises SubscriptionError."""
    if not name:
        raise SubscriptionError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    for key in configs:
        if key not in CONFIGS:
            raise SubscriptionError(ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}")
    interval_ms = DEFAULT_INTERVAL_MS
    raw = configs.get(INTERVAL_MS)
    if raw is not None:
        text = raw.strip()
        interval_ms = int(text) if _INTEGER.fullmatch(text) else 2**31
        if not -(2**31) <= interval_ms < 2**31:
            raise SubscriptionError(
                ErrorCode.INVALID_CONFIG,
                f"Invalid value {raw} for configuration {INTERVAL_MS}: Not a number of type INT",
            )
        if not MIN_INTERVAL_MS <= interval_ms <= MAX_INTERVAL_MS:
            raise SubscriptionError(
                ErrorCode.INVALID_REQUEST,
                f"Invalid value {raw} for interval.ms, interval must be between 100 and 3600000 (1 hour)",
            )
    patterns: dict[str, re.Pattern[str]] = {}
    for entry in parse_list(configs.get(MATCH, "")):
        parts = _java_split(entry)
        key = parts[0].strip() if parts else ""
        try:
            if len(parts) != 2 or key not in MATCH_KEYS:
                raise ValueError(entry)
            patterns[key] = re.compile(parts[1].strip())
        except (ValueError, re.error):
            raise SubscriptionError(
                ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {entry}"
            ) from None
    metrics = tuple(m for m in parse_list(configs.get(METRICS, "")) if m)
    return Subscription(name, metrics, interval_ms, patterns)


@dataclass(frozen=True, slots=True)
class ClientSubscription:
    """What a client is told to push: the union of the matching subscriptions."""

    metrics: tuple[str, ...]
    interval_ms: int

    def subscription_id(self, instance_id: uuid.UUID) -> int:
        """ClientMetricsManager.computeSubscriptionId: CRC32C of the metrics list as Java
        prints it followed by the interval, XORed with the instance id's hash code."""
        text = "[" + ", ".join(self.metrics) + "]" + str(self.interval_ms)
        return _int32(crc32c.crc32c(text.encode()) ^ uuid_hash_code(instance_id))


def combine(
    subscriptions: Iterable[Subscription], attributes: Mapping[str, str | None]
) -> ClientSubscription:
    """The matching subscriptions' metrics (all of them when any asks for "*") and the
    shortest interval, never above the default."""
    metrics: set[str] = set()
    interval_ms = DEFAULT_INTERVAL_MS
    for subscription in subscriptions:
        if subscription.matches(attributes):
            metrics.update(subscription.metrics)
            interval_ms = min(interval_ms, subscription.interval_ms)
    if ALL_METRICS in metrics:
        return ClientSubscription((ALL_METRICS,), interval_ms)
    return ClientSubscription(tuple(sorted(metrics)), interval_ms)


def uuid_hash_code(value: uuid.UUID) -> int:
    """org.apache.kafka.common.Uuid.hashCode."""
    bits = (value.int >> 64) ^ (value.int & (2**64 - 1))
    return _int32((bits >> 32) ^ (bits & 0xFFFFFFFF))


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 2**32 if value >= 2**31 else value


class Subscriptions:
    """The cluster's subscriptions: their configs as set (for DescribeConfigs), parsed,
    and a version that moves on every change so cached client instances are rebuilt."""

    def __init__(self) -> None:
        self.configs: dict[str, dict[str, str]] = {}
        self.parsed: dict[str, Subscription] = {}
        self.version = 0

    def put(self, name: str, configs: Mapping[str, str]) -> None:
        """Installs validated configs; none left removes the subscription."""
        if configs:
            self.parsed[name] = parse_subscription(name, configs)
            self.configs[name] = dict(configs)
        else:
            self.parsed.pop(name, None)
            self.configs.pop(name, None)
        self.version += 1

    def for_client(self, attributes: Mapping[str, str | None]) -> ClientSubscription:
        return combine(self.parsed.values(), attributes)
