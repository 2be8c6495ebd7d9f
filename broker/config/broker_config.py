"""Broker configuration under Apache Kafka's own property names.

Values are kept as strings, as in server.properties, and converted by typed getters,
so unknown keys (meant for plugins) pass through untouched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from broker.config.topic_configs import (
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_BROKER,
    SOURCE_DYNAMIC_DEFAULT_BROKER,
    SOURCE_STATIC_BROKER,
    SOURCE_TOPIC,
    TopicConfig,
)

# name -> (default, type, documentation); defaults are Apache Kafka's unless noted.
DEFAULTS: dict[str, tuple[str, str, str]] = {
    "node.id": ("0", "int", "id of the first broker; broker i of --brokers N gets node.id + i"),
    "listeners": ("", "list", "PLAINTEXT://host:port,... (port 0 binds a free port)"),
    "advertised.listeners": ("", "list", "endpoints returned in Metadata (default: listeners)"),
    "listener.security.protocol.map": (
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "list",
        "listener name to security protocol",
    ),
    "cluster.id": ("MkU3OEVBNTcwNTJENDM2Qk", "string", "cluster id returned in Metadata"),
    "broker.rack": (
        "",
        "string",
        "rack of the brokers (Metadata, DescribeCluster, KIP-392): one value for every broker, or"
        " a comma-separated list with one entry per broker of --brokers N (empty entry or value: none)",
    ),
    "replica.selector.class": (
        "",
        "class",
        "KIP-392 preferred read replica for consumers: org.apache.kafka.common.replica."
        "RackAwareReplicaSelector or LeaderReplicaSelector (empty: the leader serves)",
    ),
    "auto.create.topics.enable": ("true", "boolean", "create unknown topics on Metadata requests"),
    "num.partitions": ("1", "int", "partitions of auto-created topics and of CreateTopics with -1"),
    "default.replication.factor": ("1", "int", "replication factor of auto-created topics"),
    "log.dirs": (
        "/tmp/kafka-logs",
        "list",
        "the log directory DescribeLogDirs names (partitions are kept in memory, not there)",
    ),
    "max.request.partition.size.limit": (
        "2000",
        "int",
        "most partitions one DescribeTopicPartitions response holds",
    ),
    "log.retention.bytes": ("-1", "long", "bytes kept per partition (-1: unbounded)"),
    "log.retention.check.interval.ms": ("300000", "long", "how often batches past retention.ms are deleted"),
    "log.cleaner.backoff.ms": ("15000", "long", "how often compacted partitions are checked for cleaning"),
    "message.max.bytes": ("1048588", "int", "largest record batch accepted"),
    "min.insync.replicas": ("1", "int", "in-sync replicas an acks=all produce needs"),
    "replica.catch.up.ms": (
        "500",
        "long",
        "not a Kafka config: how long a replica added by a reassignment takes to catch up and join"
        " the ISR, ending the reassignment (0: at once)",
    ),
    "socket.request.max.bytes": ("104857600", "int", "largest request frame accepted"),
    "socket.request.receive.timeout.ms": (
        "-1",
        "long",
        "not Kafka's: close a connection whose request has been arriving this long (a client"
        " trickling bytes, which connections.max.idle.ms never closes); -1: never, as Kafka",
    ),
    "group.initial.rebalance.delay.ms": ("3000", "int", "wait for more members before the first rebalance"),
    "group.min.session.timeout.ms": ("6000", "int", "smallest session timeout a member may ask for"),
    "group.max.session.timeout.ms": ("1800000", "int", "largest session timeout a member may ask for"),
    "group.max.size": ("2147483647", "int", "largest number of members in one group"),
    "group.coordinator.rebalance.protocols": (
        "classic,consumer",
        "list",
        "group protocols served (consumer: KIP-848's ConsumerGroupHeartbeat)",
    ),
    "group.consumer.heartbeat.interval.ms": (
        "5000",
        "int",
        "heartbeat interval of consumer-protocol members",
    ),
    "group.consumer.min.heartbeat.interval.ms": ("5000", "int", "smallest per-group heartbeat interval"),
    "group.consumer.max.heartbeat.interval.ms": ("15000", "int", "largest per-group heartbeat interval"),
    "group.consumer.session.timeout.ms": ("45000", "int", "session timeout of consumer-protocol members"),
    "group.consumer.min.session.timeout.ms": ("45000", "int", "smallest per-group session timeout"),
    "group.consumer.max.session.timeout.ms": ("60000", "int", "largest per-group session timeout"),
    "group.consumer.max.size": ("2147483647", "int", "largest number of members in one consumer group"),
    "group.share.session.timeout.ms": ("45000", "int", "session timeout of share group members"),
    "group.share.heartbeat.interval.ms": ("5000", "int", "heartbeat interval of share group members"),
    "group.share.max.size": ("200", "int", "largest number of members in one share group"),
    "group.share.assignment.interval.ms": (
        "1000",
        "int",
        "least time between two target assignments of a share group (assignments here are immediate)",
    ),
    "group.share.record.lock.duration.ms": (
        "30000",
        "int",
        "how long records a share group member acquired stay locked to it",
    ),
    "group.share.delivery.count.limit": (
        "5",
        "int",
        "deliveries of a record to a share group before it is archived",
    ),
    "group.share.partition.max.record.locks": (
        "2000",
        "int",
        "records in flight per share partition",
    ),
    "group.streams.session.timeout.ms": ("45000", "int", "session timeout of streams group members"),
    "group.streams.heartbeat.interval.ms": ("5000", "int", "heartbeat interval of streams group members"),
    "group.streams.max.size": ("2147483647", "int", "largest number of members in one streams group"),
    "group.streams.num.standby.replicas": ("0", "int", "standby replicas of each stateful task"),
    "group.streams.initial.rebalance.delay.ms": (
        "3000",
        "int",
        "wait for more members before a new streams group's first assignment",
    ),
    "group.streams.assignment.interval.ms": (
        "1000",
        "int",
        "least time between two target assignments of a streams group",
    ),
    "group.streams.task.offset.interval.ms": (
        "60000",
        "int",
        "how often streams group members report their task offsets",
    ),
    "group.streams.num.warmup.replicas": ("2", "int", "warm-up replicas of each stateful task"),
    "group.streams.acceptable.recovery.lag": (
        "10000",
        "long",
        "lag under which a streams group member counts as caught up on a task",
    ),
    "group.consumer.assignors": (
        "uniform,range",
        "list",
        "server-side assignors; the first is the default (KIP-848)",
    ),
    "group.consumer.regex.refresh.interval.ms": (
        "600000",
        "int",
        "how often regex subscriptions are re-resolved even without new topics",
    ),
    "group.consumer.migration.policy": (
        "bidirectional",
        "string",
        "classic <-> consumer group conversion: bidirectional, upgrade, downgrade or disabled",
    ),
    "offset.metadata.max.bytes": ("4096", "int", "largest metadata string of a committed offset"),
    "offsets.topic.num.partitions": ("50", "int", "partitions of __consumer_offsets (coordinator choice)"),
    "transaction.state.log.num.partitions": (
        "50",
        "int",
        "partitions of __transaction_state (transaction coordinator choice)",
    ),
    "transaction.max.timeout.ms": ("900000", "int", "longest transaction.timeout.ms a producer may ask for"),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (
        "10000",
        "int",
        "how often transactions past their timeout are aborted",
    ),
    "sasl.users.file": (
        "",
        "string",
        "JSON {user: password}: PLAIN passwords, SCRAM credentials derived at load",
    ),
    "state.dir": (
        "",
        "string",
        "directory for state that survives restarts (quota configs, SCRAM credentials, dynamic"
        " configs); empty: in memory",
    ),
    "quota.window.num": ("11", "int", "samples kept by quota sensors"),
    "quota.window.size.seconds": ("1", "int", "length of one quota sample"),
    "controller.quota.window.num": ("11", "int", "samples of the controller mutation token bucket"),
    "controller.quota.window.size.seconds": ("1", "int", "length of one controller mutation sample"),
    "max.connections": ("2147483647", "int", "connections per broker; more wait unread until one closes"),
    "max.connections.per.ip": ("2147483647", "int", "connections per client address; more are closed"),
    "max.connections.per.ip.overrides": ("", "string", "per-address limits: host:count,host:count"),
    "connections.max.idle.ms": (
        "600000",
        "long",
        "a connection nothing was read from or written to for this long is closed, authenticated or"
        " not (a TLS handshake included); negative: never",
    ),
    "metrics.dir": ("", "string", "write one Parquet row per request here (empty: off)"),
    "metrics.roll.rows": ("100000", "int", "rows per metrics file at most"),
    "metrics.roll.ms": (
        "10000",
        "int",
        "a metrics file is written at least this often while requests arrive",
    ),
    "metrics.buffer.rows": ("400000", "int", "rows buffered before connections stop reading (backpressure)"),
    "client.quota.callback.class": (
        "",
        "class",
        "KIP-257 quota callback, package.module.Class on sys.path (empty: Kafka's default); dynamic here",
    ),
    "fetch.max.bytes": ("57671680", "int", "largest fetch response (before quota caps)"),
    "sasl.enabled.mechanisms": (
        "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "list",
        "mechanisms SASL listeners offer (Kafka's default is GSSAPI, which this broker lacks)",
    ),
    "connection.failed.authentication.delay.ms": (
        "100",
        "int",
        "a failed authentication is answered this late",
    ),
    "sasl.server.max.receive.size": (
        "524288",
        "int",
        "largest frame a SASL listener accepts before authentication completes (larger: closed)",
    ),
    "connections.max.reauth.ms": (
        "0",
        "long",
        "SASL sessions last this long, then clients re-authenticate (KIP-368; 0: forever)",
    ),
    "delegation.token.secret.key": (
        "",
        "password",
        "key of the delegation tokens' HMACs (KIP-48); empty: the token APIs answer"
        " DELEGATION_TOKEN_AUTH_DISABLED",
    ),
    "delegation.token.master.key": ("", "password", "DEPRECATED: the old name of the secret key"),
    "delegation.token.max.lifetime.ms": ("604800000", "long", "no token lives longer, renewed or not"),
    "delegation.token.expiry.time.ms": ("86400000", "long", "tokens expire this long after issue or renewal"),
    "delegation.token.expiry.check.interval.ms": ("3600000", "long", "how often expired tokens are removed"),
    "ssl.certfile": ("", "string", "PEM certificate chain of SSL and SASL_SSL listeners"),
    "ssl.keyfile": ("", "string", "PEM private key (default: in ssl.certfile)"),
    "ssl.key.password": ("", "password", "password of an encrypted ssl.keyfile"),
    "ssl.cafile": ("", "string", "PEM CA certificates that client certificates are checked against"),
    "ssl.client.auth": ("none", "string", "client certificates: required, requested or none"),
    "authorizer.class.name": (
        "",
        "class",
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer: ACLs decide (empty: no authorizer)",
    ),
    "authorizer.enabled": ("false", "boolean", "true: the same as authorizer.class.name=StandardAuthorizer"),
    "allow.everyone.if.no.acl.found": (
        "false",
        "boolean",
        "with an authorizer, allow what no ACL names (false: refuse it)",
    ),
    "super.users": ("", "list", "principals allowed everything: User:admin;User:ops"),
    "admin.port": ("-1", "int", "HTTP control plane on 127.0.0.1:PORT (0: a free port; -1: off)"),
    "record.requests.max": ("256", "int", "requests and responses kept in the recording ring (0: none)"),
    "record.requests.max.bytes": (
        "67108864",
        "int",
        "request bytes kept in the recording ring (its oldest entries go first; the newest stays)",
    ),
    "record.file": ("", "string", "append every request and response here as JSON lines (empty: off)"),
    "conformance.report.file": ("", "string", "write the conformance report here when the cluster stops"),
    "telemetry.enabled": (
        "false",
        "boolean",
        "KIP-714 client telemetry: advertise and serve GetTelemetrySubscriptions and PushTelemetry",
    ),
    "telemetry.max.bytes": ("1048576", "int", "largest metrics payload a client may push (KIP-714)"),
}

# Broker configs that set the broker-wide default of a topic config (Kafka's log.* synonyms
# of LogConfig). They are read, but kept out of DEFAULTS: unset, the topic config's own
# default applies (and DescribeConfigs shows no synonym for them), and without any
# log.retention.* key time retention is off, where Kafka's default is 7 days.
# name -> (what applies when unset, type, documentation).
LOG_DEFAULTS: dict[str, tuple[str, str, str]] = {
    "log.retention.ms": (
        "unset: no time retention",
        "long",
        "age past which batches are deleted, for topics without retention.ms (-1: never); wins over"
        " log.retention.minutes and log.retention.hours",
    ),
    "log.retention.minutes": ("unset", "int", "log.retention.ms in minutes, when that is not set"),
    "log.retention.hours": (
        "unset",
        "int",
        "log.retention.ms in hours, when neither it nor log.retention.minutes is set",
    ),
    "log.message.timestamp.type": (
        "CreateTime",
        "string",
        "LogAppendTime: the broker stamps each batch; default of the topic config message.timestamp.type",
    ),
    "log.cleanup.policy": (
        "delete",
        "list",
        "delete and/or compact; default of the topic config cleanup.policy",
    ),
    "log.cleaner.delete.retention.ms": (
        "86400000",
        "long",
        "how long tombstones of compacted topics are kept; default of delete.retention.ms",
    ),
    "log.cleaner.min.compaction.lag.ms": (
        "0",
        "long",
        "a record stays uncompacted at least this long; default of min.compaction.lag.ms",
    ),
    "log.cleaner.max.compaction.lag.ms": (
        "9223372036854775807",
        "long",
        "a record is compacted at the latest this long after it was written; default of"
        " max.compaction.lag.ms",
    ),
    "log.cleaner.min.cleanable.ratio": (
        "0.5",
        "double",
        "dirty share of a log that triggers compaction; default of min.cleanable.dirty.ratio",
    ),
    "log.roll.ms": (
        "604800000",
        "long",
        "age at which the active segment rolls (and becomes compactable); default of segment.ms",
    ),
    "log.segment.bytes": (
        "1073741824",
        "int",
        "size at which the active segment rolls (and becomes compactable); default of segment.bytes",
    ),
}

CATCH_UP_CONFIG = "replica.catch.up.ms"
# Keys without a default in Kafka (null, or required as node.id is): unset, DescribeConfigs
# shows no value and no synonym (ConfigHelper lists no DEFAULT_CONFIG synonym for them).
NULL_DEFAULTS: frozenset[str] = frozenset({"node.id", "broker.rack"})

# Broker configs that stand for one another, in Kafka's order
# (DynamicBrokerConfig.brokerConfigSynonyms): the first one set wins (KafkaConfig, LogConfig).
_ROLL = ("log.roll.ms", "log.roll.hours")
_JITTER = ("log.roll.jitter.ms", "log.roll.jitter.hours")
_RETENTION = ("log.retention.ms", "log.retention.minutes", "log.retention.hours")
SYNONYM_GROUPS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(_ROLL, _ROLL),
    **dict.fromkeys(_JITTER, _JITTER),
    **dict.fromkeys(_RETENTION, _RETENTION),
    # only this way round: log.flush.scheduler.interval.ms is the default of log.flush.interval.ms
    "log.flush.interval.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
}
# Each group member's unit in milliseconds (1: the value is the millisecond count itself).
_SCALES = {"log.retention.minutes": 60_000, "log.retention.hours": 3_600_000, "log.roll.hours": 3_600_000}
_SCALES["log.roll.jitter.hours"] = 3_600_000
# Kafka's defaults of the group members (None: null), which LOG_DEFAULTS describes as this
# broker applies them.
KAFKA_LOG_DEFAULTS: dict[str, str | None] = {
    "log.roll.ms": None,
    "log.roll.hours": "168",
    "log.roll.jitter.ms": None,
    "log.roll.jitter.hours": "0",
    "log.retention.ms": None,
    "log.retention.minutes": None,
    "log.retention.hours": "168",
    "log.flush.interval.ms": None,
    "log.flush.scheduler.interval.ms": "9223372036854775807",
}


def kafka_default(name: str) -> str | None:
    """Kafka's default of broker config `name` as DescribeConfigs shows it; None when it
    has none (null) or is not a config this broker knows."""
    if name in KAFKA_LOG_DEFAULTS:
        return KAFKA_LOG_DEFAULTS[name]
    if name in DEFAULTS:
        return None if name in NULL_DEFAULTS else DEFAULTS[name][0]
    if name in LOG_DEFAULTS:
        return LOG_DEFAULTS[name][0]
    return None


def broker_log_value(config: BrokerConfig, name: str) -> str | None:
    """The value broker config `name` gives the topic configs that default to it: the first
    of its synonym group that is set, in milliseconds (KafkaConfig.logRetentionTimeMillis,
    logRollTimeMillis, logFlushIntervalMs: a negative retention is -1); None when none is."""
    for member in SYNONYM_GROUPS.get(name, (name,)):
        value = config.get(member)
        if value is None or value.strip() == "":
            continue
        scale = _SCALES.get(member, 1)
        if scale == 1:
            return value
        number = int(value.strip()) * scale
        return "-1" if number < 0 and member.startswith("log.retention.") else str(number)
    return None


def topic_config_layers(
    view: BrokerConfigView, config: TopicConfig, overrides: Mapping[str, str]
) -> tuple[str, int, list[tuple[str, str, int]]]:
    """(value, source, synonyms) of a topic config, as ConfigHelper.createTopicConfigEntry
    has them: the synonyms are the topic's override, then the broker config's layers
    (`view.synonyms`: none for retention.ms while log.retention.ms is unset); the source
    is the first synonym's, DEFAULT_CONFIG without one; the value is the topic's LogConfig
    value: the override, else what the broker config gives (log.retention.hours=24:
    86400000), else the default."""
    synonyms: list[tuple[str, str, int]] = []
    if config.name in overrides:
        synonyms.append((config.name, overrides[config.name], SOURCE_TOPIC))
    server = config.broker_synonym
    if server:
        synonyms += view.synonyms(server, config.default)
    value = overrides.get(config.name)
    if value is None:
        value = (broker_log_value(view, server) if server else None) or config.default
    return value, synonyms[0][2] if synonyms else SOURCE_DEFAULT, synonyms


SUPPORTED_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

# Configs that cannot change while the broker runs: what reads them does so once (bound
# listeners, opened stores, built sensors, TLS contexts, the metrics sink, the group
# placement), so a dynamic value would be reported but never used. Any `ssl.*` key is
# read-only as well. Every other key may change at runtime, including some Kafka keeps
# static (auto.create.topics.enable, num.partitions, socket.request.max.bytes, ...): a
# mock lets tests flip them. The refusal is Kafka's for its non-dynamic configs.
READ_ONLY: frozenset[str] = frozenset(
    {
        "node.id",
        "listeners",
        "advertised.listeners",
        "listener.security.protocol.map",
        "cluster.id",
        "broker.rack",
        "replica.selector.class",
        "state.dir",
        "sasl.users.file",
        "delegation.token.secret.key",
        "delegation.token.master.key",
        "delegation.token.max.lifetime.ms",
        "delegation.token.expiry.time.ms",
        "delegation.token.expiry.check.interval.ms",
        "metrics.dir",
        "metrics.roll.rows",
        "metrics.roll.ms",
        "metrics.buffer.rows",
        "quota.window.num",
        "quota.window.size.seconds",
        "controller.quota.window.num",
        "controller.quota.window.size.seconds",
        "offsets.topic.num.partitions",
        "transaction.state.log.num.partitions",
        "transaction.max.timeout.ms",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "authorizer.enabled",
        "authorizer.class.name",
        "allow.everyone.if.no.acl.found",
        "super.users",
        "admin.port",
        "record.requests.max",
        "record.requests.max.bytes",
        "record.file",
        "conformance.report.file",
        "telemetry.enabled",
        # the group coordinator's (GroupCoordinatorConfig): static in Kafka
        "group.coordinator.rebalance.protocols",
        "group.consumer.heartbeat.interval.ms",
        "group.consumer.min.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
        "group.consumer.session.timeout.ms",
        "group.consumer.min.session.timeout.ms",
        "group.consumer.max.session.timeout.ms",
        "group.consumer.max.size",
        "group.consumer.assignors",
        "group.consumer.regex.refresh.interval.ms",
        "group.consumer.migration.policy",
        "log.dirs",
    }
)
READ_ONLY_PREFIX = "ssl."
# Listener configs Kafka accepts only per broker ("Cannot update these configs at default
# cluster level"), except the few it keeps cluster-wide (DynamicBrokerConfig.PerBrokerConfigs).
PER_BROKER_ONLY: frozenset[str] = frozenset({"sasl.enabled.mechanisms"})
CLUSTER_LEVEL_LISTENER_CONFIGS: frozenset[str] = frozenset({"max.connections"})
LISTENER_PREFIX = "listener.name."
# Lower bounds of Kafka's ConfigDef (`atLeast`) for the keys that have one.
MINIMUMS: dict[str, int] = {
    "num.partitions": 1,
    "message.max.bytes": 0,
    "socket.request.max.bytes": 1,
    "fetch.max.bytes": 1024,
    "max.connections": 0,
    "max.connections.per.ip": 0,
    "connection.failed.authentication.delay.ms": 0,
    "connections.max.reauth.ms": 0,
    "group.max.size": 1,
    "telemetry.max.bytes": 1,
    "group.consumer.max.size": 1,
    "group.consumer.session.timeout.ms": 1,
    "group.consumer.heartbeat.interval.ms": 1,
    "group.consumer.regex.refresh.interval.ms": 10000,
}
_INTEGER_RANGES = {
    "int": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
    "short": (-(2**15), 2**15 - 1),
}
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")


def listener_base(key: str) -> str | None:
    """`ssl.keyfile` for `listener.name.sasl_ssl.ssl.keyfile`; None for an unprefixed key."""
    if not key.startswith(LISTENER_PREFIX):
        return None
    _, dot, base = key[len(LISTENER_PREFIX) :].partition(".")
    return base if dot and base else None


def is_read_only(key: str) -> bool:
    """Whether `key` (or the base of a listener-prefixed key) cannot be set dynamically."""
    base = listener_base(key) or key
    return base in READ_ONLY or base.startswith(READ_ONLY_PREFIX)


def config_type(key: str) -> str | None:
    """The type of a known key or of a listener-prefixed one's base; None: unknown key."""
    known = DEFAULTS.get(key) or DEFAULTS.get(listener_base(key) or "")
    return known[1] if known else None


