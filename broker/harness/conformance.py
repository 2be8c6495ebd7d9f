"""Conformance report: per client software (name and version from ApiVersions v3+),
the API keys and versions it used, the error codes it received, whether it honoured
throttle_time_ms, and protocol oddities seen.

A throttled connection is muted (nothing read). Just before the throttle ends, the bytes
waiting unread in its socket are compared with those that were waiting just before the
throttled response went out: more means the client sent a request while it should have held back, a
violation. Requests already pipelined before the throttled response was sent are
therefore not counted.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import struct
import termios
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from broker import releases
from broker.context import ConnectionView, RequestContext
from broker.handlers import HANDLERS
from broker.harness.metrics_sink import error_codes
from broker.pipeline import Observer
from broker.releases import Release
from messages.registry import api_name
from protocol.errors import error_name
from protocol.headers import is_flexible

UNKNOWN = "unknown"
_INT = struct.Struct("i")
# When a throttle's check runs: at 90% of it, at most this long before its end.
THROTTLE_CHECK_MARGIN_MS = 10
THROTTLE_CHECK_LATE_S = 0.001  # a check this close to the end (loop lag) is skipped


def unread_bytes(connection: ConnectionView) -> int | None:
    """Bytes waiting in the connection's socket (FIONREAD); None when unknown, as on TLS
    listeners, whose transport goes on reading the socket while the connection is muted."""
    transport = connection.transport
    if transport is None or transport.get_extra_info("ssl_object") is not None:
        return None
    sock = transport.get_extra_info("socket")
    if sock is None:
        return None
    try:
        buffer = fcntl.ioctl(sock.fileno(), termios.FIONREAD, _INT.pack(0))
    except OSError:
        return None
    return int(_INT.unpack(buffer)[0])


@dataclass
class ClientConformance:
    software_name: str
    software_version: str
    client_ids: set[str] = field(default_factory=set)
    connections: set[tuple[int, int]] = field(default_factory=set)  # (broker, connection id)
    versions: dict[int, Counter[int]] = field(default_factory=dict)  # api key -> version -> requests
    errors: dict[int, Counter[int]] = field(default_factory=dict)  # api key -> error code -> responses
    throttled_responses: int = 0
    throttle_checks: int = 0
    throttle_violations: int = 0
    oddities: Counter[str] = field(default_factory=Counter)

    def to_dict(self, advertised: Callable[[int], tuple[int, int] | None]) -> dict[str, Any]:
        apis = []
        for api_key in sorted(self.versions):
            supported = advertised(api_key)
            apis.append(
                {
                    "api_key": api_key,
                    "api": api_name(api_key),
                    "versions": {str(v): n for v, n in sorted(self.versions[api_key].items())},
                    "requests": sum(self.versions[api_key].values()),
                    "broker_versions": list(supported) if supported else None,
                }
            )
        errors = [
            {"api_key": key, "api": api_name(key), "error_code": code, "error": error_name(code), "count": n}
            for key in sorted(self.errors)
            for code, n in sorted(self.errors[key].items())
        ]
        return {
            "software_name": self.software_name,
            "software_version": self.software_version,
            "client_ids": sorted(self.client_ids),
            "connections": len(self.connections),
            "requests": sum(sum(v.values()) for v in self.versions.values()),
            "apis": apis,
            "errors": errors,
            "throttle": {
                "throttled_responses": self.throttled_responses,
                "checked": self.throttle_checks,
                "violations": self.throttle_violations,
                "honoured": None if not self.throttle_checks else self.throttle_violations == 0,
            },
            "oddities": [{"what": what, "count": n} for what, n in sorted(self.oddities.items())],
        }


@dataclass(slots=True)
class _Seen:
    """What one connection's requests are filed under (ConnectionView.memo)."""

    software_name: str
    software_version: str
    client_id: str | None
    client: ClientConformance
    tags_checked: set[tuple[int, int]]  # (api key, version) walked for unknown tagged fields


