"""Dynamic broker configs over TCP: IncrementalAlterConfigs (44), AlterConfigs (33) and
DescribeConfigs (32) through kafka-python's KafkaAdminClient and confluent-kafka's
AdminClient (librdkafka).

Both admin clients refuse the empty broker name of the cluster-wide default, so requests
on it go through kafka-python's own request structs and network client, as do the
malformed requests the admin clients would not build. Codes and messages are Kafka's
(ConfigAdminManager, DynamicBrokerConfig, ConfigurationControlManager, ControllerApis,
ConfigHelper).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import AlterConfigOp, ConfigResourceType
from kafka.admin import ConfigResource as KpResource
from kafka.errors import MessageSizeTooLargeError
from kafka.protocol.admin import AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest
from kafka.protocol.metadata import MetadataRequest

from broker import MockCluster
from tests.conftest import FAST

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
BROKER, TOPIC = 4, 2
TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED = 29, 31
UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG, INVALID_REQUEST = 3, 40, 42
# DescribeConfigs sources
DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 2, 3, 4, 5
USERS = {"alice": "alice-secret", "admin": "admin-secret"}


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=2, config=FAST) as running:
        yield running


@pytest.fixture
def admin(cluster: MockCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)
    yield client
    client.close()


def send(admin: KafkaAdminClient, request: Any, node_id: int = 0) -> Any:
    """A request built from kafka-python's structs, sent to `node_id` by its client."""
    return admin._manager.run(admin._manager.send, request, node_id)


def incremental(
    admin: KafkaAdminClient, name: str, *ops: tuple[str, int, str | None], node_id: int = 0, **kw: Any
) -> tuple[int, str | None]:
    response = send(
        admin, IncrementalAlterConfigsRequest(resources=[(BROKER, name, list(ops))], **kw), node_id
    )
    [result] = response.responses
    return result.error_code, result.error_message


def described(
    admin: KafkaAdminClient, name: str, node_id: int = 0, keys: list[str] | None = None
) -> dict[str, Any]:
    """{config: (value, source, [(synonym, value, source)], read_only, sensitive)}."""
    response = send(
        admin, DescribeConfigsRequest(resources=[(BROKER, name, keys)], include_synonyms=True), node_id
    )
    [result] = response.results
    assert (result.error_code, result.error_message) == (0, "")
    return {
        c.name: (
            c.value,
            c.config_source,
            [(s.name, s.value, s.source) for s in c.synonyms],
            c.read_only,
            c.is_sensitive,
        )
        for c in result.configs
    }


def kp_describe(admin: KafkaAdminClient, broker: str) -> dict[str, dict[str, Any]]:
    configs = admin.describe_configs(
        [KpResource(ConfigResourceType.BROKER, broker)], include_synonyms=True, config_filter="all"
    )
    result: dict[str, dict[str, Any]] = configs["broker"][broker]
    return result


def ck_alter(admin: AdminClient, resource: ConfigResource, **kw: Any) -> tuple[int, str] | None:
    [future] = admin.incremental_alter_configs([resource], **kw).values()
    try:
        future.result(timeout=10)
    except KafkaException as exc:
        return exc.args[0].code(), exc.args[0].str()
    return None


def ck_describe(admin: AdminClient, resource: ConfigResource) -> dict[str, Any]:
    [future] = admin.describe_configs([resource]).values()
    configs: dict[str, Any] = future.result(timeout=10)
    return configs


def entry(name: str, value: str | None, op: AlterConfigOpType = AlterConfigOpType.SET) -> ConfigEntry:
    return ConfigEntry(name, value, incremental_operation=op)


# -- per broker and cluster-wide, with sources ---------------------------------------------


def test_per_broker_value_and_its_sources_through_kafka_python(
    cluster: MockCluster, admin: KafkaAdminClient
) -> None:
    result = admin.alter_configs(
        [KpResource(ConfigResourceType.BROKER, "1", configs={"message.max.bytes": "2000"})]
    )
    assert result == {"broker": {"1": "OK"}}
    on_1 = kp_describe(admin, "1")["message.max.bytes"]
    assert (on_1["value"], on_1["config_source"], on_1["read_only"]) == (
        "2000",
        "DYNAMIC_BROKER_CONFIG",
        False,
    )
    assert on_1["synonyms"] == [
        {"name": "message.max.bytes", "value": "2000", "source": "DYNAMIC_BROKER_CONFIG"},
        {"name": "message.max.bytes", "value": "1048588", "source": "DEFAULT_CONFIG"},
    ]
    on_0 = kp_describe(admin, "0")["message.max.bytes"]
    assert (on_0["value"], on_0["config_source"]) == ("1048588", "DEFAULT_CONFIG")
    assert kp_describe(admin, "0")["node.id"]["read_only"] is True
    assert cluster.brokers[1].config.get_int("message.max.bytes") == 2000


