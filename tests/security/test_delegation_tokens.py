"""Delegation tokens (KIP-48, KIP-373): CreateDelegationToken (38), RenewDelegationToken
(39), ExpireDelegationToken (40) and DescribeDelegationToken (41) in raw frames, with
Kafka 4.x's checks and codes, and SCRAM authentication with a token (`tokenauth=true`).

No Python client has admin calls for these APIs, so requests are raw frames over a
socket that logs in with SCRAM first (the independent RFC 5802 client of test_scram).
Token authentication is also proved through a real client: kafka-python's SCRAM
mechanism, patched in the test to send the `tokenauth=true` extension (it cannot),
produces and consumes as the token's owner, under the owner's ACLs.

The token lifetime arithmetic (max lifetime caps, renewal periods, expiry periods) is
checked against TokenStore with a fixed clock, where every timestamp is exact.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import secrets
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import TopicAuthorizationFailedError
from kafka.net.sasl.scram import SaslMechanismScram, ScramClient
from kafka.protocol.metadata import ApiVersionsRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from broker import MockCluster
from broker.security.delegation_tokens import TokenStore
from broker.security.scram import ScramMechanism
from messages.registry import request_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from quotas.callback import KafkaPrincipal
from tests.certs import Certificates, make_certificates
from tests.conftest import FAST
from tests.security.test_scram import Client, generic
from tests.support.wire import round_trip

CreateDelegationTokenRequest = request_class(ApiKey.CREATE_DELEGATION_TOKEN)
RenewDelegationTokenRequest = request_class(ApiKey.RENEW_DELEGATION_TOKEN)
ExpireDelegationTokenRequest = request_class(ApiKey.EXPIRE_DELEGATION_TOKEN)
DescribeDelegationTokenRequest = request_class(ApiKey.DESCRIBE_DELEGATION_TOKEN)

USERS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret", "admin": "admin-secret"}
SECRET = "the-token-secret"
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
HOUR, DAY, WEEK = 3_600_000, 86_400_000, 604_800_000
Renewer = CreateDelegationTokenRequest.CreatableRenewers
Owner = DescribeDelegationTokenRequest.DescribeDelegationTokenOwner


def token_config(tmp_path: Path, **extra: str) -> dict[str, str]:
    users = tmp_path / "users.json"
    users.write_text(json.dumps(USERS))
    return {
        **FAST,
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        "sasl.users.file": str(users),
        "connection.failed.authentication.delay.ms": "0",
        "delegation.token.secret.key": SECRET,
        **extra,
    }


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[MockCluster]:
    with MockCluster(config=token_config(tmp_path)) as running:
        yield running


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[MockCluster]:
    """With StandardAuthorizer: nothing is allowed but what an ACL grants (admin: anything)."""
    config = token_config(tmp_path, **{"authorizer.class.name": STANDARD, "super.users": "User:admin"})
    with MockCluster(config=config) as running:
        running.create_topic("orders")
        running.create_topic("payroll")
        yield running


class Wire:
    """Raw frames on one connection, SCRAM-authenticated first on a SASL listener."""

    def __init__(self, cluster: MockCluster, listener: str = "SASL_PLAINTEXT", sock: Any = None) -> None:
        host, port = cluster.bootstrap_for(listener).split(",")[0].rsplit(":", 1)
        self.sock = sock or socket.create_connection((host, int(port)), timeout=10)
        self.correlation_id = 0

    def __call__(self, request: Any) -> Any:
        self.correlation_id += 1
        return round_trip(self.sock, request, self.correlation_id, "tokens")

    def login(self, user: str, password: str, token: bool = False, mechanism: str = "SCRAM-SHA-256") -> Any:
        """The final SaslAuthenticate response (or the first, when that one fails)."""
        assert self(SaslHandshakeRequest[1](mechanism=mechanism)).error_code == 0
        hash_name = ScramMechanism.from_name(mechanism).hash_name  # type: ignore[union-attr]
        client = Client(
            hash_name, user, password, secrets.token_hex(8), extensions="tokenauth=true" if token else ""
        )
        first = self(SaslAuthenticateRequest[2](auth_bytes=client.first()))
        if first.error_code:
            return first
        final = self(SaslAuthenticateRequest[2](auth_bytes=client.final(first.auth_bytes)))
        if final.error_code == 0:
            assert final.auth_bytes == client.server_signature()
        return final

    def create(
        self,
        version: int = 3,
        renewers: tuple[str, ...] = (),
        max_lifetime_ms: int = -1,
        owner: tuple[str | None, str | None] = (None, None),
    ) -> Any:
        fields: dict[str, Any] = {
            "renewers": [
                Renewer(principal_type=t, principal_name=n) for t, n in (r.split(":", 1) for r in renewers)
            ],
            "max_lifetime_ms": max_lifetime_ms,
        }
        if version >= 3:
            fields.update(owner_principal_type=owner[0], owner_principal_name=owner[1])
        return self(CreateDelegationTokenRequest[version](**fields))

    def renew(self, token_hmac: bytes, period_ms: int = -1, version: int = 2) -> Any:
        return self(RenewDelegationTokenRequest[version](hmac=token_hmac, renew_period_ms=period_ms))

    def expire(self, token_hmac: bytes, period_ms: int = -1, version: int = 2) -> Any:
        return self(ExpireDelegationTokenRequest[version](hmac=token_hmac, expiry_time_period_ms=period_ms))

    def describe(self, owners: list[str] | None = None, version: int = 3) -> Any:
        listed = (
            None
            if owners is None
            else [Owner(principal_type=t, principal_name=n) for t, n in (o.split(":", 1) for o in owners)]
        )
        return self(DescribeDelegationTokenRequest[version](owners=listed))

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def connect(cluster: MockCluster) -> Iterator[Callable[..., Wire]]:
    opened: list[Wire] = []

    def open_as(user: str | None = "alice", listener: str = "SASL_PLAINTEXT") -> Wire:
        wire = Wire(cluster, listener)
        opened.append(wire)
        if user is not None:
            assert wire.login(user, USERS[user]).error_code == 0
        return wire

    yield open_as
    for wire in opened:
        wire.close()


def as_user(cluster: MockCluster, user: str) -> Wire:
    wire = Wire(cluster)
    assert wire.login(user, USERS[user]).error_code == 0
    return wire


def as_token(
    cluster: MockCluster, token_id: str, token_hmac: bytes, mechanism: str = "SCRAM-SHA-256"
) -> tuple[Wire, Any]:
    wire = Wire(cluster)
    return wire, wire.login(token_id, b64(token_hmac), token=True, mechanism=mechanism)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def now_ms() -> int:
    return int(time.time() * 1000)


# --------------------------------------------------------------------------- the APIs


def test_api_versions_advertise_kafka_4_ranges(cluster: MockCluster, connect: Callable[..., Wire]) -> None:
    wire = connect(None)
    apis = {a.api_key: (a.min_version, a.max_version) for a in wire(ApiVersionsRequest[3]()).api_keys}
    assert (apis[38], apis[39], apis[40], apis[41]) == ((1, 3), (1, 2), (1, 2), (1, 3))


def test_create_a_token_and_authenticate_with_it(cluster: MockCluster, connect: Callable[..., Wire]) -> None:
    before = now_ms()
    created = connect("alice").create()
    assert created.error_code == 0
    assert (created.principal_type, created.principal_name) == ("User", "alice")
    assert (created.token_requester_principal_type, created.token_requester_principal_name) == (
        "User",
        "alice",
    )
    assert before <= created.issue_timestamp_ms <= now_ms()
    assert created.max_timestamp_ms == created.issue_timestamp_ms + WEEK
    assert created.expiry_timestamp_ms == created.issue_timestamp_ms + DAY
    # Kafka's Uuid string (22 URL-safe base64 characters) and HMAC-SHA512 of it under the key.
    assert len(created.token_id) == 22 and not created.token_id.startswith("-")
    assert created.hmac == hmac.digest(SECRET.encode(), created.token_id.encode(), hashlib.sha512)
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        wire, answer = as_token(cluster, created.token_id, created.hmac, mechanism)
        # The session ends with the token (KIP-368), so the client is told what remains.
        assert answer.error_code == 0
        assert created.expiry_timestamp_ms - now_ms() - 1000 <= answer.session_lifetime_ms <= DAY
        assert wire(ApiVersionsRequest[3]()).error_code == 0
        wire.close()
    principals = cluster.on_loop(lambda: [c.principal for b in cluster.brokers for c in b.connections])
    assert KafkaPrincipal("User", "alice") in principals


def test_versions_below_3_always_issue_for_the_caller(connect: Callable[..., Wire]) -> None:
    alice = connect("alice")
    for version in (1, 2):
        created = alice.create(version=version)
        assert (created.error_code, created.principal_name, created.version) == (0, "alice", version)


def test_plaintext_channels_may_not_manage_tokens(cluster: MockCluster, connect: Callable[..., Wire]) -> None:
    token = connect("alice").create()
    plain = connect(None, "PLAINTEXT")
    refused = plain.create()
    assert refused.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    assert (refused.principal_name, refused.token_requester_principal_name) == ("ANONYMOUS", "ANONYMOUS")
    assert (refused.issue_timestamp_ms, refused.expiry_timestamp_ms, refused.max_timestamp_ms) == (-1, -1, -1)
    assert (refused.token_id, refused.hmac) == ("", b"")
    for answer in (plain.renew(token.hmac), plain.expire(token.hmac)):
        assert (answer.error_code, answer.expiry_timestamp_ms) == (
            ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
            -1,
        )
    described = plain.describe()
    assert (described.error_code, described.tokens) == (ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, [])
    assert len(cluster.credentials.tokens.tokens()) == 1  # nothing changed


def test_a_token_session_may_not_manage_tokens(cluster: MockCluster, connect: Callable[..., Wire]) -> None:
    """KIP-48: a token cannot create, renew, expire or describe tokens, not even its own."""
    token = connect("alice").create()
    wire, answer = as_token(cluster, token.token_id, token.hmac)
    assert answer.error_code == 0
    try:
        created = wire.create()
        assert (created.error_code, created.principal_name) == (
            ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
            "alice",
        )
        assert wire.renew(token.hmac).error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        assert wire.expire(token.hmac).error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        assert wire.describe().error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    finally:
        wire.close()
    assert connect("alice").describe().tokens[0].expiry_timestamp == token.expiry_timestamp_ms


def test_without_a_secret_key_tokens_are_disabled(tmp_path: Path) -> None:
    config = token_config(tmp_path)
    del config["delegation.token.secret.key"]
    with MockCluster(config=config) as running:
        alice = as_user(running, "alice")
        try:
            created = alice.create()
            # The controller's refusal: owner and requester set, the rest left at defaults.
            assert created.error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
            assert (created.principal_name, created.token_requester_principal_name) == ("alice", "alice")
            assert (created.issue_timestamp_ms, created.max_timestamp_ms, created.token_id) == (0, 0, "")
            for answer in (alice.renew(b"x"), alice.expire(b"x")):
                assert (answer.error_code, answer.expiry_timestamp_ms) == (
                    ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED,
                    0,
                )
            assert alice.describe().error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
        finally:
            alice.close()


def test_the_old_key_name_still_enables_tokens(tmp_path: Path) -> None:
    config = token_config(tmp_path, **{"delegation.token.master.key": "older"})
    del config["delegation.token.secret.key"]
    with MockCluster(config=config) as running:
        alice = as_user(running, "alice")
        try:
            created = alice.create()
            assert created.hmac == hmac.digest(b"older", created.token_id.encode(), hashlib.sha512)
        finally:
            alice.close()


def test_renewers_must_be_users(connect: Callable[..., Wire]) -> None:
    refused = connect("alice").create(renewers=("User:bob", "Group:ops"))
    assert (refused.error_code, refused.max_timestamp_ms, refused.token_id) == (
        ErrorCode.INVALID_PRINCIPAL_TYPE,
        -1,
        "",
    )


def test_renew_and_expire_refusals(cluster: MockCluster, connect: Callable[..., Wire]) -> None:
    alice, bob, carol = connect("alice"), connect("bob"), connect("carol")
    token = alice.create(renewers=("User:bob",))
    wrong = bytes(64)
    for answer in (alice.renew(wrong), alice.expire(wrong)):
        assert (answer.error_code, answer.expiry_timestamp_ms) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)
    for answer in (carol.renew(token.hmac), carol.expire(token.hmac)):  # neither owner nor renewer
        assert answer.error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    renewed = bob.renew(token.hmac, period_ms=HOUR)  # a renewer may renew
    assert renewed.error_code == 0 and renewed.expiry_timestamp_ms <= now_ms() + HOUR
    assert alice.renew(token.hmac).expiry_timestamp_ms >= now_ms() + DAY - 5000  # -1: the default period
    soon = bob.expire(token.hmac, period_ms=0)  # a renewer may expire it too: now
    assert soon.error_code == 0 and soon.expiry_timestamp_ms <= now_ms()
    time.sleep(0.01)
    for answer in (alice.renew(token.hmac), alice.expire(token.hmac)):
        assert answer.error_code == ErrorCode.DELEGATION_TOKEN_EXPIRED
    # Expired but not swept: still described, and still findable by its id.
    assert [t.token_id for t in alice.describe().tokens] == [token.token_id]


def test_expiring_with_a_negative_period_removes_the_token(
    cluster: MockCluster, connect: Callable[..., Wire]
) -> None:
    alice = connect("alice")
    token = alice.create()
    gone = alice.expire(token.hmac, period_ms=-5)
    assert (gone.error_code, gone.expiry_timestamp_ms) == (0, -5)  # the period, echoed
    assert alice.renew(token.hmac).error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    assert alice.describe().tokens == []
    wire, answer = as_token(cluster, token.token_id, token.hmac)
    wire.close()
    assert (answer.error_code, answer.error_message) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED,
        generic("SCRAM-SHA-256"),
    )


def test_tokens_for_another_owner_need_create_tokens(secured: MockCluster) -> None:
    alice = as_user(secured, "alice")
    try:
        refused = alice.create(owner=("User", "bob"))
        assert refused.error_code == ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
        assert (refused.principal_name, refused.token_requester_principal_name) == ("bob", "alice")
        assert refused.expiry_timestamp_ms == -1
        assert alice.create().error_code == 0  # for herself she needs no ACL
        secured.acls.add("User:alice", "CREATE_TOKENS", "USER", "User:bob")
        created = alice.create(owner=("User", "bob"))
        assert created.error_code == 0
        assert (created.principal_name, created.token_requester_principal_name) == ("bob", "alice")
        # The token authenticates as bob, not as alice who asked for it.
        wire, answer = as_token(secured, created.token_id, created.hmac)
        wire.close()
        assert answer.error_code == 0
        # Only bob (the owner) or a renewer may renew it; alice, the requester, may not.
        assert alice.renew(created.hmac).error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
        bob = as_user(secured, "bob")
        assert bob.renew(created.hmac).error_code == 0
        bob.close()
    finally:
        alice.close()


def test_describe_shows_what_the_caller_may_see(secured: MockCluster) -> None:
    wires = {user: as_user(secured, user) for user in ("alice", "bob", "carol", "admin")}
    try:
        mine = wires["alice"].create(renewers=("User:bob",))
        for_carol = wires["admin"].create(owner=("User", "carol"))  # a super user may

        def seen(user: str, owners: list[str] | None = None, version: int = 3) -> list[str]:
            answer = wires[user].describe(owners, version)
            assert answer.error_code == 0
            return sorted(t.token_id for t in answer.tokens)

        assert seen("alice") == [mine.token_id]  # the owner
        assert seen("bob") == [mine.token_id]  # a renewer
        assert seen("admin") == sorted([mine.token_id, for_carol.token_id])  # a super user
        assert seen("carol") == [for_carol.token_id]  # her own, made by admin
        assert seen("admin", ["User:carol"]) == [for_carol.token_id]
        assert seen("admin", ["User:bob"]) == [mine.token_id]  # a renewer's tokens match too
        assert seen("admin", []) == []  # an empty list asks for none
        secured.acls.add("User:carol", "DESCRIBE", "DELEGATION_TOKEN", mine.token_id)
        assert seen("carol") == sorted([mine.token_id, for_carol.token_id])
        assert seen("carol", ["User:alice"]) == [mine.token_id]
        secured.acls.add("User:bob", "DESCRIBE_TOKENS", "USER", "User:carol")
        assert seen("bob") == sorted([mine.token_id, for_carol.token_id])
        (described,) = wires["bob"].describe(["User:carol"]).tokens
        assert (described.principal_name, described.token_requester_principal_name) == ("carol", "admin")
        assert (described.hmac, described.max_timestamp) == (for_carol.hmac, for_carol.max_timestamp_ms)
        (with_renewer,) = wires["alice"].describe(version=1).tokens
        assert [(r.principal_type, r.principal_name) for r in with_renewer.renewers] == [("User", "bob")]
    finally:
        for wire in wires.values():
            wire.close()


def test_ssl_without_a_client_certificate_may_not_manage_tokens(tmp_path: Path) -> None:
    certs: Certificates = make_certificates(tmp_path / "certs")
    config = token_config(
        tmp_path,
        listeners="SSL://127.0.0.1:0",
        **{
            "ssl.certfile": certs.server.certfile,
            "ssl.keyfile": certs.server.keyfile,
            "ssl.cafile": certs.cafile,
            "ssl.client.auth": "requested",
        },
    )
    import ssl

    with MockCluster(config=config) as running:
        host, port = running.bootstrap_for("SSL").split(",")[0].rsplit(":", 1)

        def tls_wire(certificate: bool) -> Wire:
            context = ssl.create_default_context(cafile=certs.cafile)
            if certificate:
                context.load_cert_chain(certs.client.certfile, certs.client.keyfile)
            sock = context.wrap_socket(
                socket.create_connection((host, int(port)), timeout=10), server_hostname=host
            )
            return Wire(running, "SSL", sock)

        anonymous, named = tls_wire(False), tls_wire(True)
        try:
            assert anonymous.create().error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
            created = named.create()
            assert (created.error_code, created.principal_name) == (0, "CN=alice-client,O=Test")
        finally:
            anonymous.close()
            named.close()


# ----------------------------------------------------------------- expiry and the sweep


def test_expired_tokens_are_swept(tmp_path: Path) -> None:
    config = token_config(
        tmp_path,
        **{"delegation.token.expiry.time.ms": "200", "delegation.token.expiry.check.interval.ms": "100"},
    )
    with MockCluster(config=config) as running:
        alice = as_user(running, "alice")
        try:
            token = alice.create()
            assert token.expiry_timestamp_ms == token.issue_timestamp_ms + 200
            deadline = time.monotonic() + 5
            while alice.describe().tokens and time.monotonic() < deadline:
                time.sleep(0.05)
            assert alice.describe().tokens == []
            assert alice.renew(token.hmac).error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
            wire, answer = as_token(running, token.token_id, token.hmac)
            wire.close()
            assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
            assert answer.error_message == generic("SCRAM-SHA-256")
        finally:
            alice.close()


def test_an_expired_token_not_yet_swept_opens_a_session_that_ends_at_once(
    cluster: MockCluster, connect: Callable[..., Wire]
) -> None:
    """Kafka finds a token until the sweep; the session's lifetime is what remains of it
    (nothing), so the connection is closed at its next request."""
    alice = connect("alice")
    token = alice.create()
    assert alice.expire(token.hmac, period_ms=0).error_code == 0
    time.sleep(0.01)
    wire, answer = as_token(cluster, token.token_id, token.hmac)
    try:
        assert (answer.error_code, answer.session_lifetime_ms) == (0, 0)
        with pytest.raises(ConnectionError):
            wire(ApiVersionsRequest[3]())
    finally:
        wire.close()


def test_wrong_token_passwords_and_unknown_ids_fail(
    cluster: MockCluster, connect: Callable[..., Wire]
) -> None:
    token = connect("alice").create()
    wire, answer = as_token(cluster, token.token_id, bytes(64))  # not the HMAC
    wire.close()
    assert (answer.error_code, answer.error_message) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED,
        generic("SCRAM-SHA-256"),
    )
    wire, answer = as_token(cluster, "no-such-token", token.hmac)
    wire.close()
    assert (answer.error_code, answer.error_message) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED,
        generic("SCRAM-SHA-256"),
    )
    # Without tokenauth the token id is just an unknown user name.
    plain = Wire(cluster)
    refused = plain.login(token.token_id, b64(token.hmac))
    plain.close()
    assert refused.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_tokens_survive_a_restart_with_the_same_key(tmp_path: Path) -> None:
    config = token_config(tmp_path, **{"state.dir": str(tmp_path / "state")})
    with MockCluster(config=config) as first:
        alice = as_user(first, "alice")
        token = alice.create(renewers=("User:bob",))
        renewed = alice.renew(token.hmac, period_ms=HOUR)
        gone = alice.create()
        alice.expire(gone.hmac, period_ms=-1)
        alice.close()
    with MockCluster(config=config) as second:
        alice = as_user(second, "alice")
        (kept,) = alice.describe().tokens
        assert (kept.token_id, kept.hmac, kept.expiry_timestamp) == (
            token.token_id,
            token.hmac,
            renewed.expiry_timestamp_ms,
        )
        assert [r.principal_name for r in kept.renewers] == ["bob"]
        wire, answer = as_token(second, token.token_id, token.hmac)
        wire.close()
        assert answer.error_code == 0
        alice.close()
    with MockCluster(config={**config, "delegation.token.secret.key": "another"}) as third:
        wire, answer = as_token(third, token.token_id, token.hmac)  # the old HMAC no longer matches
        wire.close()
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED


# ------------------------------------------------------------- a real client with a token


class TokenScramClient(ScramClient):  # type: ignore[misc]
    """kafka-python's SCRAM client with the `tokenauth=true` extension Kafka's
    ScramLoginModule adds for tokens (part of the client-first-message-bare, so of the
    AuthMessage both sides sign)."""

    def first_message(self) -> bytes:
        bare = b"n=" + self.user + b",r=" + self.nonce + b",tokenauth=true"
        self.auth_message += bare
        return b"n,," + bare


class TokenScram(SaslMechanismScram):  # type: ignore[misc]
    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self._scram_client = TokenScramClient(
            config["sasl_plain_username"], config["sasl_plain_password"], config["sasl_mechanism"]
        )


def test_a_real_client_works_as_the_token_owner(
    secured: MockCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kafka-python, authenticated with alice's token, produces and consumes under
    alice's ACLs (and is refused where alice is), and the broker sees User:alice."""
    import kafka.net.sasl

    for name, operation, resource in (
        ("orders", "WRITE", "TOPIC"),
        ("orders", "READ", "TOPIC"),
        ("readers", "READ", "GROUP"),
    ):
        secured.acls.add("User:alice", operation, resource, name)
    alice = as_user(secured, "alice")
    token = alice.create()
    alice.close()
    monkeypatch.setitem(kafka.net.sasl.SASL_MECHANISMS, "SCRAM-SHA-512", TokenScram)
    config = {
        "bootstrap_servers": secured.bootstrap_for("SASL_PLAINTEXT"),
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": token.token_id,
        "sasl_plain_password": b64(token.hmac),
    }
    producer = KafkaProducer(retries=0, **config)
    try:
        assert producer.send("orders", b"from the token").get(timeout=10).offset == 0
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("payroll", b"no").get(timeout=10)
        owners = secured.on_loop(
            lambda: [
                c.principal for b in secured.brokers for c in b.connections if c.principal.token_authenticated
            ]
        )
        assert owners and {str(p) for p in owners} == {"User:alice"}
    finally:
        producer.close()
    consumer = KafkaConsumer("orders", group_id="readers", auto_offset_reset="earliest", **config)
    try:
        values: list[bytes] = []
        deadline = time.monotonic() + 15
        while not values and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values += [record.value for record in records]
        assert values == [b"from the token"]
    finally:
        consumer.close()
    assert secured.state.topics["payroll"].partitions[0].log.log_end_offset == 0


