"""SASL server mechanics: SCRAM-SHA-256/512 (RFC 5802, RFC 7677) and PLAIN (RFC 4616).

Pure: no sockets, no asyncio. Each server takes the client's tokens one at a time and
returns the challenge to send back, behaving as Apache Kafka's ScramSaslServer and
PlainSaslServer do, down to the messages a client sees on failure. Where Kafka's
parsing departs from the RFCs (ASCII-only names, the client-first-message-bare
rebuilt from its parsed fields, the channel binding not compared), this follows Kafka,
so a client that works against a real broker works here and one that fails there
fails here too.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

MIN_ITERATIONS = 4096  # ScramMechanism.minIterations(), the same for both mechanisms
MAX_ITERATIONS = 16384  # ScramControlManager.MAX_ITERATIONS
PLAIN = "PLAIN"


class ScramMechanism(enum.Enum):
    """The SCRAM mechanisms Kafka supports, with their AlterUserScramCredentials type."""

    mechanism_name: str
    type_code: int
    hash_name: str

    SCRAM_SHA_256 = ("SCRAM-SHA-256", 1, "sha256")
    SCRAM_SHA_512 = ("SCRAM-SHA-512", 2, "sha512")

    def __init__(self, mechanism_name: str, type_code: int, hash_name: str) -> None:
        self.mechanism_name = mechanism_name
        self.type_code = type_code
        self.hash_name = hash_name

    @classmethod
    def from_name(cls, name: str) -> ScramMechanism | None:
        """None for anything else (Kafka's UNKNOWN), including PLAIN."""
        return next((m for m in cls if m.mechanism_name == name), None)

    @classmethod
    def from_type(cls, type_code: int) -> ScramMechanism | None:
        """None for anything else (Kafka's UNKNOWN, type 0)."""
        return next((m for m in cls if m.type_code == type_code), None)

    def hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.digest(key, message, self.hash_name)

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What a broker keeps per (user, mechanism): never the password, only the keys."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def credential_from_salted_password(
    mechanism: ScramMechanism, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    """The credential an AlterUserScramCredentials upsertion stands for (it carries the
    salted password, never the password): StoredKey = H(HMAC(SaltedPassword, "Client Key"))."""
    client_key = mechanism.hmac(salted_password, b"Client Key")
    server_key = mechanism.hmac(salted_password, b"Server Key")
    return ScramCredential(salt, mechanism.hash(client_key), server_key, iterations)


def new_salt() -> bytes:
    """24 random bytes, as kafka-python's and the Java admin client's upsertions use."""
    return secrets.token_bytes(24)


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i) is PBKDF2 with the mechanism's HMAC; Kafka "normalizes" by
    UTF-8 encoding only (no SASLprep). This is what an upsertion carries."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode("utf-8"), salt, iterations)


