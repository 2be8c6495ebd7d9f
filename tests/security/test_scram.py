"""SCRAM and PLAIN server mechanics against an independent client and the RFC vectors.

The client below is written from RFC 5802 section 3 with hashlib/hmac only; it shares
no code with broker/scram.py. It is itself checked against RFC 5802's SCRAM-SHA-1
example, then drives the server with RFC 7677's SCRAM-SHA-256 exchange byte for byte,
RFC 5802's nonces and salt under SHA-256/512, and random exchanges. Failure messages
are Kafka's (ScramSaslServer, PlainSaslServer, SaslServerAuthenticator).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.config.broker_config import BrokerConfig
from broker.security.credentials import CredentialStore
from broker.security.sasl import create_sasl_server
from broker.security.scram import (
    PlainServer,
    SaslAuthenticationError,
    SaslServer,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    credential_from_password,
    credential_from_salted_password,
)

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


def generic(mechanism: str, phase: str = "authentication") -> str:
    """What SaslServerAuthenticator sends instead of a SaslException's own text."""
    return f"Authentication failed during {phase} due to invalid credentials with SASL mechanism {mechanism}"


AUTHZID_MISMATCH = (
    "Authentication failed: Client requested an authorization id that is different from username"
)


# ----------------------------------------------------------------- independent client


class Client:
    """RFC 5802 client: gs2 header "n," (no channel binding), optional authzid and extensions."""

    def __init__(
        self,
        hash_name: str,
        user: str,
        password: str,
        nonce: str,
        authzid: str = "",
        extensions: str = "",
        sasl_name: str | None = None,
    ) -> None:
        self.hash_name = hash_name
        self.password = password
        self.nonce = nonce
        self.gs2 = f"n,{'a=' + authzid if authzid else ''},"
        name = user.replace("=", "=3D").replace(",", "=2C") if sasl_name is None else sasl_name
        self.bare = f"n={name},r={nonce}" + (f",{extensions}" if extensions else "")
        self.auth_message = b""
        self.salted = b""

    def first(self) -> bytes:
        return (self.gs2 + self.bare).encode()

    def final(self, server_first: bytes, nonce: str | None = None, channel: str | None = None) -> bytes:
        fields = dict(item.split("=", 1) for item in server_first.decode().split(","))
        assert fields["r"].startswith(self.nonce)
        salt, iterations = base64.b64decode(fields["s"]), int(fields["i"])
        self.salted = hashlib.pbkdf2_hmac(self.hash_name, self.password.encode(), salt, iterations)
        client_key = hmac.new(self.salted, b"Client Key", self.hash_name).digest()
        stored_key = hashlib.new(self.hash_name, client_key).digest()
        channel = base64.b64encode(self.gs2.encode()).decode() if channel is None else channel
        without_proof = f"c={channel},r={fields['r'] if nonce is None else nonce}"
        self.auth_message = f"{self.bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.new(stored_key, self.auth_message, self.hash_name).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def server_signature(self) -> bytes:
        server_key = hmac.new(self.salted, b"Server Key", self.hash_name).digest()
        return b"v=" + base64.b64encode(hmac.new(server_key, self.auth_message, self.hash_name).digest())


def server_for(
    mechanism: ScramMechanism, users: dict[str, ScramCredential], nonce: str | None = None
) -> ScramServer:
    if nonce is None:
        return ScramServer(mechanism, users.get)
    return ScramServer(mechanism, users.get, server_nonce=lambda: nonce)


def exchange(server: SaslServer, client: Client) -> bytes:
    server_final = server.evaluate(client.final(server.evaluate(client.first())))
    assert server.complete
    return server_final


def failure(server: SaslServer, token: bytes) -> SaslAuthenticationError:
    with pytest.raises(SaslAuthenticationError) as raised:
        server.evaluate(token)
    assert not server.complete
    return raised.value


# ------------------------------------------------------------------------ RFC vectors

RFC5802 = {  # SCRAM-SHA-1, section 5
    "client_first": b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
    "server_first": b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
    "client_final": b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
    "server_final": b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
}
RFC7677 = {  # SCRAM-SHA-256, section 3
    "client_first": b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
    "server_first": b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    "client_final": (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    ),
    "server_final": b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
}


def test_the_test_client_reproduces_rfc5802_sha1_example() -> None:
    client = Client("sha1", "user", "pencil", "fyko+d2lbbFgONRv9qkxdawL")
    assert client.first() == RFC5802["client_first"]
    assert client.final(RFC5802["server_first"]) == RFC5802["client_final"]
    assert client.server_signature() == RFC5802["server_final"]


