"""Slow and hostile clients cannot make the broker grow or stall, and are closed where
Kafka closes them.

- A client that never reads its answers: the broker stops handling and reading its
  requests once the transport holds about one round of answers (asyncio's
  pause_writing), so its memory stays bounded, other clients are served, and nothing is
  lost when it reads again.
- A size prefix above `socket.request.max.bytes` (before SASL authentication:
  `sasl.server.max.receive.size`) is refused before the body is read.
- A TLS handshake that never completes and a SASL exchange that stalls are closed by
  `connections.max.idle.ms`, as Kafka's idle expiry closes them; a stalled handshake holds
  a `max.connections` slot until then, as in Kafka.
- Failed logins are answered after `connection.failed.authentication.delay.ms`, each on
  its own: the other clients are served meanwhile.

Plain sockets where the point is what no client library does (never read, stall a
handshake, send a bare size prefix); real clients for the healthy side.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import MetadataRequest

from broker import MockCluster
from broker.connection import MAX_QUEUED_BYTES, ROUND_BYTES
from tests.certs import Certificates, make_certificates
from tests.conftest import FAST
from tests.reliability.test_connections import address, answers, api_versions_frame, closed_by_broker
from tests.security.test_sasl_wire import authenticate, handshake, parse_authenticate, parse_handshake
from tests.support.process import BrokerProcess
from tests.support.wire import encode_request, read_frame
from tests.timing import TIMER_SLACK_S

USERS = {"alice": "alice-secret"}
SASL_AUTHENTICATION_FAILED = 58
READ_MAX = 256 << 10  # what one read of the loop's transports takes at most



@contextmanager
def running(config: dict[str, str]) -> Iterator[MockCluster]:
    with MockCluster(brokers=1, config={**FAST, **config}) as cluster:
        yield cluster


def users_file(tmp_path: Path) -> str:
    path = tmp_path / "users.json"
    path.write_text(json.dumps(USERS))
    return str(path)


def metadata_frame(correlation_id: int, topics: list[str] | None) -> bytes:
    request = MetadataRequest[12](
        topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
        allow_auto_topic_creation=False,
    )
    return encode_request(request, correlation_id, "hostile")


def push_until_blocked(sock: socket.socket, frames: Iterator[bytes], stall_s: float = 1.0) -> int:
    """Sends frames without reading until the socket takes nothing for `stall_s`;
    returns how many frames went out whole."""
    sock.setblocking(False)
    sent = 0
    pending = b""
    stalled_since: float | None = None
    while True:
        if not pending:
            pending = next(frames)
        try:
            written = sock.send(pending)
        except BlockingIOError:
            written = 0
        if written:
            pending = pending[written:]
            if not pending:
                sent += 1
            stalled_since = None
            continue
        now = time.monotonic()
        stalled_since = stalled_since or now
        if now - stalled_since >= stall_s:
            return sent
        time.sleep(0.01)


# ------------------------------------------------------------------ a client that never reads


def test_a_client_that_never_reads_is_paused_with_a_bounded_buffer_and_loses_nothing() -> None:
    topics = [f"never-reads-{i:03d}-" + "x" * 100 for i in range(200)]
    with running({"record.requests.max": "0"}) as cluster:
        for topic in topics:
            cluster.create_topic(topic)
        hostile = socket.socket()
        hostile.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        hostile.connect(address(cluster))
        with hostile, socket.create_connection(address(cluster), timeout=10) as healthy:
            healthy.sendall(metadata_frame(1, topics))
            response_size = len(read_frame(healthy)) + 4
            ids = iter(range(1, 1 << 30))
            sent = push_until_blocked(hostile, (metadata_frame(next(ids), topics) for _ in iter(int, 1)))

            def state() -> dict[str, Any]:
                [conn] = [c for c in cluster.brokers[0].connections if c.peer[1] == hostile.getsockname()[1]]
                assert conn.transport is not None
                return {
                    "write_buffer": conn.transport.get_write_buffer_size(),
                    "pending_bytes": conn._pending_bytes,
                    "reading_paused": conn._reading_paused,
                    "write_paused": conn._write_paused,
                }

            seen = cluster.on_loop(state)
            assert seen["reading_paused"] and seen["write_paused"], seen
            # About one round of answers (plus the transport's own high-water mark).
            assert seen["write_buffer"] <= ROUND_BYTES + 2 * response_size + READ_MAX, seen
            assert seen["pending_bytes"] <= MAX_QUEUED_BYTES + READ_MAX, seen
            assert answers(healthy, 2)  # the broker serves others meanwhile

            # Reading again, the client gets every answer, in order.
            hostile.setblocking(True)
            hostile.settimeout(30)
            for correlation_id in range(1, sent + 1):
                frame = read_frame(hostile)
                assert struct.unpack_from(">i", frame)[0] == correlation_id
                assert len(frame) + 4 == response_size


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def fetch_frame(correlation_id: int, topic: str, max_bytes: int) -> bytes:
    partition = FetchRequest.FetchTopic.FetchPartition(
        partition=0, fetch_offset=0, partition_max_bytes=max_bytes
    )
    request = FetchRequest[12](
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=max_bytes,
        session_id=0,
        session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[partition])],
    )
    return encode_request(request, correlation_id, "hostile")


def test_clients_pipelining_without_reading_keep_broker_rss_bounded() -> None:
    """Four connections pipeline Metadata of 200 topics (a 20-byte request, a 31 KB
    answer) and four pipeline fetches of 4 MiB, none reading: the kernel holds ~1e6
    requests of theirs, which answered into memory would be tens of gigabytes. The
    broker's RSS grows by about four rounds of answers."""
    overrides = ["listeners=PLAINTEXT://127.0.0.1:0", "record.requests.max=0"]
    args = [arg for override in overrides for arg in ("--override", override)]
    with BrokerProcess(*args) as broker:
        host, port = broker.address()
        bootstrap = f"{host}:{port}"
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for i in range(200):
            producer.produce(f"rss-{i:03d}-" + "x" * 100, b"v", partition=0)
        for _ in range(4):
            producer.produce("rss-big", os.urandom(900_000), partition=0)
        assert producer.flush(60) == 0
        with socket.create_connection((host, port), timeout=30) as healthy:
            for correlation_id in range(3):  # warm: every answer built once
                healthy.sendall(metadata_frame(correlation_id, None))
                read_frame(healthy)
                healthy.sendall(fetch_frame(correlation_id, "rss-big", 4 << 20))
                assert len(read_frame(healthy)) > 3_000_000
            time.sleep(0.5)
            before = rss_kib(broker.pid)
            hostile = []
            for kind in ("metadata", "fetch") * 4:
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.connect((host, port))
                hostile.append((kind, sock))
            frames = {
                "metadata": metadata_frame(9, None) * 1000,
                "fetch": fetch_frame(9, "rss-big", 4 << 20) * 100,
            }
            threads = [
                threading.Thread(target=push_until_blocked, args=(sock, iter(lambda k=kind: frames[k], None)))
                for kind, sock in hostile
            ]
            for thread in threads:
                thread.start()
            peak = before
            while any(thread.is_alive() for thread in threads):
                peak = max(peak, rss_kib(broker.pid))
                time.sleep(0.05)
            peak = max(peak, rss_kib(broker.pid))
            healthy.sendall(metadata_frame(99, None))
            assert struct.unpack_from(">i", read_frame(healthy))[0] == 99
            for _, sock in hostile:
                sock.close()
        growth_mib = (peak - before) / 1024
        assert growth_mib < 48, f"RSS grew {growth_mib:.1f} MiB"


