"""Auto-created topics as Kafka 4.x creates them (AutoTopicCreationManager and the
controller's strict controller_mutation_rate): a Metadata request for an unknown topic
answers UNKNOWN_TOPIC_OR_PARTITION and asks the controller to create it on the client's
behalf; the controller refuses while the client's token bucket is empty, so the client
keeps seeing the topic unknown until the bucket refills. Real producers get their
records through either way."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Producer
from kafka import KafkaProducer
from kafka.errors import KafkaTimeoutError

from broker import MockCluster
from tests.conftest import FAST

UNKNOWN_TOPIC_OR_PARTITION = 3
METADATA = 3


def topic_answers(cluster: MockCluster, topic: str) -> list[int]:
    """The error codes the recorded Metadata responses gave `topic`, oldest first."""
    return [
        entry["error_code"]
        for recorded in cluster.requests.list(api_key=METADATA)
        for entry in (recorded["response"] or {}).get("topics") or []
        if entry["name"] == topic
    ]


def test_a_new_topic_is_unknown_once_then_created_for_confluent_kafka() -> None:
    with MockCluster(config={**FAST, "num.partitions": "2"}) as cluster:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "ck"})
        delivered: list[Any] = []
        producer.produce("fresh", b"v", on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
        assert producer.flush(30) == 0
        assert delivered == [(None, 0)]
        answers = topic_answers(cluster, "fresh")
        assert len(cluster.state.topics["fresh"].partitions) == 2
    assert answers[0] == UNKNOWN_TOPIC_OR_PARTITION and answers.count(UNKNOWN_TOPIC_OR_PARTITION) == 1
    assert answers[-1] == 0


def test_auto_creation_is_refused_while_the_mutation_bucket_is_empty() -> None:
    """Bucket of 2 tokens (1 partition/s over 2 windows of 1 s): the first 5-partition
    topic takes it to -3, so the second topic is refused until it refills (~3 s)."""
    config = {
        **FAST,
        "num.partitions": "5",
        "controller.quota.window.num": "2",
        "controller.quota.window.size.seconds": "1",
    }
    with MockCluster(config=config) as cluster:
        cluster.quotas.alter({"client-id": "kp"}, set={"controller_mutation_rate": 1})
        producer = KafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers, client_id="kp", max_block_ms=30000
        )
        try:
            assert producer.send("first", b"a").get(timeout=30).offset == 0
            assert producer.send("second", b"b").get(timeout=30).offset == 0
        finally:
            producer.close(timeout=10)
        first, second = topic_answers(cluster, "first"), topic_answers(cluster, "second")
        created = set(cluster.state.topics)
    assert {"first", "second"} <= created
    assert first.count(UNKNOWN_TOPIC_OR_PARTITION) == 1  # asked once, created at once
    assert second.count(UNKNOWN_TOPIC_OR_PARTITION) >= 2  # refused at least once before the refill
    assert second[-1] == 0


def test_without_auto_creation_the_topic_stays_unknown() -> None:
    with MockCluster(config={**FAST, "auto.create.topics.enable": "false"}) as cluster:
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, max_block_ms=1500)
        try:
            with pytest.raises(KafkaTimeoutError):  # its metadata never comes
                producer.send("never", b"x")
        finally:
            producer.close(timeout=10)
        assert "never" not in cluster.state.topics
        assert set(topic_answers(cluster, "never")) == {UNKNOWN_TOPIC_OR_PARTITION}
