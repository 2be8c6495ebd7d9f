"""Connection limits and idle connections, as Kafka's SocketServer enforces them.

- `connections.max.idle.ms`: Kafka's Selector closes a connection nothing was read from or
  written to for that long; any activity restarts the clock, one byte included (so a
  client trickling bytes is kept, as Kafka keeps it). `socket.request.receive.timeout.ms`
  (this broker's, off by default) bounds a request that never completes.
- `max.connections` (broker-wide and `listener.name.<name>.max.connections`): more
  connections wait, unread, for a slot; `max.connections.per.ip` and its overrides:
  more from one address are closed at once.

Real clients where they can show it (a producer reconnecting after an idle close, a
producer waiting for a slot); plain sockets where the point is what a client library
never does on its own (sit idle with nothing in flight, send a request a byte at a time,
connect from a chosen source address).
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from broker import MockCluster
from tests.conftest import FAST
from tests.support.wire import read_frame
from tests.timing import TIMER_SLACK_S


@contextmanager
def running(config: dict[str, str]) -> Iterator[MockCluster]:
    with MockCluster(brokers=1, config={**FAST, **config}) as cluster:
        yield cluster


def address(cluster: MockCluster, listener: str = "PLAINTEXT") -> tuple[str, int]:
    endpoint = cluster.brokers[0].advertised_endpoint(listener)
    return endpoint.host, endpoint.port


def api_versions_frame(correlation_id: int, client_id: bytes = b"raw") -> bytes:
    """ApiVersions v0 with request header v1, size-prefixed."""
    payload = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    return struct.pack(">i", len(payload)) + payload


def answers(sock: socket.socket, correlation_id: int = 1) -> bool:
    sock.sendall(api_versions_frame(correlation_id))
    return struct.unpack_from(">ih", read_frame(sock)) == (correlation_id, 0)


def closed_by_broker(sock: socket.socket, timeout: float) -> bool | None:
    """True once the broker closed `sock` (EOF or reset), None if still open after
    `timeout`; AssertionError if it sent something instead."""
    sock.settimeout(timeout)
    try:
        data = sock.recv(4096)
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return None
    assert data == b"", f"answered {data!r}"
    return True


# ------------------------------------------------------------------ connections.max.idle.ms


def test_an_idle_connection_is_closed_after_connections_max_idle_ms() -> None:
    with running({"connections.max.idle.ms": "400"}) as cluster:
        with socket.create_connection(address(cluster), timeout=5) as sock:
            before_answer = time.monotonic()
            assert answers(sock)
            assert closed_by_broker(sock, 10) is True
            # Its last activity was the answer: not closed sooner than 400 ms after it.
            assert time.monotonic() - before_answer >= 0.4 - TIMER_SLACK_S


def test_a_connection_that_never_sends_is_closed_too() -> None:
    """Kafka's idle clock starts when the connection is registered (accepted)."""
    with running({"connections.max.idle.ms": "300"}) as cluster:
        before = time.monotonic()
        with socket.create_connection(address(cluster), timeout=5) as sock:
            assert closed_by_broker(sock, 10) is True
            assert time.monotonic() - before >= 0.3 - TIMER_SLACK_S


def test_requests_keep_a_connection_open() -> None:
    idle_ms = 2000
    with running({"connections.max.idle.ms": str(idle_ms)}) as cluster:
        with socket.create_connection(address(cluster), timeout=5) as sock:
            until = time.monotonic() + 2.5 * idle_ms / 1000
            correlation_id = 0
            while time.monotonic() < until:
                correlation_id += 1
                assert answers(sock, correlation_id)
                time.sleep(0.1)
            assert correlation_id >= 3
            assert answers(sock, correlation_id + 1)