# ------------------------------------------------------------------------- size prefixes


def test_a_size_prefix_above_socket_request_max_bytes_is_refused_before_its_body() -> None:
    with running({"socket.request.max.bytes": "1024"}) as cluster:
        with socket.create_connection(address(cluster), timeout=5) as sock:
            sock.sendall(struct.pack(">i", 1025))  # no body follows
            assert closed_by_broker(sock, 10) is True
        exactly = api_versions_frame(3, b"c" * (1024 - 10))
        assert struct.unpack_from(">i", exactly)[0] == 1024
        with socket.create_connection(address(cluster), timeout=5) as sock:
            sock.sendall(exactly[:4])  # the largest size allowed: its body is awaited
            assert closed_by_broker(sock, 0.3) is None
            sock.sendall(exactly[4:])
            assert struct.unpack_from(">ih", read_frame(sock)) == (3, 0)


def test_before_sasl_authentication_frames_are_bounded_by_sasl_server_max_receive_size(
    tmp_path: Path,
) -> None:
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.users.file": users_file(tmp_path),
        "connection.failed.authentication.delay.ms": "300",
    }
    with running(config) as cluster:
        with socket.create_connection(address(cluster, "SASL_PLAINTEXT"), timeout=5) as sock:
            sent = time.monotonic()
            sock.sendall(struct.pack(">i", 524288 + 1))
            assert closed_by_broker(sock, 10) is True  # as a failed authentication: after the delay
            assert time.monotonic() - sent >= 0.3 - TIMER_SLACK_S
        with socket.create_connection(address(cluster, "SASL_PLAINTEXT"), timeout=5) as sock:
            login(sock)
            sock.sendall(struct.pack(">i", 524288 + 1))  # authenticated: socket.request.max.bytes
            assert closed_by_broker(sock, 0.3) is None