# -------------------------------------------------------------------- lifetime arithmetic


def run(coro: Any) -> Any:
    return asyncio.run(coro)


ALICE, BOB, CAROL = (KafkaPrincipal("User", n) for n in ("alice", "bob", "carol"))


@pytest.fixture
def clock() -> list[int]:
    return [1_000_000]


@pytest.fixture
def store(clock: list[int]) -> TokenStore:
    return TokenStore(
        "key", max_lifetime_ms=10_000, expiry_time_ms=3_000, check_interval_ms=HOUR, clock=lambda: clock[0]
    )


def test_max_lifetime_caps_what_is_asked(store: TokenStore) -> None:
    code, default = run(store.create(ALICE, ALICE, (), -1))
    assert (code, default.max_ms, default.expiry_ms) == (0, 1_010_000, 1_003_000)
    _, longer = run(store.create(ALICE, ALICE, (), 50_000))  # more than the broker allows
    assert longer.max_ms == 1_010_000
    _, shorter = run(store.create(ALICE, ALICE, (), 2_000))  # less than one expiry period
    assert (shorter.max_ms, shorter.expiry_ms) == (1_002_000, 1_002_000)
    _, zero = run(store.create(ALICE, ALICE, (), 0))  # 0 or less: the default
    assert zero.max_ms == 1_010_000


