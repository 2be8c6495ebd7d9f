"""Raw Kafka frames over a plain socket, for tests and benchmarks that speak the wire
protocol without a client library.

`read_frame` and `recv_exactly` read size-prefixed responses; `encode_request` frames a
kafka-python request struct (request header v1, or v2 for flexible versions, then the
body) and `round_trip` sends one and decodes its answer. Tests that check bytes on the
wire keep hand-computed byte vectors: only the framing and reading are shared.

Imports only the stdlib, kafka-python and `messages`: no broker code runs on this side.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Mapping, Sequence
from typing import Any

from kafka.protocol.admin import AlterClientQuotasRequest

from messages.registry import response_class


def recv_exactly(sock: socket.socket, count: int) -> bytes:
    """`count` bytes; ConnectionError when the broker closes the connection first."""
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed by broker")
        data += chunk
    return bytes(data)


def read_frame(sock: socket.socket) -> bytes:
    """One size-prefixed response, without its size."""
    size = struct.unpack(">i", recv_exactly(sock, 4))[0]
    return recv_exactly(sock, size)


def encode_request(
    request: Any, correlation_id: int, client_id: str | None, version: int | None = None
) -> bytes:
    """`request` (a kafka-python request struct, versioned or given `version`) with its
    header, size-prefixed: the bytes a client sends."""
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(request.encode(version=version, header=True, framed=True))


def quota_alteration(entity: Sequence[tuple[str, str | None]], values: Mapping[str, float]) -> Any:
    """One AlterClientQuotas entry: set `values` (quota key -> value) on `entity`
    ((entity type, name) pairs; a None name is the type's default)."""
    entry = AlterClientQuotasRequest.EntryData
    return entry(
        entity=[entry.EntityData(entity_type=t, entity_name=n) for t, n in entity],
        ops=[entry.OpData(key=k, value=v, remove=False) for k, v in values.items()],
    )


def decode_response(request: Any, frame: bytes) -> Any:
    """`frame` (without its size) decoded as the response to `request`, header included."""
    return response_class(request.API_KEY).decode(frame, version=request.API_VERSION, header=True)


def exchange(sock: socket.socket, frame: bytes) -> bytes:
    """Sends one size-prefixed request; returns the response frame, without its size."""
    sock.sendall(frame)
    return read_frame(sock)


def round_trip(
    sock: socket.socket, request: Any, correlation_id: int, client_id: str | None, version: int | None = None
) -> Any:
    """Sends `request` and returns its decoded response (header included)."""
    return decode_response(
        request, exchange(sock, encode_request(request, correlation_id, client_id, version))
    )


class Connection:
    """A raw connection to the first broker of `bootstrap_servers`: each call sends a
    request (client id "wire") and returns its decoded answer."""

    def __init__(self, bootstrap_servers: str) -> None:
        host, port = bootstrap_servers.split(",")[0].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.correlation_id = 0

    def __call__(self, request: Any) -> Any:
        self.correlation_id += 1
        return round_trip(self.sock, request, self.correlation_id, "wire")

    def close(self) -> None:
        self.sock.close()