def test_bytes_trickling_in_keep_a_connection_open_as_kafka_does() -> None:
    """Kafka's idle clock restarts on any read, so a request sent a byte at a time over
    twice connections.max.idle.ms is still answered (its size is bounded by
    socket.request.max.bytes; socket.request.receive.timeout.ms bounds its time)."""
    idle_ms = 2000
    frame = api_versions_frame(5)
    with running({"connections.max.idle.ms": str(idle_ms)}) as cluster:
        with socket.create_connection(address(cluster), timeout=5) as sock:
            started = time.monotonic()
            for byte in frame:
                sock.sendall(bytes([byte]))
                time.sleep(0.25)
            assert time.monotonic() - started > 2 * idle_ms / 1000
            assert struct.unpack_from(">ih", read_frame(sock)) == (5, 0)


def test_socket_request_receive_timeout_closes_a_request_that_never_completes() -> None:
    frame = api_versions_frame(5, b"trickle" * 10)  # 91 bytes: 4.5 s or more at 50 ms each
    config = {"connections.max.idle.ms": "-1", "socket.request.receive.timeout.ms": "500"}
    with running(config) as cluster:
        with socket.create_connection(address(cluster), timeout=5) as sock:
            assert answers(sock)  # whole requests are not affected
            sent, closed = 0, None
            for byte in frame:
                try:
                    sock.sendall(bytes([byte]))
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
                    break
                sent += 1
                time.sleep(0.05)
            if closed is None:
                closed = closed_by_broker(sock, 10)
            assert closed is True


def test_a_producer_reconnects_after_its_idle_connection_was_closed() -> None:
    """confluent-kafka (librdkafka) sees the broker close its idle connections and
    reconnects to the leader for the next message, as against Kafka.

    With librdkafka's default `metadata.recovery.strategy=rebootstrap`, losing its last
    connection makes it re-bootstrap: it forgets the leader but keeps the topic's cached
    metadata, so it does not ask for it again ("Skipping metadata refresh ... already
    being requested") and each bootstrap connection it opens sits idle until the broker
    closes it; the second message then waits for tens of seconds (30 s and more in CI).
    That is the client's behaviour against Kafka too, so this test turns re-bootstrap
    off to test the reconnection itself."""
    with running({"connections.max.idle.ms": "300"}) as cluster:
        cluster.create_topic("idle", partitions=1)
        before = closed_idle(cluster)
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "linger.ms": 0,
                "metadata.recovery.strategy": "none",
            }
        )
        producer.produce("idle", b"first", partition=0)
        assert producer.flush(30) == 0
        deadline = time.monotonic() + 30
        while closed_idle(cluster) == before:  # wait for an idle close, however late
            assert time.monotonic() < deadline, "no idle connection was closed"
            time.sleep(0.1)
        producer.produce("idle", b"second", partition=0)
        assert producer.flush(30) == 0
        assert consume(cluster, "idle", 2) == [b"first", b"second"]


def closed_idle(cluster: MockCluster) -> int:
    """Connections the broker has closed as idle so far."""
    broker = cluster.brokers[0]
    return cluster.on_loop(lambda: broker.idle_closed)


def consume(cluster: MockCluster, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "check"})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        return values
    finally:
        consumer.close()


# --------------------------------------------------------------------------- max.connections


def test_max_connections_makes_a_producer_wait_for_a_slot() -> None:
    with running({"max.connections": "2"}) as cluster:
        cluster.create_topic("slots", partitions=1)
        first = socket.create_connection(address(cluster), timeout=5)
        second = socket.create_connection(address(cluster), timeout=5)
        try:
            assert answers(first) and answers(second)
            producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
            reports: list[tuple[object, int]] = []
            producer.produce(
                "slots", b"waited", partition=0, on_delivery=lambda e, m: reports.append((e, m.offset()))
            )
            assert producer.flush(1.5) == 1  # connected but unread: nothing delivered
            first.close()
            assert producer.flush(30) == 0
            assert reports == [(None, 0)]
            assert answers(second, 2)
        finally:
            first.close()
            second.close()


