"""Request recording: every decoded request and its response, kept in a bounded ring
(`record.requests.max` entries, `record.requests.max.bytes` of request frames) and
optionally appended to a JSON-lines file (`record.file`).

The ring holds the request's context itself (its decoded header and body among its fields)
with the response and what may change on the connection later (principal, client
software): one tuple, built from what is at hand. Entries become `Recorded` tuples and
dicts only when read, and the file is written by a background task through an executor,
so the request path pays for one tuple and a deque append.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeVar

from broker.context import RequestContext
from broker.pipeline import Observer
from messages.registry import api_name

log = logging.getLogger("broker.recording")
T = TypeVar("T")
FLUSH_INTERVAL_S = 0.2
_time_ns = time.time_ns


class Recorded(NamedTuple):
    time_ms: int
    broker: int
    connection: int
    principal: str
    client_software_name: str
    client_software_version: str
    api_key: int
    api_version: int
    header: Any
    request: Any
    response: Any
    throttle_time_ms: int
    fault: int | None


def to_json_value(value: Any) -> Any:
    """What json.dumps cannot take: bytes as base64, UUIDs as strings."""
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


# Secrets left out of recordings: (api key, "request"|"response", field path).
REDACTED = "<redacted>"
_SECRETS = {
    36: (("request", "auth_bytes"), ("response", "auth_bytes")),  # SaslAuthenticate: passwords, proofs
    51: (("request", "upsertions", "salt"), ("request", "upsertions", "salted_password")),
}


def _redact(api_key: int, found: dict[str, Any]) -> dict[str, Any]:
    for path in _SECRETS.get(api_key, ()):
        part, *fields = path
        items: list[Any] = [found.get(part)]
        for name in fields[:-1]:
            items = [sub for item in items if isinstance(item, dict) for sub in item.get(name) or ()]
        for item in items:
            if isinstance(item, dict) and item.get(fields[-1]) is not None:
                item[fields[-1]] = REDACTED
    return found


# What the request path keeps per request: (time_ms, ctx, response, principal, client
# software name, client software version); a Recorded when read.
Kept = tuple[int, RequestContext, Any, Any, str, str]


def recorded(kept: Kept) -> Recorded:
    time_ms, ctx, response, principal, software_name, software_version = kept
    return Recorded(
        time_ms,
        ctx.node_id,
        ctx.connection.connection_id,
        str(principal),
        software_name,
        software_version,
        ctx.api_key,
        ctx.api_version,
        ctx.header,
        ctx.request,
        response,
        ctx.throttle_ms,
        ctx.fault_id,
    )


def as_dict(entry: Recorded) -> dict[str, Any]:
    header = entry.header
    found = {
        "time_ms": entry.time_ms,
        "broker": entry.broker,
        "connection": entry.connection,
        "principal": entry.principal,
        "client_id": header.client_id if header is not None else None,
        "client_software_name": entry.client_software_name or None,
        "client_software_version": entry.client_software_version or None,
        "api_key": entry.api_key,
        "api": api_name(entry.api_key),
        "api_version": entry.api_version,
        "correlation_id": header.correlation_id if header is not None else None,
        "header": header.to_dict(json=False) if header is not None else None,
        "request": entry.request.to_dict(json=False) if entry.request is not None else None,
        "response": entry.response.to_dict(json=False) if entry.response is not None else None,
        "throttle_time_ms": entry.throttle_time_ms,
        "fault": entry.fault,
    }
    return _redact(entry.api_key, found)


class RequestRecorder(Observer):
    """The cluster's recording of requests and responses (all brokers)."""

    def __init__(
        self,
        max_requests: int,
        path: str | None = None,
        on_loop: Callable[[Callable[[], Any]], Any] | None = None,
        max_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.enabled = max_requests > 0 or path is not None
        # A produce request's records are views of its frame, so the ring keeps the frames
        # alive and is bounded by their bytes (each entry's ctx.request_bytes) too.
        self._ring: deque[Kept] = deque()
        self._ring_bytes = 0
        self._on_loop = on_loop or (lambda fn: fn())
        self.path = path
        self._unwritten: list[Kept] = []
        self._writer: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        if path is not None:
            open(path, "w").close()  # a run's recording starts empty, and a bad path fails at start

    def request_done(self, ctx: RequestContext, response: Any) -> None:
        if ctx.header is None:
            return  # refused before it was decoded: nothing to show
        connection = ctx.connection
        entry = (
            _time_ns() // 1_000_000,
            ctx,
            response,
            connection.principal,
            connection.client_software_name,
            connection.client_software_version,
        )
        if self.max_requests > 0:
            ring = self._ring
            ring.append(entry)
            self._ring_bytes += ctx.request_bytes
            while len(ring) > self.max_requests or (self._ring_bytes > self.max_bytes and len(ring) > 1):
                self._ring_bytes -= ring.popleft()[1].request_bytes
        if self.path is not None:
            self._unwritten.append(entry)
            if self._writer is None:
                self._writer = asyncio.get_running_loop().create_task(self._write_soon())

    def list(self, api_key: int | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """The recorded requests, oldest first (the newest `limit` of them), as dicts:
        api, version, header, request and response bodies (bytes as base64 in JSON)."""

        def pick() -> list[Recorded]:
            found = [recorded(e) for e in self._ring if api_key is None or e[1].api_key == api_key]
            return found[max(len(found) - limit, 0) :] if limit is not None else found

        return [as_dict(entry) for entry in self._on_loop(pick)]

    def clear(self) -> None:
        def empty() -> None:
            self._ring.clear()
            self._ring_bytes = 0

        self._on_loop(empty)

    async def _write_soon(self) -> None:
        """The one writer: waits a moment so that lines go out in batches, then writes
        until nothing is left (in an executor: no file I/O on the loop)."""
        try:
            try:
                await asyncio.wait_for(self._closing.wait(), FLUSH_INTERVAL_S)
            except TimeoutError:
                pass
            while self._unwritten and self.path is not None:
                entries, self._unwritten = self._unwritten, []
                await asyncio.get_running_loop().run_in_executor(None, _append_lines, self.path, entries)
        finally:
            self._writer = None

    async def close(self) -> None:
        """Returns once every recorded request is in the file."""
        self._closing.set()
        if self._writer is not None:
            await self._writer


def _append_lines(path: str, entries: Iterable[Kept]) -> None:
    with open(path, "a", encoding="utf-8") as out:
        for kept in entries:
            entry = recorded(kept)
            try:
                out.write(json.dumps(as_dict(entry), default=to_json_value) + "\n")
            except Exception:  # one odd message must not lose the rest
                log.exception("cannot record %s v%d", api_name(entry.api_key), entry.api_version)