def test_renewal_periods(store: TokenStore, clock: list[int]) -> None:
    _, token = run(store.create(ALICE, ALICE, (BOB,), -1))
    clock[0] += 1_000
    assert run(store.renew(token.hmac, BOB, -1)).expiry_ms == 1_004_000  # the default period
    assert run(store.renew(token.hmac, ALICE, 500)).expiry_ms == 1_001_500  # a shorter one
    assert run(store.renew(token.hmac, ALICE, 60_000)).expiry_ms == 1_004_000  # never longer
    for step, expiry in ((2_500, 1_006_500), (2_500, 1_009_000), (2_000, 1_010_000)):  # capped at the max
        clock[0] += step
        assert run(store.renew(token.hmac, ALICE, -1)).expiry_ms == expiry
    assert run(store.renew(token.hmac, CAROL, -1)).error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    clock[0] += 2_001
    assert run(store.renew(token.hmac, ALICE, -1)).error_code == ErrorCode.DELEGATION_TOKEN_EXPIRED


def test_expiry_periods(store: TokenStore, clock: list[int]) -> None:
    _, token = run(store.create(ALICE, ALICE, (), -1))
    assert run(store.expire(token.hmac, ALICE, 500)).expiry_ms == 1_000_500
    assert run(store.expire(token.hmac, ALICE, 60_000)).expiry_ms == 1_010_000  # capped at the max
    assert run(store.expire(token.hmac, ALICE, 0)).expiry_ms == 1_000_000
    assert store.find(token.token_id) is not None  # expires after this millisecond
    clock[0] += 1
    assert run(store.expire(token.hmac, ALICE, 0)).error_code == ErrorCode.DELEGATION_TOKEN_EXPIRED
    assert run(store.sweep()) == [token.token_id]
    assert run(store.expire(token.hmac, ALICE, 0)).error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND


def test_a_token_credential_is_its_hmac_as_a_scram_password(store: TokenStore) -> None:
    _, token = run(store.create(BOB, ALICE, (), -1))
    found = store.token_credential(token.token_id, ScramMechanism.SCRAM_SHA_512)
    assert found is not None and (found.owner, found.expiry_ms) == ("bob", token.expiry_ms)
    credential = found.credential
    assert credential.iterations == 4096
    salted = hashlib.pbkdf2_hmac("sha512", b64(token.hmac).encode(), credential.salt, 4096)
    client_key = hmac.digest(salted, b"Client Key", "sha512")
    assert hashlib.sha512(client_key).digest() == credential.stored_key
    assert store.token_credential("unknown", ScramMechanism.SCRAM_SHA_512) is None


def test_token_sessions_end_no_later_than_connections_max_reauth_ms(tmp_path: Path) -> None:
    with MockCluster(config=token_config(tmp_path, **{"connections.max.reauth.ms": "1000"})) as running:
        alice = as_user(running, "alice")
        token = alice.create()
        long_lived, answer = as_token(running, token.token_id, token.hmac)
        assert answer.session_lifetime_ms == 1000  # the token has a day left: the broker's limit
        assert alice.expire(token.hmac, period_ms=300).error_code == 0
        short_lived, answer = as_token(running, token.token_id, token.hmac)
        assert 0 < answer.session_lifetime_ms <= 300  # the token ends first
        time.sleep(0.4)
        with pytest.raises(ConnectionError):  # no re-authentication: closed at the next request
            short_lived(ApiVersionsRequest[3]())
        for wire in (alice, long_lived, short_lived):
            wire.close()


def test_the_python_api_issues_tokens(
    cluster: MockCluster, connect: Callable[..., Wire], tmp_path: Path
) -> None:
    token = cluster.credentials.tokens.issue("bob", renewers=["alice"], max_lifetime_ms=HOUR)
    assert (token.owner, token.renewers, token.max_ms - token.issue_ms) == (
        KafkaPrincipal("User", "bob"),
        (KafkaPrincipal("User", "alice"),),
        HOUR,
    )
    wire, answer = as_token(cluster, token.token_id, token.hmac)
    wire.close()
    assert answer.error_code == 0
    assert connect("alice").renew(token.hmac).error_code == 0  # a renewer
    config = token_config(tmp_path)
    del config["delegation.token.secret.key"]
    with MockCluster(config=config) as disabled, pytest.raises(ValueError, match="61"):
        disabled.credentials.tokens.issue("bob")