def test_each_broker_describes_its_own_node_id_and_rack() -> None:
    """Kafka answers a BROKER resource from that broker's own KafkaConfig (ConfigHelper.
    describeConfigs): broker 1 says node.id 1 and its own entry of the rack list, both
    STATIC_BROKER_CONFIG; a broker without a rack shows broker.rack null and no synonym.
    Both admin clients send a broker's resource to that broker."""
    with MockCluster(brokers=3, config={**FAST, "broker.rack": "rack-a,rack-b,"}) as racked:
        ck = AdminClient({"bootstrap.servers": racked.bootstrap_servers})
        for node_id, rack in ((0, "rack-a"), (1, "rack-b")):
            configs = ck_describe(ck, ConfigResource(ResourceType.BROKER, str(node_id)))
            assert (configs["node.id"].value, configs["node.id"].source) == (str(node_id), STATIC)
            assert (configs["broker.rack"].value, configs["broker.rack"].source) == (rack, STATIC)
        kp = KafkaAdminClient(bootstrap_servers=racked.bootstrap_servers, request_timeout_ms=10000)
        try:
            on_1 = described(kp, "1", node_id=1, keys=["node.id", "broker.rack"])
            assert on_1 == {
                "node.id": ("1", STATIC, [("node.id", "1", STATIC)], True, False),
                "broker.rack": ("rack-b", STATIC, [("broker.rack", "rack-b", STATIC)], True, False),
            }
            on_2 = described(kp, "2", node_id=2, keys=["node.id", "broker.rack"])
            assert on_2["node.id"][:3] == ("2", STATIC, [("node.id", "2", STATIC)])
            assert on_2["broker.rack"][:3] == (None, DEFAULT, [])
            # Another broker's resource: that broker is not the one asked (ConfigHelper).
            response = send(kp, DescribeConfigsRequest(resources=[(BROKER, "2", None)]), node_id=1)
            assert [(r.error_code, r.error_message) for r in response.results] == [
                (INVALID_REQUEST, "Unexpected broker id, expected 1 or empty string, but received 2")
            ]
        finally:
            kp.close()


def test_cluster_default_and_precedence(cluster: MockCluster, admin: KafkaAdminClient) -> None:
    assert incremental(admin, "", ("num.partitions", SET, "3"), ("log.retention.bytes", SET, "1000")) == (
        0,
        None,
    )
    assert described(admin, "") == {
        # ELR's cluster-level record (Kafka 4.1+ bootstraps it)
        "min.insync.replicas": (
            "1",
            DYNAMIC_DEFAULT,
            [("min.insync.replicas", "1", DYNAMIC_DEFAULT)],
            False,
            False,
        ),
        "num.partitions": ("3", DYNAMIC_DEFAULT, [("num.partitions", "3", DYNAMIC_DEFAULT)], False, False),
        "log.retention.bytes": (
            "1000",
            DYNAMIC_DEFAULT,
            [("log.retention.bytes", "1000", DYNAMIC_DEFAULT)],
            False,
            False,
        ),
    }
    assert described(admin, "", node_id=1, keys=["num.partitions"]) == {
        "num.partitions": ("3", DYNAMIC_DEFAULT, [("num.partitions", "3", DYNAMIC_DEFAULT)], False, False)
    }
    assert incremental(admin, "1", ("num.partitions", SET, "5"), node_id=1) == (0, None)
    assert described(admin, "1", node_id=1, keys=["num.partitions"])["num.partitions"][:3] == (
        "5",
        DYNAMIC_BROKER,
        [
            ("num.partitions", "5", DYNAMIC_BROKER),
            ("num.partitions", "3", DYNAMIC_DEFAULT),
            ("num.partitions", "1", DEFAULT),
        ],
    )
    assert described(admin, "0", keys=["num.partitions"])["num.partitions"][:2] == ("3", DYNAMIC_DEFAULT)
    # Deleting the broker's own value falls back to the cluster-wide one.
    assert incremental(admin, "1", ("num.partitions", DELETE, None), node_id=1) == (0, None)
    assert described(admin, "1", node_id=1, keys=["num.partitions"])["num.partitions"][:2] == (
        "3",
        DYNAMIC_DEFAULT,
    )
    assert incremental(admin, "", ("num.partitions", DELETE, None)) == (0, None)
    assert described(admin, "", keys=["num.partitions", "log.retention.bytes"]) == {
        "log.retention.bytes": (
            "1000",
            DYNAMIC_DEFAULT,
            [("log.retention.bytes", "1000", DYNAMIC_DEFAULT)],
            False,
            False,
        )
    }


