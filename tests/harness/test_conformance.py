"""The conformance report: each client software's API versions, errors, throttle
behaviour and protocol oddities, from real clients and from raw ones built to misbehave."""

from __future__ import annotations

import asyncio
import json
import struct
import time
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Producer
from kafka import KafkaConsumer, KafkaProducer
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

from broker import MockCluster
from tests.conftest import FAST
from tests.quotas.test_quota_enforcement_wire import Conn, closed_by_broker
from tests.support.wire import read_frame

PRODUCE = 0
THROTTLE_MS = 300


def client(report: dict[str, Any], name: str, client_id: str | None = None) -> dict[str, Any]:
    found = [
        c
        for c in report["clients"]
        if c["software_name"] == name and (client_id is None or client_id in c["client_ids"])
    ]
    assert len(found) == 1, report
    return found[0]


def versions(entry: dict[str, Any]) -> dict[str, set[int]]:
    return {api["api"]: {int(v) for v in api["versions"]} for api in entry["apis"]}


def run_kafka_python(cluster: MockCluster) -> None:
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, client_id="kp")
    for i in range(5):
        producer.send("conf", b"kp-%d" % i).get(timeout=10)
    producer.close()
    consumer = KafkaConsumer(
        "conf",
        bootstrap_servers=cluster.bootstrap_servers,
        client_id="kp",
        group_id="kp-group",
        auto_offset_reset="earliest",
        consumer_timeout_ms=3000,
    )
    assert len([m for _, m in zip(range(5), consumer, strict=False)]) == 5
    consumer.close()


def run_confluent(cluster: MockCluster) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "ck"})
    for i in range(5):
        producer.produce("conf", b"ck-%d" % i)
        producer.flush(10)  # one request each, so the throttle applies between them


async def run_aiokafka(cluster: MockCluster) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, client_id="aio")
    await producer.start()
    try:
        for i in range(5):
            await producer.send_and_wait("conf", b"aio-%d" % i)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        "conf", bootstrap_servers=cluster.bootstrap_servers, client_id="aio", auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        assert len(await consumer.getmany(timeout_ms=3000, max_records=5)) == 1
    finally:
        await consumer.stop()


def test_report_lists_kafka_python_aiokafka_and_confluent_with_their_versions_and_throttle_behaviour(
    tmp_path: Path,
) -> None:
    """Each client produces under a forced throttle (three throttled produce responses).
    kafka-python waits it out (KIP-219, kafka-python PR #2510); librdkafka (its issue
    #5592) and aiokafka send their next request at once, and the report flags them."""
    with MockCluster(config=FAST) as cluster:
        cluster.create_topic("conf")
        for client_id in ("kp", "ck", "aio"):
            cluster.faults.throttle(client_id, THROTTLE_MS, count=3, api_key=PRODUCE)
        run_kafka_python(cluster)
        run_confluent(cluster)
        asyncio.run(run_aiokafka(cluster))
        report = cluster.conformance.report()
        cluster.conformance.write(str(tmp_path / "report.json"))
    assert json.loads((tmp_path / "report.json").read_text()) == report

    kafka_python = client(report, "kafka-python")
    assert kafka_python["software_version"] == "3.0.12" and kafka_python["client_ids"] == ["kp"]
    assert {"ApiVersions", "Metadata", "Produce", "Fetch", "JoinGroup", "SyncGroup"} <= set(
        versions(kafka_python)
    )
    confluent = client(report, "confluent-kafka-python")
    assert confluent["software_version"].startswith("2.16.1")
    assert versions(confluent)["ApiVersions"] == {3} and "Produce" in versions(confluent)
    aiokafka = client(report, "unknown", "aio")  # ApiVersions v0: no software name
    assert versions(aiokafka)["ApiVersions"] == {0} and "Fetch" in versions(aiokafka)
    for entry in (kafka_python, confluent, aiokafka):
        for api in entry["apis"]:
            low, high = api["broker_versions"]
            assert all(low <= int(v) <= high for v in api["versions"])
        assert entry["throttle"]["throttled_responses"] == 3
        assert entry["oddities"] == []

    assert kafka_python["throttle"]["honoured"] is True
    for ignores in (confluent, aiokafka):
        assert ignores["throttle"]["honoured"] is False and ignores["throttle"]["violations"] >= 1


def raw_client(cluster: MockCluster, name: str) -> Conn:
    conn = Conn(cluster, f"{name}-id")
    answer = conn.call(ApiVersionsRequest[3](client_software_name=name, client_software_version="1.0"))
    assert answer.error_code == 0
    return conn


