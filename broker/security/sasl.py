"""One connection's SASL authentication on a SASL_PLAINTEXT or SASL_SSL listener: the
state machine of Kafka's SaslServerAuthenticator.

Before authentication completes only ApiVersions (once, first), SaslHandshake and then
SaslAuthenticate are served; any other request closes the connection, as Kafka's
IllegalSaslStateException does. A SaslHandshake v0 switches the connection to raw SASL
tokens (size-prefixed, no Kafka header), the flow of clients older than KIP-152. The
mechanism exchanges themselves live in `broker/security/scram.py`.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from broker.security.scram import (
    PLAIN,
    PlainServer,
    SaslAuthenticationError,
    SaslServer,
    ScramMechanism,
    ScramServer,
)
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from quotas.callback import KafkaPrincipal

if TYPE_CHECKING:
    from broker.config.broker_config import BrokerConfig
    from broker.security.credentials import CredentialStore


SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def enabled_mechanisms(config: BrokerConfig, listener: str) -> list[str]:
    """`sasl.enabled.mechanisms` of a listener; ValueError for one this broker lacks."""
    mechanisms = [
        m.strip().upper() for m in config.for_listener(listener, "sasl.enabled.mechanisms").split(",")
    ]
    mechanisms = [m for m in mechanisms if m]
    unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
    if unsupported or not mechanisms:
        raise ValueError(
            f"listener {listener}: sasl.enabled.mechanisms {','.join(mechanisms) or '(empty)'}:"
            f" supported are {', '.join(SUPPORTED_MECHANISMS)}"
        )
    return mechanisms


def new_session(config: BrokerConfig, listener: str, credentials: CredentialStore) -> SaslSession | None:
    """The authentication a new connection on `listener` must go through, if any."""
    if not config.security_protocol(listener).startswith("SASL_"):
        return None
    return SaslSession(enabled_mechanisms(config, listener), credentials)


class SaslState(enum.Enum):
    HANDSHAKE_OR_VERSIONS = "waiting for ApiVersions or SaslHandshake"
    HANDSHAKE = "waiting for SaslHandshake"
    AUTHENTICATE = "waiting for SaslAuthenticate"
    RAW_TOKENS = "waiting for raw SASL tokens"
    COMPLETE = "authenticated"
    FAILED = "failed"


class IllegalSaslState(Exception):
    """A request the SASL state does not allow: the connection is closed unanswered."""


class SaslSession:
    def __init__(
        self,
        enabled_mechanisms: list[str],
        credentials: CredentialStore,
        reauthenticating: tuple[str, KafkaPrincipal] | None = None,
    ) -> None:
        """`reauthenticating`: the mechanism and principal of the session being renewed
        (KIP-368); such a session starts at the handshake and must keep both."""
        self.enabled_mechanisms = enabled_mechanisms
        self.credentials = credentials
        self.reauthenticating = reauthenticating
        self.state = SaslState.HANDSHAKE if reauthenticating else SaslState.HANDSHAKE_OR_VERSIONS
        self.server: SaslServer | None = None
        self.mechanism = ""

    @property
    def raw_tokens(self) -> bool:
        return self.state is SaslState.RAW_TOKENS

    def check_request(self, api_key: int) -> None:
        """Raises IllegalSaslState unless `api_key` may come now (Kafka's
        handleKafkaRequest and handleSaslToken checks)."""
        state = self.state
        if api_key == ApiKey.API_VERSIONS and state is SaslState.HANDSHAKE_OR_VERSIONS:
            self.state = SaslState.HANDSHAKE
            return
        if api_key == ApiKey.SASL_HANDSHAKE and state in (
            SaslState.HANDSHAKE_OR_VERSIONS,
            SaslState.HANDSHAKE,
        ):
            return
        if api_key == ApiKey.SASL_AUTHENTICATE and state is SaslState.AUTHENTICATE:
            return
        phase = (
            "handshake"
            if state in (SaslState.HANDSHAKE_OR_VERSIONS, SaslState.HANDSHAKE)
            else "authentication"
        )
        raise IllegalSaslState(f"Unexpected Kafka request of type {api_key} during SASL {phase}.")

    def handshake(self, mechanism: str, version: int) -> int:
        """Chooses the mechanism; returns the response's error code. An unsupported
        mechanism is answered with 33 and the enabled list, then the connection closes."""
        if mechanism not in self.enabled_mechanisms or (
            self.reauthenticating is not None and mechanism != self.reauthenticating[0]
        ):
            self.state = SaslState.FAILED
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM
        self.mechanism = mechanism
        self.server = create_sasl_server(mechanism, self.credentials, self.reauthenticating is not None)
        self.state = SaslState.AUTHENTICATE if version >= 1 else SaslState.RAW_TOKENS
        return 0

    def evaluate(self, token: bytes) -> bytes:
        """One client token in, the server's challenge out; raises SaslAuthenticationError
        (the state becomes FAILED) when authentication fails."""
        assert self.server is not None
        try:
            challenge = self.server.evaluate(token)
            if self.server.complete and self.reauthenticating is not None:
                before, after = self.reauthenticating[1], self.principal
                if after != before:  # SaslServerAuthenticator's check
                    raise SaslAuthenticationError(
                        f"Cannot change principals during re-authentication from {before}: {after}"
                    )
        except SaslAuthenticationError:
            self.state = SaslState.FAILED
            raise
        if self.server.complete:
            self.state = SaslState.COMPLETE
        return challenge

    @property
    def complete(self) -> bool:
        return self.state is SaslState.COMPLETE

    @property
    def credential_expiry_ms(self) -> int | None:
        """When the credential used expires (a delegation token's expiry), if it does."""
        return None if self.server is None else self.server.credential_expiry_ms

    @property
    def principal(self) -> KafkaPrincipal:
        """`User:<name>`; after SCRAM with a delegation token, the token owner's name,
        marked token-authenticated (SaslServerAuthenticator.principal)."""
        assert self.server is not None and self.server.complete
        return KafkaPrincipal("User", self.server.username, self.server.token_authenticated)


def create_sasl_server(
    mechanism_name: str, credentials: CredentialStore, reauthenticating: bool = False
) -> SaslServer:
    """The server for a mechanism the client chose in SaslHandshake: PLAIN checks the
    users file, SCRAM the credential store (as Kafka's PLAIN uses JAAS, not SCRAM) and,
    with `tokenauth=true`, the delegation tokens."""
    if mechanism_name == PLAIN:
        return PlainServer(credentials.check_plain, reauthenticating)
    mechanism = ScramMechanism.from_name(mechanism_name)
    if mechanism is None:
        raise ValueError(f"SASL mechanism {mechanism_name!r} is not supported")
    return ScramServer(
        mechanism,
        lambda user: credentials.scram_credential(user, mechanism),
        reauthenticating,
        token_lookup=lambda token_id: credentials.tokens.token_credential(token_id, mechanism),
    )
