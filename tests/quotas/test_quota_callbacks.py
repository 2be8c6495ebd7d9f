"""KIP-257 through the broker: `client.quota.callback.class` loaded from a dotted path,
configured with every broker config; notified of quota changes and cluster metadata;
asked quota_reset_required per request; a callback that raises fails that request as
Kafka fails it, never the broker. And the two shipped callbacks' limits."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka import KafkaAdminClient, KafkaProducer
from kafka import errors as KafkaErrors
from kafka.admin import ConfigResource as KpResource
from kafka.admin import ConfigResourceType, NewPartitions, NewTopic
from kafka.protocol.admin import AlterClientQuotasRequest, IncrementalAlterConfigsRequest
from kafka.protocol.metadata import ApiVersionsRequest

from broker import MockCluster
from quotas.callback import (
    CALLBACK_CONFIG,
    CallbackError,
    ClientQuotaEntity,
    ClientQuotaType,
    Cluster,
    ConfigEntity,
    ConfigEntityType,
    DefaultQuotaCallback,
    KafkaPrincipal,
    load_callback,
)
from quotas.callbacks.partition_proportional import PartitionProportionalCallback
from quotas.callbacks.quota_groups import QuotaGroupsCallback, parse_groups
from tests.conftest import FAST
from tests.support.wire import encode_request

HERE = "tests.quotas.test_quota_callbacks"


class RecordingCallback(DefaultQuotaCallback):
    """Kafka's default behaviour, and a log of every notification."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[Any, ...]] = []
        self.configs: dict[str, str] = {}

    def configure(self, configs: Mapping[str, str]) -> None:
        self.configs = dict(configs)

    def update_quota(self, quota_type: ClientQuotaType, entity: ClientQuotaEntity, new_value: float) -> None:
        self.events.append(("update", quota_type, entity, new_value))
        super().update_quota(quota_type, entity, new_value)

    def remove_quota(self, quota_type: ClientQuotaType, entity: ClientQuotaEntity) -> None:
        self.events.append(("remove", quota_type, entity))
        super().remove_quota(quota_type, entity)

    def update_cluster_metadata(self, cluster: Cluster) -> bool:
        self.events.append(
            (
                "metadata",
                {(p.topic, p.partition, p.leader.id if p.leader else None) for p in cluster.partitions},
            )
        )
        return False


class RaisingCallback(DefaultQuotaCallback):
    """Kafka's default, except for two client ids: "broken-produce" (its produce quota
    fails) and "broken-all" (every quota fails, the request quota included)."""

    def quota_metric_tags(
        self, quota_type: ClientQuotaType, principal: KafkaPrincipal, client_id: str
    ) -> dict[str, str]:
        if client_id == "broken-all" or (
            client_id == "broken-produce" and quota_type is ClientQuotaType.PRODUCE
        ):
            raise RuntimeError("tags exploded")
        return super().quota_metric_tags(quota_type, principal, client_id)


class ResettingCallback(DefaultQuotaCallback):
    """Limits that change without any notification; quota_reset_required says so."""

    limit: float | None = None
    reset = False

    def quota_limit(self, quota_type: ClientQuotaType, metric_tags: Mapping[str, str]) -> float | None:
        return self.limit if quota_type is ClientQuotaType.PRODUCE else None

    def quota_reset_required(self, quota_type: ClientQuotaType) -> bool:
        reset, self.reset = self.reset, False
        return reset


class FixedLimitCallback(DefaultQuotaCallback):
    """Every client id on its own sensor, produce held to 1000 bytes/s."""

    def quota_metric_tags(
        self, quota_type: ClientQuotaType, principal: KafkaPrincipal, client_id: str
    ) -> dict[str, str]:
        return {"user": "", "client-id": client_id}

    def quota_limit(self, quota_type: ClientQuotaType, metric_tags: Mapping[str, str]) -> float | None:
        return 1000.0 if quota_type is ClientQuotaType.PRODUCE else None


class NotACallback:
    pass


class FailingConfigure(DefaultQuotaCallback):
    def configure(self, configs: Mapping[str, str]) -> None:
        raise ValueError("missing setting")


