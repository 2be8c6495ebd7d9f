"""The Kafka release the broker presents itself as (broker/releases.py): the tables against
what real releases answered (tests/differential/data/, scripts/capture_apiversions.py),
and `--kafka-version`/`MockCluster(kafka_version=...)` through real clients over TCP."""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic, ResourceType
from kafka import KafkaAdminClient
from kafka.errors import InvalidUpdateVersionError

from broker import MockCluster
from broker.handlers import HANDLERS
from broker.releases import MODELLED, RELEASES, UnknownRelease, release
from messages.registry import request_class, response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.support.process import BrokerProcess, broker_processes, run_broker
from tests.support.wire import encode_request, read_frame, round_trip

DATA = Path(__file__).resolve().parent / "differential" / "data"


def captured(version: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((DATA / f"apiversions-kafka-{version}.json").read_text())
    return loaded


def captured_apis(version: str) -> dict[int, tuple[int, int]]:
    apis: dict[str, list[int]] = captured(version)["apis"]  # type: ignore[assignment]
    return {int(key): (low, high) for key, (low, high) in apis.items()}


@pytest.fixture
def spawn() -> Iterator[Callable[..., BrokerProcess]]:
    with broker_processes() as start:
        yield start


def advertised(bootstrap_servers: str) -> dict[int, tuple[int, int]]:
    """The ranges kafka-python's admin client read from the broker's ApiVersions."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, request_timeout_ms=10_000)
    try:
        return {int(key): (int(low), int(high)) for key, (low, high) in admin.api_versions().items()}
    finally:
        admin.close()


def features(bootstrap_servers: str) -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
    host, port = bootstrap_servers.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        request = request_class(ApiKey.API_VERSIONS)(
            version=4, client_software_name="t", client_software_version="1"
        )
        answer = round_trip(sock, request, 1, "t")
    supported = {f.name: (f.min_version, f.max_version) for f in answer.supported_features}
    return supported, {f.name: f.max_version_level for f in answer.finalized_features}


# -- the tables -------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(RELEASES))
def test_each_release_table_is_what_that_release_answered(name: str) -> None:
    found = RELEASES[name]
    data = captured(found.captured_from)
    assert data["kafka_version"] == found.captured_from
    assert dict(found.apis) == captured_apis(found.captured_from)
    assert {k: [v, v] for k, v in found.finalized_features.items()} == data["finalized_features"]
    assert {k: list(v) for k, v in found.supported_features.items()} == data["supported_features"]
    # ApiVersions lists them in the release's order
    assert list(found.supported_features) == list(data["supported_features"])


def test_the_modelled_release_is_what_the_handlers_serve() -> None:
    modelled = RELEASES[MODELLED]
    for key, spec in HANDLERS.items():
        if key in modelled.apis:
            assert spec.advertised == modelled.apis[key], spec.name
        else:  # only what telemetry.enabled turns on is not in the default cluster's answer
            assert spec.advertised == modelled.config_enabled_apis[key], spec.name
    assert set(HANDLERS) - set(modelled.apis) == {ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY}


def test_an_older_release_serves_client_telemetry_when_enabled() -> None:
    with MockCluster(kafka_version="3.9", config={"telemetry.enabled": "true"}) as cluster:
        answered = advertised(cluster.bootstrap_servers)
    assert answered[ApiKey.GET_TELEMETRY_SUBSCRIPTIONS] == answered[ApiKey.PUSH_TELEMETRY] == (0, 0)


def test_release_names() -> None:
    assert release(None).name == MODELLED == "4.4"
    assert release("3.9.1") is release("3.9")
    for bad in ("3.8", "4", "4.0.x", "latest", "5.0"):
        with pytest.raises(UnknownRelease, match=f"unknown Kafka version '{bad}'.*3.9, 4.0, 4.4"):
            release(bad)


# -- through clients --------------------------------------------------------------------
def assert_presents_3_9(bootstrap_servers: str) -> None:
    """Exactly Kafka 3.9.1's maximum for every API served that 3.9 has, nothing 3.9 lacks,
    and 3.9's features: no group.version, transaction.version or ELR finalized."""
    kafka_3_9 = captured_apis("3.9.1")
    answered = advertised(bootstrap_servers)
    assert set(answered) == set(kafka_3_9) & set(HANDLERS)
    assert {key: high for key, (_, high) in answered.items()} == {key: kafka_3_9[key][1] for key in answered}
    supported, finalized = features(bootstrap_servers)
    assert supported == {"kraft.version": (0, 1), "metadata.version": (1, 21)}
    assert finalized == {"metadata.version": 21}


def test_the_command_line_presents_kafka_3_9(spawn: Callable[..., BrokerProcess]) -> None:
    broker = spawn("--port", "0", "--kafka-version", "3.9")
    assert_presents_3_9(broker.bootstrap_servers())


def test_an_unknown_version_is_refused_on_the_command_line() -> None:
    result = run_broker("--port", "0", "--kafka-version", "3.0")
    assert result.returncode == 2
    assert (
        "unknown Kafka version '3.0': this broker can present itself as Kafka 3.9, 4.0, 4.4" in result.stderr
    )


def test_mock_cluster_presents_kafka_3_9() -> None:
    with MockCluster(kafka_version="3.9") as cluster:
        assert_presents_3_9(cluster.bootstrap_servers)
        assert cluster.release.name == "3.9"


def test_mock_cluster_refuses_an_unknown_version() -> None:
    with pytest.raises(UnknownRelease, match="unknown Kafka version '2.8'"):
        MockCluster(kafka_version="2.8")


def test_kafka_4_0_advertises_its_ranges_and_features() -> None:
    kafka_4_0 = captured_apis("4.0.2")
    with MockCluster(kafka_version="4.0") as cluster:
        answered = advertised(cluster.bootstrap_servers)
        supported, finalized = features(cluster.bootstrap_servers)
    assert answered == {key: kafka_4_0[key] for key in HANDLERS if key in kafka_4_0}
    assert finalized == {"group.version": 1, "transaction.version": 2, "metadata.version": 25}
    assert supported["eligible.leader.replicas.version"] == (0, 1)


def test_a_version_above_the_release_is_not_served() -> None:
    """Produce v12 (4.0+) closes the connection of a 3.9 broker, as 3.9 does; ApiVersions
    v5 is answered in v0 with UNSUPPORTED_VERSION and 3.9's range (KIP-511)."""
    with MockCluster(kafka_version="3.9") as cluster:
        host, port = cluster.bootstrap_servers.rsplit(":", 1)
        produce = request_class(ApiKey.PRODUCE)(
            version=12, transactional_id=None, acks=1, timeout_ms=1000, topic_data=[]
        )
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(encode_request(produce, 1, "t"))
            with pytest.raises(ConnectionError):
                read_frame(sock)
        request = request_class(ApiKey.API_VERSIONS)(
            version=5, client_software_name="t", client_software_version="1"
        )
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(encode_request(request, 2, "t"))
            frame = read_frame(sock)
    assert struct.unpack(">ih", frame[:6]) == (2, ErrorCode.UNSUPPORTED_VERSION)
    answer = response_class(ApiKey.API_VERSIONS).decode(frame[4:], version=0)
    assert {a.api_key: (a.min_version, a.max_version) for a in answer.api_keys}[ApiKey.API_VERSIONS] == (0, 4)


def topic_min_insync_replicas_source(cluster: MockCluster) -> ConfigSource:
    """Where a new topic's min.insync.replicas comes from: the cluster-level record ELR
    writes (DYNAMIC_DEFAULT_BROKER_CONFIG) or Kafka's default (DEFAULT_CONFIG)."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("t", 1, 1)])["t"].result(timeout=10)
    [future] = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "t")]).values()
    return ConfigSource(future.result(timeout=10)["min.insync.replicas"].source)


@pytest.mark.parametrize(
    ("version", "source"),
    [
        ("4.4", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("4.0", ConfigSource.DEFAULT_CONFIG),
        ("3.9", ConfigSource.DEFAULT_CONFIG),
    ],
)
def test_only_releases_with_elr_write_a_cluster_min_insync_replicas(
    version: str, source: ConfigSource
) -> None:
    with MockCluster(kafka_version=version) as cluster:
        assert topic_min_insync_replicas_source(cluster) == source


def test_kafka_3_9_refuses_features_it_does_not_know() -> None:
    with MockCluster(kafka_version="3.9") as cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10_000)
        try:
            with pytest.raises(InvalidUpdateVersionError, match="does not support this feature"):
                admin.update_features({"transaction.version": 2})
        finally:
            admin.close()
