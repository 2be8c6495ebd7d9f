"""TLS for SSL and SASL_SSL listeners (Python's ssl module, PEM files), and the principal
of a client certificate.

Kafka configures TLS with keystores; a mock takes PEM files under similar names:
`ssl.certfile`, `ssl.keyfile`, `ssl.key.password`, `ssl.cafile` and Kafka's own
`ssl.client.auth` (required, requested, none), each overridable per listener as
`listener.name.<name>.<key>`.
"""

from __future__ import annotations

import ssl
from typing import Any

from broker.config.broker_config import BrokerConfig
from quotas.callback import ANONYMOUS, KafkaPrincipal

CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}

# RFC 2253 keywords, as Java's X500Principal.getName() prints them.
_KEYWORDS = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def server_context(config: BrokerConfig, listener: str) -> ssl.SSLContext | None:
    """The TLS context of `listener`, or None when its security protocol has no TLS."""
    if config.security_protocol(listener) not in ("SSL", "SASL_SSL"):
        return None
    certfile = config.for_listener(listener, "ssl.certfile")
    if not certfile:
        raise ValueError(f"listener {listener} uses TLS: set ssl.certfile (and ssl.keyfile)")
    client_auth = config.for_listener(listener, "ssl.client.auth").strip().lower() or "none"
    if client_auth not in CLIENT_AUTH:
        raise ValueError(f"ssl.client.auth: expected required, requested or none, not {client_auth!r}")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(
        certfile,
        config.for_listener(listener, "ssl.keyfile") or None,
        config.for_listener(listener, "ssl.key.password") or None,
    )
    cafile = config.for_listener(listener, "ssl.cafile")
    if cafile:
        context.load_verify_locations(cafile)
    elif client_auth != "none":
        raise ValueError(f"listener {listener}: ssl.client.auth={client_auth} needs ssl.cafile")
    context.verify_mode = CLIENT_AUTH[client_auth]
    return context


def _escape(value: str) -> str:
    """RFC 2253 escaping of an attribute value."""
    escaped = "".join("\\" + c if c in ',+"\\<>;=' else c for c in value)
    if escaped.startswith((" ", "#")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def distinguished_name(subject: Any) -> str:
    """The certificate subject as `getpeercert()` gives it, in RFC 2253 form (most
    specific first), as Kafka's default SSL principal builder names a client."""
    rdns = []
    for rdn in reversed(subject):
        rdns.append("+".join(f"{_KEYWORDS.get(key, key)}={_escape(value)}" for key, value in rdn))
    return ",".join(rdns)


def peer_principal(ssl_object: ssl.SSLObject | None) -> KafkaPrincipal:
    """`User:<distinguished name>` for a verified client certificate, else ANONYMOUS."""
    if ssl_object is None:
        return ANONYMOUS
    certificate = ssl_object.getpeercert()
    if not certificate or not certificate.get("subject"):
        return ANONYMOUS
    return KafkaPrincipal("User", distinguished_name(certificate["subject"]))
