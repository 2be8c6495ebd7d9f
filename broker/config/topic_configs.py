"""Apache Kafka's topic-level configs: defaults, types and the broker configs behind them.

Used to validate CreateTopics configs and to answer DescribeConfigs with real defaults
and sources.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

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
            "errors.deadletterqueue.group.enable",
            "false",
            "boolean",
            None,
            "whether share groups may use the topic as a dead-letter queue",
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
        _c(
            "max.decompressed.message.bytes",
            "2147483639",
            "int",
            "max.decompressed.message.bytes",
            "largest decompressed record",
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
        _c(
            "remote.copy.lag.bytes",
            "-1",
            "long",
            "log.remote.copy.lag.bytes",
            "newer local bytes before a segment is copied to remote storage",
        ),
        _c(
            "remote.copy.lag.ms",
            "0",
            "long",
            "log.remote.copy.lag.ms",
            "age before a segment is copied to remote storage",
        ),
        _c("remote.log.copy.disable", "false", "boolean", None, "stop copying to remote storage"),
        _c(
            "remote.log.delete.on.disable",
            "false",
            "boolean",
            None,
            "delete remote data when tiered storage is disabled",
        ),
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
    "compression.type": ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    "message.timestamp.type": ("CreateTime", "LogAppendTime"),
}
# cleanup.policy is ValidList.in(compact, delete): a list (the empty list included, which
# is how a topic keeps everything without compaction) of distinct, non-empty members.
_LIST_CHOICES = {"cleanup.policy": ("compact", "delete")}
_THROTTLED_REPLICAS = frozenset(
    {"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)
# LogConfig's Range validators: (at least, no more than), None where open.
_RANGES: dict[str, tuple[int | None, int | None]] = {
    "segment.bytes": (1024 * 1024, None),
    "segment.ms": (1, None),
    "segment.jitter.ms": (0, None),
    "segment.index.bytes": (4, None),
    "flush.messages": (1, None),
    "flush.ms": (0, None),
    "retention.ms": (-1, None),
    "max.message.bytes": (0, None),
    "index.interval.bytes": (0, None),
    "delete.retention.ms": (0, None),
    "min.compaction.lag.ms": (0, None),
    "max.compaction.lag.ms": (1, None),
    "file.delete.delay.ms": (0, None),
    "min.cleanable.dirty.ratio": (0, 1),
    "min.insync.replicas": (1, None),
    "message.timestamp.before.max.ms": (0, None),
    "message.timestamp.after.max.ms": (0, None),
    "local.retention.ms": (-2, None),
    "local.retention.bytes": (-2, None),
    "remote.copy.lag.ms": (-1, None),
    "remote.copy.lag.bytes": (-1, None),
    "max.decompressed.message.bytes": (1, 2147483639),  # Integer.MAX_VALUE - 8
    "compression.lz4.level": (1, 17),  # Lz4Compression.MIN_LEVEL..MAX_LEVEL
    "compression.zstd.level": (-131072, 22),  # Zstd.minCompressionLevel()..maxCompressionLevel()
}
_INTEGER_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
_JAVA_WHITESPACE = "".join(chr(c) for c in range(33))  # what String.trim() strips
_COMMA = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")  # ConfigDef.COMMA_WITH_WHITESPACE
_INTEGER = re.compile(r"[+-]?[0-9]+")
_REPLICA = re.compile(r"[0-9]+:[0-9]+")
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")


def parse_list(value: str) -> list[str]:
    """ConfigDef.parseType of a LIST: trimmed, "" is the empty list, otherwise split on
    commas and the whitespace around them, empty members (trailing ones too) kept."""
    trimmed = value.strip(_JAVA_WHITESPACE)
    return _COMMA.split(trimmed) if trimmed else []


def java_list(items: list[str]) -> str:
    """A java.util.List as its toString() prints it."""
    return "[" + ", ".join(items) + "]"


def java_double(number: float) -> str:
    """Double.toString: plain from 10^-3 up to 10^7 (2.0, 0.5), otherwise d.dddE<n>."""
    if number != number:
        return "NaN"
    if number in (float("inf"), float("-inf")):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0 or 1e-3 <= abs(number) < 1e7:
        return repr(number)
    _, digits, exponent = Decimal(repr(abs(number))).normalize().as_tuple()
    assert isinstance(exponent, int)
    shown = "".join(map(str, digits))
    return f"{'-' if number < 0 else ''}{shown[0]}.{shown[1:] or '0'}E{len(shown) - 1 + exponent}"


def topic_configs_error(configs: Mapping[str, str]) -> str | None:
    """Why CreateTopics or an alteration must refuse these topic configs (INVALID_CONFIG),
    as LogConfig.validate decides: every name first, then each value as ConfigDef parses
    and validates it, then the checks across values (LogConfig.validateValues)."""
    for name in configs:
        if name not in TOPIC_CONFIGS:
            return f"Unknown topic config name: {name}"
    for name, value in configs.items():
        reason = invalid_value_reason(name, value)
        if reason is not None:
            return reason
    min_lag, max_lag = (
        int(configs.get(key, TOPIC_CONFIGS[key].default).strip(_JAVA_WHITESPACE))
        for key in ("min.compaction.lag.ms", "max.compaction.lag.ms")
    )
    if min_lag > max_lag:
        return (
            f"conflict topic config setting min.compaction.lag.ms ({min_lag}) > "
            f"max.compaction.lag.ms ({max_lag})"
        )
    return None


def topic_config_error(name: str, value: str) -> str | None:
    """Why one topic config must be refused (INVALID_CONFIG), or None."""
    return topic_configs_error({name: value})


def invalid_value_reason(name: str, value: str) -> str | None:
    """Why `value` is not acceptable for topic config `name` (Kafka's message), or None:
    ConfigDef.parseType, then the config's validator."""
    config = TOPIC_CONFIGS[name]
    trimmed = value.strip(_JAVA_WHITESPACE)
    prefix = f"Invalid value {value} for configuration {name}"
    parsed: float | None = None
    if config.type in _INTEGER_RANGES:
        low, high = _INTEGER_RANGES[config.type]
        if not _INTEGER.fullmatch(trimmed) or not low <= int(trimmed) <= high:
            return f"{prefix}: Not a number of type {config.type.upper()}"
        parsed = int(trimmed)
    elif config.type == "double":
        if not _DOUBLE.fullmatch(trimmed):
            return f"{prefix}: Not a number of type DOUBLE"
        parsed = float(trimmed[:-1] if trimmed[-1] in "fFdD" else trimmed)
    elif config.type == "boolean" and trimmed.lower() not in ("true", "false"):
        return f"{prefix}: Expected value to be either true or false"
    elif config.type == "list":
        return _invalid_list(name, parse_list(value))
    if parsed is not None and name in _RANGES:
        shown = java_double(parsed) if config.type == "double" else str(parsed)
        at_least, at_most = _RANGES[name]
        if at_least is not None and parsed < at_least:
            return f"Invalid value {shown} for configuration {name}: Value must be at least {at_least}"
        if at_most is not None and parsed > at_most:
            return f"Invalid value {shown} for configuration {name}: Value must be no more than {at_most}"
    if name == "compression.gzip.level" and parsed is not None and not (1 <= parsed <= 9 or parsed == -1):
        # GzipCompression.LevelValidator: Deflater's BEST_SPEED..BEST_COMPRESSION or DEFAULT_COMPRESSION
        return f"Invalid value {int(parsed)} for configuration {name}: Value must be between 1 and 9 or equal to -1"
    choices = _CHOICES.get(name)
    if choices is not None and trimmed not in choices:
        return (
            f"Invalid value {trimmed} for configuration {name}: String must be one of: {', '.join(choices)}"
        )
    return None


def _invalid_list(name: str, items: list[str]) -> str | None:
    if name in _THROTTLED_REPLICAS:
        # ThrottledReplicaListValidator: "*" alone, or partition:broker pairs (empty
        # members only at the end); the empty list is no throttled replica at all.
        proposed = [item.strip(_JAVA_WHITESPACE) for item in items]
        if proposed == ["*"] or _replica_list(proposed):
            return None
        return (
            f"Invalid value {java_list(items)} for configuration {name}: {name} must be the literal '*' or a "
            "list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
        )
    choices = _LIST_CHOICES.get(name)
    if choices is None:
        return None
    # ConfigDef.ValidList.in(...) as Kafka 4.x has it (KIP-1161): empty allowed, then no
    # duplicates, then each member non-empty and one of the choices.
    if len(set(items)) != len(items):
        return f"Configuration '{name}' values must not be duplicated."
    for item in items:
        if not item:
            return f"Configuration '{name}' values must not be empty."
        if item not in choices:
            return (
                f"Invalid value {item} for configuration {name}: String must be one of: {', '.join(choices)}"
            )
    return None


def _replica_list(proposed: list[str]) -> bool:
    ended = False
    for replica in proposed:
        if not replica:
            ended = True
        elif ended or not _REPLICA.fullmatch(replica):
            return False
        elif any(int(part) > 2**31 - 1 for part in replica.split(":")):
            return False
    return True