class ConformanceTracker(Observer):
    """What each client software did, across all brokers of the cluster."""

    def __init__(
        self, on_loop: Callable[[Callable[[], Any]], Any] | None = None, release: Release | None = None
    ) -> None:
        self.clients: dict[tuple[str, str], ClientConformance] = {}  # by software name and version
        self._on_loop = on_loop or (lambda fn: fn())
        # The Kafka release the cluster presents (--kafka-version): the versions it serves
        self.release = release or releases.release(None)

    def _client(self, connection: ConnectionView) -> ClientConformance:
        """Clients that do not name their software (ApiVersions before v3) are told
        apart by client id."""
        name = connection.client_software_name
        key = (name, connection.client_software_version) if name else (UNKNOWN, connection.client_id or "")
        found = self.clients.get(key)
        if found is None:
            found = self.clients[key] = ClientConformance(
                name or UNKNOWN, connection.client_software_version or UNKNOWN
            )
        return found

    def request_done(self, ctx: RequestContext, response: Any) -> None:
        """One answered (or unanswered: acks=0, or closed by a fault) request."""
        if ctx.header is None:
            return  # refused before decoding: its oddity is counted already
        connection = ctx.connection
        api_key, api_version = ctx.api_key, ctx.api_version
        # What this connection's requests were filed under, kept on the connection while
        # its client software and client id stay: one lookup per request instead of
        # finding the client and adding the id and connection to its sets again.
        seen = connection.memo.get(self)
        if (
            seen is None
            or seen.software_name is not connection.client_software_name
            or seen.software_version is not connection.client_software_version
            or seen.client_id != ctx.client_id
        ):
            seen = self._file(ctx, connection, seen)
        client = seen.client
        version = (api_key, api_version)
        if version not in seen.tags_checked:
            # The unknown-tagged-field walk costs more than the decode: once per
            # (API, version) and connection is enough.
            seen.tags_checked.add(version)
            if is_flexible(api_key, api_version):
                for path in unknown_tagged_fields(ctx.header) + unknown_tagged_fields(ctx.request):
                    self.oddity(connection, f"unknown tagged field {path} in v{api_version}")
        versions = client.versions.get(api_key)
        if versions is None:
            versions = client.versions[api_key] = Counter()
        versions[api_version] += 1
        if response is not None and (ctx.error_code is None or ctx.error_code):
            self._errors(client, api_key, response)
        if ctx.throttle_ms > 0:
            client.throttled_responses += 1

    def _file(self, ctx: RequestContext, connection: ConnectionView, was: _Seen | None) -> _Seen:
        """Files the connection (and the request's client id) under its client."""
        client = self._client(connection)
        if ctx.client_id is not None:
            client.client_ids.add(ctx.client_id)
        client.connections.add((ctx.node_id, connection.connection_id))
        seen = _Seen(
            connection.client_software_name,
            connection.client_software_version,
            ctx.client_id,
            client,
            was.tags_checked if was is not None else set(),
        )
        connection.memo[self] = seen
        return seen

    def _errors(self, client: ClientConformance, api_key: int, response: Any) -> None:
        codes = error_codes(response)
        if codes:
            client.errors.setdefault(api_key, Counter()).update(codes)

    def throttled(self, connection: ConnectionView, throttle_ms: int) -> None:
        """Bytes waiting before the throttled response goes out were on their way
        already; more of them just before the mute ends show a client that sent while
        it should have held back. (Measured before the write: a client in this process
        may answer the response before the broker thread runs again.)"""
        waiting = unread_bytes(connection)
        if waiting is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + throttle_ms / 1000
        check_s = max(throttle_ms * 0.9, throttle_ms - THROTTLE_CHECK_MARGIN_MS) / 1000
        loop.call_later(check_s, self._check_throttle, connection, waiting, deadline)

    def _check_throttle(self, connection: ConnectionView, waiting: int, deadline: float) -> None:
        if connection.closed or connection.mute_deadline is None:
            return  # the mute ended early
        if asyncio.get_running_loop().time() > deadline - THROTTLE_CHECK_LATE_S:
            return  # too late to tell an early request from a timely one
        now_waiting = unread_bytes(connection)
        if now_waiting is not None:
            self.throttle_checked(connection, now_waiting > waiting)

    def throttle_checked(self, connection: ConnectionView, violated: bool) -> None:
        client = self._client(connection)
        client.throttle_checks += 1
        if violated:
            client.throttle_violations += 1

    def oddity(self, connection: ConnectionView, what: str) -> None:
        self._client(connection).oddities[what] += 1

    def report(self) -> dict[str, Any]:
        def advertised(api_key: int) -> tuple[int, int] | None:
            spec = HANDLERS.get(api_key)
            if spec is None:
                return None
            ranges = releases.served_range(
                self.release, api_key, (spec.min_version, spec.max_version), spec.advertised
            )
            return ranges[0] if ranges is not None else None

        def build() -> dict[str, Any]:
            return {"clients": [client.to_dict(advertised) for _, client in sorted(self.clients.items())]}

        result: dict[str, Any] = self._on_loop(build)
        return result

    def write(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as out:
            json.dump(self.report(), out, indent=2)
            out.write("\n")


def unknown_tagged_fields(message: Any) -> list[str]:
    """Paths of the unknown tagged fields in a decoded message (flexible versions)."""
    found: list[str] = []
    pending: list[tuple[str, Any]] = [(type(message).__name__, message)]
    while pending:
        path, item = pending.pop()
        if item.unknown_tags:
            found.extend(f"{path}.{tag}" for tag in sorted(item.unknown_tags))
        for name in _struct_fields(type(item)):
            value = getattr(item, name, None)
            if isinstance(value, list):
                pending.extend((f"{path}.{name}[]", v) for v in value)
            elif value is not None:
                pending.append((f"{path}.{name}", value))
    return found


_STRUCT_FIELDS: dict[type, tuple[str, ...]] = {}


def _struct_fields(cls: type) -> tuple[str, ...]:
    found = _STRUCT_FIELDS.get(cls)
    if found is None:
        fields = getattr(cls, "fields", {}) or {}
        found = _STRUCT_FIELDS[cls] = tuple(
            f.name for f in fields.values() if f.is_struct() or f.is_struct_array()
        )
    return found