def login(sock: socket.socket) -> None:
    sock.sendall(handshake(1, "PLAIN"))
    assert parse_handshake(read_frame(sock))[1] == 0
    sock.sendall(authenticate(b"\0alice\0alice-secret"))
    assert parse_authenticate(read_frame(sock))[1] == 0


# ----------------------------------------------------------- stalled TLS and SASL exchanges


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certs"))


def tls_config(certs: Certificates, extra: dict[str, str]) -> dict[str, str]:
    return {
        "listeners": "SSL://127.0.0.1:0",
        "ssl.certfile": certs.server.certfile,
        "ssl.keyfile": certs.server.keyfile,
        **extra,
    }


@pytest.mark.parametrize(
    "sent", [b"", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"], ids=["nothing", "part"]
)
def test_a_tls_handshake_that_never_completes_is_closed_after_connections_max_idle_ms(
    certs: Certificates, sent: bytes
) -> None:
    with running(tls_config(certs, {"connections.max.idle.ms": "500"})) as cluster:
        before = time.monotonic()
        with socket.create_connection(address(cluster, "SSL"), timeout=5) as sock:
            sock.sendall(sent)
            assert closed_by_broker(sock, 10) is True
            assert time.monotonic() - before >= 0.5 - TIMER_SLACK_S
        # the close reaches the client before the broker's connection_lost bookkeeping
        # runs on its loop: the slot is freed soon after, not necessarily at once
        deadline = time.monotonic() + 10
        while cluster.on_loop(lambda: len(cluster.brokers[0].connections)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert cluster.on_loop(lambda: len(cluster.brokers[0].connections)) == 0


def test_a_stalled_tls_handshake_holds_a_connection_slot_until_it_is_closed(certs: Certificates) -> None:
    """Kafka counts a connection from accept: a handshake that stalls takes a slot of
    max.connections until connections.max.idle.ms closes it; a real client then gets in."""
    idle_s = 2.0
    config = tls_config(certs, {"connections.max.idle.ms": str(int(idle_s * 1000)), "max.connections": "1"})
    with running(config) as cluster:
        before_stalled = time.monotonic()
        stalled = socket.create_connection(address(cluster, "SSL"), timeout=5)
        with stalled:
            context = ssl.create_default_context(cafile=certs.cafile)
            context.check_hostname = False
            with socket.create_connection(address(cluster, "SSL"), timeout=30) as raw:
                waiting = context.wrap_socket(raw, do_handshake_on_connect=False)
                waiting.settimeout(0.5)
                try:
                    waiting.do_handshake()  # no slot: nothing is read from it
                    handshake_done = time.monotonic()
                except TimeoutError:
                    handshake_done = None
                else:  # only if this thread was held up past the stalled one's idle close
                    assert handshake_done - before_stalled >= idle_s
                assert closed_by_broker(stalled, 10) is True
                assert time.monotonic() - before_stalled >= idle_s - TIMER_SLACK_S
                if handshake_done is None:
                    waiting.settimeout(30)
                    waiting.do_handshake()
                assert answers(waiting)  # type: ignore[arg-type]
                waiting.close()


def test_a_sasl_exchange_that_stalls_is_closed_after_connections_max_idle_ms(tmp_path: Path) -> None:
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.users.file": users_file(tmp_path),
        "connections.max.idle.ms": "500",
    }
    with running(config) as cluster:
        with socket.create_connection(address(cluster, "SASL_PLAINTEXT"), timeout=5) as sock:
            sock.sendall(handshake(1, "SCRAM-SHA-256"))
            assert parse_handshake(read_frame(sock))[1] == 0
            before = time.monotonic()
            sock.sendall(authenticate(b"n,,n=alice,r=abc")[:20])  # half a client-first message
            assert closed_by_broker(sock, 10) is True
            assert time.monotonic() - before >= 0.5 - TIMER_SLACK_S
        with socket.create_connection(address(cluster, "SASL_PLAINTEXT"), timeout=5) as sock:
            before = time.monotonic()
            assert answers(sock)  # ApiVersions, then nothing: closed as well
            assert closed_by_broker(sock, 10) is True
            assert time.monotonic() - before >= 0.5 - TIMER_SLACK_S


# ------------------------------------------------------------------------- failed logins


def test_failed_logins_are_delayed_without_holding_up_other_clients(tmp_path: Path) -> None:
    """Twenty connections fail to log in at once; each failure is answered no sooner
    than connection.failed.authentication.delay.ms, and before any of them is, a
    producer logs in over SASL PLAIN and has its messages acknowledged."""
    delay_s = 5.0
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.users.file": users_file(tmp_path),
        "connection.failed.authentication.delay.ms": str(int(delay_s * 1000)),
    }
    with running(config) as cluster:
        cluster.create_topic("logins")
        failing = [
            socket.create_connection(address(cluster, "SASL_PLAINTEXT"), timeout=30) for _ in range(20)
        ]
        try:
            for sock in failing:
                sock.sendall(handshake(1, "PLAIN"))
                assert parse_handshake(read_frame(sock))[1] == 0
            started = time.monotonic()
            for sock in failing:
                sock.sendall(authenticate(b"\0alice\0wrong"))
            producer = Producer(
                {
                    "bootstrap.servers": cluster.bootstrap_for("SASL_PLAINTEXT"),
                    "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanisms": "PLAIN",
                    "sasl.username": "alice",
                    "sasl.password": USERS["alice"],
                    "linger.ms": 0,
                }
            )
            for i in range(10):
                producer.produce("logins", f"m{i}".encode(), partition=0)
            assert producer.flush(30) == 0
            healthy_done = time.monotonic()
            answered = []
            for sock in failing:
                assert parse_authenticate(read_frame(sock))[1] == SASL_AUTHENTICATION_FAILED
                answered.append(time.monotonic())
                assert closed_by_broker(sock, 10) is True
            assert healthy_done < min(answered)
            assert min(answered) - started >= delay_s - 0.05
        finally:
            for sock in failing:
                sock.close()


