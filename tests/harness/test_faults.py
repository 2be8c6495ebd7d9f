"""Fault injection through the Python API (`cluster.faults`, broker stop/start, leader
moves), judged by what real clients do; the same faults over HTTP are in test_admin_http.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient, KafkaProducer
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer import ProduceRequest

from broker import MockCluster
from broker.state.cluster import ClusterError
from tests.conftest import FAST
from tests.quotas.test_quota_enforcement_wire import Conn, batch, closed_by_broker, metadata_request
from tests.timing import TIMER_SLACK_S

NOT_LEADER_OR_FOLLOWER = 6
UNKNOWN_TOPIC_OR_PARTITION = 3
MESSAGE_TOO_LARGE = 10  # not retriable: the producer reports it at once
COORDINATOR_NOT_AVAILABLE = 15
PRODUCE, METADATA, FIND_COORDINATOR = 0, 3, 10


@pytest.fixture
def cluster3() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, config=FAST) as cluster:
        yield cluster


def consume_all(cluster: MockCluster, topic: str, expected: int, timeout: float = 15.0) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"check-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while len(values) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
        # Anything beyond `expected` (a duplicate) shows up within a few more polls.
        for _ in range(5):
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    return values


def produce(producer: Producer, topic: str, values: list[bytes], **kwargs: Any) -> list[Any]:
    reports: list[Any] = []
    for value in values:
        producer.produce(
            topic, value=value, on_delivery=lambda err, msg: reports.append((err, msg)), **kwargs
        )
    assert producer.flush(20) == 0
    return reports


def produce_to(topic: str, partitions: tuple[int, ...], acks: int = 1) -> Any:
    """One raw ProduceRequest v9 with a batch (value b"p<index>") for each partition."""
    data = [
        ProduceRequest.TopicProduceData.PartitionProduceData(index=i, records=batch([b"p%d" % i]))
        for i in partitions
    ]
    return ProduceRequest[9](
        transactional_id=None,
        acks=acks,
        timeout_ms=5000,
        topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=data)],
    )


def partition_end(cluster: MockCluster, topic: str, index: int) -> int:
    return cluster.on_loop(lambda: cluster.state.topics[topic].partitions[index].log.high_watermark)


# ------------------------------------------------------------------------ errors


def test_not_leader_twice_makes_idempotent_confluent_retry_and_deliver_exactly_once(
    sync_cluster: MockCluster,
) -> None:
    sync_cluster.create_topic("orders", partitions=2)
    fault = sync_cluster.faults.add(api_key=PRODUCE, error_code=NOT_LEADER_OR_FOLLOWER, count=2)
    producer = Producer(
        {"bootstrap.servers": sync_cluster.bootstrap_servers, "enable.idempotence": True, "linger.ms": 5}
    )
    values = [b"order-%d" % i for i in range(50)]
    reports = produce(producer, "orders", values)

    assert [err for err, _ in reports if err is not None] == []
    assert fault.fired == 2 and sync_cluster.faults.list() == []  # spent and gone
    assert sorted(consume_all(sync_cluster, "orders", len(values))) == sorted(values)
    failed = [r for r in sync_cluster.requests.list(api_key=PRODUCE) if r["fault"] == fault.id]
    assert len(failed) == 2
    for record in failed:
        codes = {p["error_code"] for t in record["response"]["responses"] for p in t["partition_responses"]}
        assert codes == {NOT_LEADER_OR_FOLLOWER}


def test_error_without_retries_reaches_the_application(sync_cluster: MockCluster) -> None:
    sync_cluster.create_topic("t")
    sync_cluster.faults.add(api_key=PRODUCE, error_code=MESSAGE_TOO_LARGE, count=1)
    producer = Producer({"bootstrap.servers": sync_cluster.bootstrap_servers, "retries": 0, "acks": 1})
    reports = produce(producer, "t", [b"lost"])
    assert reports[0][0] is not None and reports[0][0].code() == MESSAGE_TOO_LARGE
    assert produce(producer, "t", [b"kept"])[0][0] is None  # the fault is spent
    assert partition_end(sync_cluster, "t", 0) == 1


def test_partition_filter_fails_only_that_partition_and_handles_the_rest(sync_cluster: MockCluster) -> None:
    """One produce request to partitions 0 and 1 with a fault on partition 0: partition 1
    is appended, partition 0 is answered with the error and left untouched."""
    sync_cluster.create_topic("pair", partitions=2)
    fault = sync_cluster.faults.add(
        api_key=PRODUCE, error_code=NOT_LEADER_OR_FOLLOWER, topic="pair", partition=0
    )
    with Conn(sync_cluster, "filtered") as conn:
        response = conn.call(produce_to("pair", (0, 1)))
    errors = {p.index: p.error_code for t in response.responses for p in t.partition_responses}
    assert errors == {0: NOT_LEADER_OR_FOLLOWER, 1: 0}
    assert [partition_end(sync_cluster, "pair", i) for i in (0, 1)] == [0, 1]
    assert fault.count is None and fault.fired == 1  # no count: it stays until removed
    assert sync_cluster.faults.remove(fault.id) and sync_cluster.faults.list() == []


def test_topic_and_client_id_filters_leave_other_traffic_alone(sync_cluster: MockCluster) -> None:
    for name in ("hit", "miss"):
        sync_cluster.create_topic(name)
    sync_cluster.faults.add(
        api_key=PRODUCE, error_code=MESSAGE_TOO_LARGE, topic="hit", client_id="victim", count=None
    )
    victim = Producer(
        {"bootstrap.servers": sync_cluster.bootstrap_servers, "client.id": "victim", "retries": 0}
    )
    other = Producer(
        {"bootstrap.servers": sync_cluster.bootstrap_servers, "client.id": "other", "retries": 0}
    )
    assert produce(victim, "hit", [b"x"])[0][0].code() == MESSAGE_TOO_LARGE
    assert produce(victim, "miss", [b"x"])[0][0] is None
    assert produce(other, "hit", [b"x"])[0][0] is None


def test_metadata_error_for_one_topic_keeps_brokers_and_other_topics(sync_cluster: MockCluster) -> None:
    for name in ("a", "b"):
        sync_cluster.create_topic(name)
    sync_cluster.faults.add(api_key=METADATA, error_code=UNKNOWN_TOPIC_OR_PARTITION, topic="a")
    with Conn(sync_cluster, "meta") as conn:
        response = conn.call(MetadataRequest[12](topics=None))
    assert len(response.brokers) == 1
    assert {t.name: t.error_code for t in response.topics} == {"a": UNKNOWN_TOPIC_OR_PARTITION, "b": 0}


def test_coordinator_errors_delay_but_do_not_stop_a_group(sync_cluster: MockCluster) -> None:
    """Top-level error APIs: FindCoordinator answers COORDINATOR_NOT_AVAILABLE twice,
    then the consumer finds its coordinator and reads."""
    sync_cluster.create_topic("g")
    produce(Producer({"bootstrap.servers": sync_cluster.bootstrap_servers}), "g", [b"one"])
    fault = sync_cluster.faults.add(api_key=FIND_COORDINATOR, error_code=COORDINATOR_NOT_AVAILABLE, count=2)
    assert consume_all(sync_cluster, "g", 1) == [b"one"]
    assert fault.fired == 2


def test_acks_0_produce_with_an_error_fault_appends_nothing(sync_cluster: MockCluster) -> None:
    sync_cluster.create_topic("quiet")
    sync_cluster.faults.add(api_key=PRODUCE, error_code=NOT_LEADER_OR_FOLLOWER, count=1)
    with Conn(sync_cluster, "silent") as conn:
        conn.send(produce_to("quiet", (0,), acks=0))
        assert conn.call(metadata_request()).brokers  # the connection still works
    assert partition_end(sync_cluster, "quiet", 0) == 0


# ------------------------------------------------------------------------ latency and disconnects


def test_latency_delays_only_the_api_and_client_it_names(sync_cluster: MockCluster) -> None:
    fault = sync_cluster.faults.add(api_key=METADATA, latency_ms=400, client_id="slow")
    timings = {}
    for client_id in ("slow", "fast"):
        admin = KafkaAdminClient(bootstrap_servers=sync_cluster.bootstrap_servers, client_id=client_id)
        try:
            start = time.monotonic()
            admin.list_topics()
            timings[client_id] = time.monotonic() - start
        finally:
            admin.close()
    assert timings["slow"] >= 0.4 - TIMER_SLACK_S
    assert fault.fired >= 1
    faulted = {(r["client_id"], r["fault"] is not None) for r in sync_cluster.requests.list(api_key=METADATA)}
    assert faulted == {("slow", True), ("fast", False)}  # only the client it names was delayed
    sync_cluster.faults.clear()
    assert sync_cluster.faults.list() == []


def test_latency_with_an_error_answers_the_error_late() -> None:
    with MockCluster(config=FAST) as cluster:
        cluster.create_topic("t")
        cluster.faults.add(api_key=PRODUCE, error_code=UNKNOWN_TOPIC_OR_PARTITION, latency_ms=300, count=1)
        with Conn(cluster, "late") as conn:
            start = time.monotonic()
            response = conn.call(produce_to("t", (0,)))
            assert time.monotonic() - start >= 0.3 - TIMER_SLACK_S
        assert response.responses[0].partition_responses[0].error_code == UNKNOWN_TOPIC_OR_PARTITION


def test_disconnect_closes_the_connection_and_clients_recover(sync_cluster: MockCluster) -> None:
    sync_cluster.create_topic("t")
    fault = sync_cluster.faults.add(api_key=PRODUCE, disconnect=True, count=1)
    producer = Producer({"bootstrap.servers": sync_cluster.bootstrap_servers, "enable.idempotence": True})
    reports = produce(producer, "t", [b"survives"])
    assert reports[0][0] is None and fault.fired == 1
    assert consume_all(sync_cluster, "t", 1) == [b"survives"]
    closes = [r for r in sync_cluster.requests.list(api_key=PRODUCE) if r["fault"] == fault.id]
    assert len(closes) == 1 and closes[0]["response"] is None


def test_kafka_python_sees_the_disconnect_and_retries(sync_cluster: MockCluster) -> None:
    sync_cluster.create_topic("t")
    sync_cluster.faults.add(api_key=PRODUCE, disconnect=True, count=1)
    producer = KafkaProducer(bootstrap_servers=sync_cluster.bootstrap_servers, retries=3, acks=1)
    try:
        producer.send("t", b"again").get(timeout=15)
    finally:
        producer.close()
    assert partition_end(sync_cluster, "t", 0) >= 1


# ------------------------------------------------------------------------ brokers and leaders


def test_a_broker_taken_down_sends_clients_to_the_others(cluster3: MockCluster) -> None:
    cluster3.create_topic("replicated", partitions=3, replication_factor=3)
    producer = Producer(
        {"bootstrap.servers": cluster3.bootstrap_servers, "enable.idempotence": True, "linger.ms": 5}
    )
    before = [b"before-%d" % i for i in range(30)]
    assert all(err is None for err, _ in produce(producer, "replicated", before))
    victim = cluster3.describe()["topics"][0]["partitions"][0]["leader"]

    cluster3.stop_broker(victim)
    described = cluster3.describe()
    assert {b["id"]: b["up"] for b in described["brokers"]}[victim] is False
    assert all(p["leader"] != victim for p in described["topics"][0]["partitions"])
    metadata = AdminClient({"bootstrap.servers": cluster3.bootstrap_servers}).list_topics(timeout=10)
    assert victim not in metadata.brokers and len(metadata.brokers) == 2
    assert all(p.leader != victim for p in metadata.topics["replicated"].partitions.values())

    after = [b"after-%d" % i for i in range(30)]
    assert all(err is None for err, _ in produce(producer, "replicated", after))
    assert sorted(consume_all(cluster3, "replicated", 60)) == sorted(before + after)

    cluster3.start_broker(victim)
    metadata = AdminClient({"bootstrap.servers": cluster3.bootstrap_servers}).list_topics(timeout=10)
    assert len(metadata.brokers) == 3
    assert {b["id"]: b["up"] for b in cluster3.describe()["brokers"]}[victim] is True


def test_a_partition_without_live_replicas_is_offline_until_its_broker_returns(cluster3: MockCluster) -> None:
    topic = cluster3.create_topic("single", partitions=3, replication_factor=1)
    leader = topic.partitions[0].leader
    cluster3.stop_broker(leader)
    metadata = AdminClient({"bootstrap.servers": cluster3.bootstrap_servers}).list_topics(
        "single", timeout=10
    )
    assert metadata.topics["single"].partitions[0].leader == -1
    cluster3.start_broker(leader)
    producer = Producer({"bootstrap.servers": cluster3.bootstrap_servers})
    assert produce(producer, "single", [b"back"], partition=0)[0][0] is None


def test_moving_a_leader_redirects_producers(cluster3: MockCluster) -> None:
    cluster3.create_topic("moving", partitions=1, replication_factor=1)
    producer = KafkaProducer(bootstrap_servers=cluster3.bootstrap_servers, acks=1, retries=5)
    try:
        producer.send("moving", b"first").get(timeout=10)
        old = cluster3.describe()["topics"][0]["partitions"][0]["leader"]
        new = next(b.node_id for b in cluster3.brokers if b.node_id != old)
        partition = cluster3.move_leader("moving", 0, new)
        assert partition.leader == new and partition.leader_epoch == 1
        producer.send("moving", b"second").get(timeout=10)
    finally:
        producer.close()
    assert partition_end(cluster3, "moving", 0) == 2
    with pytest.raises(ClusterError):
        cluster3.move_leader("moving", 5, new)


# ------------------------------------------------------------------------ forced throttles


def test_forced_throttle_fires_confluent_throttle_cb(sync_cluster: MockCluster) -> None:
    sync_cluster.create_topic("t")
    events: list[Any] = []
    producer = Producer(
        {
            "bootstrap.servers": sync_cluster.bootstrap_servers,
            "client.id": "throttled-app",
            "throttle_cb": events.append,
        }
    )
    assert produce(producer, "t", [b"warm-up"])[0][0] is None
    fault = sync_cluster.faults.throttle("throttled-app", throttle_ms=700, count=1, api_key=PRODUCE)
    start = time.monotonic()
    produce(producer, "t", [b"throttled"])
    produce(producer, "t", [b"held back"])  # librdkafka waits out the throttle first
    elapsed = time.monotonic() - start
    deadline = time.monotonic() + 5
    while not events and time.monotonic() < deadline:
        producer.poll(0.1)
    # librdkafka reports the throttle, then 0 once a response carries none.
    assert [round(e.throttle_time * 1000) for e in events][:1] == [700]
    assert all(e.throttle_time == 0 for e in events[1:])
    assert elapsed >= 0.6 - TIMER_SLACK_S
    assert fault.fired == 1 and sync_cluster.faults.list() == []


def test_forced_throttle_reaches_only_its_client_id(sync_cluster: MockCluster) -> None:
    sync_cluster.faults.throttle("someone-else", throttle_ms=5000, count=3)
    with Conn(sync_cluster, "me") as conn:
        assert conn.call(metadata_request()).throttle_time_ms == 0
    with Conn(sync_cluster, "someone-else") as conn:
        assert conn.call(metadata_request()).throttle_time_ms == 5000


# ------------------------------------------------------------------------ the rules themselves


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"api_key": 999, "error_code": 6}, "not an API"),
        ({"api_key": 0}, "needs error_code"),
        ({"api_key": 0, "error_code": 6, "disconnect": True}, "no error_code"),
        ({"api_key": 0, "error_code": 6, "count": 0}, "at least 1"),
        ({"api_key": 12, "error_code": 6, "topic": "t"}, "has no topics"),
        ({"api_key": 3, "error_code": 6, "partition": 0}, "no partitions"),
        ({"api_key": 0, "latency_ms": -1}, "within"),
        ({"api_key": 0, "error_code": 6, "broker": 7}, "not a broker"),
    ],
)
def test_faults_that_could_never_act_are_refused(kwargs: dict[str, Any], message: str) -> None:
    from broker.harness.faults import FaultInjector

    with pytest.raises(ValueError, match=message):
        FaultInjector(broker_ids=lambda: [0]).add(**kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"throttle_ms": 0}, "within"),
        ({"throttle_ms": 2**31}, "int32"),
        ({"throttle_ms": 5, "api_key": 999}, "not an API"),
    ],
)
def test_throttles_outside_the_wire_range_are_refused(kwargs: dict[str, Any], message: str) -> None:
    from broker.harness.faults import FaultInjector

    with pytest.raises(ValueError, match=message):
        FaultInjector().throttle("c", **kwargs)


def test_latency_then_disconnect_closes_late(sync_cluster: MockCluster) -> None:
    """A broker that hangs, then drops the connection (a client's request timeout path)."""
    fault = sync_cluster.faults.add(api_key=METADATA, latency_ms=300, disconnect=True, count=1)
    with Conn(sync_cluster, "hung") as conn:
        start = time.monotonic()
        conn.send(metadata_request())
        assert closed_by_broker(conn.sock) == b""
        assert time.monotonic() - start >= 0.3 - TIMER_SLACK_S
    assert fault.fired == 1
    [recorded] = [r for r in sync_cluster.requests.list(api_key=METADATA) if r["fault"] == fault.id]
    assert recorded["response"] is None


def test_a_leader_cannot_move_to_a_stopped_broker(cluster3: MockCluster) -> None:
    cluster3.create_topic("t", replication_factor=1)
    stopped = next(
        b.node_id
        for b in cluster3.brokers
        if b.node_id != cluster3.describe()["topics"][0]["partitions"][0]["leader"]
    )
    cluster3.stop_broker(stopped)
    with pytest.raises(ClusterError, match="not available"):
        cluster3.move_leader("t", 0, stopped)


def test_faults_are_listed_in_order_and_removed_by_id(sync_cluster: MockCluster) -> None:
    first = sync_cluster.faults.add(api_key=PRODUCE, error_code=6, count=3)
    second = sync_cluster.faults.throttle("c", 100)
    assert [f.id for f in sync_cluster.faults.list()] == [first.id, second.id]
    assert first.to_dict()["count"] == 3 and second.to_dict()["throttle_ms"] == 100
    assert sync_cluster.faults.remove(first.id) and not sync_cluster.faults.remove(first.id)
    assert [f.id for f in sync_cluster.faults.list()] == [second.id]


def test_a_failed_start_leaves_nothing_listening() -> None:
    """The admin port is taken: start fails, and the brokers it had started are closed."""
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    cluster = MockCluster(brokers=2, config={"admin.port": str(taken.getsockname()[1])})
    try:
        with pytest.raises(OSError), cluster:
            pass
        assert not any(broker.running for broker in cluster.brokers)
    finally:
        taken.close()


def test_fetch_faults_and_forced_throttles_reach_the_wire_under_a_fetch_quota(
    sync_cluster: MockCluster,
) -> None:
    """A fetch under consumer_byte_rate is encoded early to measure it; a fault's error
    entries and a forced throttle must still be in what is sent."""
    from tests.quotas.test_quota_enforcement_wire import fetch_request

    sync_cluster.create_topic("quoted", partitions=1)
    sync_cluster.quotas.alter({"client-id": "fetcher"}, set={"consumer_byte_rate": 10**9})
    sync_cluster.faults.add(
        api_key=1, error_code=NOT_LEADER_OR_FOLLOWER, topic="quoted", partition=0, count=1
    )
    with Conn(sync_cluster, "fetcher") as conn:
        response = conn.call(fetch_request("quoted", 0))
        assert [(p.partition_index, p.error_code) for t in response.responses for p in t.partitions] == [
            (0, NOT_LEADER_OR_FOLLOWER)
        ]
        sync_cluster.faults.throttle("fetcher", 200, count=1)
        assert conn.call(fetch_request("quoted", 0)).throttle_time_ms == 200


def test_acks_0_produce_with_a_partition_filter_still_appends_the_rest(sync_cluster: MockCluster) -> None:
    sync_cluster.create_topic("half", partitions=2)
    sync_cluster.faults.add(
        api_key=PRODUCE, error_code=NOT_LEADER_OR_FOLLOWER, topic="half", partition=0, count=1
    )
    with Conn(sync_cluster, "fire-and-forget") as conn:
        conn.send(produce_to("half", (0, 1), acks=0))
        assert conn.call(metadata_request()).brokers
    assert [partition_end(sync_cluster, "half", i) for i in (0, 1)] == [0, 1]


def test_an_api_versions_error_is_answered_in_v0(sync_cluster: MockCluster) -> None:
    """KIP-511: whatever version was asked, an ApiVersions error comes back in v0."""
    from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

    sync_cluster.faults.add(api_key=18, error_code=35, count=1)
    with Conn(sync_cluster, "versions") as conn:
        conn.send(ApiVersionsRequest[3](client_software_name="x", client_software_version="1"))
        _, frame = conn.receive_frame()
    assert ApiVersionsResponse[0].decode(frame, version=0, header=True).error_code == 35