def parse_error(name: str, value: str, type_: str) -> str | None:
    """Why `value` does not parse as `type_`, in the words of Kafka's ConfigDef.parseType
    (ConfigException "Invalid value V for configuration N: ..."), or None."""
    trimmed = value.strip()
    if type_ in _INTEGER_RANGES:
        low, high = _INTEGER_RANGES[type_]
        if not _INTEGER.fullmatch(trimmed) or not low <= int(trimmed) <= high:
            return f"Invalid value {value} for configuration {name}: Not a number of type {type_.upper()}"
    elif type_ == "double" and not _DOUBLE.fullmatch(trimmed):
        return f"Invalid value {value} for configuration {name}: Not a number of type DOUBLE"
    elif type_ == "boolean" and trimmed.lower() not in ("true", "false"):
        return f"Invalid value {value} for configuration {name}: Expected value to be either true or false"
    return None


def invalid_value(key: str, value: str) -> str | None:
    """Kafka's message for a value a known broker config cannot take (its type, then its
    lower bound); None when acceptable or when the key is unknown (plugins' keys pass)."""
    type_ = config_type(key)
    if type_ is None:
        return None
    name = listener_base(key) or key  # Kafka validates a listener override under its base name
    reason = parse_error(name, value, type_)
    minimum = MINIMUMS.get(name)
    if reason is None and minimum is not None and int(value.strip()) < minimum:
        reason = (
            f"Invalid value {int(value.strip())} for configuration {name}: Value must be at least {minimum}"
        )
    return reason


