"""The HTTP control plane (broker/admin_http.py) driven with aiohttp's client, each route
judged by what a real Kafka client sees over TCP (kafka-python, confluent-kafka).

Kafka clients block, so they run in a worker thread (`asyncio.to_thread`) while the
test's loop talks HTTP; the cluster runs on its own loop thread, as a harness's would.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient, KafkaProducer
from kafka.errors import KafkaConnectionError, NotLeaderForPartitionError
from kafka.protocol.admin import DescribeClientQuotasRequest
from prometheus_client.parser import text_string_to_metric_families

from broker import MockCluster
from tests.conftest import FAST

PRODUCE, METADATA = 0, 3
NOT_LEADER_OR_FOLLOWER = 6
MESSAGE_TOO_LARGE = 10  # not retriable: librdkafka reports it without retrying
INVALID_REQUEST = 42
UNKNOWN_TOPIC_OR_PARTITION = 3
# Short quota windows so that one burst is measured (and throttled) at once.
CONFIG = {**FAST, "admin.port": "0", "quota.window.num": "2", "quota.window.size.seconds": "1"}


class Api:
    """JSON over HTTP against one cluster's control plane; every answer, errors
    included, must be JSON with the expected status."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session

    async def call(
        self, method: str, path: str, body: Any = None, *, data: str | bytes | None = None, status: int = 200
    ) -> Any:
        async with self.session.request(method, path, json=body, data=data) as response:
            text = await response.text()
            assert response.status == status, f"{method} {path}: {response.status} {text}"
            assert response.content_type == "application/json", text
            return json.loads(text)

    async def get(self, path: str, status: int = 200) -> Any:
        return await self.call("GET", path, status=status)

    async def post(self, path: str, body: Any = None, status: int = 200) -> Any:
        return await self.call("POST", path, body, status=status)

    async def delete(self, path: str, status: int = 200) -> Any:
        return await self.call("DELETE", path, status=status)


@pytest.fixture
def kafka(request: pytest.FixtureRequest) -> Iterator[MockCluster]:
    """A thread-backed cluster with its control plane on a free port; brokers through
    indirect parametrization (default 1)."""
    with MockCluster(brokers=getattr(request, "param", 1), config=CONFIG) as cluster:
        yield cluster


@pytest.fixture
async def api(kafka: MockCluster) -> AsyncIterator[Api]:
    assert kafka.admin is not None and kafka.admin.port > 0
    async with aiohttp.ClientSession(
        base_url=f"http://127.0.0.1:{kafka.admin.port}", timeout=aiohttp.ClientTimeout(total=20)
    ) as session:
        yield Api(session)


# -- Kafka clients (blocking; run them with asyncio.to_thread) ---------------------


def confluent_produce(producer: Producer, topic: str, values: list[bytes]) -> list[Any]:
    """The delivery error (None: delivered) of each value."""
    errors: list[Any] = []
    for value in values:
        producer.produce(topic, value, on_delivery=lambda err, _msg: errors.append(err))
    assert producer.flush(15) == 0
    return errors


def producer_for(cluster: MockCluster, **config: Any) -> Producer:
    return Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5, **config})


def metadata(cluster: MockCluster) -> Any:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(timeout=10)


def codes(record: dict[str, Any]) -> set[int]:
    """Partition error codes of a recorded Produce response."""
    return {p["error_code"] for t in record["response"]["responses"] for p in t["partition_responses"]}


# -- faults -----------------------------------------------------------------------


async def test_error_fault_is_retried_by_confluent_and_reported_without_retries(
    kafka: MockCluster, api: Api
) -> None:
    kafka.create_topic("orders")
    fault = await api.post(
        "/v1/faults",
        {"api_key": PRODUCE, "error_code": NOT_LEADER_OR_FOLLOWER, "count": 2, "topic": "orders"},
        status=201,
    )
    assert fault["count"] == 2 and fault["fired"] == 0 and fault["topic"] == "orders"
    assert await api.get("/v1/faults") == [fault]

    producer = producer_for(kafka)
    assert await asyncio.to_thread(confluent_produce, producer, "orders", [b"a", b"b"]) == [None, None]
    assert await api.get("/v1/faults") == []  # spent
    produces = await api.get(f"/v1/requests?api_key={PRODUCE}")
    assert [codes(r) for r in produces if r["fault"] == fault["id"]] == [{NOT_LEADER_OR_FOLLOWER}] * 2
    assert produces[-1]["fault"] is None and codes(produces[-1]) == {0}

    # Without retries the application gets the error; the next message goes through.
    await api.post(
        "/v1/faults", {"api_key": PRODUCE, "error_code": MESSAGE_TOO_LARGE, "count": 1}, status=201
    )
    no_retries = producer_for(kafka, retries=0, acks=1)
    errors = await asyncio.to_thread(confluent_produce, no_retries, "orders", [b"lost"])
    assert errors[0] is not None and errors[0].code() == MESSAGE_TOO_LARGE
    assert await asyncio.to_thread(confluent_produce, no_retries, "orders", [b"kept"]) == [None]


