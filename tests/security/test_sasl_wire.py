"""The SASL authenticator over raw sockets, frames written by hand from Kafka's message
schemas (SaslHandshake v0-v1, SaslAuthenticate v1: not flexible; request header v1 =
api key, version, correlation id, int16-length client id; response header v0 =
correlation id):

- only ApiVersions (once, first), SaslHandshake and SaslAuthenticate come before
  authentication; anything else closes the connection;
- a failed authentication is answered with 58 and the mechanism's message after
  connection.failed.authentication.delay.ms, then the connection closes;
- the v0 handshake switches to bare size-prefixed tokens;
- the broker keeps serving everyone else throughout.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker import MockCluster
from tests.conftest import FAST
from tests.security.test_scram import Client
from tests.support.wire import read_frame, recv_exactly

USERS = {"alice": "alice-secret"}
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
SASL_AUTHENTICATION_FAILED = 58
DELAY_MS = 200


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[MockCluster]:
    users = tmp_path / "users.json"
    users.write_text(json.dumps(USERS))
    config = {
        **FAST,
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        "sasl.users.file": str(users),
        "connection.failed.authentication.delay.ms": str(DELAY_MS),
    }
    with MockCluster(config=config) as running:
        yield running


def connect(cluster: MockCluster, listener: str = "SASL_PLAINTEXT") -> socket.socket:
    host, port = cluster.bootstrap_for(listener).split(",")[0].rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=5)


# -- hand-written frames ------------------------------------------------------------------
def string(value: str) -> bytes:
    return struct.pack(">h", len(value)) + value.encode()


def request(api_key: int, version: int, correlation_id: int, body: bytes = b"") -> bytes:
    payload = struct.pack(">hhi", api_key, version, correlation_id) + string("raw") + body
    return struct.pack(">i", len(payload)) + payload


def handshake(version: int, mechanism: str, correlation_id: int = 1) -> bytes:
    return request(17, version, correlation_id, string(mechanism))


def authenticate(token: bytes, correlation_id: int = 2) -> bytes:
    return request(36, 1, correlation_id, struct.pack(">i", len(token)) + token)


def metadata(correlation_id: int = 9) -> bytes:
    return request(3, 0, correlation_id, struct.pack(">i", 0))  # v0, Topics: [] (all)


def parse_handshake(frame: bytes) -> tuple[int, int, list[str]]:
    correlation_id, error_code, count = struct.unpack_from(">ihi", frame)
    mechanisms, pos = [], 10
    for _ in range(count):
        (length,) = struct.unpack_from(">h", frame, pos)
        mechanisms.append(frame[pos + 2 : pos + 2 + length].decode())
        pos += 2 + length
    return correlation_id, error_code, mechanisms


def parse_authenticate(frame: bytes) -> tuple[int, int, str | None, bytes, int]:
    """SaslAuthenticate v1: correlation id, error code, message, auth bytes, session lifetime."""
    correlation_id, error_code, length = struct.unpack_from(">ihh", frame)
    pos = 8
    message = None if length < 0 else frame[pos : pos + length].decode()
    pos += max(length, 0)
    (size,) = struct.unpack_from(">i", frame, pos)
    token = frame[pos + 4 : pos + 4 + size]
    (lifetime,) = struct.unpack_from(">q", frame, pos + 4 + size)
    return correlation_id, error_code, message, token, lifetime


def assert_closed(sock: socket.socket) -> None:
    sock.settimeout(5)
    assert sock.recv(1) == b"", "the broker should have closed the connection"


def assert_still_serving(cluster: MockCluster) -> None:
    """Another client logs in with PLAIN over v1 and is served Metadata."""
    with connect(cluster) as sock:
        sock.sendall(handshake(1, "PLAIN"))
        assert parse_handshake(read_frame(sock))[1] == 0
        sock.sendall(authenticate(b"\0alice\0alice-secret"))
        assert parse_authenticate(read_frame(sock))[1] == 0
        sock.sendall(metadata())
        assert struct.unpack_from(">i", read_frame(sock))[0] == 9


def principals(cluster: MockCluster) -> set[str]:
    return cluster.on_loop(lambda: {str(c.principal) for b in cluster.brokers for c in b.connections})


# -- the happy paths --------------------------------------------------------------------
def test_plain_over_saslauthenticate_then_requests_are_served(cluster: MockCluster) -> None:
    with connect(cluster) as sock:
        sock.sendall(request(18, 0, 7))  # ApiVersions v0 first is allowed
        assert struct.unpack_from(">ih", read_frame(sock)) == (7, 0)
        sock.sendall(handshake(1, "PLAIN"))
        assert parse_handshake(read_frame(sock)) == (1, 0, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
        sock.sendall(authenticate(b"\0alice\0alice-secret"))
        assert parse_authenticate(read_frame(sock)) == (2, 0, None, b"", 0)
        assert principals(cluster) == {"User:alice"}
        sock.sendall(metadata())
        assert struct.unpack_from(">i", read_frame(sock))[0] == 9
        # No re-authentication (KIP-368 off): SaslAuthenticate now is an illegal state.
        sock.sendall(authenticate(b"\0alice\0alice-secret", correlation_id=3))
        assert parse_authenticate(read_frame(sock))[:3] == (
            3,
            ILLEGAL_SASL_STATE,
            "SaslAuthenticate request received after successful authentication",
        )


def test_scram_over_saslauthenticate(cluster: MockCluster) -> None:
    client = Client("sha256", "alice", "alice-secret", nonce="clientnonce123")
    with connect(cluster) as sock:
        sock.sendall(handshake(1, "SCRAM-SHA-256"))
        assert parse_handshake(read_frame(sock))[1] == 0
        sock.sendall(authenticate(client.first()))
        _, error, _, server_first, _ = parse_authenticate(read_frame(sock))
        assert error == 0 and server_first.startswith(b"r=clientnonce123")
        sock.sendall(authenticate(client.final(server_first), correlation_id=3))
        _, error, _, server_final, _ = parse_authenticate(read_frame(sock))
        assert (error, server_final) == (0, client.server_signature())
        assert principals(cluster) == {"User:alice"}


def test_v0_handshake_switches_to_bare_tokens(cluster: MockCluster) -> None:
    with connect(cluster) as sock:
        sock.sendall(handshake(0, "PLAIN"))
        assert parse_handshake(read_frame(sock))[1] == 0
        token = b"\0alice\0alice-secret"
        sock.sendall(struct.pack(">i", len(token)) + token)  # no Kafka header
        assert recv_exactly(sock, 4) == b"\0\0\0\0"  # PLAIN's empty challenge, bare
        sock.sendall(metadata())
        assert struct.unpack_from(">i", read_frame(sock))[0] == 9
        assert principals(cluster) == {"User:alice"}


# -- refusals ---------------------------------------------------------------------------
def test_request_before_authentication_closes_the_connection(cluster: MockCluster) -> None:
    with connect(cluster) as sock:
        sock.sendall(metadata())
        assert_closed(sock)
    with connect(cluster) as sock:  # after the handshake, before authenticating
        sock.sendall(handshake(1, "PLAIN"))
        read_frame(sock)
        sock.sendall(metadata())
        assert_closed(sock)
    assert_still_serving(cluster)


def test_api_versions_twice_closes_the_connection(cluster: MockCluster) -> None:
    with connect(cluster) as sock:
        sock.sendall(request(18, 0, 1))
        read_frame(sock)
        sock.sendall(request(18, 0, 2))
        assert_closed(sock)


def test_unsupported_mechanism_is_answered_then_closed(cluster: MockCluster) -> None:
    with connect(cluster) as sock:
        sock.sendall(handshake(1, "GSSAPI"))
        assert parse_handshake(read_frame(sock)) == (
            1,
            UNSUPPORTED_SASL_MECHANISM,
            ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"],
        )
        assert_closed(sock)


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
        # Malformed tokens are SaslExceptions in Kafka's PlainSaslServer, whose text is never
        # sent: the client gets the authenticator's generic message.
        (
            b"alice",
            "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN",
        ),
        (
            b"",
            "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN",
        ),
    ],
)
def test_failed_plain_is_answered_late_then_closed(cluster: MockCluster, token: bytes, message: str) -> None:
    with connect(cluster) as sock:
        sock.sendall(handshake(1, "PLAIN"))
        read_frame(sock)
        started = time.monotonic()
        sock.sendall(authenticate(token))
        assert parse_authenticate(read_frame(sock))[:3] == (2, SASL_AUTHENTICATION_FAILED, message)
        assert time.monotonic() - started >= DELAY_MS / 1000 * 0.9
        assert_closed(sock)
    assert_still_serving(cluster)


def test_scram_wrong_proof_is_refused_and_closed(cluster: MockCluster) -> None:
    client = Client("sha512", "alice", "not-alices-password", nonce="n0nce")
    with connect(cluster) as sock:
        sock.sendall(handshake(1, "SCRAM-SHA-512"))
        read_frame(sock)
        sock.sendall(authenticate(client.first()))
        server_first = parse_authenticate(read_frame(sock))[3]
        sock.sendall(authenticate(client.final(server_first), correlation_id=3))
        assert parse_authenticate(read_frame(sock))[:3] == (
            3,
            SASL_AUTHENTICATION_FAILED,
            "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
        )
        assert_closed(sock)
    assert_still_serving(cluster)


def test_truncated_scram_token_is_refused_and_closed(cluster: MockCluster) -> None:
    with connect(cluster) as sock:
        sock.sendall(handshake(1, "SCRAM-SHA-256"))
        read_frame(sock)
        sock.sendall(authenticate(b"n,,n=ali"))  # client-first cut short: no nonce
        assert parse_authenticate(read_frame(sock))[1] == SASL_AUTHENTICATION_FAILED
        assert_closed(sock)
    assert_still_serving(cluster)


def test_v0_bare_token_with_a_wrong_password_closes_unanswered(cluster: MockCluster) -> None:
    with connect(cluster) as sock:
        sock.sendall(handshake(0, "PLAIN"))
        read_frame(sock)
        token = b"\0alice\0wrong"
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert_closed(sock)
    assert_still_serving(cluster)


def test_sasl_requests_on_a_plaintext_listener_are_illegal_state(cluster: MockCluster) -> None:
    with connect(cluster, "PLAINTEXT") as sock:
        sock.sendall(handshake(1, "PLAIN"))
        assert parse_handshake(read_frame(sock)) == (1, ILLEGAL_SASL_STATE, [])
        sock.sendall(authenticate(b"\0alice\0alice-secret"))
        assert parse_authenticate(read_frame(sock))[1] == ILLEGAL_SASL_STATE
        assert principals(cluster) == {"User:ANONYMOUS"}
