"""Apache Kafka's topic-level configs: defaults, types and the broker configs behind them.

Used to validate CreateTopics configs and to answer DescribeConfigs with real defaults
and sources.
"""

from __future__ import annotations

from dataclasses import dataclass

# DescribeConfigs config_type (v3+) and config_source values, as in Kafka's ConfigEntry.
TYPE_CODES = {
    "boolean": 1,
    "string": 2,
    "int": 3,
    "short": 4,
    "long": 5,
    "double": 6,
    "list": 7,
    "class": 8,
    "password": 9,
}
SOURCE_TOPIC = 1
SOURCE_DYNAMIC_BROKER = 2
SOURCE_DYNAMIC_DEFAULT_BROKER = 3
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5

LONG_MAX = "9223372036854775807"


@dataclass(frozen=True, slots=True)
class TopicConfig:
    name: str
    default: str
    type: str
    broker_synonym: str | None
    documentation: str


def _c(name: str, default: str, type_: str, synonym: str | None, doc: str) -> TopicConfig:
    return TopicConfig(name, default, type_, synonym, doc)


TOPIC_CONFIGS: dict[str, TopicConfig] = {
    c.name: c
    for c in (
        _c("cleanup.policy", "delete", "list", "log.cleanup.policy", "delete and/or compact"),
        _c("compression.type", "producer", "string", "compression.type", "final compression of the topic"),
        _c(
            "compression.gzip.level",
            "-1",
            "int",
            "compression.gzip.level",
            "gzip level when compression.type=gzip",
        ),
        _c(
            "compression.lz4.level",
            "9",
            "int",
            "compression.lz4.level",
            "lz4 level when compression.type=lz4",
        ),
        _c(
            "compression.zstd.level",
            "3",
            "int",
            "compression.zstd.level",
            "zstd level when compression.type=zstd",
        ),
        _c(
            "delete.retention.ms",
            "86400000",
            "long",
            "log.cleaner.delete.retention.ms",
            "tombstone retention",
        ),
        _c(
            "file.delete.delay.ms",
            "60000",
            "long",
            "log.segment.delete.delay.ms",
            "delay before deleting a file",
        ),
        _c("flush.messages", LONG_MAX, "long", "log.flush.interval.messages", "fsync every N messages"),
        _c("flush.ms", LONG_MAX, "long", "log.flush.interval.ms", "fsync interval"),
        _c(
            "follower.replication.throttled.replicas",
            "",
            "list",
            None,
            "replicas throttled on the follower side",
        ),
        _c("index.interval.bytes", "4096", "int", "log.index.interval.bytes", "offset index density"),
        _c(
            "leader.replication.throttled.replicas", "", "list", None, "replicas throttled on the leader side"
        ),
        _c(
            "local.retention.bytes",
            "-2",
            "long",
            "log.local.retention.bytes",
            "local bytes kept with tiered storage",
        ),
        _c(
            "local.retention.ms",
            "-2",
            "long",
            "log.local.retention.ms",
            "local time kept with tiered storage",
        ),
        _c(
            "max.compaction.lag.ms",
            LONG_MAX,
            "long",
            "log.cleaner.max.compaction.lag.ms",
            "max compaction delay",
        ),
        _c("max.message.bytes", "1048588", "int", "message.max.bytes", "largest record batch"),
        _c(
            "message.timestamp.after.max.ms",
            "3600000",
            "long",
            "log.message.timestamp.after.max.ms",
            "future skew",
        ),
        _c(
            "message.timestamp.before.max.ms",
            LONG_MAX,
            "long",
            "log.message.timestamp.before.max.ms",
            "past skew",
        ),
        _c(
            "message.timestamp.type",
            "CreateTime",
            "string",
            "log.message.timestamp.type",
            "CreateTime or LogAppendTime",
        ),
        _c(
            "min.cleanable.dirty.ratio",
            "0.5",
            "double",
            "log.cleaner.min.cleanable.ratio",
            "compaction trigger",
        ),
        _c("min.compaction.lag.ms", "0", "long", "log.cleaner.min.compaction.lag.ms", "min compaction delay"),
        _c("min.insync.replicas", "1", "int", "min.insync.replicas", "replicas needed for acks=all"),
        _c("preallocate", "false", "boolean", "log.preallocate", "preallocate segment files"),
        _c("remote.storage.enable", "false", "boolean", None, "tiered storage"),
        _c(
            "retention.bytes", "-1", "long", "log.retention.bytes", "bytes kept per partition (enforced here)"
        ),
        _c("retention.ms", "604800000", "long", "log.retention.ms", "time kept"),
        _c("segment.bytes", "1073741824", "int", "log.segment.bytes", "segment file size"),
        _c("segment.index.bytes", "10485760", "int", "log.index.size.max.bytes", "index file size"),
        _c("segment.jitter.ms", "0", "long", "log.roll.jitter.ms", "segment roll jitter"),
        _c("segment.ms", "604800000", "long", "log.roll.ms", "segment roll time"),
        _c(
            "unclean.leader.election.enable",
            "false",
            "boolean",
            "unclean.leader.election.enable",
            "unclean elections",
        ),
    )
}

_CHOICES = {
    "cleanup.policy": {"delete", "compact"},
    "compression.type": {"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"},
    "message.timestamp.type": {"CreateTime", "LogAppendTime"},
}
_INTEGER_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}


def topic_config_error(name: str, value: str) -> str | None:
    """Why CreateTopics or an alteration must refuse this topic config (INVALID_CONFIG),
    or None."""
    if name not in TOPIC_CONFIGS:
        return f"Unknown topic config name: {name}"
    return invalid_value_reason(name, value)


def invalid_value_reason(name: str, value: str) -> str | None:
    """Why `value` is not acceptable for topic config `name` (Kafka's message), or None."""
    config = TOPIC_CONFIGS[name]
    prefix = f"Invalid value {value} for configuration {name}"
    if config.type in _INTEGER_RANGES:
        low, high = _INTEGER_RANGES[config.type]
        try:
            number = int(value.strip())
        except ValueError:
            return f"{prefix}: Not a number of type {config.type.upper()}"
        if not low <= number <= high:
            return f"{prefix}: Not a number of type {config.type.upper()}"
    elif config.type == "double":
        try:
            float(value.strip())
        except ValueError:
            return f"{prefix}: Not a number of type DOUBLE"
    elif config.type == "boolean" and value.strip().lower() not in ("true", "false"):
        return f"{prefix}: Expected value to be either true or false"
    choices = _CHOICES.get(name)
    if choices is not None:
        items = [item.strip() for item in value.split(",")] if config.type == "list" else [value.strip()]
        bad = [item for item in items if item not in choices]
        if bad:
            return f"{prefix}: String must be one of: {', '.join(sorted(choices))}"
    return None