@dataclass(frozen=True, slots=True)
class Endpoint:
    listener: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.listener}://{self.host}:{self.port}"


def parse_endpoints(value: str) -> list[Endpoint]:
    """Parses Kafka's `NAME://host:port,...` listener syntax ([::1] for IPv6)."""
    endpoints: list[Endpoint] = []
    for item in filter(None, (part.strip() for part in value.split(","))):
        name, sep, address = item.partition("://")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not port.isdigit():
            raise ValueError(f"invalid listener {item!r}: expected NAME://host:port")
        endpoints.append(Endpoint(name.upper(), host.strip("[]"), int(port)))
    return endpoints


def broker_racks(value: str, brokers: int) -> list[str | None]:
    """The rack of each of `brokers` brokers from `broker.rack`: one value is every
    broker's (one server.properties for all), a comma-separated list gives broker i its
    i-th entry; an empty value or entry is no rack (Kafka's null). ValueError when a
    list's length is not the number of brokers: a misnumbered list would put brokers in
    racks nobody meant."""
    entries = [entry.strip() or None for entry in value.split(",")]
    if len(entries) == 1:
        return entries * brokers
    if len(entries) != brokers:
        raise ValueError(
            f"broker.rack={value}: {len(entries)} racks for {brokers} broker(s); give one rack for"
            " every broker or one per broker"
        )
    return entries


