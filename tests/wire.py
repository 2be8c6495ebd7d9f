"""Raw-socket helpers shared by the byte-level tests (no kafka-python on this side)."""

from __future__ import annotations

import socket
import struct


def recv_exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed by broker")
        data += chunk
    return data


def read_frame(sock: socket.socket) -> bytes:
    """One size-prefixed response, without its size."""
    size = struct.unpack(">i", recv_exactly(sock, 4))[0]
    return recv_exactly(sock, size)