async def test_latency_fault_delays_one_kafka_python_produce(kafka: MockCluster, api: Api) -> None:
    kafka.create_topic("slow")
    fault = await api.post(
        "/v1/faults", {"api_key": PRODUCE, "latency_ms": 400, "count": 1, "client_id": "slow-app"}, status=201
    )

    def send_twice() -> list[float]:
        producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers, client_id="slow-app", acks=1)
        timings = []
        try:
            for value in (b"late", b"on time"):
                start = time.monotonic()
                producer.send("slow", value).get(timeout=10)
                timings.append(time.monotonic() - start)
        finally:
            producer.close()
        return timings

    late, _ = await asyncio.to_thread(send_twice)
    assert late >= 0.4  # the second was not delayed: the recording shows no fault on it
    produces = await api.get(f"/v1/requests?api_key={PRODUCE}")
    assert [r["fault"] for r in produces] == [fault["id"], None]


async def test_disconnect_fault_drops_the_connection_and_kafka_python_recovers(
    kafka: MockCluster, api: Api
) -> None:
    kafka.create_topic("fragile")
    fault = await api.post(
        "/v1/faults", {"api_key": PRODUCE, "disconnect": True, "count": 1, "client_id": "fragile"}, status=201
    )

    def send_twice() -> None:
        producer = KafkaProducer(
            bootstrap_servers=kafka.bootstrap_servers, client_id="fragile", retries=0, acks=1
        )
        try:
            with pytest.raises(KafkaConnectionError):
                producer.send("fragile", b"dropped").get(timeout=10)
            producer.send("fragile", b"after").get(timeout=10)  # a new connection
        finally:
            producer.close()

    await asyncio.to_thread(send_twice)
    produces = await api.get(f"/v1/requests?api_key={PRODUCE}")
    assert [(r["fault"], r["response"] is None) for r in produces] == [(fault["id"], True), (None, False)]
    assert produces[0]["connection"] != produces[1]["connection"]


@pytest.mark.parametrize("kafka", [3], indirect=True)
async def test_stopped_broker_leaves_metadata_and_clients_produce_through_the_others(
    kafka: MockCluster, api: Api
) -> None:
    kafka.create_topic("replicated", partitions=1, replication_factor=3)
    producer = producer_for(kafka)
    assert await asyncio.to_thread(confluent_produce, producer, "replicated", [b"before"]) == [None]
    victim = (await api.get("/v1/cluster"))["topics"][0]["partitions"][0]["leader"]

    stopped = await api.post(f"/v1/brokers/{victim}/stop")
    assert stopped["id"] == victim and stopped["up"] is False
    described = await api.get("/v1/cluster")
    assert {b["id"]: b["up"] for b in described["brokers"]}[victim] is False
    successor = described["topics"][0]["partitions"][0]["leader"]
    assert successor != victim
    found = await asyncio.to_thread(metadata, kafka)
    assert sorted(found.brokers) == sorted(b.node_id for b in kafka.brokers if b.node_id != victim)
    assert found.topics["replicated"].partitions[0].leader == successor
    assert await asyncio.to_thread(confluent_produce, producer, "replicated", [b"during"]) == [None]

    started = await api.post(f"/v1/brokers/{victim}/start")
    assert started == {**stopped, "up": True}
    assert len((await asyncio.to_thread(metadata, kafka)).brokers) == 3
    assert await asyncio.to_thread(confluent_produce, producer, "replicated", [b"after"]) == [None]
    assert kafka.on_loop(lambda: kafka.state.topics["replicated"].partitions[0].log.high_watermark) == 3


