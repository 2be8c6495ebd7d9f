"""Fuzzing a SASL listener before authentication (issue 22).

A broker with SASL_PLAINTEXT (PLAIN and SCRAM, user alice) and PLAINTEXT listeners.
Hypothesis drives `sasl_exchange` (tests/support/fuzzing.py): ApiVersions, SaslHandshake
v0/v1 with enabled and unknown mechanisms, SaslAuthenticate with odd PLAIN and SCRAM
tokens, bare tokens after a v0 handshake, other APIs out of turn and mutations of all
of these, three exchanges at a time, each on a new connection. What is answered decodes
with the right correlation id; a failed login or anything out of turn closes the
connection (after connection.failed.authentication.delay.ms), never stalls it; the
broker logs no ERROR; a kafka-python producer and consumer logged in as alice are served
throughout. Every advertised (API key, version) other than ApiVersions and SaslHandshake
sent first on a SASL connection closes it unanswered, as Kafka's authenticator does.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker import MockCluster
from messages.registry import api_name
from protocol.api_keys import ApiKey
from tests.reliability.test_fuzz_wire import (
    CONFIG,
    PAIRS,
    DataSource,
    address,
    fuzz_settings,
    prepare_pools,
    protect,
)
from tests.support.fuzzing import (
    ErrorLog,
    HealthyClient,
    Pools,
    RandomSource,
    RequestGenerator,
    WireDriver,
    broker_view,
    sasl_exchange,
)

pytestmark = pytest.mark.filterwarnings("ignore:Do not use the .random. module inside strategies")

EXAMPLES = int(os.environ.get("FUZZ_SASL_EXAMPLES", "300"))  # each: 3 exchanges of 1-5 frames
CONNECTIONS = 3
USERS = {"alice": "alice-secret"}
PROTECTED = frozenset({"healthy-sasl", "healthy-sasl-group", "healthy-client", "ANONYMOUS", "alice"})
OUT_OF_TURN = [(k, v) for k, v in PAIRS if k not in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE)]


@dataclass
class SaslFuzzed:
    cluster: MockCluster
    generator: RequestGenerator
    driver: WireDriver
    errors: ErrorLog
    healthy: HealthyClient
    sent: int = 0
    correlation: Iterator[int] = field(default_factory=lambda: itertools.count(1))


@pytest.fixture(scope="module")
def sasl_fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslFuzzed]:
    users = tmp_path_factory.mktemp("sasl") / "users.json"
    users.write_text(json.dumps(USERS))
    config = {
        **CONFIG,
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl.users.file": str(users),
        "connection.failed.authentication.delay.ms": "10",
        "super.users": "User:ANONYMOUS;User:alice",
    }
    with ErrorLog() as errors, MockCluster(config=config) as cluster:
        protect(cluster, users=("ANONYMOUS", "alice"))
        cluster.create_topic("healthy-sasl")
        pools = Pools(protected=PROTECTED, cluster_id=cluster.config.get_str("cluster.id"))
        prepare_pools(cluster, pools)
        advertised = cluster.brokers[0].pipeline.served_apis
        generator = RequestGenerator(advertised, pools)
        driver = WireDriver(
            address(cluster, "SASL_PLAINTEXT"), advertised, connections=CONNECTIONS, timeout=30
        )
        healthy = HealthyClient(
            cluster.bootstrap_for("SASL_PLAINTEXT"),
            "healthy-sasl",
            "healthy-sasl-group",
            "healthy-client",
            describe=broker_view(cluster, "healthy-sasl-group", "healthy-sasl"),
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="alice",
            sasl_plain_password=USERS["alice"],
        ).start()
        try:
            yield SaslFuzzed(cluster, generator, driver, errors, healthy)
        finally:
            driver.close()


@fuzz_settings(EXAMPLES)
@given(data=st.data())
def test_pre_authentication_input_is_answered_or_closed(sasl_fuzzed: SaslFuzzed, data: Any) -> None:
    src = DataSource(data)
    batches = [sasl_exchange(src, sasl_fuzzed.generator, sasl_fuzzed.correlation) for _ in range(CONNECTIONS)]
    findings = sasl_fuzzed.driver.run(batches)
    sasl_fuzzed.driver.reset()  # every exchange starts unauthenticated
    sasl_fuzzed.sent += sum(map(len, batches))
    problems = [str(f) for f in findings] + sasl_fuzzed.errors.take()
    assert not problems, "\n".join(problems[:10])


@pytest.mark.parametrize(
    ("api_key", "version"), OUT_OF_TURN, ids=[f"{api_name(k)}-v{v}" for k, v in OUT_OF_TURN]
)
def test_any_other_request_first_closes_the_connection(
    sasl_fuzzed: SaslFuzzed, api_key: int, version: int
) -> None:
    """SaslServerAuthenticator: before the handshake only ApiVersions and SaslHandshake
    may come; anything else closes the connection unanswered."""
    frame = sasl_fuzzed.generator.request(
        RandomSource(random.Random(api_key * 100 + version)), api_key, version, 7
    )
    with socket.create_connection(address(sasl_fuzzed.cluster, "SASL_PLAINTEXT"), timeout=10) as sock:
        sock.sendall(frame.data)
        assert sock.recv(1 << 16) == b""
    assert not sasl_fuzzed.errors.take()


def test_alice_was_served_throughout(sasl_fuzzed: SaslFuzzed, tmp_path: Path) -> None:
    report = sasl_fuzzed.healthy.stop()
    assert not report.problems(), "\n".join(report.problems())
    cluster = sasl_fuzzed.cluster
    assert cluster.on_loop(lambda: cluster.credentials.check_plain("alice", USERS["alice"]))
    assert not sasl_fuzzed.errors.take()
    if sasl_fuzzed.sent:
        driver = sasl_fuzzed.driver
        print(
            f"fuzzed {sasl_fuzzed.sent} frames before authentication: {driver.answered} answered, "
            f"{driver.closes} connections closed by the broker"
        )