# -- loading ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [f"{HERE}.RecordingCallback", f"{HERE}:RecordingCallback"])
def test_callback_loaded_from_a_dotted_or_colon_path(name: str) -> None:
    callback = load_callback(name, {"custom.key": "v"})
    assert isinstance(callback, RecordingCallback) and callback.configs == {"custom.key": "v"}


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("no.such.module.Callback", "could not be found"),
        (f"{HERE}.Missing", "could not be found"),
        (f"{HERE}.NotACallback", "is not an instance of ClientQuotaCallback"),
        (f"{HERE}.FailingConfigure", "configure() failed: ValueError('missing setting')"),
    ],
)
def test_unusable_callback_class_is_refused(name: str, message: str) -> None:
    with pytest.raises(CallbackError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_callback(name, {})
    with pytest.raises(ValueError, match="client.quota.callback.class|ClientQuotaCallback|configure"):
        MockCluster(config={"client.quota.callback.class": name})


def test_empty_class_name_is_kafkas_default() -> None:
    assert type(load_callback("", {})) is DefaultQuotaCallback


# -- notifications ------------------------------------------------------------------------
@pytest.fixture
def recording_cluster() -> Iterator[MockCluster]:
    config = {**FAST, "client.quota.callback.class": f"{HERE}.RecordingCallback", "plugin.setting": "42"}
    with MockCluster(brokers=2, config=config) as cluster:
        yield cluster


def callback_of(cluster: MockCluster, broker: int = 0) -> Any:
    return cluster.brokers[broker].quota_managers.callback


def alter(
    admin: KafkaAdminClient, entity: list[tuple[str, str | None]], key: str, value: float | None
) -> None:
    Entry = AlterClientQuotasRequest.EntryData
    entry = Entry(
        entity=[Entry.EntityData(entity_type=t, entity_name=n) for t, n in entity],
        ops=[Entry.OpData(key=key, value=value or 0.0, remove=value is None)],
    )
    request = AlterClientQuotasRequest(version=1, entries=[entry], validate_only=False)
    response = admin._manager.run(admin._manager.send, request)
    assert [e.error_code for e in response.entries] == [0]


def test_configure_gets_every_config_with_the_brokers_own_id(recording_cluster: MockCluster) -> None:
    for index, broker in enumerate(recording_cluster.brokers):
        configs = callback_of(recording_cluster, index).configs
        assert configs["plugin.setting"] == "42"  # unknown keys reach the callback
        assert configs["node.id"] == configs["broker.id"] == str(broker.node_id)
        assert configs["quota.window.num"] == "11"


def test_callback_sees_quota_and_metadata_changes_in_order(recording_cluster: MockCluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=recording_cluster.bootstrap_servers)
    for broker in range(2):
        callback_of(recording_cluster, broker).events.clear()
    alter(admin, [("user", "alice"), ("client-id", None)], "producer_byte_rate", 1024.0)
    alter(admin, [("user", None)], "request_percentage", 50.0)
    alter(admin, [("user", "alice"), ("client-id", None)], "producer_byte_rate", None)
    admin.create_topics([NewTopic("audited", 2, 1)])
    admin.create_partitions({"audited": NewPartitions(3)})
    recording_cluster.on_loop(lambda: recording_cluster.state.move_leader("audited", 0, 1))
    admin.delete_topics(["audited"])
    admin.close()

    alice_default = ClientQuotaEntity(
        (ConfigEntity(ConfigEntityType.USER, "alice"), ConfigEntity(ConfigEntityType.DEFAULT_CLIENT_ID, ""))
    )
    default_user = ClientQuotaEntity((ConfigEntity(ConfigEntityType.DEFAULT_USER, ""),))
    for broker in range(2):  # every broker's callback hears everything
        events = callback_of(recording_cluster, broker).events
        assert events[:3] == [
            ("update", ClientQuotaType.PRODUCE, alice_default, 1024.0),
            ("update", ClientQuotaType.REQUEST, default_user, 50.0),
            ("remove", ClientQuotaType.PRODUCE, alice_default),
        ]
        metadata = [e[1] for e in events[3:] if e[0] == "metadata"]
        audited = [{p for p in partitions if p[0] == "audited"} for partitions in metadata]
        leader_0 = recording_cluster.brokers[0].node_id
        leader_1 = recording_cluster.brokers[1].node_id
        assert [len(a) for a in audited] == [2, 3, 3, 0]  # created, partition added, leader moved, deleted
        assert ("audited", 0, leader_1) in audited[2] and ("audited", 0, leader_0) not in audited[2]


# -- failures and resets --------------------------------------------------------------------
def test_a_raising_produce_quota_fails_the_produce_after_the_append(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """KafkaApis records the produce quota in the response callback, after the append:
    the callback's exception makes the response UNKNOWN_SERVER_ERROR for every
    partition while the records are in the log. Other clients are unaffected."""
    with MockCluster(config={"client.quota.callback.class": f"{HERE}.RaisingCallback"}) as cluster:
        cluster.create_topic("harmed", 2)
        broken = KafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers, client_id="broken-produce", retries=0
        )
        try:
            with pytest.raises(KafkaErrors.UnknownError):
                broken.send("harmed", b"x", partition=1).get(timeout=10)
        finally:
            broken.close(timeout=5)
        assert "tags exploded" in caplog.text
        assert cluster.state.topics["harmed"].partitions[1].log.log_end_offset == 1
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "fine"})
        for _ in range(20):
            producer.produce("harmed", b"x" * 1000, partition=0)
        assert producer.flush(10) == 0
        assert cluster.state.topics["harmed"].partitions[0].log.log_end_offset == 20