def test_empty_key_list_describes_everything(admin: KafkaAdminClient) -> None:
    assert described(admin, "0", keys=[]).keys() == described(admin, "0", keys=None).keys()
    assert "auto.create.topics.enable" in described(admin, "0", keys=[])


def test_unknown_keys_are_accepted_and_listed_as_kafka_lists_them(admin: KafkaAdminClient) -> None:
    """Keys Kafka has no type for (a plugin's) are accepted; DescribeConfigs shows them as
    sensitive (no value) and read-only, with their source."""
    assert incremental(admin, "", ("quota.groups", SET, "g:alice")) == (0, None)
    assert described(admin, "0")["quota.groups"] == (
        None,
        DYNAMIC_DEFAULT,
        [("quota.groups", None, DYNAMIC_DEFAULT)],
        True,
        True,
    )


# -- operations ---------------------------------------------------------------------------


def test_append_and_subtract_through_confluent_kafka(cluster: MockCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    mechanisms = "sasl.enabled.mechanisms"
    broker = ConfigResource(
        ResourceType.BROKER, "0", incremental_configs=[entry(mechanisms, "PLAIN", AlterConfigOpType.SUBTRACT)]
    )
    assert ck_alter(admin, broker) is None
    assert (
        ck_describe(admin, ConfigResource(ResourceType.BROKER, "0"))[mechanisms].value
        == "SCRAM-SHA-256,SCRAM-SHA-512"
    )
    broker = ConfigResource(
        ResourceType.BROKER,
        "0",
        incremental_configs=[entry(mechanisms, "PLAIN,SCRAM-SHA-512", AlterConfigOpType.APPEND)],
    )
    assert ck_alter(admin, broker) is None
    described_0 = ck_describe(admin, ConfigResource(ResourceType.BROKER, "0"))[mechanisms]
    assert (described_0.value, described_0.source) == ("SCRAM-SHA-256,SCRAM-SHA-512,PLAIN", DYNAMIC_BROKER)
    not_a_list = ConfigResource(
        ResourceType.BROKER, "1", incremental_configs=[entry("num.partitions", "2", AlterConfigOpType.APPEND)]
    )
    assert ck_alter(admin, not_a_list) == (
        INVALID_CONFIG,
        "Config value append is not allowed for config key: num.partitions",
    )
    cluster.create_topic("compacted")
    topic = ConfigResource(
        ResourceType.TOPIC,
        "compacted",
        incremental_configs=[entry("cleanup.policy", "compact", AlterConfigOpType.APPEND)],
    )
    assert ck_alter(admin, topic) is None
    policy = ck_describe(admin, ConfigResource(ResourceType.TOPIC, "compacted"))["cleanup.policy"]
    assert (policy.value, policy.source) == ("delete,compact", 1)
    topic = ConfigResource(
        ResourceType.TOPIC,
        "compacted",
        incremental_configs=[entry("retention.ms", "1", AlterConfigOpType.SUBTRACT)],
    )
    assert ck_alter(admin, topic) == (
        INVALID_CONFIG,
        "Can't SUBTRACT to key retention.ms because its type is not LIST.",
    )
    missing = ConfigResource(ResourceType.TOPIC, "missing", incremental_configs=[entry("retention.ms", "1")])
    assert ck_alter(admin, missing) == (UNKNOWN_TOPIC_OR_PARTITION, "The topic 'missing' does not exist.")


def test_validate_only_changes_nothing(cluster: MockCluster, admin: KafkaAdminClient) -> None:
    resource = KpResource(ConfigResourceType.BROKER, "0", configs={"num.partitions": "4"})
    assert admin.alter_configs([resource], validate_only=True) == {"broker": {"0": "OK"}}
    assert kp_describe(admin, "0")["num.partitions"]["value"] == "1"
    refused = KpResource(ConfigResourceType.BROKER, "0", configs={"num.partitions": "0"})
    assert admin.alter_configs([refused], validate_only=True, raise_on_unknown=False) == {
        "broker": {
            "0": "[Error 42] InvalidRequestError: Invalid value 0 for configuration num.partitions: Value must be at least 1"
        }
    }
    ck = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    resource_ck = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[entry("num.partitions", "4")])
    assert ck_alter(ck, resource_ck, validate_only=True) is None
    assert cluster.configs.describe(1)["num.partitions"][0] == "1"