def config_string(value: object) -> str:
    """A Python value as server.properties would spell it (True -> "true")."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def load_properties(path: str | Path) -> dict[str, str]:
    """Reads a server.properties file (key=value or key: value, # and ! comments)."""
    values: dict[str, str] = {}
    for raw in Path(path).read_text().splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        separator = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if separator < 0:
            values[line] = ""
        else:
            values[line[:separator].strip()] = line[separator + 1 :].strip()
    return values


class BrokerConfig:
    """Static broker configuration: defaults overlaid by a file and overrides."""

    def __init__(self, values: dict[str, str] | None = None) -> None:
        self.values: dict[str, str] = {key: default for key, (default, _, _) in DEFAULTS.items()}
        for key, value in (values or {}).items():
            self.values[key] = config_string(value)
        # Keys this broker's own server.properties sets even where the value is the default.
        self.pinned: frozenset[str] = frozenset()

    def explicitly_set(self, key: str) -> bool:
        return key in self.pinned or (
            key in self.values and self.values[key] != DEFAULTS.get(key, (None,))[0]
        )

    def for_broker(self, node_id: int, rack: str | None) -> BrokerConfig:
        """Broker `node_id`'s own static config, as its server.properties would say it: the
        shared values with its own `node.id` (always set: Kafka requires it) and its own
        entry of the `broker.rack` list (unset when it has none)."""
        own = BrokerConfig()
        own.values = {**self.values, "node.id": str(node_id), "broker.rack": rack or ""}
        own.pinned = (self.pinned | {"node.id", "broker.rack"}) - ({"broker.rack"} if not rack else set())
        return own

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def get_str(self, key: str) -> str:
        return self.values.get(key, "")

    def get_int(self, key: str) -> int:
        return int(self.values[key])

    def get_bool(self, key: str) -> bool:
        return self.values[key].strip().lower() == "true"

    def for_listener(self, listener: str, key: str) -> str:
        """`key` as set for one listener (`listener.name.<name>.<key>`, as Kafka allows for
        ssl.* and sasl.* settings), else the broker-wide value."""
        return self.values.get(f"listener.name.{listener.lower()}.{key}") or self.get_str(key)

    def security_protocol(self, listener: str) -> str:
        mapping = dict(
            item.split(":", 1)
            for item in self.get_str("listener.security.protocol.map").split(",")
            if ":" in item
        )
        return mapping.get(listener, listener).upper()


class BrokerConfigView(BrokerConfig):
    """One broker's effective configuration: its own dynamic layer over the cluster-wide
    dynamic default over the static values, as Kafka's DynamicBrokerConfig layers them.

    `values` is the merged dict, rebuilt by `refresh()` when a layer changes, so reads on
    the request path stay one dict lookup. `cluster_default` is shared by every view of
    the cluster (the store mutates it in place); `own` is this broker's (None: a view of
    the cluster-wide values only, what the shared cluster state reads).
    """

    def __init__(
        self, static: BrokerConfig, cluster_default: dict[str, str], own: dict[str, str] | None = None
    ) -> None:
        self.static = static
        self.cluster_default = cluster_default
        self.own: dict[str, str] = own if own is not None else {}
        self.values = {}
        self.refresh()

    def refresh(self) -> None:
        self.values = self.merged(self.cluster_default, self.own)

    def merged(self, cluster_default: dict[str, str], own: dict[str, str]) -> dict[str, str]:
        """The effective values these layers would give (static values below them)."""
        return {**self.static.values, **cluster_default, **own}

    def explicitly_set(self, key: str) -> bool:
        return key in self.own or key in self.cluster_default or self.static.explicitly_set(key)

    def synonyms(self, key: str, default: str | None = None) -> list[tuple[str, str, int]]:
        """(name, value, source) of every layer that sets `key` (or, for a listener
        override, its base config), in precedence order: Kafka's ConfigHelper
        configSynonyms, layer by layer, dropping entries before the first for `key`. The
        names are `key`'s group of DynamicBrokerConfig.brokerConfigSynonyms (log.retention.ms,
        .minutes, .hours), else `key` and a listener override's base; a name without a
        default (null in Kafka) has no DEFAULT_CONFIG entry; `default` is the DEFAULT_CONFIG
        value of a `key` this broker does not list (a topic config's default then)."""
        names = list(SYNONYM_GROUPS.get(key, ())) or [key] + [base for base in [listener_base(key)] if base]
        known = {n: kafka_default(n) for n in names}
        if key not in DEFAULTS and key not in LOG_DEFAULTS and key not in KAFKA_LOG_DEFAULTS:
            known[key] = default  # a topic config's broker synonym this broker has no entry for
        defaults = {n: value for n, value in known.items() if value is not None}
        layers: list[tuple[dict[str, str], int]] = [
            (self.own, SOURCE_DYNAMIC_BROKER),
            (self.cluster_default, SOURCE_DYNAMIC_DEFAULT_BROKER),
            (
                {n: self.static.values[n] for n in names if self.static.explicitly_set(n)},
                SOURCE_STATIC_BROKER,
            ),
            (defaults, SOURCE_DEFAULT),
        ]
        found = [(n, layer[n], source) for layer, source in layers for n in names if n in layer]
        while found and found[0][0] != key:
            found.pop(0)
        return found