@pytest.mark.parametrize("kafka", [2], indirect=True)
async def test_moved_leader_takes_the_next_produce(kafka: MockCluster, api: Api) -> None:
    kafka.create_topic("moving", partitions=1, replication_factor=2)
    producer = producer_for(kafka)
    assert await asyncio.to_thread(confluent_produce, producer, "moving", [b"first"]) == [None]
    partition = (await api.get("/v1/cluster"))["topics"][0]["partitions"][0]
    old = partition["leader"]
    new = next(b.node_id for b in kafka.brokers if b.node_id != old)

    moved = await api.post("/v1/leaders", {"topic": "moving", "partition": 0, "broker": new})
    assert moved == {
        "topic": "moving",
        "partition": 0,
        "leader": new,
        "leader_epoch": partition["leader_epoch"] + 1,
        "replicas": [new, old],
    }
    assert await asyncio.to_thread(confluent_produce, producer, "moving", [b"second"]) == [None]
    produces = await api.get(f"/v1/requests?api_key={PRODUCE}")
    assert (produces[-1]["broker"], codes(produces[-1])) == (new, {0})
    assert (await asyncio.to_thread(metadata, kafka)).topics["moving"].partitions[0].leader == new

    unknown = await api.post("/v1/leaders", {"topic": "moving", "partition": 7, "broker": new}, status=404)
    assert unknown["error_code"] == UNKNOWN_TOPIC_OR_PARTITION
    unknown = await api.post("/v1/leaders", {"topic": "moving", "partition": 0, "broker": 9}, status=404)
    assert (unknown["error_code"], unknown["message"]) == (INVALID_REQUEST, "Unknown broker 9")
    await api.post("/v1/leaders", {"topic": "moving", "partition": "0", "broker": new}, status=400)


async def test_forced_throttle_fires_confluent_throttle_cb(kafka: MockCluster, api: Api) -> None:
    kafka.create_topic("t")
    rule = await api.post(
        "/v1/throttle",
        {"client_id": "throttled", "throttle_ms": 300, "count": 1, "api_key": PRODUCE},
        status=201,
    )
    assert (rule["client_id"], rule["throttle_ms"], rule["api_key"]) == ("throttled", 300, PRODUCE)
    assert await api.get("/v1/faults") == [rule]
    events: list[Any] = []

    def produce_until_throttled() -> None:
        producer = producer_for(kafka, **{"client.id": "throttled", "throttle_cb": events.append})
        assert confluent_produce(producer, "t", [b"x"]) == [None]
        deadline = time.monotonic() + 5
        while not events and time.monotonic() < deadline:
            producer.poll(0.05)

    await asyncio.to_thread(produce_until_throttled)
    assert [round(e.throttle_time * 1000) for e in events][:1] == [300]
    assert await api.get("/v1/faults") == []  # spent


async def test_deleting_a_fault_lets_requests_through(kafka: MockCluster, api: Api) -> None:
    kafka.create_topic("t")
    fault = await api.post(
        "/v1/faults",
        {"api_key": PRODUCE, "error_code": NOT_LEADER_OR_FOLLOWER, "client_id": "blocked"},
        status=201,
    )
    assert fault["count"] is None  # until removed
    producer = KafkaProducer(
        bootstrap_servers=kafka.bootstrap_servers, client_id="blocked", retries=0, acks=1
    )
    try:
        with pytest.raises(NotLeaderForPartitionError):
            await asyncio.to_thread(lambda: producer.send("t", b"refused").get(timeout=10))
        assert await api.delete(f"/v1/faults/{fault['id']}") == {"deleted": fault["id"]}
        await api.delete(f"/v1/faults/{fault['id']}", status=404)
        await asyncio.to_thread(lambda: producer.send("t", b"accepted").get(timeout=10))
    finally:
        producer.close()

    # Throttle rules are listed and deleted with the faults; DELETE /v1/faults takes all.
    await api.post("/v1/faults", {"api_key": METADATA, "latency_ms": 5000}, status=201)
    await api.post("/v1/throttle", {"client_id": "blocked", "throttle_ms": 5000, "count": None}, status=201)
    assert len(await api.get("/v1/faults")) == 2
    assert await api.delete("/v1/faults") == {"deleted": 2}
    assert await api.get("/v1/faults") == []
    start = time.monotonic()
    await asyncio.to_thread(metadata, kafka)
    assert time.monotonic() - start < 4  # the 5 s latency rule is gone


