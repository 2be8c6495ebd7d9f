"""Dynamic broker configs without sockets: the layered views, Kafka's checks and messages,
how SET/DELETE/APPEND/SUBTRACT combine with stored values, the validator and listener
hooks, topic configs, SQLite persistence and the `cluster.configs` Python API."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from broker import MockCluster
from broker.config.broker_config import (
    BrokerConfig,
    BrokerConfigView,
    config_type,
    invalid_value,
    is_read_only,
    parse_error,
)
from broker.config.dynamic import (
    APPEND,
    BROKER,
    DELETE,
    SET,
    SUBTRACT,
    TOPIC,
    Alteration,
    ConfigError,
    ConfigListener,
    ConfigOp,
    ConfigSource,
    ConfigValidator,
    DynamicConfigStore,
    SqliteConfigStorage,
    apply_ops,
    java_set,
    java_split,
)
from tests.conftest import FAST

INVALID_CONFIG, INVALID_REQUEST, BROKER_ID_NOT_REGISTERED = 40, 42, 102


@dataclass
class FakeBroker:
    """What the store needs of a BrokerServer: an id, a rack and the two hook lists."""

    node_id: int
    rack: str | None = None
    config_validators: list[ConfigValidator] = field(default_factory=list)
    config_listeners: list[ConfigListener] = field(default_factory=list)
    heard: list[set[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.config_listeners.append(self.heard.append)


def store_with(
    *node_ids: int, static: dict[str, str] | None = None, storage: SqliteConfigStorage | None = None
):
    store = DynamicConfigStore(BrokerConfig(static or {}), storage)
    brokers = {node_id: FakeBroker(node_id) for node_id in node_ids}
    views = {node_id: store.attach(broker) for node_id, broker in brokers.items()}
    return store, brokers, views


def alter(
    store: DynamicConfigStore,
    name: str,
    *ops: ConfigOp,
    incremental: bool = True,
    validate_only: bool = False,
):
    [error] = asyncio.run(store.alter_resources([Alteration(BROKER, name, ops, incremental)], validate_only))
    return None if error is None else (error.code, error.message)


# -- values and names -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("num.partitions", "3", None),
        ("num.partitions", " 3 ", None),
        ("num.partitions", "+3", None),
        ("num.partitions", "x", "Invalid value x for configuration num.partitions: Not a number of type INT"),
        (
            "num.partitions",
            "3.0",
            "Invalid value 3.0 for configuration num.partitions: Not a number of type INT",
        ),
        (
            "num.partitions",
            "1_000",
            "Invalid value 1_000 for configuration num.partitions: Not a number of type INT",
        ),
        (
            "num.partitions",
            "2147483648",
            "Invalid value 2147483648 for configuration num.partitions: Not a number of type INT",
        ),
        ("num.partitions", "0", "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
        (
            "fetch.max.bytes",
            "1023",
            "Invalid value 1023 for configuration fetch.max.bytes: Value must be at least 1024",
        ),
        ("log.retention.bytes", "2147483648", None),
        (
            "log.retention.bytes",
            "9223372036854775808",
            "Invalid value 9223372036854775808 for configuration log.retention.bytes: Not a number of type LONG",
        ),
        ("auto.create.topics.enable", "FALSE", None),
        (
            "auto.create.topics.enable",
            "no",
            "Invalid value no for configuration auto.create.topics.enable: Expected value to be either true or false",
        ),
        ("quota.groups", "anything at all", None),  # unknown keys (a plugin's) are not typed
        (
            "listener.name.internal.max.connections",
            "x",
            "Invalid value x for configuration max.connections: Not a number of type INT",
        ),
    ],
)
def test_value_checks_use_kafkas_words(key: str, value: str, reason: str | None) -> None:
    assert invalid_value(key, value) == reason


def test_double_parsing_follows_java() -> None:
    assert parse_error("r", "1e3", "double") is None
    assert parse_error("r", "NaN", "double") is None
    assert parse_error("r", ".5d", "double") is None
    assert (
        parse_error("r", "nan", "double")
        == "Invalid value nan for configuration r: Not a number of type DOUBLE"
    )


def test_read_only_and_types_of_listener_overrides() -> None:
    assert is_read_only("node.id") and is_read_only("ssl.cafile") and is_read_only("ssl.anything.new")
    assert is_read_only("listener.name.sasl_ssl.ssl.keyfile")
    assert not is_read_only("listener.name.sasl_plaintext.sasl.enabled.mechanisms")
    assert not is_read_only("num.partitions") and not is_read_only("quota.groups")
    assert config_type("listener.name.x.sasl.enabled.mechanisms") == "list"
    assert config_type("quota.groups") is None


def test_java_sets_and_java_split() -> None:
    assert java_set(["node.id"]) == "[node.id]"
    assert java_set("abcde") == "[a, b, c, d, e]"
    assert java_split("") == [""]
    assert java_split("a,,b,,") == ["a", "", "b"]
    assert java_split(",") == []


# -- how operations combine -------------------------------------------------------------


def test_append_and_subtract_start_from_the_stored_value_or_the_default() -> None:
    mechanisms = "sasl.enabled.mechanisms"  # list, default PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
    assert apply_ops({}, [ConfigOp(mechanisms, SUBTRACT, "PLAIN")], BROKER) == {
        mechanisms: "SCRAM-SHA-256,SCRAM-SHA-512"
    }
    appended = apply_ops(
        {mechanisms: "PLAIN"}, [ConfigOp(mechanisms, APPEND, "PLAIN,SCRAM-SHA-512,SCRAM-SHA-512")], BROKER
    )
    assert appended == {mechanisms: "PLAIN,SCRAM-SHA-512"}
    # SUBTRACT removes one occurrence per value; SET then DELETE in order.
    assert apply_ops({mechanisms: "a,b,a"}, [ConfigOp(mechanisms, SUBTRACT, "a")], BROKER) == {
        mechanisms: "b,a"
    }
    assert apply_ops({"k": "v"}, [ConfigOp("k", DELETE), ConfigOp("j", SET, "w")], BROKER) == {"j": "w"}
    assert apply_ops({}, [ConfigOp("cleanup.policy", APPEND, "compact")], TOPIC) == {
        "cleanup.policy": "delete,compact"
    }


@pytest.mark.parametrize(
    ("resource_type", "op", "name", "message"),
    [
        (
            BROKER,
            APPEND,
            "num.partitions",
            "Config value append is not allowed for config key: num.partitions",
        ),
        (
            BROKER,
            SUBTRACT,
            "num.partitions",
            "Config value subtract is not allowed for config key: num.partitions",
        ),
        (BROKER, APPEND, "quota.groups", "Unknown config name: quota.groups"),
        (TOPIC, APPEND, "retention.ms", "Can't APPEND to key retention.ms because its type is not LIST."),
        (TOPIC, SUBTRACT, "no.such", "Can't SUBTRACT to key no.such because its type is not LIST."),
    ],
)
def test_list_operations_on_other_types(resource_type: int, op: int, name: str, message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        apply_ops({}, [ConfigOp(name, op, "x")], resource_type)
    assert (refused.value.code, refused.value.message) == (INVALID_CONFIG, message)


# -- layers, checks and hooks -----------------------------------------------------------


def test_layers_and_sources() -> None:
    store, _, views = store_with(0, 1, static={"num.partitions": "2", "message.max.bytes": "5000"})
    assert (
        alter(store, "", ConfigOp("num.partitions", SET, "3"), ConfigOp("log.retention.bytes", SET, "100"))
        is None
    )
    assert alter(store, "1", ConfigOp("num.partitions", SET, "4")) is None
    assert [views[0].get_int("num.partitions"), views[1].get_int("num.partitions")] == [3, 4]
    assert store.cluster_view.get_int("num.partitions") == 3  # what the shared cluster state reads
    assert views[1].synonyms("num.partitions") == [
        ("num.partitions", "4", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("num.partitions", "3", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("num.partitions", "2", ConfigSource.STATIC_BROKER_CONFIG),
        ("num.partitions", "1", ConfigSource.DEFAULT_CONFIG),
    ]
    described = store.describe(1)
    assert described["num.partitions"] == ("4", ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert described["log.retention.bytes"] == ("100", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert described["message.max.bytes"] == ("5000", ConfigSource.STATIC_BROKER_CONFIG)
    assert described["fetch.max.bytes"] == ("57671680", ConfigSource.DEFAULT_CONFIG)
    assert store.describe(None) == {
        "num.partitions": ("3", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        "log.retention.bytes": ("100", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
    }
    # DELETE of the broker's value falls back to the cluster-wide one.
    assert alter(store, "1", ConfigOp("num.partitions", DELETE)) is None
    assert views[1].get_int("num.partitions") == 3


def test_listener_overrides_list_their_base_config_as_synonym() -> None:
    store, _, views = store_with(0)
    key = "listener.name.sasl_plaintext.sasl.enabled.mechanisms"
    assert (
        alter(
            store, "0", ConfigOp(key, SET, "PLAIN"), ConfigOp("sasl.enabled.mechanisms", SET, "SCRAM-SHA-256")
        )
        is None
    )
    assert views[0].synonyms(key) == [
        (key, "PLAIN", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("sasl.enabled.mechanisms", "SCRAM-SHA-256", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", ConfigSource.DEFAULT_CONFIG),
    ]
    assert views[0].for_listener("SASL_PLAINTEXT", "sasl.enabled.mechanisms") == "PLAIN"


@pytest.mark.parametrize(
    ("name", "ops", "error"),
    [
        ("0", [("node.id", "5")], (INVALID_REQUEST, "Cannot update these configs dynamically: [node.id]")),
        (
            "",
            [("num.partitions", "2"), ("ssl.cafile", "x"), ("super.users", "User:x"), ("listeners", "")],
            (
                INVALID_REQUEST,
                "Cannot update these configs dynamically: [ssl.cafile, super.users, listeners]",
            ),
        ),
        (
            "0",
            [("message.max.bytes", "big")],
            (
                INVALID_REQUEST,
                "Invalid value big for configuration message.max.bytes: Not a number of type INT",
            ),
        ),
        (
            "0",
            [("num.partitions", "-1")],
            (INVALID_REQUEST, "Invalid value -1 for configuration num.partitions: Value must be at least 1"),
        ),
        (
            "",
            [("sasl.enabled.mechanisms", "PLAIN")],
            (
                INVALID_REQUEST,
                "Cannot update these configs at default cluster level, broker id must be specified: "
                "[sasl.enabled.mechanisms]",
            ),
        ),
        (
            "",
            [("listener.name.x.sasl.enabled.mechanisms", "PLAIN"), ("listener.name.x.max.connections", "5")],
            (
                INVALID_REQUEST,
                "Cannot update these configs at default cluster level, broker id must be specified: "
                "[listener.name.x.sasl.enabled.mechanisms]",
            ),
        ),
        ("0", [("quota.groups", "a:alice")], None),  # unknown keys are accepted, as Kafka does
        ("0", [("sasl.enabled.mechanisms", "PLAIN")], None),
    ],
)
def test_broker_layer_checks(name: str, ops: list[tuple[str, str]], error: tuple[int, str] | None) -> None:
    store, _, views = store_with(0)
    before = dict(views[0].values)
    assert alter(store, name, *(ConfigOp(k, SET, v) for k, v in ops)) == error
    if error is not None:
        assert views[0].values == before


def test_validators_see_the_would_be_config_and_listeners_the_changed_keys() -> None:
    store, brokers, views = store_with(0, 1)
    seen: list[tuple[int, dict[str, str]]] = []

    def refuse_big(node_id: int) -> ConfigValidator:
        def check(values: dict[str, str]) -> str | None:
            seen.append((node_id, values))
            return "too many partitions" if int(values["num.partitions"]) > 10 else None

        return check

    for node_id, broker in brokers.items():
        broker.config_validators.append(refuse_big(node_id))
    assert alter(store, "", ConfigOp("num.partitions", SET, "11"), ConfigOp("plugin.key", SET, "p")) == (
        INVALID_CONFIG,
        "too many partitions",
    )
    assert views[0].get_int("num.partitions") == 1 and "plugin.key" not in views[0].values
    assert seen[0][1]["plugin.key"] == "p"  # unknown keys reach validators too
    assert brokers[0].heard == [] and brokers[1].heard == []
    # A broker whose effective value does not change is neither asked nor told.
    assert alter(store, "1", ConfigOp("num.partitions", SET, "4")) is None
    seen.clear()
    assert alter(store, "", ConfigOp("num.partitions", SET, "5"), ConfigOp("plugin.key", SET, "p")) is None
    assert [node_id for node_id, _ in seen] == [0, 1]  # broker 1: plugin.key changes for it
    assert brokers[0].heard == [{"num.partitions", "plugin.key"}]
    assert brokers[1].heard == [{"num.partitions"}, {"plugin.key"}]
    seen.clear()
    assert alter(store, "", ConfigOp("num.partitions", SET, "6")) is None
    assert [node_id for node_id, _ in seen] == [0]
    assert brokers[1].heard[-1] == {"plugin.key"}


def test_a_failing_listener_does_not_undo_the_change(caplog: pytest.LogCaptureFixture) -> None:
    store, brokers, views = store_with(0)

    def broken(changed: set[str]) -> None:
        raise RuntimeError("boom")

    brokers[0].config_listeners.insert(0, broken)
    assert alter(store, "0", ConfigOp("num.partitions", SET, "2")) is None
    assert views[0].get_int("num.partitions") == 2
    assert brokers[0].heard == [{"num.partitions"}]
    assert "config listener of broker 0 failed" in caplog.text


def test_validate_only_and_legacy_replace() -> None:
    store, brokers, views = store_with(0)
    assert alter(store, "0", ConfigOp("num.partitions", SET, "2"), validate_only=True) is None
    assert views[0].get_int("num.partitions") == 1 and brokers[0].heard == []
    assert (
        alter(store, "0", ConfigOp("num.partitions", SET, "2"), ConfigOp("message.max.bytes", SET, "9"))
        is None
    )
    # AlterConfigs: keys not named leave the broker's layer.
    assert alter(store, "0", ConfigOp("message.max.bytes", SET, "10"), incremental=False) is None
    assert views[0].own == {"message.max.bytes": "10"}
    assert brokers[0].heard[-1] == {"num.partitions", "message.max.bytes"}
    assert alter(store, "0", incremental=False) is None
    assert views[0].own == {}


def test_preprocess_refuses_malformed_resources_first() -> None:
    store, _, _ = store_with(0)
    alterations = [
        Alteration(BROKER, "0", [ConfigOp("num.partitions", SET, "2")]),
        Alteration(BROKER, "0", [ConfigOp("num.partitions", SET, "3")]),
        Alteration(TOPIC, "w", [ConfigOp("a", SET, "1"), ConfigOp("a", DELETE)]),
        Alteration(BROKER, "x", []),
        Alteration(BROKER, "1", []),
        Alteration(
            TOPIC,
            "t",
            [ConfigOp("retention.ms", SET, None), ConfigOp("b", APPEND, None), ConfigOp("c", DELETE)],
        ),
        Alteration(8, "0", []),
        Alteration(BROKER, "", [ConfigOp("num.partitions", 7, "1")]),
        Alteration(BROKER, "+0", [ConfigOp("node.id", SET, "3")]),
        Alteration(TOPIC, "v", [ConfigOp("retention.ms", SET, "x")]),  # the controller's to check
    ]
    errors = store.preprocess(alterations, node_id=0)
    assert [None if e is None else (e.code, e.message) for e in errors] == [
        (INVALID_REQUEST, "Each resource must appear at most once."),
        (INVALID_REQUEST, "Each resource must appear at most once."),
        (INVALID_REQUEST, "Error due to duplicate config keys"),
        (INVALID_REQUEST, "Node id must be an integer, but it is: x"),
        (INVALID_REQUEST, "Unexpected broker id, expected 0, but received 1"),
        (INVALID_REQUEST, "Null value not supported for : retention.ms, b"),
        (INVALID_REQUEST, "Unknown resource type 8"),
        (INVALID_REQUEST, "Unknown operations type 7"),
        (INVALID_REQUEST, "Cannot update these configs dynamically: [node.id]"),
        None,
    ]


# -- topics -----------------------------------------------------------------------------


async def test_topic_configs_and_retention() -> None:
    async with MockCluster(brokers=2, config=FAST) as cluster:
        topic = cluster.state.create_topic("t", 2)
        assert topic is not None
        store = cluster.configs

        async def run(*alterations: Alteration) -> list[tuple[int, str | None] | None]:
            errors = await store.alter_resources(list(alterations))
            return [None if e is None else (e.code, e.message) for e in errors]

        assert await run(
            Alteration(
                TOPIC,
                "t",
                [ConfigOp("retention.bytes", SET, "500"), ConfigOp("cleanup.policy", APPEND, "compact")],
            ),
            Alteration(TOPIC, "missing", [ConfigOp("retention.ms", SET, "1")]),
            Alteration(TOPIC, "t2", [ConfigOp("retention.ms", SET, "soon")]),
            Alteration(TOPIC, "t", [ConfigOp("no.such.config", SET, "1")]),
            Alteration(TOPIC, "bad name!", [ConfigOp("retention.ms", SET, "1")]),
            Alteration(TOPIC, "t", [ConfigOp("retention.ms", 9, "1")]),
        ) == [
            None,
            (3, "The topic 'missing' does not exist."),
            (40, "Invalid value soon for configuration retention.ms: Not a number of type LONG"),
            (40, "Unknown topic config name: no.such.config"),
            (
                17,
                "Topic name is invalid: 'bad name!' contains one or more characters other than ASCII "
                "alphanumerics, '.', '_' and '-'",
            ),
            (-1, None),  # Kafka's controller fails on the unknown operation type
        ]
        assert topic.configs == {"retention.bytes": "500", "cleanup.policy": "delete,compact"}
        assert [p.log.retention_bytes for p in topic.partitions] == [500, 500]
        assert await run(
            Alteration(TOPIC, "t", [ConfigOp("cleanup.policy", SET, "delete")], incremental=False)
        ) == [None]
        assert topic.configs == {"cleanup.policy": "delete"}
        assert [p.log.retention_bytes for p in topic.partitions] == [-1, -1]
        # Without a topic override, the partition leader's log.retention.bytes applies.
        leaders = [p.leader for p in topic.partitions]
        await store.alter_async(leaders[0], set={"log.retention.bytes": 700})
        assert [p.log.retention_bytes for p in topic.partitions] == [700, -1]
        await store.alter_async(None, set={"log.retention.bytes": 800})
        assert [p.log.retention_bytes for p in topic.partitions] == [700, 800]


# -- the brokers' own reactions ---------------------------------------------------------


async def test_brokers_react_to_connection_limits_and_refuse_unusable_values(tmp_path: Path) -> None:
    async with MockCluster(brokers=2, config=FAST) as cluster:
        await cluster.configs.alter_async(
            None, set={"max.connections": 7, "max.connections.per.ip.overrides": "10.0.0.1:3"}
        )
        for broker in cluster.brokers:
            connections = broker.quota_managers.connections
            assert (connections.max_connections, connections.per_ip_overrides) == (7, {"10.0.0.1": 3})
        with pytest.raises(ConfigError) as refused:
            await cluster.configs.alter_async(0, set={"max.connections.per.ip.overrides": "10.0.0.1:many"})
        assert refused.value.code == INVALID_CONFIG
        assert "many" in (refused.value.message or "")


async def test_sasl_listeners_refuse_mechanisms_they_lack(tmp_path: Path) -> None:
    users = tmp_path / "users.json"
    users.write_text('{"alice": "pw"}')
    config = {**FAST, "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.users.file": str(users)}
    async with MockCluster(config=config) as cluster:
        with pytest.raises(ConfigError) as refused:
            await cluster.configs.alter_async(0, set={"sasl.enabled.mechanisms": "GSSAPI"})
        assert (refused.value.code, refused.value.message) == (
            INVALID_CONFIG,
            "listener SASL_PLAINTEXT: sasl.enabled.mechanisms GSSAPI: supported are PLAIN, SCRAM-SHA-256, SCRAM-SHA-512",
        )
        await cluster.configs.alter_async(0, set={"sasl.enabled.mechanisms": "SCRAM-SHA-512"})
        assert cluster.brokers[0].config.get_str("sasl.enabled.mechanisms") == "SCRAM-SHA-512"


# -- persistence ------------------------------------------------------------------------


def test_sqlite_storage_replaces_layers_in_one_transaction(tmp_path: Path) -> None:
    storage = SqliteConfigStorage(tmp_path)
    storage.write([(None, {"a": "1", "b": "2"}), (3, {"c": "3"})])
    storage.write([(None, {"b": "20"})])
    assert storage.load() == {None: {"b": "20"}, 3: {"c": "3"}}
    storage.close()
    with sqlite3.connect(tmp_path / "configs.sqlite") as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_persisted_layers_load_without_what_is_no_longer_dynamic(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    storage = SqliteConfigStorage(tmp_path)
    storage.write(
        [
            (None, {"num.partitions": "3", "node.id": "9", "sasl.enabled.mechanisms": "PLAIN"}),
            (0, {"message.max.bytes": "x", "k": "v"}),
        ]
    )
    storage.close()
    store, _, views = store_with(0, storage=SqliteConfigStorage(tmp_path))
    assert store.cluster_default == {"num.partitions": "3"}
    assert views[0].own == {"k": "v"}
    assert "dynamic config node.id='9' of None ignored" in caplog.text
    store.close()


def test_writes_happen_off_the_event_loop(tmp_path: Path) -> None:
    threads: list[str] = []

    class Recording(SqliteConfigStorage):
        def write(self, layers):  # type: ignore[no-untyped-def]
            threads.append(threading.current_thread().name)
            super().write(layers)

    store, _, views = store_with(0, storage=Recording(tmp_path))
    assert alter(store, "0", ConfigOp("num.partitions", SET, "2")) is None
    assert alter(store, "0", ConfigOp("num.partitions", SET, "2"), validate_only=True) is None
    assert len(threads) == 1 and threads[0].startswith("config-store")
    store.close()


# -- the Python API ---------------------------------------------------------------------


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[MockCluster]:
    with MockCluster(brokers=2, config={**FAST, "state.dir": str(tmp_path / "state")}) as running:
        yield running


def test_python_api(cluster: MockCluster, tmp_path: Path) -> None:
    cluster.configs.alter(None, set={"auto.create.topics.enable": False, "quota.groups": "g:alice"})
    cluster.configs.alter(
        1, set={"auto.create.topics.enable": True}, append={"sasl.enabled.mechanisms": "PLAIN"}
    )
    cluster.configs.alter(1, subtract={"sasl.enabled.mechanisms": "PLAIN"}, delete=["nothing.set"])
    assert cluster.configs.describe(0)["auto.create.topics.enable"] == (
        "false",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
    assert cluster.configs.describe(1)["auto.create.topics.enable"] == (
        "true",
        ConfigSource.DYNAMIC_BROKER_CONFIG,
    )
    assert cluster.configs.describe(1)["sasl.enabled.mechanisms"] == (
        "SCRAM-SHA-256,SCRAM-SHA-512",
        ConfigSource.DYNAMIC_BROKER_CONFIG,
    )
    assert cluster.brokers[0].config.get_bool("auto.create.topics.enable") is False
    with pytest.raises(ConfigError) as refused:
        cluster.configs.alter(5, set={"num.partitions": 2})
    assert (refused.value.code, refused.value.message) == (
        BROKER_ID_NOT_REGISTERED,
        "No node with id 5 found.",
    )
    with pytest.raises(ConfigError) as refused:
        cluster.configs.alter(0, set={"k": 1}, delete=["k"])
    assert refused.value.code == INVALID_REQUEST
    cluster.configs.alter(0, set={"num.partitions": 4}, validate_only=True)
    assert cluster.configs.describe(0)["num.partitions"] == ("1", ConfigSource.DEFAULT_CONFIG)


def test_python_api_persists_across_a_restart(tmp_path: Path) -> None:
    config = {**FAST, "state.dir": str(tmp_path / "state"), "message.max.bytes": "5000"}
    with MockCluster(brokers=2, config=config) as first:
        first.configs.alter(None, set={"num.partitions": 3})
        first.configs.alter(1, set={"message.max.bytes": 6000, "plugin.key": "x"})
    with MockCluster(brokers=2, config=config) as second:
        assert second.configs.describe(None) == {
            # written at bootstrap, as Kafka 4.1+ does with eligible leader replicas on
            "min.insync.replicas": ("1", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            "num.partitions": ("3", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        }
        assert second.brokers[1].config.get_int("message.max.bytes") == 6000
        assert second.brokers[1].config.get_str("plugin.key") == "x"
        assert second.brokers[0].config.get_int("message.max.bytes") == 5000
        assert second.state.config.get_int("num.partitions") == 3
    with MockCluster(brokers=2, config=FAST) as in_memory:  # no state dir: nothing kept
        assert in_memory.configs.describe(None) == {
            "min.insync.replicas": ("1", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        }


async def test_python_api_on_the_loop() -> None:
    async with MockCluster(config=FAST) as cluster:
        with pytest.raises(RuntimeError):
            cluster.configs.alter(0, set={"num.partitions": 2})
        await cluster.configs.alter_async(0, set={"num.partitions": 2})
        assert cluster.brokers[0].config.get_int("num.partitions") == 2


def test_views_share_the_static_values() -> None:
    static = BrokerConfig({"num.partitions": "2"})
    default: dict[str, str] = {}
    view = BrokerConfigView(static, default, {"message.max.bytes": "7"})
    default["num.partitions"] = "3"
    assert view.get_int("num.partitions") == 2  # until refreshed: reads stay one dict lookup
    view.refresh()
    assert (view.get_int("num.partitions"), view.get_int("message.max.bytes")) == (3, 7)
    assert view.explicitly_set("num.partitions") and not view.explicitly_set("fetch.max.bytes")