def test_refusals_with_kafkas_codes_and_messages(admin: KafkaAdminClient) -> None:
    def kp(configs: dict[str, Any]) -> str:
        result = admin.alter_configs(
            [KpResource(ConfigResourceType.BROKER, "0", configs=configs)], raise_on_unknown=False
        )
        return str(result["broker"]["0"])

    assert (
        kp({"node.id": "3"})
        == "[Error 42] InvalidRequestError: Cannot update these configs dynamically: [node.id]"
    )
    assert kp({"num.partitions": "many"}) == (
        "[Error 42] InvalidRequestError: Invalid value many for configuration num.partitions: Not a number of type INT"
    )
    assert kp({"auto.create.topics.enable": "yes"}) == (
        "[Error 42] InvalidRequestError: Invalid value yes for configuration auto.create.topics.enable: "
        "Expected value to be either true or false"
    )
    assert kp({"num.partitions": ("SUBTRACT", "1")}) == (
        "[Error 40] InvalidConfigurationError: Config value subtract is not allowed for config key: num.partitions"
    )
    assert incremental(admin, "", ("sasl.enabled.mechanisms", SET, "PLAIN")) == (
        INVALID_REQUEST,
        "Cannot update these configs at default cluster level, broker id must be specified: [sasl.enabled.mechanisms]",
    )
    assert incremental(admin, "", ("num.partitions", SET, None)) == (
        INVALID_REQUEST,
        "Null value not supported for : num.partitions",
    )


def test_other_broker_ids_are_refused(admin: KafkaAdminClient) -> None:
    """A broker's own configs are altered and described on that broker (the admin clients
    route them there); another id is the receiving broker's INVALID_REQUEST."""
    assert incremental(admin, "7", ("num.partitions", SET, "2")) == (
        INVALID_REQUEST,
        "Unexpected broker id, expected 0, but received 7",
    )
    assert incremental(admin, "1", ("num.partitions", SET, "2")) == (
        INVALID_REQUEST,
        "Unexpected broker id, expected 0, but received 1",
    )
    assert incremental(admin, "one", ("num.partitions", SET, "2")) == (
        INVALID_REQUEST,
        "Node id must be an integer, but it is: one",
    )
    response = send(admin, DescribeConfigsRequest(resources=[(BROKER, "7", None), (BROKER, "x", None)]))
    assert [(r.error_code, r.error_message, r.configs) for r in response.results] == [
        (INVALID_REQUEST, "Unexpected broker id, expected 0 or empty string, but received 7", []),
        (INVALID_REQUEST, "Broker id must be an integer, but it is: x", []),
    ]