def test_repeated_failed_logins_over_bare_tokens_are_each_closed_after_the_delay(tmp_path: Path) -> None:
    """After a SaslHandshake v0 a wrong password gets no answer: Kafka closes the
    connection, after connection.failed.authentication.delay.ms like any failed login."""
    delay_s = 0.4
    config = {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.users.file": users_file(tmp_path),
        "connection.failed.authentication.delay.ms": str(int(delay_s * 1000)),
    }
    with running(config) as cluster:
        for _ in range(3):
            with socket.create_connection(address(cluster, "SASL_PLAINTEXT"), timeout=5) as sock:
                sock.sendall(handshake(0, "PLAIN"))
                assert parse_handshake(read_frame(sock))[1] == 0
                token = b"\0alice\0wrong"
                sent = time.monotonic()
                sock.sendall(struct.pack(">i", len(token)) + token)
                assert closed_by_broker(sock, 10) is True
                assert time.monotonic() - sent >= delay_s - 0.05


def test_a_tls_handshake_survives_the_broker_holding_and_resuming_reads(certs: Certificates) -> None:
    """While a handshake is under way the TLS layer owns the socket: the broker resuming
    its connections (after a metrics backlog held them) must not pause it."""
    with running(tls_config(certs, {})) as cluster:
        context = ssl.create_default_context(cafile=certs.cafile)
        context.check_hostname = False
        with socket.create_connection(address(cluster, "SSL"), timeout=30) as raw:
            broker = cluster.brokers[0]
            deadline = time.monotonic() + 10
            while not cluster.on_loop(lambda: len(broker.connections)):
                assert time.monotonic() < deadline
                time.sleep(0.01)
            cluster.on_loop(lambda: broker.hold_requests(True))
            cluster.on_loop(lambda: broker.hold_requests(False))
            with context.wrap_socket(raw) as tls:
                assert answers(tls)  # type: ignore[arg-type]
