"""SSL and SASL_SSL listeners with certificates made for the test: real clients connect
with the CA, clients without it (or with a certificate the broker does not trust) are
refused, and a client certificate names the principal as Kafka does (RFC 2253)."""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka.helpers import create_ssl_context
from confluent_kafka import KafkaError, KafkaException, Producer
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

from broker import MockCluster
from broker.security.tls import distinguished_name
from tests.certs import Certificates, make_certificates
from tests.conftest import FAST
from tests.security.test_sasl import aiokafka_round_trip

USERS = {"alice": "alice-secret"}


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certs"))


def tls_config(certs: Certificates, tmp_path: Path, client_auth: str = "none") -> dict[str, str]:
    users = tmp_path / "users.json"
    users.write_text(json.dumps(USERS))
    return {
        **FAST,
        "listeners": "SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "ssl.certfile": certs.server.certfile,
        "ssl.keyfile": certs.server.keyfile,
        "ssl.cafile": certs.cafile,
        "listener.name.ssl.ssl.client.auth": client_auth,
        "sasl.users.file": str(users),
    }


@pytest.fixture
def tls_cluster(certs: Certificates, tmp_path: Path) -> Iterator[MockCluster]:
    with MockCluster(config=tls_config(certs, tmp_path)) as cluster:
        yield cluster


@pytest.fixture
def mtls_cluster(certs: Certificates, tmp_path: Path) -> Iterator[MockCluster]:
    with MockCluster(config=tls_config(certs, tmp_path, client_auth="required")) as cluster:
        yield cluster


def principals(cluster: MockCluster) -> set[str]:
    return cluster.on_loop(lambda: {str(c.principal) for b in cluster.brokers for c in b.connections})


def confluent_outcome(config: dict[str, Any]) -> list[KafkaError]:
    """[] once the client reads metadata, else the errors librdkafka reports."""
    errors: list[KafkaError] = []
    producer = Producer({**config, "error_cb": errors.append})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            producer.list_topics(timeout=0.2)
            return []
        except KafkaException:
            producer.poll(0)
            if errors:
                return errors
    raise AssertionError("neither connected nor refused")


def test_kafka_python_over_ssl(tls_cluster: MockCluster, certs: Certificates) -> None:
    config = {
        "bootstrap_servers": tls_cluster.bootstrap_for("SSL"),
        "security_protocol": "SSL",
        "ssl_cafile": certs.cafile,
    }
    producer = KafkaProducer(**config)
    for i in range(10):
        producer.send("secure", f"m{i}".encode(), partition=0)
    producer.flush(10)
    assert principals(tls_cluster) == {"User:ANONYMOUS"}  # no client certificate asked for
    producer.close()
    consumer = KafkaConsumer(**config, auto_offset_reset="earliest", consumer_timeout_ms=10000)
    consumer.assign([KafkaTopicPartition("secure", 0)])
    assert [r.value for _, r in zip(range(10), consumer, strict=False)] == [
        f"m{i}".encode() for i in range(10)
    ]
    consumer.close()


async def test_aiokafka_over_sasl_ssl_with_scram(certs: Certificates, tmp_path: Path) -> None:
    async with MockCluster(config=tls_config(certs, tmp_path)) as cluster:
        config: dict[str, Any] = {
            "bootstrap_servers": cluster.bootstrap_for("SASL_SSL"),
            "security_protocol": "SASL_SSL",
            "ssl_context": create_ssl_context(cafile=certs.cafile),
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": "alice",
            "sasl_plain_password": USERS["alice"],
        }
        principals, received = await aiokafka_round_trip(cluster, config, "secure", [b"over tls"])
        assert principals == {"User:alice"}
        assert received == [b"over tls"]


def test_client_certificate_names_the_principal(mtls_cluster: MockCluster, certs: Certificates) -> None:
    producer = Producer(
        {
            "bootstrap.servers": mtls_cluster.bootstrap_for("SSL"),
            "security.protocol": "SSL",
            "ssl.ca.location": certs.cafile,
            "ssl.certificate.location": certs.client.certfile,
            "ssl.key.location": certs.client.keyfile,
        }
    )
    producer.produce("secure", b"signed", partition=0)
    assert producer.flush(10) == 0
    # Kafka's default SSL principal: User: + the subject in RFC 2253 form, most specific first.
    assert principals(mtls_cluster) == {"User:CN=alice-client,O=Test"}


def test_client_without_the_ca_is_refused(tls_cluster: MockCluster, certs: Certificates) -> None:
    errors = confluent_outcome(
        {"bootstrap.servers": tls_cluster.bootstrap_for("SSL"), "security.protocol": "SSL"}
    )
    assert errors and any("certificate verify failed" in e.str() for e in errors), errors
    # The broker keeps serving clients that have the CA.
    assert (
        confluent_outcome(
            {
                "bootstrap.servers": tls_cluster.bootstrap_for("SSL"),
                "security.protocol": "SSL",
                "ssl.ca.location": certs.cafile,
            }
        )
        == []
    )


@pytest.mark.parametrize("certificate", [None, "stranger"])
def test_required_client_auth_refuses_missing_or_untrusted_certificates(
    mtls_cluster: MockCluster, certs: Certificates, certificate: str | None
) -> None:
    config = {
        "bootstrap.servers": mtls_cluster.bootstrap_for("SSL"),
        "security.protocol": "SSL",
        "ssl.ca.location": certs.cafile,
    }
    if certificate is not None:
        config["ssl.certificate.location"] = certs.stranger.certfile
        config["ssl.key.location"] = certs.stranger.keyfile
    errors = confluent_outcome(config)
    assert errors and all(
        e.code() in (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN) for e in errors
    )
    assert not principals(mtls_cluster) - {"User:ANONYMOUS"}


def test_bad_tls_configuration_fails_at_start(certs: Certificates, tmp_path: Path) -> None:
    config = tls_config(certs, tmp_path)
    with pytest.raises(ValueError, match="set ssl.certfile"):
        MockCluster(config={**config, "ssl.certfile": ""})
    with pytest.raises(ValueError, match="ssl.client.auth"):
        MockCluster(config={**config, "listener.name.ssl.ssl.client.auth": "sometimes"})
    with pytest.raises(ssl.SSLError):
        MockCluster(config={**config, "ssl.keyfile": certs.client.keyfile})  # not the certificate's key


def test_distinguished_name_escapes_as_rfc_2253() -> None:
    subject = (
        (("countryName", "GB"),),
        (("organizationName", "Acme, Inc."),),
        (("organizationalUnitName", "Ops"), ("commonName", "#root ")),
    )
    assert distinguished_name(subject) == r"OU=Ops+CN=\#root\ ,O=Acme\, Inc.,C=GB"
