"""Certificates made for a test run (the `cryptography` package): a CA, a server
certificate for 127.0.0.1/localhost and client certificates, written as PEM files."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Pem:
    certfile: str
    keyfile: str


@dataclass(frozen=True)
class Certificates:
    cafile: str
    server: Pem
    client: Pem  # subject O=Test,CN=alice-client
    stranger: Pem  # signed by a CA the broker does not trust


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Test"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _write(directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Pem:
    certfile, keyfile = directory / f"{stem}.pem", directory / f"{stem}.key"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return Pem(str(certfile), str(keyfile))


def _issue(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    ca: bool = False,
    server: bool = False,
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        ).add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    else:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False
        )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    return builder.sign(issuer_key, hashes.SHA256())


def make_certificates(directory: Path) -> Certificates:
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("Test CA")
    ca = _issue(ca_name, ca_key, ca_name, ca_key, ca=True)
    (directory / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))

    def leaf(
        stem: str,
        common_name: str,
        server: bool = False,
        issuer: x509.Name = ca_name,
        issuer_key: Any = ca_key,
    ) -> Pem:
        key = ec.generate_private_key(ec.SECP256R1())
        return _write(
            directory, stem, _issue(_name(common_name), key, issuer, issuer_key, server=server), key
        )

    other_key = ec.generate_private_key(ec.SECP256R1())
    other_name = _name("Other CA")
    return Certificates(
        cafile=str(directory / "ca.pem"),
        server=leaf("server", "localhost", server=True),
        client=leaf("client", "alice-client"),
        stranger=leaf("stranger", "mallory", issuer=other_name, issuer_key=other_key),
    )
