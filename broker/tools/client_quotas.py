"""`kafka-client-quotas`: describe, resolve and alter client quotas over the wire (KIP-546).

A plain Kafka client (kafka-python's network client sending DescribeClientQuotas (48) and
AlterClientQuotas (49)), so it works against this mock broker and against a real Kafka.
`--resolve` is KIP-546's tool mode Apache Kafka never shipped: it reads every configured
entity with one DescribeClientQuotas request and resolves locally with the broker's own
resolution code (`quotas.resolution`), so it shows what the broker enforces.

Exit codes: 0 success, 1 refused by the broker or not reachable, 2 usage errors.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import kafka.errors
from kafka import KafkaAdminClient
from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest

from protocol.errors import ErrorCode, error_name
from quotas.entity import CLIENT_ID, ENTITY_TYPES, IP, USER, QuotaEntity
from quotas.resolution import QuotaIndex, Resolved, resolve
from quotas.validation import MATCH_DEFAULT, MATCH_EXACT, MATCH_SPECIFIED

PROG = "kafka-client-quotas"
ANONYMOUS = "ANONYMOUS"  # Kafka's principal for unauthenticated connections
CONFIGS_ENTITY_TYPES = {"users": USER, "clients": CLIENT_ID, "ips": IP}  # kafka-configs --entity-type
_ENTITY_DEFAULT = object()  # what --entity-default appends to the --entity-name list

EXAMPLES = """\
examples:
  %(prog)s --bootstrap-server localhost:9092 --describe --names client-id=my-client
  %(prog)s --bootstrap-server localhost:9092 --describe --defaults user --strict --output json
  %(prog)s --bootstrap-server localhost:9092 --resolve --names user=alice,client-id=app --show-overridden
  %(prog)s --bootstrap-server localhost:9092 --alter --names client-id=my-client --defaults user \\
      --add consumer_byte_rate=2000000 --delete producer_byte_rate
  %(prog)s --bootstrap-server localhost:9092 --alter --entity-type users --entity-name alice \\
      --entity-type clients --entity-default --add-config 'producer_byte_rate=1048576'

entities: --names takes type=name pairs (types user, client-id, ip; a comma inside a name is
written \\,), --defaults the types whose default entity is meant. The kafka-configs form pairs
the i-th --entity-type (users, clients, ips) with the i-th --entity-name/--entity-default.

--describe: types not given are wildcards; names match exactly, defaults match only the
default entity; --strict drops entities having other types too. The kafka-configs form is
always strict (as kafka-configs is), and an --entity-type without a name matches any name.