def test_a_raising_request_quota_leaves_the_request_unanswered(caplog: pytest.LogCaptureFixture) -> None:
    """When the request quota's callback raises too, Kafka's error path fails as well
    and no response is ever sent; here the connection is closed (so the client retries
    at once instead of waiting out its request timeout). The broker serves others."""
    with MockCluster(config={"client.quota.callback.class": f"{HERE}.RaisingCallback"}) as cluster:
        host, port = cluster.bootstrap_servers.split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                encode_request(
                    ApiVersionsRequest[3](client_software_name="t", client_software_version="1"),
                    1,
                    "broken-all",
                )
            )
            assert sock.recv(4) == b""  # closed, unanswered
        assert "tags exploded" in caplog.text
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="fine")
        try:
            assert admin.describe_cluster()["cluster_id"] == cluster.state.cluster_id
        finally:
            admin.close()


def test_quota_reset_required_refreshes_live_limits() -> None:
    with MockCluster(config={"client.quota.callback.class": f"{HERE}.ResettingCallback"}) as cluster:
        callback = callback_of(cluster)
        throttles: list[int] = []
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "throttle_cb": lambda e: throttles.append(e.throttle_time),
            }
        )
        producer.produce("reset", b"x" * 50_000)
        assert producer.flush(10) == 0
        producer.poll(0.2)
        assert not any(throttles)  # no limit yet
        callback.limit, callback.reset = 1000.0, True
        producer.produce("reset", b"x" * 50_000)
        assert producer.flush(10) == 0
        producer.poll(0.5)
        assert any(throttles), "the new limit did not apply"


# -- the shipped callbacks' limits ------------------------------------------------------------
def test_quota_groups_share_one_sensor_and_limit() -> None:
    callback = QuotaGroupsCallback()
    callback.configure(
        {
            "quota.groups": "analytics=User:alice,User:bob;etl=client-id:loader",
            "quota.group.analytics.producer_byte_rate": "2048",
        }
    )
    produce = ClientQuotaType.PRODUCE
    alice, bob, carol = (KafkaPrincipal("User", n) for n in ("alice", "bob", "carol"))
    tags = callback.quota_metric_tags(produce, alice, "app")
    assert tags == callback.quota_metric_tags(produce, bob, "other") == {"user": "analytics", "client-id": ""}
    assert callback.quota_limit(produce, tags) == 2048.0
    etl = callback.quota_metric_tags(produce, carol, "loader")
    assert etl == {"user": "etl", "client-id": ""}
    assert callback.quota_limit(produce, etl) is None
    callback.update_quota(produce, ClientQuotaEntity((ConfigEntity(ConfigEntityType.USER, "etl"),)), 512.0)
    assert callback.quota_limit(produce, etl) == 512.0  # a user quota named after the group
    # Not a member: Kafka's default tags (a user quota exists now, so per user).
    assert callback.quota_metric_tags(produce, carol, "app") == {"user": "carol", "client-id": ""}


@pytest.mark.parametrize("spec", ["analytics", "g=alice", "g=User:", "a=User:x;b=User:x", "g=ip:1.2.3.4"])
def test_quota_groups_config_errors(spec: str) -> None:
    with pytest.raises(ValueError, match="quota.groups"):
        parse_groups(spec)