def credential_from_password(
    mechanism: ScramMechanism, password: str, iterations: int = MIN_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    salt = new_salt() if salt is None else salt
    salted = salted_password(mechanism, password, salt, iterations)
    return credential_from_salted_password(mechanism, salt, salted, iterations)


class SaslAuthenticationError(Exception):
    """Authentication failed. str() is the SaslAuthenticate error_message Kafka sends
    (code 58 SASL_AUTHENTICATION_FAILED); `reason` is the server-side detail, which Kafka
    logs but never sends for most failures, since it may reveal whether a user exists."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason or message


@dataclass(frozen=True, slots=True)
class TokenCredential:
    """What a SCRAM server needs of a delegation token (Kafka's
    DelegationTokenCredentialCallback): its owner's name, the credential derived from its
    HMAC, and when it expires (the session may not outlive it, KIP-368)."""

    owner: str
    credential: ScramCredential
    expiry_ms: int


class SaslServer(Protocol):
    """One authentication exchange on one connection."""

    mechanism: str
    complete: bool
    username: str  # the authorization id, once complete
    token_authenticated: bool  # authenticated with a delegation token (SCRAM tokenauth)
    credential_expiry_ms: int | None  # when the credential used ends (a token's expiry), if ever

    def evaluate(self, token: bytes) -> bytes:
        """The challenge for the client's `token`; raises SaslAuthenticationError."""
        ...


class _Server:
    """What both mechanisms share: the generic failure Kafka sends for a SaslException."""

    def __init__(self, mechanism: str, reauthenticating: bool) -> None:
        self.mechanism = mechanism
        self.complete = False
        self.username = ""
        self.token_authenticated = False
        self.credential_expiry_ms: int | None = None
        self._phase = "re-authentication" if reauthenticating else "authentication"

    def _invalid(self, reason: str) -> SaslAuthenticationError:
        """SaslServerAuthenticator replaces a SaslException's text with this one."""
        return SaslAuthenticationError(
            f"Authentication failed during {self._phase} due to invalid credentials with SASL mechanism "
            f"{self.mechanism}",
            reason,
        )


class PlainServer(_Server):
    """RFC 4616 `[authzid] NUL authcid NUL passwd`, checked as Kafka's PlainSaslServer does."""

    def __init__(self, check_password: Callable[[str, str], bool], reauthenticating: bool = False) -> None:
        super().__init__(PLAIN, reauthenticating)
        self._check_password = check_password

    def evaluate(self, token: bytes) -> bytes:
        # Kafka splits into exactly three fields: missing ones are empty and a third NUL
        # stays in the password, so "expected 3 tokens" can never happen.
        authzid, _, rest = token.decode("utf-8", errors="replace").partition("\0")
        username, _, password = rest.partition("\0")
        if not username:
            raise self._invalid("Authentication failed: username not specified")
        if not password:
            raise self._invalid("Authentication failed: password not specified")
        if not self._check_password(username, password):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        self.username = username
        self.complete = True
        return b""


# ScramMessages' grammar, Java character-class intersections spelt out. ASCII only, as
# in Kafka: a UTF-8 user name fails to parse there, so it does here.
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"  # [\x01-\x7F&&[^,]]
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"  # [\x21-\x7E&&[^,]]
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"  # [\x01-\x7F&&[^=,]] or an escape
_BASE64 = r"(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?:m={_VALUE},)?n=(?P<saslname>{_SASLNAME}),"
    rf"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS})"
)
_CLIENT_FINAL = re.compile(
    rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS},p=(?P<proof>{_BASE64})"
)
TOKEN_AUTH = "tokenauth"  # ScramLoginModule.TOKEN_AUTH_CONFIG


def sasl_name_to_username(sasl_name: str) -> str:
    """RFC 5802 saslname unescaping (=2C is ",", =3D is "="), as ScramFormatter.username."""
    username = sasl_name.replace("=2C", ",")
    if "=" in username.replace("=3D", ""):
        raise ValueError(f"Invalid username: {sasl_name}")
    return username.replace("=3D", "=")