async def test_control_plane_of_a_cluster_on_the_callers_loop() -> None:
    """`async with MockCluster(...)`: the control plane shares the test's loop with an
    aiokafka producer, and a fault added over HTTP is retried by it."""
    async with MockCluster(config=CONFIG) as cluster, aiohttp.ClientSession() as session:
        assert cluster.admin is not None
        api = Api(session)
        base = f"http://127.0.0.1:{cluster.admin.port}"
        cluster.create_topic("t")
        fault = await api.post(
            f"{base}/v1/faults", {"api_key": PRODUCE, "error_code": NOT_LEADER_OR_FOLLOWER, "count": 1}, 201
        )
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, retry_backoff_ms=10)
        await producer.start()
        try:
            await asyncio.wait_for(producer.send_and_wait("t", b"retried"), 10)
        finally:
            await producer.stop()
        produces = await api.get(f"{base}/v1/requests?api_key={PRODUCE}")
        assert [(r["fault"], codes(r)) for r in produces] == [
            (fault["id"], {NOT_LEADER_OR_FOLLOWER}),
            (None, {0}),
        ]
        assert (await api.post(f"{base}/v1/brokers/0/stop"))["up"] is False
        assert (await api.post(f"{base}/v1/brokers/0/start"))["up"] is True


# -- quotas -----------------------------------------------------------------------


def wire_quotas(cluster: MockCluster) -> dict[frozenset[tuple[str, str | None]], dict[str, float]]:
    """DescribeClientQuotas over TCP from kafka-python's admin client."""
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        request = DescribeClientQuotasRequest(components=[], strict=False)
        response = admin._manager.run(admin._manager.send, request)
    finally:
        admin.close()
    assert response.error_code == 0
    return {
        frozenset((c.entity_type, c.entity_name) for c in e.entity): {v.key: v.value for v in e.values}
        for e in response.entries
    }


async def test_quotas_alter_describe_resolve(kafka: MockCluster, api: Api) -> None:
    alice = {"user": "alice", "client-id": None}
    altered = await api.post(
        "/v1/quotas", {"entity": alice, "set": {"producer_byte_rate": 1024, "consumer_byte_rate": 2048}}
    )
    assert altered == {
        "entity": alice,
        "values": {"consumer_byte_rate": 2048.0, "producer_byte_rate": 1024.0},
        "validate_only": False,
    }
    await api.post("/v1/quotas", {"entity": {"client-id": "app"}, "set": {"request_percentage": 50}})
    removed = await api.post("/v1/quotas", {"entity": alice, "remove": ["consumer_byte_rate"]})
    assert removed["values"] == {"producer_byte_rate": 1024.0}
    checked = await api.post(
        "/v1/quotas", {"entity": alice, "set": {"producer_byte_rate": 1}, "validate_only": True}
    )
    assert checked["values"] == {"producer_byte_rate": 1024.0} and checked["validate_only"] is True

    everything = [
        {"entity": {"user": "alice", "client-id": None}, "values": {"producer_byte_rate": 1024.0}},
        {"entity": {"client-id": "app"}, "values": {"request_percentage": 50.0}},
    ]
    assert await api.get("/v1/quotas") == everything  # users first, as kafka-configs lists them
    assert await api.get("/v1/quotas?user=alice") == everything[:1]
    assert await api.get("/v1/quotas?user=alice&client-id=<default>&strict=true") == everything[:1]
    assert await api.get("/v1/quotas?user=alice&strict=true") == []
    assert await api.get("/v1/quotas?client-id=<any>") == everything
    assert await api.get("/v1/quotas?client-id=app&strict=true") == everything[1:]
    # What a Kafka admin client sees over TCP is the same.
    assert await asyncio.to_thread(wire_quotas, kafka) == {
        frozenset({("user", "alice"), ("client-id", None)}): {"producer_byte_rate": 1024.0},
        frozenset({("client-id", "app")}): {"request_percentage": 50.0},
    }

    resolved = await api.get("/v1/quotas/resolve?user=alice&client-id=app")
    assert resolved == {
        "user": "alice",
        "client_id": "app",
        "quotas": {
            "producer_byte_rate": {"value": 1024.0, "entity": alice, "overridden": []},
            "request_percentage": {"value": 50.0, "entity": {"client-id": "app"}, "overridden": []},
        },
    }
    assert (await api.get("/v1/quotas/resolve?user=bob"))["quotas"] == {}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"entity": {"user": "alice"}, "set": {"unknown_key": 1}}, "Invalid configuration key unknown_key"),
        (
            {"entity": {"user": "alice"}, "set": {"producer_byte_rate": -5}},
            "Quota producer_byte_rate must be greater than 0",
        ),
        (
            {"entity": {"user": "alice", "ip": "10.0.0.1"}, "set": {"producer_byte_rate": 1}},
            "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
        ),
        ({"entity": {}, "set": {"producer_byte_rate": 1}}, "Invalid empty client quota entity"),
    ],
)
async def test_refused_quota_is_a_400_with_kafkas_code(
    kafka: MockCluster, api: Api, body: dict[str, Any], message: str
) -> None:
    refused = await api.post("/v1/quotas", body, status=400)
    assert refused == {"error_code": INVALID_REQUEST, "error": "INVALID_REQUEST", "message": message}
    assert await api.get("/v1/quotas") == []
    assert await asyncio.to_thread(wire_quotas, kafka) == {}