def test_max_connections_per_ip_and_its_overrides_by_address() -> None:
    """127.0.0.1 may have 3 (its override), 127.0.0.2 the default 1; one more from either
    is closed at once, without an answer, and the others go on."""
    config = {"max.connections.per.ip": "1", "max.connections.per.ip.overrides": "127.0.0.1:3"}
    with running(config) as cluster:
        host, port = address(cluster)
        opened: list[socket.socket] = []

        def connect(source: str) -> socket.socket:
            sock = socket.create_connection((host, port), timeout=5, source_address=(source, 0))
            opened.append(sock)
            return sock

        try:
            local = [connect("127.0.0.1") for _ in range(3)]
            other = connect("127.0.0.2")
            assert all(answers(sock) for sock in [*local, other])
            for source in ("127.0.0.1", "127.0.0.2"):
                extra = connect(source)
                extra.sendall(api_versions_frame(9))
                assert closed_by_broker(extra, 10) is True, source
            assert all(answers(sock, 2) for sock in [*local, other])
        finally:
            for sock in opened:
                sock.close()


def test_a_listener_max_connections_leaves_other_listeners_alone() -> None:
    """KIP-402: `listener.name.<name>.max.connections` makes that listener's connections
    wait for a slot of their own; another listener still takes connections."""
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
        "listener.name.plaintext.max.connections": "1",
    }
    with running(config) as cluster:
        first = socket.create_connection(address(cluster), timeout=5)
        waiting = socket.create_connection(address(cluster), timeout=5)
        internal = [socket.create_connection(address(cluster, "INTERNAL"), timeout=5) for _ in range(3)]
        try:
            assert answers(first)
            waiting.sendall(api_versions_frame(7))
            assert all(answers(sock) for sock in internal)
            waiting.settimeout(0.5)
            with pytest.raises(TimeoutError):
                waiting.recv(1)  # neither answered nor closed
            first.close()
            waiting.settimeout(10)
            assert struct.unpack_from(">ih", read_frame(waiting)) == (7, 0)
        finally:
            for sock in (first, waiting, *internal):
                sock.close()


def test_a_raised_listener_limit_admits_waiting_connections_at_once() -> None:
    config = {"listener.name.plaintext.max.connections": "1"}
    with running(config) as cluster:
        first = socket.create_connection(address(cluster), timeout=5)
        waiting = socket.create_connection(address(cluster), timeout=5)
        try:
            assert answers(first)
            waiting.sendall(api_versions_frame(7))
            waiting.settimeout(0.5)
            with pytest.raises(TimeoutError):
                waiting.recv(1)
            cluster.configs.alter(None, set={"listener.name.plaintext.max.connections": "2"})
            waiting.settimeout(10)
            assert struct.unpack_from(">ih", read_frame(waiting)) == (7, 0)
            assert answers(first, 2)
        finally:
            first.close()
            waiting.close()


# ------------------------------------------------------------------ a close on its way


@pytest.mark.parametrize("order", ["muted, then closing", "closing, then muted"])
def test_a_throttled_connection_that_is_closing_closes(order: str) -> None:
    """A close on its way (after a failed login, at shutdown) wins over a throttle's
    mute, whichever came first: the unmute neither reopens reading nor cancels the close."""
    with running({}) as cluster:
        broker = cluster.brokers[0]
        with socket.create_connection(address(cluster), timeout=5) as sock:
            assert answers(sock)

            def throttle_and_close() -> None:
                (conn,) = broker.connections
                if order == "muted, then closing":
                    conn.mute(200, None)  # its unmute fires before the close is due
                    conn.close_soon(1.0)
                else:
                    conn.close_soon(0.3)
                    conn.mute(60_000, None)

            cluster.on_loop(throttle_and_close)
            sock.sendall(api_versions_frame(2))  # never read: the connection is closing
            assert closed_by_broker(sock, 10) is True