--resolve: the quota per key a connection of the user and client-id is held to, with the
entity it comes from (Kafka's 8-level precedence, as the broker evaluates it); a missing
user resolves as the unauthenticated principal ANONYMOUS, a missing client-id as the empty
client id (what Kafka uses for a null one). With ip=ADDR: connection_creation_rate too.

exit codes: 0 success, 1 refused by the broker (error name and message on stderr) or broker
not reachable, 2 usage errors.
"""


class UsageError(Exception):
    """Bad arguments or --command-config: reported like argparse's errors, exit code 2."""


class BrokerError(Exception):
    """A request the broker refused with an error code."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(error_text(code, message))
        self.code = code
        self.message = message


def error_text(code: int, message: str | None) -> str:
    if message:
        return f"{error_name(code)}: {message}"
    description = (
        getattr(kafka.errors.for_code(code), "description", "") if code in kafka.errors.kafka_errors else ""
    )
    return f"{error_name(code)}: {description}" if description else error_name(code)


def error_json(code: int, message: str | None) -> dict[str, Any] | None:
    return None if code == ErrorCode.NONE else {"code": code, "name": error_name(code), "message": message}


# -- values ------------------------------------------------------------------------------
def format_value(value: float) -> str:
    """1048576 rather than 1048576.0; other values as Python's shortest repr."""
    if value.is_integer() and abs(value) <= 2.0**63:
        return str(int(value))
    return repr(value)


def json_value(value: float) -> int | float:
    return int(value) if value.is_integer() and abs(value) <= 2.0**63 else value


# -- entity specifications ----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Component:
    """One entity type of the request: an exact name, the default, or (describe) any name."""

    entity_type: str
    match_type: int  # MATCH_EXACT, MATCH_DEFAULT or MATCH_SPECIFIED
    name: str | None = None


def split_list(text: str) -> list[str]:
    """Splits on commas; `\\,` is a literal comma and `\\\\` a backslash."""
    items, current, escaped = [], [], False
    for ch in text:
        if escaped:
            current.append(ch if ch in ",\\" else "\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    if escaped:
        current.append("\\")
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def parse_names(values: Sequence[str]) -> list[Component]:
    components = []
    for value in values:
        for item in split_list(value):
            entity_type, sep, name = item.partition("=")
            if not sep or not entity_type.strip():
                raise UsageError(f"--names expects type=name pairs, got {item!r}")
            components.append(Component(entity_type.strip(), MATCH_EXACT, name))
    return components


def parse_defaults(values: Sequence[str]) -> list[Component]:
    components = []
    for value in values:
        for item in split_list(value):
            if "=" in item:
                raise UsageError(f"--defaults expects entity types (e.g. user,client-id), got {item!r}")
            components.append(Component(item, MATCH_DEFAULT))
    return components


def parse_configs_entities(types: Sequence[str], names: Sequence[object]) -> list[Component]:
    """kafka-configs' pairing: the i-th --entity-type with the i-th --entity-name/--entity-default;
    a type left without one matches any name (describe only)."""
    if len(names) > len(types):
        raise UsageError("more --entity-name/--entity-default than --entity-type")
    components = []
    for i, configs_type in enumerate(types):
        entity_type = CONFIGS_ENTITY_TYPES[configs_type]
        if i >= len(names):
            components.append(Component(entity_type, MATCH_SPECIFIED))
        elif names[i] is _ENTITY_DEFAULT:
            components.append(Component(entity_type, MATCH_DEFAULT))
        else:
            components.append(Component(entity_type, MATCH_EXACT, str(names[i])))
    return components


def entity_components(args: argparse.Namespace) -> tuple[list[Component], bool]:
    """The entity the command is about, and whether it came in the kafka-configs form."""
    configs_form = bool(args.entity_type or args.entity_names)
    if configs_form and (args.names or args.defaults):
        raise UsageError("use either --names/--defaults or --entity-type with --entity-name/--entity-default")
    if configs_form:
        components = parse_configs_entities(args.entity_type or [], args.entity_names or [])
    else:
        components = parse_names(args.names) + parse_defaults(args.defaults)
    seen: set[str] = set()
    for component in components:
        if component.entity_type in seen:
            raise UsageError(f"entity type {component.entity_type} given more than once")
        seen.add(component.entity_type)
    return components, configs_form


def parse_add(values: Sequence[str]) -> list[tuple[str, float | None]]:
    ops: list[tuple[str, float | None]] = []
    for value in values:
        for item in split_list(value):
            key, sep, number = item.partition("=")
            if not sep or not key.strip():
                raise UsageError(f"--add expects key=value pairs, got {item!r}")
            try:
                ops.append((key.strip(), float(number.strip().strip("'\""))))
            except ValueError:
                raise UsageError(
                    f"the value of {key.strip()} must be a number, got {number.strip()!r}"
                ) from None
    return ops


def parse_delete(values: Sequence[str]) -> list[tuple[str, float | None]]:
    ops: list[tuple[str, float | None]] = []
    for value in values:
        for item in split_list(value):
            if "=" in item:
                raise UsageError(f"--delete expects quota keys without values, got {item!r}")
            ops.append((item, None))
    return ops


# -- --command-config ----------------------------------------------------------------------
def _to_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError(f"expected true or false, got {text!r}")
    return lowered == "true"


def _to_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.strip().split("."))


def _to_str(text: str) -> str:
    return text


# Client settings a properties file may set: Java-style key -> (KafkaAdminClient kwarg, parser).
CLIENT_SETTINGS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "client.id": ("client_id", _to_str),
    "request.timeout.ms": ("request_timeout_ms", int),
    "bootstrap.timeout.ms": ("bootstrap_timeout_ms", int),
    "connections.max.idle.ms": ("connections_max_idle_ms", int),
    "reconnect.backoff.ms": ("reconnect_backoff_ms", int),
    "reconnect.backoff.max.ms": ("reconnect_backoff_max_ms", int),
    "retry.backoff.ms": ("retry_backoff_ms", int),
    "metadata.max.age.ms": ("metadata_max_age_ms", int),
    "max.in.flight.requests.per.connection": ("max_in_flight_requests_per_connection", int),
    "receive.message.max.bytes": ("receive_message_max_bytes", int),
    "receive.buffer.bytes": ("receive_buffer_bytes", int),
    "send.buffer.bytes": ("send_buffer_bytes", int),
    "client.dns.lookup": ("client_dns_lookup", _to_str),
    "api.version": ("api_version", _to_version),
    "proxy.url": ("proxy_url", _to_str),
    "security.protocol": ("security_protocol", lambda text: text.strip().upper()),
    "ssl.check.hostname": ("ssl_check_hostname", _to_bool),
    # Java's name for the same thing: "https" checks the host name, "" does not.
    "ssl.endpoint.identification.algorithm": ("ssl_check_hostname", lambda text: text.strip() != ""),
    "ssl.cafile": ("ssl_cafile", _to_str),
    "ssl.certfile": ("ssl_certfile", _to_str),
    "ssl.keyfile": ("ssl_keyfile", _to_str),
    "ssl.password": ("ssl_password", _to_str),
    "ssl.crlfile": ("ssl_crlfile", _to_str),
    "sasl.mechanism": ("sasl_mechanism", lambda text: text.strip()),
    "sasl.plain.username": ("sasl_plain_username", _to_str),
    "sasl.plain.password": ("sasl_plain_password", _to_str),
    "sasl.kerberos.service.name": ("sasl_kerberos_service_name", _to_str),
    "sasl.kerberos.domain.name": ("sasl_kerberos_domain_name", _to_str),
}
JAAS_CONFIG = "sasl.jaas.config"  # PLAIN/SCRAM login modules: username and password are taken from it

