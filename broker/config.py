"""Broker configuration under Apache Kafka's own property names.

Values are kept as strings, as in server.properties, and converted by typed getters,
so unknown keys (meant for plugins) pass through untouched.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
    "auto.create.topics.enable": ("true", "boolean", "create unknown topics on Metadata requests"),
    "num.partitions": ("1", "int", "partitions of auto-created topics and of CreateTopics with -1"),
    "default.replication.factor": ("1", "int", "replication factor of auto-created topics"),
    "log.retention.bytes": ("-1", "long", "bytes kept per partition (-1: unbounded)"),
    "message.max.bytes": ("1048588", "int", "largest record batch accepted"),
    "socket.request.max.bytes": ("104857600", "int", "largest request frame accepted"),
    "group.initial.rebalance.delay.ms": ("3000", "int", "wait for more members before the first rebalance"),
    "group.min.session.timeout.ms": ("6000", "int", "smallest session timeout a member may ask for"),
    "group.max.session.timeout.ms": ("1800000", "int", "largest session timeout a member may ask for"),
    "group.max.size": ("2147483647", "int", "largest number of members in one group"),
    "offset.metadata.max.bytes": ("4096", "int", "largest metadata string of a committed offset"),
    "offsets.topic.num.partitions": ("50", "int", "partitions of __consumer_offsets (coordinator choice)"),
    "sasl.users.file": (
        "",
        "string",
        "JSON {user: password}: PLAIN passwords, SCRAM credentials derived at load",
    ),
    "state.dir": (
        "",
        "string",
        "directory for state that survives restarts (quota configs); empty: in memory",
    ),
    "quota.window.num": ("11", "int", "samples kept by quota sensors"),
    "quota.window.size.seconds": ("1", "int", "length of one quota sample"),
    "controller.quota.window.num": ("11", "int", "samples of the controller mutation token bucket"),
    "controller.quota.window.size.seconds": ("1", "int", "length of one controller mutation sample"),
    "max.connections": ("2147483647", "int", "connections per broker; more wait unread until one closes"),
    "max.connections.per.ip": ("2147483647", "int", "connections per client address; more are closed"),
    "max.connections.per.ip.overrides": ("", "string", "per-address limits: host:count,host:count"),
    "metrics.dir": ("", "string", "write one Parquet row per request here (empty: off)"),
    "metrics.roll.rows": ("100000", "int", "rows per metrics file at most"),
    "metrics.roll.ms": (
        "10000",
        "int",
        "a metrics file is written at least this often while requests arrive",
    ),
    "metrics.buffer.rows": ("400000", "int", "rows buffered before connections stop reading (backpressure)"),
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
    "ssl.certfile": ("", "string", "PEM certificate chain of SSL and SASL_SSL listeners"),
    "ssl.keyfile": ("", "string", "PEM private key (default: in ssl.certfile)"),
    "ssl.key.password": ("", "password", "password of an encrypted ssl.keyfile"),
    "ssl.cafile": ("", "string", "PEM CA certificates that client certificates are checked against"),
    "ssl.client.auth": ("none", "string", "client certificates: required, requested or none"),
    "authorizer.enabled": (
        "false",
        "boolean",
        "refuse quota, config and credential changes to non-super users",
    ),
    "super.users": ("", "list", "principals allowed everything: User:admin;User:ops"),
}

SUPPORTED_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


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
            self.values[key] = str(value).lower() if isinstance(value, bool) else str(value)

    def explicitly_set(self, key: str) -> bool:
        return key in self.values and self.values[key] != DEFAULTS.get(key, (None,))[0]

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