# -- metrics, recording, conformance ------------------------------------------------


async def test_metrics_after_throttled_produce(kafka: MockCluster, api: Api) -> None:
    kafka.create_topic("metered")
    await api.post("/v1/quotas", {"entity": {"client-id": "metered"}, "set": {"producer_byte_rate": 10_000}})

    def burst() -> None:
        # 40 KB in one request: 4 x the quota over the 1 s minimum window, so throttled.
        producer = KafkaProducer(
            bootstrap_servers=kafka.bootstrap_servers, client_id="metered", linger_ms=50, batch_size=1 << 20
        )
        try:
            futures = [producer.send("metered", b"m" * 1000) for _ in range(40)]
            producer.flush(10)
            for future in futures:
                future.get(timeout=1)
        finally:
            producer.close(timeout=1)

    await asyncio.to_thread(burst)
    async with api.session.get("/metrics") as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=")
        text = await response.text()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    entity = (("broker", "0"), ("client_id", "metered"), ("quota_type", "Produce"), ("user", ""))
    byte_rate = samples[("kafka_server_quota_byte_rate", entity)]
    throttle = samples[("kafka_server_quota_throttle_time", entity)]
    assert 10_000 < byte_rate < 100_000  # 40 KB and overhead over 1-2 s
    assert 0 < throttle <= 10_000
    requests = {
        dict(labels)["request"]: value
        for (name, labels), value in samples.items()
        if name == "kafka_network_requests_total"
    }
    assert requests["Produce"] >= 1 and requests["Metadata"] >= 1 and requests["ApiVersions"] >= 1
    produce = (("broker", "0"), ("request", "Produce"))
    assert samples[("kafka_network_request_throttle_time_ms_max", produce)] >= throttle - 1
    assert samples[("kafka_network_request_throttle_time_ms_mean", produce)] > 0
    assert samples[("kafka_mock_broker_up", (("broker", "0"),))] == 1.0


async def test_recorded_requests_and_conformance_of_a_kafka_python_producer(
    kafka: MockCluster, api: Api
) -> None:
    kafka.create_topic("recorded")

    def send() -> None:
        producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers, client_id="recorder", acks=1)
        try:
            producer.send("recorded", b"hello-recording").get(timeout=10)
        finally:
            producer.close()

    await asyncio.to_thread(send)
    everything = await api.get("/v1/requests")
    assert {"ApiVersions", "Metadata", "Produce"} <= {r["api"] for r in everything}
    assert {(r["client_id"], r["client_software_name"]) for r in everything} == {("recorder", "kafka-python")}
    [produce] = await api.get(f"/v1/requests?api_key={PRODUCE}&limit=1")
    assert produce["api"] == "Produce" and produce["api_version"] >= 3
    assert produce["header"]["client_id"] == "recorder"
    [topic] = produce["request"]["topic_data"]
    assert topic["name"] == "recorded"
    assert b"hello-recording" in base64.b64decode(topic["partition_data"][0]["records"])
    assert codes(produce) == {0}
    assert len(await api.get("/v1/requests?limit=2")) == 2
    assert await api.get("/v1/requests?limit=0") == []
    await api.get("/v1/requests?api_key=produce", status=400)
    await api.get("/v1/requests?limit=-1", status=400)

    [client] = (await api.get("/v1/conformance"))["clients"]
    assert client["software_name"] == "kafka-python" and client["client_ids"] == ["recorder"]
    assert "Produce" in {a["api"] for a in client["apis"]}
    assert await api.delete("/v1/requests") == {"deleted": True}
    assert await api.get("/v1/requests") == []


