"""SASL re-authentication (KIP-368) through confluent-kafka over SCRAM: with
connections.max.reauth.ms set the broker answers the session lifetime, librdkafka
re-authenticates on the same connection and keeps producing; once its credential is
deleted the next re-authentication fails and the connection is closed."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import KafkaError, Producer

from broker import MockCluster
from tests.security.test_sasl import USERS, confluent_config, sasl_config


def _handshakes(cluster: MockCluster) -> int:
    report = cluster.conformance.report()
    return sum(
        entry["requests"]
        for client in report["clients"]
        for entry in client["apis"]
        if entry["api"] == "SaslHandshake"
    )


def test_confluent_reauthenticates_and_is_cut_off_when_its_credential_goes(tmp_path: Path) -> None:
    config = sasl_config(tmp_path, **{"connections.max.reauth.ms": "600"})
    with MockCluster(config=config) as cluster:
        cluster.create_topic("renewed")
        cluster.credentials.upsert_user("carol", "carol-secret")
        errors: list[KafkaError] = []
        producer = Producer(
            {
                **confluent_config(cluster, "SCRAM-SHA-256", "carol", "carol-secret"),
                "error_cb": errors.append,
                "linger.ms": 0,
            }
        )
        delivered: list[object] = []
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:  # outlives several session lifetimes
            producer.produce("renewed", b"x", on_delivery=lambda err, _m: delivered.append(err))
            producer.flush(5)
            time.sleep(0.05)
        assert delivered and all(err is None for err in delivered)
        connections = 2  # the bootstrap connection and the broker's
        assert _handshakes(cluster) >= connections + 3, "no re-authentication happened"

        cluster.credentials.delete_user("carol")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(e.code() == KafkaError._AUTHENTICATION for e in errors):
            producer.poll(0.1)
        assert any(e.code() == KafkaError._AUTHENTICATION for e in errors)


def test_an_expired_session_is_closed_unless_renewed(tmp_path: Path) -> None:
    """Raw frames: SaslAuthenticate answers the lifetime; a request after it without
    re-authenticating closes the connection; a re-authentication with another user is
    refused."""
    import socket

    from kafka.protocol.metadata import MetadataRequest
    from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

    from tests.support.wire import round_trip

    config = sasl_config(tmp_path, **{"connections.max.reauth.ms": "300"})
    with MockCluster(config=config) as cluster:
        host, port = cluster.bootstrap_for("SASL_PLAINTEXT").split(":")

        def login(sock: socket.socket, user: str, correlation: int) -> object:
            round_trip(sock, SaslHandshakeRequest[1](mechanism="PLAIN"), correlation, "raw")
            token = b"\x00" + user.encode() + b"\x00" + USERS[user].encode()
            return round_trip(sock, SaslAuthenticateRequest[2](auth_bytes=token), correlation + 1, "raw")

        with socket.create_connection((host, int(port)), timeout=10) as sock:
            answer = login(sock, "alice", 1)
            assert (answer.error_code, answer.session_lifetime_ms) == (0, 300)  # type: ignore[attr-defined]
            round_trip(sock, MetadataRequest[4](topics=[], allow_auto_topic_creation=False), 3, "raw")
            renewed = login(sock, "alice", 4)  # re-authentication on the same connection
            assert renewed.error_code == 0  # type: ignore[attr-defined]
            refused = login(sock, "bob", 6)  # another principal
            assert refused.error_code == 58  # type: ignore[attr-defined]  # SASL_AUTHENTICATION_FAILED
            assert "Cannot change principals" in refused.error_message  # type: ignore[attr-defined]
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            login(sock, "alice", 1)
            time.sleep(0.4)

            try:
                round_trip(sock, MetadataRequest[4](topics=[], allow_auto_topic_creation=False), 3, "raw")
                closed = False
            except (ConnectionError, OSError, ValueError):
                closed = True
            assert closed, "an expired session kept being served"
