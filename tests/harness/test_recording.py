"""Request recording: the bounded ring (`cluster.requests`) and the JSON-lines file."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from kafka import KafkaProducer
from kafka.record import MemoryRecords

from broker import MockCluster
from tests.conftest import FAST
from tests.quotas.test_quota_enforcement_wire import Conn, metadata_request

PRODUCE, METADATA = 0, 3


def produce(cluster: MockCluster, values: list[bytes], client_id: str = "recorded") -> None:
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, client_id=client_id, linger_ms=0)
    try:
        for value in values:
            producer.send("rec", value).get(timeout=10)
    finally:
        producer.close()


def values_in(records: bytes) -> list[bytes]:
    memory = MemoryRecords(records)
    found = []
    while memory.has_next():
        batch = memory.next_batch()
        assert batch is not None
        found.extend(record.value for record in batch)
    return found


def test_the_ring_holds_decoded_requests_and_responses_of_a_real_client() -> None:
    with MockCluster(config=FAST) as cluster:
        cluster.create_topic("rec")
        produce(cluster, [b"first", b"second"])
        produced = cluster.requests.list(api_key=PRODUCE)
        everything = cluster.requests.list()
    assert len(produced) == 2
    first = produced[0]
    assert first["api"] == "Produce" and first["client_id"] == "recorded"
    assert first["client_software_name"] == "kafka-python" and first["broker"] == 0
    assert first["header"]["correlation_id"] == first["correlation_id"]
    [topic] = first["request"]["topic_data"]
    assert topic["name"] == "rec"
    assert values_in(bytes(topic["partition_data"][0]["records"])) == [b"first"]
    assert first["response"]["responses"][0]["partition_responses"][0]["error_code"] == 0
    assert [e["api"] for e in everything][:1] == ["ApiVersions"]
    assert {"Metadata", "Produce"} <= {e["api"] for e in everything}


def test_the_ring_is_bounded_and_filtered_by_api_and_limit() -> None:
    with MockCluster(config={**FAST, "record.requests.max": "3"}) as cluster:
        with Conn(cluster, "counter") as conn:
            for _ in range(5):
                conn.call(metadata_request())
        kept = cluster.requests.list()
        assert [e["correlation_id"] for e in kept] == [3, 4, 5]
        assert [e["correlation_id"] for e in cluster.requests.list(api_key=METADATA, limit=2)] == [4, 5]
        assert cluster.requests.list(api_key=PRODUCE) == []
        assert cluster.requests.list(limit=0) == []
        cluster.requests.clear()
        assert cluster.requests.list() == []


def test_the_ring_is_also_bounded_by_request_bytes() -> None:
    """record.requests.max.bytes: the newest requests whose frames fit the budget stay,
    so a load run with large batches does not pin hundreds of produce frames."""
    with MockCluster(config={**FAST, "record.requests.max": "100", "record.requests.max.bytes": "50000"}) as cluster:
        cluster.create_topic("rec")
        produce(cluster, [bytes([n]) * 20_000 for n in range(6)])
        produced = cluster.requests.list(api_key=PRODUCE)
        # Each produce frame holds one 20 kB record: two fit in 50 kB beside the small
        # requests after them, the four before them are gone.
        assert len(produced) == 2
        kept = [values_in(bytes(e["request"]["topic_data"][0]["partition_data"][0]["records"])) for e in produced]
        assert kept == [[bytes([4]) * 20_000], [bytes([5]) * 20_000]]
        with Conn(cluster, "counter") as conn:
            for _ in range(3):
                conn.call(metadata_request())
        assert [e["correlation_id"] for e in cluster.requests.list()][-3:] == [1, 2, 3]
        cluster.requests.clear()
        produce(cluster, [b"x" * 60_000])
        assert len(cluster.requests.list(api_key=PRODUCE)) == 1  # the newest is kept even alone


def test_recording_off_keeps_nothing() -> None:
    with MockCluster(config={**FAST, "record.requests.max": "0"}) as cluster:
        with Conn(cluster, "unseen") as conn:
            conn.call(metadata_request())
        assert cluster.requests.list() == []


def test_record_file_has_one_json_line_per_request_with_bytes_as_base64(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    with MockCluster(config={**FAST, "record.file": str(path), "record.requests.max": "0"}) as cluster:
        cluster.create_topic("rec")
        produce(cluster, [b"on disk"])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines and all(line["client_id"] == "recorded" for line in lines)
    [produced] = [line for line in lines if line["api"] == "Produce"]
    records = produced["request"]["topic_data"][0]["partition_data"][0]["records"]
    assert values_in(base64.b64decode(records)) == [b"on disk"]
    assert produced["response"]["responses"][0]["partition_responses"][0]["base_offset"] == 0


def test_the_file_has_every_request_in_order_once_the_cluster_stops(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    with MockCluster(config={**FAST, "record.file": str(path)}) as cluster:
        with Conn(cluster, "many") as conn:
            for _ in range(300):
                conn.call(metadata_request())
    ids = [json.loads(line)["correlation_id"] for line in path.read_text().splitlines()]
    assert ids == list(range(1, 301))


def test_sasl_secrets_are_redacted(tmp_path: Path) -> None:
    from tests.security.test_sasl import kafka_python_config, sasl_config

    with MockCluster(config={**FAST, **sasl_config(tmp_path)}) as cluster:
        producer = KafkaProducer(**kafka_python_config(cluster, "PLAIN", "alice", "alice-secret"))
        producer.send("secretive", b"x").get(timeout=10)
        producer.close()
        logins = cluster.requests.list(api_key=36)  # one per connection
        everything = json.dumps(cluster.requests.list(), default=str)
    assert logins and all(login["request"]["auth_bytes"] == "<redacted>" for login in logins)
    assert "alice-secret" not in everything