# -- error paths --------------------------------------------------------------------


async def test_bad_requests_are_json_errors_and_the_broker_keeps_serving(
    kafka: MockCluster, api: Api
) -> None:
    kafka.create_topic("t")
    missing = await api.get("/v1/nothing-here", status=404)
    assert missing["error"] == "NOT_FOUND"
    async with api.session.delete("/v1/cluster") as response:
        assert response.status == 405 and "GET" in response.headers["Allow"]
        assert (await response.json())["error"] == "METHOD_NOT_ALLOWED"

    for data in ("{not json", "[1, 2]", "", '{"api_key": NaN}', "[" * 100_000, b'{"\xff": 1}'):
        await api.call("POST", "/v1/faults", data=data, status=400)
    refused = {
        "unknown api": (
            {"api_key": 999, "error_code": 1},
            "api_key 999 is not an API this broker implements",
        ),
        "no action": ({"api_key": PRODUCE}, "a fault needs error_code, latency_ms or disconnect"),
        "wrong type": ({"api_key": "0", "error_code": 1}, "api_key must be an integer, not a string"),
        "bool as int": ({"api_key": 0, "error_code": True}, "error_code must be an integer, not a boolean"),
        "typo": ({"api_key": 0, "error_code": 1, "partiton": 0}, "unknown field(s) partiton"),
        "unknown broker": (
            {"api_key": 0, "error_code": 1, "broker": 9},
            "broker 9 is not a broker of this cluster",
        ),
        "negative count": ({"api_key": 0, "error_code": 1, "count": 0}, "count must be at least 1"),
        "beyond int32": (
            {"api_key": 0, "latency_ms": 2**31},
            "latency_ms 2147483648 does not fit in an int32",
        ),
    }
    for body, message in refused.values():
        error = await api.post("/v1/faults", body, status=400)
        assert error["error"] == "BAD_REQUEST" and error["message"].startswith(message), error
    await api.post("/v1/throttle", {"client_id": "x", "throttle_ms": 0}, status=400)
    await api.post("/v1/throttle", {"client_id": "x", "throttle_ms": 10**15}, status=400)
    await api.post("/v1/throttle", {"client_id": "x", "throttle_ms": 10, "api_key": 999}, status=400)
    await api.post("/v1/throttle", {"throttle_ms": 10}, status=400)
    await api.post("/v1/quotas", {"entity": {"user": 5}, "set": {"producer_byte_rate": 1}}, status=400)
    await api.post("/v1/quotas", {"entity": {"user": "a"}, "set": {"producer_byte_rate": "1"}}, status=400)
    await api.post("/v1/quotas", {"entity": {"user": "a"}, "remove": "producer_byte_rate"}, status=400)
    await api.get("/v1/quotas?group=x", status=400)
    await api.get("/v1/quotas?strict=perhaps", status=400)
    for action in ("stop", "start"):
        unknown = await api.post(f"/v1/brokers/9/{action}", status=404)
        assert unknown == {
            "error_code": INVALID_REQUEST,
            "error": "INVALID_REQUEST",
            "message": "Unknown broker 9",
        }
    await api.post("/v1/brokers/zero/stop", status=404)
    too_large = await api.call("POST", "/v1/faults", data=b"x" * (2 << 20), status=413)
    assert too_large["error"] == "REQUEST_ENTITY_TOO_LARGE"
    await api.delete("/v1/faults/12345", status=404)
    assert await api.get("/v1/faults") == []

    # Nothing above touched the brokers: a client still produces.
    assert await asyncio.to_thread(confluent_produce, producer_for(kafka), "t", [b"fine"]) == [None]
    assert all(b["up"] for b in (await api.get("/v1/cluster"))["brokers"])