def test_a_raw_client_that_ignores_throttle_time_is_flagged_and_a_compliant_one_is_not() -> None:
    with MockCluster(config=FAST) as cluster:
        with raw_client(cluster, "ignorer") as ignorer, raw_client(cluster, "waiter") as waiter:
            for conn in (ignorer, waiter):
                cluster.faults.throttle(conn.client_id, THROTTLE_MS, count=1)
                assert conn.call(MetadataRequest[12](topics=[])).throttle_time_ms == THROTTLE_MS
            ignorer.send(MetadataRequest[12](topics=[]))  # at once, while muted
            time.sleep(THROTTLE_MS / 1000 + 0.05)
            waiter.send(MetadataRequest[12](topics=[]))
            for conn in (ignorer, waiter):
                assert conn.receive().throttle_time_ms == 0
        report = cluster.conformance.report()
    assert client(report, "ignorer")["throttle"] == {
        "throttled_responses": 1,
        "checked": 1,
        "violations": 1,
        "honoured": False,
    }
    assert client(report, "waiter")["throttle"] == {
        "throttled_responses": 1,
        "checked": 1,
        "violations": 0,
        "honoured": True,
    }


def test_requests_pipelined_before_the_throttled_response_are_no_violation() -> None:
    """Two requests sent back to back: the second was on its way before the client could
    know of the throttle, so it does not count against the client."""
    with MockCluster(config=FAST) as cluster:
        with raw_client(cluster, "pipeliner") as conn:
            cluster.faults.throttle(conn.client_id, THROTTLE_MS, count=1)
            conn.send(MetadataRequest[12](topics=[]), MetadataRequest[12](topics=[]))
            assert [conn.receive().throttle_time_ms for _ in range(2)] == [THROTTLE_MS, 0]
        report = cluster.conformance.report()
    assert client(report, "pipeliner")["throttle"]["violations"] == 0


def test_errors_received_are_counted_per_api_and_code() -> None:
    with MockCluster(config=FAST) as cluster:
        cluster.faults.add(api_key=3, error_code=3, count=2, topic="missing")
        with raw_client(cluster, "asker") as conn:
            topic = MetadataRequest[12].MetadataRequestTopic(name="missing", topic_id=None)
            for _ in range(2):
                conn.call(MetadataRequest[12](topics=[topic], allow_auto_topic_creation=False))
        report = cluster.conformance.report()
    assert client(report, "asker")["errors"] == [
        {"api_key": 3, "api": "Metadata", "error_code": 3, "error": "UNKNOWN_TOPIC_OR_PARTITION", "count": 2}
    ]


def test_oddities_unknown_tagged_fields_and_versions_outside_those_advertised() -> None:
    with MockCluster(config=FAST) as cluster:
        with raw_client(cluster, "odd") as conn:
            # Metadata v12 (flexible) with one unknown tagged field (tag 9) at the top level.
            frame = conn.frame(MetadataRequest[12](topics=[]))
            assert frame[-1] == 0  # no tagged fields yet
            tagged = frame[4:-1] + bytes([1, 9, 2]) + b"hi"
            conn.sock.sendall(struct.pack(">i", len(tagged)) + tagged)
            assert read_frame(conn.sock)  # answered as usual
            # Produce v99: not advertised; Kafka closes the connection.
            conn.sock.sendall(struct.pack(">ihhi", 10, 0, 99, 7) + b"\x00\x00")
            assert closed_by_broker(conn.sock) == b""
        report = cluster.conformance.report()
    oddities = {o["what"]: o["count"] for o in client(report, "odd")["oddities"]}
    assert oddities == {
        "unknown tagged field MetadataRequest._9 in v12": 1,
        "Produce v99 is outside the advertised v0-13": 1,
    }


def test_conformance_report_file_is_written_when_the_cluster_stops(tmp_path: Path) -> None:
    path = tmp_path / "conformance.json"
    with MockCluster(config={**FAST, "conformance.report.file": str(path)}) as cluster:
        with raw_client(cluster, "writer") as conn:
            conn.call(MetadataRequest[12](topics=[]))
        assert not path.exists()
    written = json.loads(path.read_text())
    assert client(written, "writer")["apis"][0]["api"] == "Metadata"


def test_injected_errors_beside_handled_entries_are_counted_each() -> None:
    """A produce to two partitions, one failed by a fault: the report counts that error
    although the broker handled the other partition."""
    from tests.harness.test_faults import produce_to

    with MockCluster(config=FAST) as cluster:
        cluster.create_topic("pair", partitions=2)
        cluster.faults.add(api_key=PRODUCE, error_code=6, topic="pair", partition=0, count=1)
        with raw_client(cluster, "half-failed") as conn:
            conn.call(produce_to("pair", (0, 1)))
        report = cluster.conformance.report()
    assert [(e["api"], e["error_code"], e["count"]) for e in client(report, "half-failed")["errors"]] == [
        ("Produce", 6, 1)
    ]