def test_rfc7677_sha256_exchange_byte_for_byte() -> None:
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    users = {"user": credential_from_password(SHA256, "pencil", 4096, salt)}
    server = server_for(SHA256, users, nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    assert server.evaluate(RFC7677["client_first"]) == RFC7677["server_first"]
    assert not server.complete
    assert server.evaluate(RFC7677["client_final"]) == RFC7677["server_final"]
    assert server.complete and server.username == "user" and server.mechanism == "SCRAM-SHA-256"


def test_rfc7677_client_agrees_with_the_test_client() -> None:
    client = Client("sha256", "user", "pencil", "rOprNGfwEbeRWgbNEkqO")
    assert client.final(RFC7677["server_first"]) == RFC7677["client_final"]
    assert client.server_signature() == RFC7677["server_final"]


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_rfc5802_flow_under_sha2(mechanism: ScramMechanism) -> None:
    """RFC 5802's user, password, nonces, salt and iterations with Kafka's hashes."""
    salt = base64.b64decode("QSXCR+Q6sek8bf92")
    server = server_for(
        mechanism, {"user": credential_from_password(mechanism, "pencil", 4096, salt)}, "3rfcNHYJY1ZVvWVs7j"
    )
    client = Client(mechanism.hash_name, "user", "pencil", "fyko+d2lbbFgONRv9qkxdawL")
    assert server.evaluate(client.first()) == RFC5802["server_first"]
    assert server.evaluate(client.final(RFC5802["server_first"])) == client.server_signature()


# ----------------------------------------------------------- full exchanges, failures


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CredentialStore]:
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"alice": "alice-secret", "a,b=c": "odd", "bob": "bob-secret"}))
    credentials = CredentialStore.from_config(BrokerConfig({"sasl.users.file": str(users)}))
    yield credentials
    credentials.close()


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_full_exchange_with_random_nonces(store: CredentialStore, mechanism: ScramMechanism) -> None:
    server = create_sasl_server(mechanism.mechanism_name, store)
    client = Client(mechanism.hash_name, "alice", "alice-secret", "c1ientN0nce")
    server_first = server.evaluate(client.first())
    nonce = server_first.decode().split(",")[0][2:]
    assert nonce.startswith("c1ientN0nce") and len(nonce) > len("c1ientN0nce") + 20
    assert server.evaluate(client.final(server_first)) == client.server_signature()
    assert server.complete and server.username == "alice"
    other = create_sasl_server(mechanism.mechanism_name, store)
    assert other.evaluate(client.first()) != server_first  # a fresh server nonce per exchange


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_wrong_password(store: CredentialStore, mechanism: ScramMechanism) -> None:
    server = create_sasl_server(mechanism.mechanism_name, store)
    client = Client(mechanism.hash_name, "alice", "not-her-secret", "abc")
    error = failure(server, client.final(server.evaluate(client.first())))
    assert str(error) == generic(mechanism.mechanism_name)
    assert error.reason == "Invalid client credentials"
    again = failure(server, b"anything")
    assert str(again) == "Unexpected challenge in Sasl server state FAILED"


def test_unknown_user_fails_with_the_same_message_as_a_wrong_password(store: CredentialStore) -> None:
    server = create_sasl_server("SCRAM-SHA-256", store)
    error = failure(server, Client("sha256", "mallory", "x", "abc").first())
    assert str(error) == generic("SCRAM-SHA-256")
    assert error.reason == "Authentication failed: Invalid user credentials"


def test_nonce_mismatch(store: CredentialStore) -> None:
    server = create_sasl_server("SCRAM-SHA-512", store)
    client = Client("sha512", "alice", "alice-secret", "abc")
    server_first = server.evaluate(client.first())
    error = failure(server, client.final(server_first, nonce="abcFORGED"))
    assert str(error) == generic("SCRAM-SHA-512")
    assert error.reason == "Invalid client nonce in the final client message."


def test_exchange_after_completion_is_refused(store: CredentialStore) -> None:
    server = create_sasl_server("SCRAM-SHA-256", store)
    exchange(server, Client("sha256", "alice", "alice-secret", "abc"))
    with pytest.raises(SaslAuthenticationError, match="Unexpected challenge in Sasl server state COMPLETE"):
        server.evaluate(b"n,,n=alice,r=abc")