def test_alter_configs_replaces_the_whole_layer(cluster: MockCluster, admin: KafkaAdminClient) -> None:
    assert incremental(admin, "0", ("num.partitions", SET, "2"), ("message.max.bytes", SET, "3000")) == (
        0,
        None,
    )
    response = send(
        admin,
        AlterConfigsRequest(resources=[(BROKER, "0", [("message.max.bytes", "4000")])], validate_only=False),
    )
    assert [(r.error_code, r.error_message) for r in response.responses] == [(0, None)]
    assert {k: v for k, v in cluster.configs.describe(0).items() if v[1] == DYNAMIC_BROKER} == {
        "message.max.bytes": ("4000", DYNAMIC_BROKER)
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ck = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        [future] = ck.alter_configs(
            [ConfigResource(ResourceType.BROKER, "0", set_config={"num.partitions": "6"})]
        ).values()
        future.result(timeout=10)
    assert {k: v for k, v in cluster.configs.describe(0).items() if v[1] == DYNAMIC_BROKER} == {
        "num.partitions": ("6", DYNAMIC_BROKER)
    }
    response = send(
        admin,
        AlterConfigsRequest(
            resources=[(BROKER, "", [("node.id", "1")]), (BROKER, "", [("num.partitions", "2")])],
            validate_only=False,
        ),
    )
    assert [(r.error_code, r.error_message) for r in response.responses] == [
        (INVALID_REQUEST, "Each resource must appear at most once."),
        (INVALID_REQUEST, "Each resource must appear at most once."),
    ]


# -- hooks --------------------------------------------------------------------------------


def test_a_validator_refuses_and_a_listener_hears(cluster: MockCluster, admin: KafkaAdminClient) -> None:
    heard: list[set[str]] = []
    asked: list[dict[str, str]] = []

    def no_odd_partitions(values: dict[str, str]) -> str | None:
        asked.append(values)
        return "odd partition counts are not allowed here" if int(values["num.partitions"]) % 2 else None

    def install() -> None:
        cluster.brokers[0].config_validators.append(no_odd_partitions)
        cluster.brokers[0].config_listeners.append(heard.append)

    cluster.on_loop(install)
    assert incremental(admin, "0", ("num.partitions", SET, "3"), ("plugin.setting", SET, "x")) == (
        INVALID_CONFIG,
        "odd partition counts are not allowed here",
    )
    assert asked[-1]["plugin.setting"] == "x" and heard == []
    assert incremental(admin, "0", ("num.partitions", SET, "4"), ("plugin.setting", SET, "x")) == (0, None)
    assert heard == [{"num.partitions", "plugin.setting"}]
    # A cluster-wide change reaches broker 0 only where its effective value changes.
    assert incremental(admin, "", ("num.partitions", SET, "8"), ("message.max.bytes", SET, "5000")) == (
        0,
        None,
    )
    assert heard[-1] == {"message.max.bytes"}


# -- authorization ------------------------------------------------------------------------


def test_only_super_users_alter_or_describe_broker_configs(tmp_path: Path) -> None:
    users = tmp_path / "users.json"
    users.write_text(json.dumps(USERS))
    config = {
        **FAST,
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.users.file": str(users),
        "authorizer.enabled": "true",
        "super.users": "User:admin",
    }
    with MockCluster(config=config) as cluster:
        cluster.create_topic("t")

        def client(user: str) -> KafkaAdminClient:
            return KafkaAdminClient(
                bootstrap_servers=cluster.bootstrap_for("SASL_PLAINTEXT"),
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanism="PLAIN",
                sasl_plain_username=user,
                sasl_plain_password=USERS[user],
            )

        alice, admin = client("alice"), client("admin")
        try:
            request = IncrementalAlterConfigsRequest(
                resources=[
                    (BROKER, "0", [("num.partitions", SET, "2")]),
                    (TOPIC, "t", [("retention.ms", SET, "1000")]),
                    (BROKER, "", [("node.id", SET, "2")]),
                ],
                validate_only=False,
            )
            refused = send(alice, request)
            # The receiving broker validates BROKER resources before the controller
            # authorizes, so the read-only key is reported as such even to alice.
            assert [(r.error_code, r.error_message) for r in refused.responses] == [
                (CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
                (TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
                (INVALID_REQUEST, "Cannot update these configs dynamically: [node.id]"),
            ]
            assert cluster.configs.describe(0)["num.partitions"][0] == "1"
            legacy = send(
                alice,
                AlterConfigsRequest(
                    resources=[(BROKER, "0", [("num.partitions", "2")])], validate_only=False
                ),
            )
            # Kafka's legacy AlterConfigs answers a refused broker resource without a message
            assert [(r.error_code, r.error_message) for r in legacy.responses] == [
                (CLUSTER_AUTHORIZATION_FAILED, None)
            ]
            # Refused resources come after the described ones, as in Kafka's ConfigHelper.
            cluster.acls.add("User:alice", "DESCRIBE_CONFIGS", "TOPIC", "t")
            describe = send(
                alice, DescribeConfigsRequest(resources=[(BROKER, "0", None), (TOPIC, "t", ["retention.ms"])])
            )
            assert [(r.resource_type, r.error_code, r.error_message) for r in describe.results] == [
                (TOPIC, 0, ""),
                (BROKER, CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
            ]
            allowed = send(admin, request)
            assert [r.error_code for r in allowed.responses] == [0, 0, INVALID_REQUEST]
            assert cluster.configs.describe(0)["num.partitions"] == ("2", DYNAMIC_BROKER)
            assert cluster.state.topics["t"].configs == {"retention.ms": "1000"}
        finally:
            alice.close()
            admin.close()


# -- persistence and effect ---------------------------------------------------------------


def test_changes_survive_a_restart_with_a_state_dir(tmp_path: Path) -> None:
    config = {**FAST, "state.dir": str(tmp_path / "state")}
    with MockCluster(brokers=2, config=config) as first:
        admin = KafkaAdminClient(bootstrap_servers=first.bootstrap_servers)
        try:
            assert incremental(admin, "", ("num.partitions", SET, "3")) == (0, None)
            assert incremental(admin, "1", ("message.max.bytes", SET, "7000"), node_id=1) == (0, None)
        finally:
            admin.close()
    assert (tmp_path / "state" / "configs.sqlite").exists()
    with MockCluster(brokers=2, config=config) as second:
        admin = KafkaAdminClient(bootstrap_servers=second.bootstrap_servers)
        try:
            assert described(admin, "") == {
                "min.insync.replicas": (
                    "1",
                    DYNAMIC_DEFAULT,
                    [("min.insync.replicas", "1", DYNAMIC_DEFAULT)],
                    False,
                    False,
                ),
                "num.partitions": (
                    "3",
                    DYNAMIC_DEFAULT,
                    [("num.partitions", "3", DYNAMIC_DEFAULT)],
                    False,
                    False,
                ),
            }
            on_1 = kp_describe(admin, "1")["message.max.bytes"]
            assert (on_1["value"], on_1["config_source"]) == ("7000", "DYNAMIC_BROKER_CONFIG")
        finally:
            admin.close()


def metadata_error(admin: KafkaAdminClient, topic: str, node_id: int) -> int:
    request = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=True
    )
    [entry] = send(admin, request, node_id).topics
    return int(entry.error_code)


def test_runtime_changes_take_effect_on_the_next_request(
    cluster: MockCluster, admin: KafkaAdminClient
) -> None:
    # Auto-creation as Kafka 4.x: unknown while the controller creates it, then there.
    assert metadata_error(admin, "auto-1", 0) == UNKNOWN_TOPIC_OR_PARTITION
    assert metadata_error(admin, "auto-1", 0) == 0 and "auto-1" in cluster.state.topics
    assert incremental(admin, "", ("auto.create.topics.enable", SET, "false")) == (0, None)
    assert incremental(
        admin, "1", ("auto.create.topics.enable", SET, "true"), ("num.partitions", SET, "3"), node_id=1
    ) == (0, None)
    assert metadata_error(admin, "auto-2", 0) == UNKNOWN_TOPIC_OR_PARTITION
    assert metadata_error(admin, "auto-2", 0) == UNKNOWN_TOPIC_OR_PARTITION
    assert "auto-2" not in cluster.state.topics
    # Broker 1's own value wins over the cluster-wide default, and so does its num.partitions.
    assert metadata_error(admin, "auto-2", 1) == UNKNOWN_TOPIC_OR_PARTITION
    assert metadata_error(admin, "auto-2", 1) == 0
    assert len(cluster.state.topics["auto-2"].partitions) == 3
    # message.max.bytes lowered on every broker: the next produce is refused.
    cluster.create_topic("small")
    assert incremental(admin, "", ("message.max.bytes", SET, "200")) == (0, None)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, retries=0)
    try:
        with pytest.raises(MessageSizeTooLargeError):
            producer.send("small", b"x" * 1000).get(timeout=10)
        assert incremental(admin, "", ("message.max.bytes", DELETE, None)) == (0, None)
        assert producer.send("small", b"x" * 1000).get(timeout=10).offset == 0
    finally:
        producer.close()


def test_kafka_python_incremental_ops(admin: KafkaAdminClient) -> None:
    mechanisms = "sasl.enabled.mechanisms"
    resource = KpResource(
        ConfigResourceType.BROKER, "0", configs={mechanisms: (AlterConfigOp.SUBTRACT, "SCRAM-SHA-256")}
    )
    assert admin.alter_configs([resource]) == {"broker": {"0": "OK"}}
    assert kp_describe(admin, "0")[mechanisms]["value"] == "PLAIN,SCRAM-SHA-512"
    assert admin.reset_configs([KpResource(ConfigResourceType.BROKER, "0", configs=[mechanisms])]) == {
        "broker": {"0": "OK"}
    }
    assert kp_describe(admin, "0")[mechanisms]["config_source"] == "DEFAULT_CONFIG"


def test_unset_log_retention_ms_is_described_as_a_null_default(admin: KafkaAdminClient) -> None:
    """Asked for by name, as Kafka: a default (source 5) with no value, typed LONG, not read-only."""
    request = DescribeConfigsRequest(resources=[(BROKER, "0", ["log.retention.ms"])], include_synonyms=False)
    [result] = send(admin, request).results
    [config] = result.configs
    assert (config.name, config.value, config.read_only, config.config_source, config.is_sensitive) == (
        "log.retention.ms",
        None,
        False,
        5,
        False,
    )
    assert config.config_type == 5  # LONG