_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
_JAAS_MODULE = re.compile(r"^\s*(\S+)\s+(?:required|requisite|sufficient|optional)\b(.*?);?\s*$", re.DOTALL)
_JAAS_OPTION = re.compile(r'([\w.]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;]+)')


def _unescape(text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        escaped = match.group(1)
        if escaped.startswith("u") and len(escaped) == 5:
            return chr(int(escaped[1:], 16))
        return {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(escaped, escaped)

    return _ESCAPE.sub(replace, text)


def _split_property(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        if line[i] == "\\":
            i += 2
            continue
        if line[i] in "=: \t\f":
            break
        i += 1
    key, j = line[:i], i
    while j < len(line) and line[j] in " \t\f":
        j += 1
    if j < len(line) and line[j] in "=:":
        j += 1
    while j < len(line) and line[j] in " \t\f":
        j += 1
    return _unescape(key), _unescape(line[j:])


def read_properties(text: str) -> dict[str, str]:
    """java.util.Properties.load: `key=value`, `key: value` or `key value`; # and ! comments;
    a line ending in an odd number of backslashes continues on the next; backslash escapes."""
    properties: dict[str, str] = {}
    pending: str | None = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        key, value = _split_property((pending or "") + line)
        pending = None
        properties[key] = value
    if pending is not None:
        key, value = _split_property(pending)
        properties[key] = value
    return properties


def _jaas_credentials(value: str) -> dict[str, str]:
    module = _JAAS_MODULE.match(value)
    if module is None or not module.group(1).endswith(("PlainLoginModule", "ScramLoginModule")):
        raise ValueError("only PlainLoginModule and ScramLoginModule (username/password) are supported")
    options = {
        key: raw[1:-1].replace('\\"', '"') if raw.startswith('"') else raw
        for key, raw in _JAAS_OPTION.findall(module.group(2))
    }
    settings = {}
    if "username" in options:
        settings["sasl_plain_username"] = options["username"]
    if "password" in options:
        settings["sasl_plain_password"] = options["password"]
    return settings


def client_settings(properties: dict[str, str], source: str = "--command-config") -> dict[str, Any]:
    """KafkaAdminClient keyword arguments for Java-style client properties; unknown keys refused."""
    settings: dict[str, Any] = {}
    if JAAS_CONFIG in properties:
        try:
            settings.update(_jaas_credentials(properties[JAAS_CONFIG]))
        except ValueError as exc:
            raise UsageError(f"{source}: {JAAS_CONFIG}: {exc}") from None
    for key, value in properties.items():
        if key == JAAS_CONFIG:
            continue
        if key not in CLIENT_SETTINGS:
            raise UsageError(
                f"{source}: unknown client setting {key!r}; supported: {', '.join(sorted([*CLIENT_SETTINGS, JAAS_CONFIG]))}"
            )
        kwarg, parse = CLIENT_SETTINGS[key]
        try:
            settings[kwarg] = parse(value)
        except ValueError as exc:
            raise UsageError(f"{source}: invalid value for {key}: {exc}") from None
    return settings


def load_command_config(path: str) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read --command-config {path}: {exc.strerror or exc}") from None
    return client_settings(read_properties(text), path)


# -- the wire client -----------------------------------------------------------------------
class QuotaClient:
    """Sends requests through kafka-python's network client (bootstrap, ApiVersions, security)."""

    def __init__(self, bootstrap_servers: str, settings: dict[str, Any] | None = None) -> None:
        self._admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, **(settings or {}))

    def send(self, request: Any) -> Any:
        manager = self._admin._manager
        return manager.run(manager.send, request)

    def close(self) -> None:
        self._admin.close()

    def __enter__(self) -> QuotaClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def describe_quotas(
    client: QuotaClient, components: Sequence[Component], strict: bool
) -> list[tuple[QuotaEntity, dict[str, float]]]:
    """DescribeClientQuotas: matching entities with their values, in a stable order."""
    request = DescribeClientQuotasRequest(
        components=[
            DescribeClientQuotasRequest.ComponentData(
                entity_type=c.entity_type, match_type=c.match_type, match=c.name
            )
            for c in components
        ],
        strict=strict,
    )
    response = client.send(request)
    if response.error_code:
        raise BrokerError(response.error_code, response.error_message)
    described = [
        (
            QuotaEntity((e.entity_type, e.entity_name) for e in entry.entity),
            {v.key: v.value for v in entry.values},
        )
        for entry in response.entries or []
    ]
    return sorted(described, key=lambda item: entity_sort_key(item[0]))


def entity_sort_key(entity: QuotaEntity) -> tuple[tuple[int, str], ...]:
    """Per type (user, client-id, ip, then others): absent, default, then names in order."""
    types = [*ENTITY_TYPES, *sorted(t for t in entity if t not in ENTITY_TYPES)]
    key = []
    for entity_type in types:
        if entity_type not in entity:
            key.append((0, ""))
        else:
            name = entity[entity_type]
            key.append((1, "") if name is None else (2, name))
    return tuple(key)


def resolve_quotas(
    client: QuotaClient, user: str | None, client_id: str | None, ip: str | None
) -> list[Resolved]:
    """The effective quotas of a connection, from every configured entity (one describe)."""
    index = QuotaIndex()
    for entity, values in describe_quotas(client, [], strict=False):
        if any(entity_type not in ENTITY_TYPES for entity_type in entity):
            continue
        for key, value in values.items():
            index.set(entity, key, value)
    resolved: list[Resolved] = []
    if user is not None or client_id is not None or ip is None:
        resolved += resolve(
            index, ANONYMOUS if user is None else user, "" if client_id is None else client_id
        )
    if ip is not None:
        resolved += resolve_ip(index, ip)
    return resolved


def resolve_ip(index: QuotaIndex, ip: str) -> list[Resolved]:
    """connection_creation_rate and friends: the ip's own entity beats the default ip."""
    resolved = []
    for key in sorted(index.ip_values):
        values = index.ip_values[key]
        candidates = [(values[name], QuotaEntity({IP: name})) for name in (ip, None) if name in values]
        if candidates:
            value, entity = candidates[0]
            resolved.append(Resolved(key, value, entity, tuple(candidates[1:])))
    return resolved


@dataclass(frozen=True, slots=True)
class AlterOutcome:
    entity: QuotaEntity
    error_code: int
    error_message: str | None


def alter_quotas(
    client: QuotaClient,
    components: Sequence[Component],
    ops: Sequence[tuple[str, float | None]],
    validate_only: bool,
) -> list[AlterOutcome]:
    """AlterClientQuotas for one entity; `ops` are (key, value) to set or (key, None) to remove."""
    entry = AlterClientQuotasRequest.EntryData
    request = AlterClientQuotasRequest(
        entries=[
            entry(
                entity=[entry.EntityData(entity_type=c.entity_type, entity_name=c.name) for c in components],
                ops=[
                    entry.OpData(key=key, value=0.0 if value is None else value, remove=value is None)
                    for key, value in ops
                ],
            )
        ],
        validate_only=validate_only,
    )
    response = client.send(request)
    return [
        AlterOutcome(
            QuotaEntity((e.entity_type, e.entity_name) for e in result.entity),
            result.error_code,
            result.error_message,
        )
        for result in response.entries
    ]


# -- the command line ----------------------------------------------------------------------
@dataclass(slots=True)
class Command:
    operation: str  # describe, resolve or alter
    components: list[Component]
    output: str = "text"
    strict: bool = False
    show_overridden: bool = False
    ops: list[tuple[str, float | None]] = field(default_factory=list)
    validate_only: bool = False


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Describe, resolve and alter Kafka client quotas (KIP-546) over the wire protocol.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="broker(s) to connect to"
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="Java-style properties with client settings (security.protocol, sasl.mechanism, "
        "sasl.jaas.config or sasl.plain.username/password, ssl.cafile, client.id, request.timeout.ms, ...)",
    )
    operation = parser.add_mutually_exclusive_group(required=True)
    operation.add_argument(
        "--describe", action="store_true", help="list the entities matching the entity filter"
    )
    operation.add_argument(
        "--resolve", action="store_true", help="the effective quotas of a user and client-id"
    )
    operation.add_argument("--alter", action="store_true", help="add, update or remove quotas of one entity")

    names = parser.add_argument_group("entity, KIP-546 form")
    names.add_argument(
        "--names", action="append", default=[], metavar="TYPE=NAME,...", help="e.g. user=alice,client-id=app"
    )
    names.add_argument(
        "--defaults", action="append", default=[], metavar="TYPE,...", help="e.g. user or user,client-id"
    )

    configs = parser.add_argument_group("entity, kafka-configs form")
    configs.add_argument(
        "--entity-type", action="append", choices=sorted(CONFIGS_ENTITY_TYPES), help="repeatable"
    )
    configs.add_argument("--entity-name", dest="entity_names", action="append", metavar="NAME")
    configs.add_argument(
        "--entity-default",
        dest="entity_names",
        action="append_const",
        const=_ENTITY_DEFAULT,
        help="the default entity",
    )

    options = parser.add_argument_group("options")
    options.add_argument(
        "--strict", action="store_true", help="--describe: only entities with exactly the given types"
    )
    options.add_argument(
        "--show-overridden", action="store_true", help="--resolve: also the entries the winner beats"
    )
    options.add_argument(
        "--add",
        "--add-config",
        dest="add",
        action="append",
        default=[],
        metavar="KEY=VALUE,...",
        help="--alter: set quotas",
    )
    options.add_argument(
        "--delete",
        "--delete-config",
        dest="delete",
        action="append",
        default=[],
        metavar="KEY,...",
        help="--alter: remove quotas",
    )
    options.add_argument(
        "--validate-only", action="store_true", help="--alter: validate without changing anything"
    )
    options.add_argument("--output", choices=("text", "json"), default="text", help="json for scripts")
    return parser


def plan(args: argparse.Namespace) -> Command:
    """Checks the arguments as a whole; UsageError when they do not make a command."""
    operation = "describe" if args.describe else "resolve" if args.resolve else "alter"
    misplaced = [
        flag
        for flag, used, allowed in (
            ("--strict", args.strict, "describe"),
            ("--show-overridden", args.show_overridden, "resolve"),
            ("--add", args.add, "alter"),
            ("--delete", args.delete, "alter"),
            ("--validate-only", args.validate_only, "alter"),
        )
        if used and operation != allowed
    ]
    if misplaced:
        raise UsageError(f"{', '.join(misplaced)} cannot be used with --{operation}")
    components, configs_form = entity_components(args)
    command = Command(operation, components, output=args.output)
    if operation == "describe":
        command.strict = args.strict or configs_form
    elif operation == "resolve":
        for component in components:
            if component.match_type != MATCH_EXACT or component.entity_type not in ENTITY_TYPES:
                raise UsageError("--resolve takes names of a user, a client-id and/or an ip (no defaults)")
        command.show_overridden = args.show_overridden
    else:
        if not components:
            raise UsageError(
                "--alter needs an entity: --names/--defaults or --entity-type with a name or default"
            )
        if any(c.match_type == MATCH_SPECIFIED for c in components):
            raise UsageError("--alter needs an --entity-name or --entity-default for every --entity-type")
        command.ops = parse_add(args.add) + parse_delete(args.delete)
        if not command.ops:
            raise UsageError("--alter needs --add and/or --delete")
        command.validate_only = args.validate_only
    return command


def run(command: Command, client: QuotaClient, out: TextIO, err: TextIO) -> int:
    if command.operation == "describe":
        described = describe_quotas(client, command.components, command.strict)
        if command.output == "json":
            rows = [
                {"entity": entity.to_json(), "values": {k: json_value(v) for k, v in sorted(values.items())}}
                for entity, values in described
            ]
            print(json.dumps(rows, indent=2), file=out)
        else:
            blocks = [
                "\n".join([entity.display(), *(f"{k}={format_value(v)}" for k, v in sorted(values.items()))])
                for entity, values in described
            ]
            if blocks:
                print("\n\n".join(blocks), file=out)
        return 0

    if command.operation == "resolve":
        names = {c.entity_type: c.name for c in command.components}
        resolved = resolve_quotas(client, names.get(USER), names.get(CLIENT_ID), names.get(IP))
        if command.output == "json":
            rows = [
                {
                    "key": r.key,
                    "value": json_value(r.value),
                    "entity": r.entity.to_json(),
                    "overridden": [{"value": json_value(v), "entity": e.to_json()} for v, e in r.overridden],
                }
                for r in resolved
            ]
            print(json.dumps(rows, indent=2), file=out)
        else:
            for r in resolved:
                print(f"{r.key}={format_value(r.value)} {r.entity.display()}", file=out)
                if command.show_overridden:
                    for value, entity in r.overridden:
                        print(f"*{r.key}={format_value(value)} {entity.display()}", file=out)
        return 0

    outcomes = alter_quotas(client, command.components, command.ops, command.validate_only)
    if not outcomes:
        print(f"{PROG}: the broker returned no result for the entity", file=err)
        return 1
    if command.output == "json":
        rows = [
            {"entity": o.entity.to_json(), "error": error_json(o.error_code, o.error_message)}
            for o in outcomes
        ]
        print(json.dumps(rows[0] if len(rows) == 1 else rows, indent=2), file=out)
    refused = [o for o in outcomes if o.error_code]
    for outcome in refused:
        print(
            f"{outcome.entity.display()}: {error_text(outcome.error_code, outcome.error_message)}", file=err
        )
    return 1 if refused else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help or an argparse usage error, already printed
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    try:
        command = plan(args)
        settings = load_command_config(args.command_config) if args.command_config else {}
    except UsageError as exc:
        return usage_error(parser, str(exc))

    kafka_log = logging.getLogger("kafka")
    if not kafka_log.handlers:  # keep kafka-python's warnings off stderr unless logging is set up
        kafka_log.addHandler(logging.NullHandler())
    try:
        client = QuotaClient(args.bootstrap_server, settings)
    except Exception as exc:  # kafka-python raises assorted types for bad settings and unreachable brokers
        print(
            f"{PROG}: cannot connect to {args.bootstrap_server}: {type(exc).__name__}: {exc}", file=sys.stderr
        )
        return 1
    try:
        return run(command, client, sys.stdout, sys.stderr)
    except BrokerError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    except kafka.errors.KafkaError as exc:
        print(f"{PROG}: request failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        client.close()


def usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    try:
        parser.error(message)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    return 2


if __name__ == "__main__":
    sys.exit(main())
