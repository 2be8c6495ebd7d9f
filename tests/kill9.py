"""A kill -9 in the middle of a stream of pipelined requests, for the persistence tests."""

from __future__ import annotations

import signal
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass

from tests.support.process import BrokerProcess


@dataclass
class Stream:
    acked: list[int]  # the requests answered before the kill, in order
    sent: int  # how many were written to the socket


def stream_until_killed(
    child: BrokerProcess,
    request: Callable[[int], bytes],
    check: Callable[[int, bytes], None],
    kill_after: int,
    max_requests: int = 20000,
) -> Stream:
    """Pipelines `request(i)` from a writer thread while reading the answers; `check(i,
    frame)` judges the i-th answer (its size prefix included); SIGKILLs the broker once
    `kill_after` are in, with the writer still streaming."""
    sock = socket.create_connection(child.address(), timeout=10)
    sent = 0
    stop = threading.Event()

    def writer() -> None:
        nonlocal sent
        try:
            for i in range(max_requests):
                if stop.is_set():
                    return
                sock.sendall(request(i))
                sent = i + 1
        except OSError:
            return  # the broker died under us

    sending = threading.Thread(target=writer, name="kill9-stream", daemon=True)
    sending.start()
    acked: list[int] = []
    buffer = b""
    killed = False
    while True:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        buffer += chunk
        while len(buffer) >= 4 and len(buffer) >= 4 + struct.unpack(">i", buffer[:4])[0]:
            size = struct.unpack(">i", buffer[:4])[0]
            frame, buffer = buffer[: 4 + size], buffer[4 + size :]
            check(len(acked), frame)
            acked.append(len(acked))
        if not killed and len(acked) >= kill_after:
            child.kill()  # SIGKILL while the writer keeps streaming
            killed = True
    stop.set()
    sock.close()
    sending.join(timeout=10)
    assert killed, f"only {len(acked)} acknowledgements before the stream ended"
    assert child.proc.returncode == -signal.SIGKILL
    return Stream(acked, sent)