@pytest.mark.parametrize(
    "token",
    [
        b"",
        b"n",
        b"n,,",
        b"n,,n=alice",
        b"n,,n=alice,r=",
        b"n,,n=,r=abc",
        b"y,,n=alice,r=abc",  # client supports channel binding: Kafka only accepts "n"
        b"p=tls-unique,,n=alice,r=abc",
        b"n,,n=al=ice,r=abc",  # "=" not followed by 2C or 3D
        b"n,,n=alice,r=a,b",
        b"n,,n=alice,r=abc,1ext=x",  # extension names are letters
        b"n,,n=\xc3\xa9lise,r=abc",  # Kafka's saslname grammar is ASCII
        b"n,,n=alice,r=ab\x00c",
        b"\xff\xfe\xfd",
        b"n,,n=alice,r=abc\n",
    ],
)
def test_malformed_client_first(store: CredentialStore, token: bytes) -> None:
    error = failure(create_sasl_server("SCRAM-SHA-256", store), token)
    assert str(error) == generic("SCRAM-SHA-256")


def test_malformed_client_final(store: CredentialStore) -> None:
    client = Client("sha256", "alice", "alice-secret", "abc")
    probe = create_sasl_server("SCRAM-SHA-256", store)
    valid = client.final(probe.evaluate(client.first()))
    nonce = valid.split(b",")[1][2:]
    tokens = [
        b"",
        b"c=biws",
        b"c=biws,r=" + nonce,
        b"c=biws,r=" + nonce + b",p=",  # empty proof: Kafka's xor would throw
        b"c=biws,r=" + nonce + b",p=AAAA",  # proof of the wrong length
        b"c=biws,r=" + nonce + b",p=!!!!",
        b"c=bi,r=" + nonce + b",p=" + valid.split(b",p=")[1],
        b"r=" + nonce + b",c=biws,p=" + valid.split(b",p=")[1],
        b"\x00" * 40,
        bytes(range(256)),
        valid + b",",
    ]
    tokens += [valid[:cut] for cut in range(len(valid))]  # every truncation
    for token in tokens:
        server = create_sasl_server("SCRAM-SHA-256", store)
        server.evaluate(client.first())
        assert str(failure(server, token)) == generic("SCRAM-SHA-256"), token


def test_every_truncated_client_first_is_answered_or_refused(store: CredentialStore) -> None:
    """A prefix may still parse (a shorter nonce); nothing may raise another exception type."""
    first = Client("sha256", "alice", "alice-secret", "abcdef", extensions="foo=bar").first()
    for cut in range(len(first) + 1):
        server = create_sasl_server("SCRAM-SHA-256", store)
        try:
            challenge = server.evaluate(first[:cut])
        except SaslAuthenticationError:
            continue
        assert challenge.startswith(b"r=")


def test_saslname_escaping(store: CredentialStore) -> None:
    client = Client("sha256", "a,b=c", "odd", "abc")
    assert b"n=a=2Cb=3Dc," in client.first()
    server = create_sasl_server("SCRAM-SHA-256", store)
    exchange(server, client)
    assert server.username == "a,b=c"
    raw = Client("sha256", "a,b=c", "odd", "abc", sasl_name="a,b=c")  # unescaped: no parse
    assert str(failure(create_sasl_server("SCRAM-SHA-256", store), raw.first())) == generic("SCRAM-SHA-256")


def test_authzid(store: CredentialStore) -> None:
    exchange(
        create_sasl_server("SCRAM-SHA-256", store),
        Client("sha256", "alice", "alice-secret", "a", authzid="alice"),
    )
    other = Client("sha256", "alice", "alice-secret", "a", authzid="bob")
    error = failure(create_sasl_server("SCRAM-SHA-256", store), other.first())
    assert str(error) == AUTHZID_MISMATCH  # sent as is: Kafka throws SaslAuthenticationException here


def test_extensions(store: CredentialStore) -> None:
    """Unknown extensions are ignored (but part of the AuthMessage); tokenauth=true asks
    for a delegation token, which is never found."""
    exchange(
        create_sasl_server("SCRAM-SHA-512", store),
        Client("sha512", "alice", "alice-secret", "a", extensions="foo=b=r"),
    )
    token = Client("sha512", "alice", "alice-secret", "a", extensions="tokenauth=TRUE")
    error = failure(create_sasl_server("SCRAM-SHA-512", store), token.first())
    assert str(error) == generic("SCRAM-SHA-512")
    assert error.reason.startswith("Token Authentication failed")
    plain = Client("sha512", "alice", "alice-secret", "a", extensions="tokenauth=false")
    exchange(create_sasl_server("SCRAM-SHA-512", store), plain)