def _b64decode(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def _b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _server_nonce() -> str:
    """ScramFormatter.secureRandomString: 130 random bits in base 36."""
    value, digits = secrets.randbits(130), []
    while value:
        value, digit = divmod(value, 36)
        digits.append("0123456789abcdefghijklmnopqrstuvwxyz"[digit])
    return "".join(reversed(digits)) or "0"


class ScramServer(_Server):
    """RFC 5802 server side: client-first -> server-first, client-final -> server-final."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        lookup: Callable[[str], ScramCredential | None],
        reauthenticating: bool = False,
        server_nonce: Callable[[], str] = _server_nonce,
        token_lookup: Callable[[str], TokenCredential | None] | None = None,
    ) -> None:
        """`lookup` finds a user's credential for this mechanism, `token_lookup` a
        delegation token's by its id (None: no token is ever found); `server_nonce` is
        replaceable so tests can replay the RFC's published exchanges."""
        super().__init__(mechanism.mechanism_name, reauthenticating)
        self.scram = mechanism
        self._lookup = lookup
        self._token_lookup = token_lookup
        self._new_nonce = server_nonce
        self._state = "RECEIVE_CLIENT_FIRST_MESSAGE"
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    def evaluate(self, token: bytes) -> bytes:
        try:
            if self._state == "RECEIVE_CLIENT_FIRST_MESSAGE":
                challenge = self._client_first(token)
                self._state = "RECEIVE_CLIENT_FINAL_MESSAGE"
            elif self._state == "RECEIVE_CLIENT_FINAL_MESSAGE":
                challenge = self._client_final(token)
                self._state = "COMPLETE"
                self.complete = True
            else:
                raise SaslAuthenticationError(f"Unexpected challenge in Sasl server state {self._state}")
        except SaslAuthenticationError:
            self._state = "FAILED"
            raise
        finally:
            if self._state in ("COMPLETE", "FAILED"):
                self._credential = None
        return challenge.encode("utf-8")

    def _client_first(self, token: bytes) -> str:
        message = token.decode("utf-8", errors="replace")
        match = _CLIENT_FIRST.fullmatch(message)
        if match is None:
            raise self._invalid(f"Invalid SCRAM client first message format: {message}")
        extensions = dict(item.split("=", 1) for item in match["extensions"][1:].split(",") if item)
        try:
            username = sasl_name_to_username(match["saslname"])
        except ValueError as exc:
            raise self._invalid("Authentication failed: Credentials could not be obtained") from exc
        authorization_id, expiry_ms = username, None
        if extensions.get(TOKEN_AUTH, "").lower() == "true":
            # The user name is a token id and the password the token's HMAC in base64;
            # the session is the token owner's (ScramSaslServer's tokenAuthenticated path).
            found = self._token_lookup(username) if self._token_lookup is not None else None
            if found is None:
                raise self._invalid(f"Token Authentication failed: Invalid tokenId : {username}")
            credential: ScramCredential | None = found.credential
            authorization_id, expiry_ms = found.owner, found.expiry_ms
        else:
            credential = self._lookup(username)
        if credential is None:
            raise self._invalid("Authentication failed: Invalid user credentials")
        # Kafka compares the authzid as sent (still escaped) with the unescaped name.
        authzid = match["authzid"] or ""
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        if credential.iterations < MIN_ITERATIONS:
            raise self._invalid(
                f"Iterations {credential.iterations} is less than the minimum {MIN_ITERATIONS} for {self.mechanism}"
            )
        # Kafka rebuilds client-first-message-bare from what it parsed: no "m=" part,
        # extensions re-joined (which is what every real client sends anyway).
        bare = f"n={match['saslname']},r={match['nonce']}"
        if extensions:
            bare += "," + ",".join(f"{key}={value}" for key, value in extensions.items())
        self._nonce = match["nonce"] + self._new_nonce()
        self._server_first = f"r={self._nonce},s={_b64encode(credential.salt)},i={credential.iterations}"
        self._client_first_bare = bare
        self._credential = credential
        self.username = authorization_id
        self.token_authenticated = expiry_ms is not None
        self.credential_expiry_ms = expiry_ms
        return self._server_first

    def _client_final(self, token: bytes) -> str:
        assert self._credential is not None
        message = token.decode("utf-8", errors="replace")
        match = _CLIENT_FINAL.fullmatch(message)
        if match is None:
            raise self._invalid(f"Invalid SCRAM client final message format: {message}")
        if match["nonce"] != self._nonce:
            raise self._invalid("Invalid client nonce in the final client message.")
        try:
            channel_binding, proof = _b64decode(match["channel"]), _b64decode(match["proof"])
        except binascii.Error as exc:  # unreachable after the grammar, kept as a guard
            raise self._invalid("Authentication failed: Invalid client final message") from exc
        # Kafka never compares the channel binding with the gs2 header ("biws" for "n,,");
        # it is only re-encoded into the AuthMessage, and extensions are left out of it.
        auth_message = (
            f"{self._client_first_bare},{self._server_first},c={_b64encode(channel_binding)},r={self._nonce}"
        )
        auth_bytes = auth_message.encode("utf-8")
        stored_key = self._credential.stored_key
        client_signature = self.scram.hmac(stored_key, auth_bytes)
        if len(proof) != len(client_signature):
            # Kafka's xor throws here and the connection closes unanswered; failing the
            # exchange is the closest answer a SaslAuthenticate response can give.
            raise self._invalid("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(client_signature, proof, strict=True))
        if not hmac.compare_digest(self.scram.hash(client_key), stored_key):
            raise self._invalid("Invalid client credentials")
        return "v=" + _b64encode(self.scram.hmac(self._credential.server_key, auth_bytes))