def test_partition_proportional_limit_follows_leaders(tmp_path: Path) -> None:
    with MockCluster(
        brokers=3,
        config={
            "client.quota.callback.class": "quotas.callbacks.partition_proportional.PartitionProportionalCallback"
        },
    ) as cluster:
        cluster.create_topic("spread", 6)
        cluster.quotas.alter({"user": "alice"}, set={"producer_byte_rate": 600_000})
        tags = {"user": "alice", "client-id": ""}

        def limits() -> list[float | None]:
            return [
                b.quota_managers.callback.quota_limit(ClientQuotaType.PRODUCE, tags) for b in cluster.brokers
            ]

        assert limits() == [200_000.0, 200_000.0, 200_000.0]  # two of six partitions each
        first = cluster.brokers[0].node_id
        for index in range(6):
            cluster.on_loop(lambda i=index: cluster.state.move_leader("spread", i, first))
        assert limits() == [600_000.0, None, None]
        assert isinstance(cluster.brokers[0].quota_managers.callback, PartitionProportionalCallback)
        json.dumps(limits())  # plain numbers


# -- swapped at runtime ------------------------------------------------------------------------
def test_callback_swapped_through_an_admin_client_applies_to_the_next_request() -> None:
    with MockCluster(config=FAST) as cluster:
        throttles: list[int] = []
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "linger.ms": 0,
                "throttle_cb": lambda e: throttles.append(e.throttle_time),
            }
        )

        def produce_one() -> None:
            producer.produce("swapped", b"x" * 20_000)
            assert producer.flush(10) == 0
            producer.poll(0.1)  # throttle_cb is served here

        for _ in range(5):
            produce_one()
        assert not any(throttles)
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)

        def set_class(name: str) -> str:
            resource = KpResource(ConfigResourceType.BROKER, "0", configs={CALLBACK_CONFIG: name})
            return str(admin.alter_configs([resource], raise_on_unknown=False)["broker"]["0"])

        assert set_class(f"{HERE}.FixedLimitCallback") == "OK"
        produce_one()
        assert throttles and throttles[-1] > 0, "the next request was not throttled"
        described = admin.describe_configs([KpResource(ConfigResourceType.BROKER, "0")], config_filter="all")[
            "broker"
        ]["0"][CALLBACK_CONFIG]
        assert (described["value"], described["config_source"]) == (
            f"{HERE}.FixedLimitCallback",
            "DYNAMIC_BROKER_CONFIG",
        )

        # A class that is not usable: Kafka's INVALID_CONFIG with the reason; the old one stays.
        refused = set_class(f"{HERE}.NotACallback")
        assert refused.startswith("[Error 40] InvalidConfigurationError") and "is not an instance" in refused
        refused = set_class("no.such.module.Callback")
        assert "could not be found" in refused
        assert type(callback_of(cluster)) is FixedLimitCallback
        throttles.clear()
        produce_one()
        assert throttles and throttles[-1] > 0
        admin.close()


def test_closed_on_replacement_and_on_shutdown() -> None:
    closed: list[str] = []

    with MockCluster(config={"client.quota.callback.class": f"{HERE}.RecordingCallback"}) as cluster:
        first = callback_of(cluster)
        first.close = lambda: closed.append("first")
        cluster.configs.alter(0, set={CALLBACK_CONFIG: f"{HERE}.FixedLimitCallback"})
        assert closed == ["first"]
        second = callback_of(cluster)
        assert type(second) is FixedLimitCallback
        second.close = lambda: closed.append("second")
        cluster.configs.alter(0, set={"quota.groups": "g=User:alice"})  # a plugin key: reconfigured
        assert closed == ["first", "second"]
        third = callback_of(cluster)
        assert third is not second and type(third) is FixedLimitCallback
        third.close = lambda: closed.append("third")
    assert closed == ["first", "second", "third"]


def test_resources_of_one_request_are_validated_together() -> None:
    """A class set at the cluster default and a setting it refuses, set on broker 0 in the
    same request: the second is checked against the first and refused; nothing unusable
    is left in force."""
    with MockCluster(config=FAST) as cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        request = IncrementalAlterConfigsRequest(
            resources=[
                (4, "", [(CALLBACK_CONFIG, 0, "quotas.callbacks.quota_groups.QuotaGroupsCallback")]),
                (4, "0", [("quota.group.nobody.producer_byte_rate", 0, "1")]),
            ],
            validate_only=False,
        )
        response = admin._manager.run(admin._manager.send, request)
        first, second = response.responses
        assert (first.error_code, second.error_code) == (0, 40)
        assert "configure() failed" in second.error_message
        assert type(callback_of(cluster)) is QuotaGroupsCallback
        admin.close()