def test_channel_binding_is_not_compared_as_in_kafka(store: CredentialStore) -> None:
    """Kafka re-encodes whatever c= carries into the AuthMessage and never checks it
    against the gs2 header; a client proving over that value is accepted."""
    client = Client("sha256", "alice", "alice-secret", "abc")
    server = create_sasl_server("SCRAM-SHA-256", store)
    server_first = server.evaluate(client.first())
    assert server.evaluate(client.final(server_first, channel="eSws")) == client.server_signature()


def test_credential_below_minimum_iterations_is_refused() -> None:
    weak = {"old": credential_from_password(SHA256, "pw", iterations=1000)}
    error = failure(server_for(SHA256, weak), Client("sha256", "old", "pw", "abc").first())
    assert error.reason == "Iterations 1000 is less than the minimum 4096 for SCRAM-SHA-256"


def test_reauthentication_wording() -> None:
    server = ScramServer(SHA256, {}.get, reauthenticating=True)
    assert str(failure(server, b"garbage")) == generic("SCRAM-SHA-256", "re-authentication")


# ---------------------------------------------------------------- credentials, mechanisms


def test_mechanisms() -> None:
    assert [(m.mechanism_name, m.type_code, m.hash_name) for m in ScramMechanism] == [
        ("SCRAM-SHA-256", 1, "sha256"),
        ("SCRAM-SHA-512", 2, "sha512"),
    ]
    assert ScramMechanism.from_name("SCRAM-SHA-512") is SHA512 and ScramMechanism.from_type(1) is SHA256
    assert ScramMechanism.from_name("PLAIN") is None and ScramMechanism.from_type(0) is None


def test_credential_from_salted_password_is_what_an_upsertion_carries() -> None:
    salt = b"0123456789abcdef"
    salted = hashlib.pbkdf2_hmac("sha512", b"pw", salt, 8192)
    assert credential_from_salted_password(SHA512, salt, salted, 8192) == credential_from_password(
        SHA512, "pw", 8192, salt
    )
    client_key = hmac.new(salted, b"Client Key", "sha512").digest()
    credential = credential_from_salted_password(SHA512, salt, salted, 8192)
    assert credential.stored_key == hashlib.sha512(client_key).digest()
    assert credential.server_key == hmac.new(salted, b"Server Key", "sha512").digest()


def test_create_sasl_server(store: CredentialStore) -> None:
    assert isinstance(create_sasl_server("PLAIN", store), PlainServer)
    with pytest.raises(ValueError, match="GSSAPI"):
        create_sasl_server("GSSAPI", store)


async def test_plain_uses_the_users_file_only(store: CredentialStore) -> None:
    """An API-made SCRAM credential does not let a user in with PLAIN (Kafka's PLAIN is JAAS)."""
    await store.upsert_user_async("carol", "carol-secret")
    exchange(create_sasl_server("SCRAM-SHA-256", store), Client("sha256", "carol", "carol-secret", "a"))
    error = failure(create_sasl_server("PLAIN", store), b"\0carol\0carol-secret")
    assert str(error) == "Authentication failed: Invalid username or password"


# ------------------------------------------------------------------------------ PLAIN


@pytest.mark.parametrize(
    ("token", "user"),
    [
        (b"\0alice\0alice-secret", "alice"),
        (b"alice\0alice\0alice-secret", "alice"),
        (b"\0a,b=c\0odd", "a,b=c"),
    ],
)
def test_plain_success(store: CredentialStore, token: bytes, user: str) -> None:
    server = create_sasl_server("PLAIN", store)
    assert server.evaluate(token) == b""
    assert server.complete and server.username == user and server.mechanism == "PLAIN"


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
        (b"\0mallory\0alice-secret", "Authentication failed: Invalid username or password"),
        (b"\0alice\0alice-secret\0", "Authentication failed: Invalid username or password"),  # NUL kept
        (b"bob\0alice\0alice-secret", AUTHZID_MISMATCH),
        (b"\0\0alice-secret", generic("PLAIN")),  # username not specified
        (b"\0alice\0", generic("PLAIN")),  # password not specified
        (b"alice", generic("PLAIN")),  # no NUL: Kafka's split leaves the other fields empty
        (b"", generic("PLAIN")),
        (b"\xff\0\xfe\0\xfd", "Authentication failed: Invalid username or password"),
    ],
)
def test_plain_failures(store: CredentialStore, token: bytes, message: str) -> None:
    assert str(failure(create_sasl_server("PLAIN", store), token)) == message


def test_plain_password_check_is_exact() -> None:
    seen: list[tuple[str, str]] = []

    def check(user: str, password: str) -> bool:
        seen.append((user, password))
        return False

    failure(PlainServer(check), "z\0zoë\0pässword".encode())
    assert seen == [("zoë", "pässword")]
