"""KIP-714 through real clients: subscriptions set with kafka-python's admin client
(AlterConfigs / DescribeConfigs / ListConfigResources on CLIENT_METRICS resources), the
Python API and the HTTP control plane; confluent-kafka (librdkafka, enable.metrics.push)
pushing its producer and consumer metrics, which land in the metrics sink's client
metrics table next to the request rows."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
from confluent_kafka import Consumer, Producer
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.errors import InvalidConfigurationError, InvalidRequestError

from broker import MockCluster
from broker.config.dynamic import ConfigError
from spark.schema import CLIENT_METRICS_COLUMN_NAMES, CLIENT_METRICS_DIR, COLUMN_NAMES
from tests.conftest import FAST

CLIENT_METRICS = ConfigResourceType.CLIENT_METRICS
PRODUCER_METRICS = {
    "org.apache.kafka.producer.request.latency.avg",
    "org.apache.kafka.producer.produce.throttle.time.max",
    "org.apache.kafka.producer.node.request.latency.avg",
}
CONSUMER_METRICS = {
    "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg",
    "org.apache.kafka.consumer.node.request.latency.avg",
}


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
    return found


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[MockCluster]:
    config = {
        **FAST,
        "telemetry.enabled": "true",
        "metrics.dir": str(tmp_path / "metrics"),
        "metrics.roll.ms": "100",
        "admin.port": "0",
    }
    with MockCluster(config=config) as running:
        yield running


@pytest.fixture
def admin(cluster: MockCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    yield client
    client.close()


def alter(admin: KafkaAdminClient, name: str, **configs: str) -> str:
    result = admin.alter_configs(
        [ConfigResource(CLIENT_METRICS, name, configs=configs)], raise_on_unknown=False
    )
    return str(result["client_metrics"][name])


def names_pushed(cluster: MockCluster, client_id: str) -> set[str]:
    return {
        p.name
        for push in cluster.client_metrics.pushes()
        if push.client.client_id == client_id
        for p in push.points
    }


def test_librdkafka_pushes_what_it_is_subscribed_to(cluster: MockCluster, admin: KafkaAdminClient) -> None:
    assert alter(admin, "apps", metrics="org.apache.kafka.producer.,org.apache.kafka.consumer.", **{
        "interval.ms": "500", "match": "client_id=app-.*"
    }) == "OK"  # fmt: skip
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "app-producer"})
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "client.id": "app-consumer",
            "group.id": "g",
            "auto.offset.reset": "earliest",
        }
    )
    outsider = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "batch"})
    try:
        consumer.subscribe(["telemetry"])

        def pushed_both() -> bool:
            for client in (producer, outsider):
                client.produce("telemetry", b"x")
                client.poll(0)
            consumer.poll(0.1)
            return PRODUCER_METRICS <= names_pushed(
                cluster, "app-producer"
            ) and CONSUMER_METRICS <= names_pushed(cluster, "app-consumer")

        wait_for(pushed_both, "producer and consumer metrics")
        producer.flush(10)
        outsider.flush(10)
    finally:
        consumer.close()
    # The producer pushes only producer metrics, the consumer only consumer metrics; the
    # client that matches no subscription is told to push nothing.
    assert all(
        name.startswith("org.apache.kafka.producer.") for name in names_pushed(cluster, "app-producer")
    )
    assert all(
        name.startswith("org.apache.kafka.consumer.") for name in names_pushed(cluster, "app-consumer")
    )
    assert names_pushed(cluster, "batch") == set()
    instances = {i["client_instance_id"]: i for i in cluster.client_metrics.instances()}
    assert {tuple(i["metrics"]) for i in instances.values()} >= {
        ("org.apache.kafka.consumer.", "org.apache.kafka.producer."),
        (),
    }
    # The sink's second table: one row per data point, beside the request rows.
    metrics_dir = Path(cluster.config.get_str("metrics.dir"))

    def written() -> Any:
        if not (metrics_dir / CLIENT_METRICS_DIR).is_dir():
            return None  # the sink has not rolled its first client-metrics file yet
        rows = ds.dataset(metrics_dir / CLIENT_METRICS_DIR, format="parquet", partitioning="hive").to_table()
        by_client: dict[str, set[str]] = {}
        for client_id, metric in zip(rows["client_id"].to_pylist(), rows["metric"].to_pylist(), strict=True):
            by_client.setdefault(client_id, set()).add(metric)
        wanted = PRODUCER_METRICS <= by_client.get("app-producer", set())
        return (
            (rows, by_client) if wanted and CONSUMER_METRICS <= by_client.get("app-consumer", set()) else None
        )

    rows, by_client = wait_for(written, "the client metrics rows (metrics.roll.ms=100)")
    assert set(CLIENT_METRICS_COLUMN_NAMES) <= set(rows.column_names)
    assert "batch" not in by_client
    assert set(rows["principal"].to_pylist()) == {"User:ANONYMOUS"}
    assert set(rows["client_software_name"].to_pylist()) == {"confluent-kafka-python"}
    # The request table still reads alone: the client metrics stay out of it.
    requests = ds.dataset(metrics_dir, format="parquet", partitioning="hive").to_table()
    assert tuple(requests.schema.names[: len(COLUMN_NAMES)]) == COLUMN_NAMES
    pushes = [name for name in requests["api_name"].to_pylist() if name == "PushTelemetry"]
    assert len(pushes) >= 2


def test_without_telemetry_enabled_nothing_is_advertised_or_pushed() -> None:
    with MockCluster(config={**FAST, "record.requests.max": "1000"}) as cluster:
        cluster.client_metrics.set("all", ["*"], interval_ms=100)  # configurable, but unused
        assert not {71, 72} & set(cluster.brokers[0].advertised_apis)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.metrics.push": True})
        for _ in range(5):
            producer.produce("t", b"x")
            producer.flush(10)
        time.sleep(0.5)  # four intervals: a client told of the APIs would have asked by now
        assert {r["api_key"] for r in cluster.requests.list()}.isdisjoint({71, 72})
        assert cluster.client_metrics.instances() == []


def test_client_metrics_configs_as_kafka_validates_them(
    cluster: MockCluster, admin: KafkaAdminClient
) -> None:
    assert alter(admin, "s", metrics="*", **{"interval.ms": "50"}).startswith(
        "[Error 42] InvalidRequestError: Invalid value 50 for interval.ms, interval must be between 100 and"
        " 3600000 (1 hour)"
    )
    assert alter(admin, "s", **{"interval.ms": "soon"}) == (
        "[Error 40] InvalidConfigurationError: Invalid value soon for configuration interval.ms:"
        " Not a number of type INT"
    )
    assert alter(admin, "s", match="client_id") == (
        "[Error 40] InvalidConfigurationError: Illegal client matching pattern: client_id"
    )
    assert alter(admin, "s", match="client_rack=r1") == (
        "[Error 40] InvalidConfigurationError: Illegal client matching pattern: client_rack=r1"
    )
    assert alter(admin, "s", match="client_id=[") == (
        "[Error 40] InvalidConfigurationError: Illegal client matching pattern: client_id=["
    )
    assert alter(admin, "s", colour="blue") == (
        "[Error 42] InvalidRequestError: Unknown client metrics configuration: colour"
    )
    assert cluster.client_metrics.subscriptions() == {}
    assert alter(admin, "s", metrics="org.apache.kafka.producer.", match="client_id=app.*") == "OK"
    described = admin.describe_configs([ConfigResource(CLIENT_METRICS, "s")], config_filter="all")
    configs = described["client_metrics"]["s"]
    assert {k: (v["value"], v["config_source"]) for k, v in configs.items()} == {
        "metrics": ("org.apache.kafka.producer.", "DYNAMIC_CLIENT_METRICS_CONFIG"),
        "match": ("client_id=app.*", "DYNAMIC_CLIENT_METRICS_CONFIG"),
        "interval.ms": ("300000", "DEFAULT_CONFIG"),
    }
    assert admin.list_config_resources([CLIENT_METRICS]) == {"client_metrics": ["s"]}
    listed = admin.list_config_resources()
    assert listed["client_metrics"] == ["s"] and listed["broker"] == ["0"]
    # An unknown subscription is described with its defaults, never as an error.
    unknown = admin.describe_configs([ConfigResource(CLIENT_METRICS, "nope")], config_filter="all")
    assert {k: v["value"] for k, v in unknown["client_metrics"]["nope"].items()} == {
        "metrics": "",
        "interval.ms": "300000",
        "match": "",
    }
    # Deleting every config removes the subscription.
    admin.reset_configs([ConfigResource(CLIENT_METRICS, "s", configs={"metrics": None, "match": None})])
    assert admin.list_config_resources([CLIENT_METRICS]) == {}


def test_the_python_api_checks_as_the_wire_does(cluster: MockCluster) -> None:
    with pytest.raises(ConfigError) as refused:
        cluster.client_metrics.set("s", ["*"], interval_ms=3_600_001)
    assert refused.value.code == InvalidRequestError.errno
    with pytest.raises(ConfigError) as refused:
        cluster.client_metrics.set("s", ["*"], match={"client_port": "1"})
    assert refused.value.code == InvalidConfigurationError.errno
    with pytest.raises(ConfigError) as refused:
        cluster.client_metrics.set("", ["*"])
    assert (refused.value.code, refused.value.message) == (42, "Subscription name can't be empty")
    cluster.client_metrics.set("s", ["a.", "b."], interval_ms=1000, match={"client_id": "x"})
    assert cluster.client_metrics.subscriptions() == {
        "s": {"metrics": "a.,b.", "interval.ms": "1000", "match": "client_id=x"}
    }
    cluster.client_metrics.delete("s")
    cluster.client_metrics.delete("never-there")
    assert cluster.client_metrics.subscriptions() == {}


def http(cluster: MockCluster, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    assert cluster.admin is not None
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{cluster.admin.port}{path}", data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_subscriptions_over_http(cluster: MockCluster) -> None:
    status, body = http(cluster, "PUT", "/v1/client-metrics/all", {"metrics": ["*"], "interval_ms": 1000})
    assert (status, body) == (200, {"name": "all", "configs": {"metrics": "*", "interval.ms": "1000"}})
    status, body = http(cluster, "PUT", "/v1/client-metrics/bad", {"metrics": ["*"], "interval_ms": 1})
    assert status == 400 and body["error"] == "INVALID_REQUEST" and body["error_code"] == 42
    status, body = http(cluster, "PUT", "/v1/client-metrics/bad", {"metrics": "*"})
    assert status == 400 and body["error"] == "BAD_REQUEST"
    status, body = http(cluster, "GET", "/v1/client-metrics")
    assert (status, body) == (
        200,
        {"subscriptions": {"all": {"metrics": "*", "interval.ms": "1000"}}, "instances": []},
    )
    assert http(cluster, "DELETE", "/v1/client-metrics/all") == (200, {"deleted": "all"})
    assert http(cluster, "DELETE", "/v1/client-metrics/all")[0] == 404
