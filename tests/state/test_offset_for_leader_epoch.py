"""OffsetForLeaderEpoch (23): end offsets per leader epoch from the epochs batches were
appended under, Kafka's answers for unknown and stale epochs, and librdkafka validating
its position with it after a leader change (KIP-320)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from broker import MockCluster
from messages.registry import request_class
from protocol.errors import ErrorCode
from tests.support.wire import round_trip

Request = request_class(23)
Topic = Request.OffsetForLeaderTopic
Partition = Topic.OffsetForLeaderPartition


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as running:
        running.create_topic("t", 1, replication_factor=3)
        yield running


def produce(cluster: MockCluster, count: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(start, start + count):
        producer.produce("t", value=str(i).encode(), partition=0)
        producer.flush(10)


def ask(cluster: MockCluster, epoch: int, current: int = -1, version: int = 4) -> Any:
    leader = cluster.state.topics["t"].partitions[0].leader
    host, port = cluster.bootstrap_servers.split(",")[leader].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        request = Request[version](
            replica_id=-1,
            topics=[
                Topic(
                    topic="t",
                    partitions=[Partition(partition=0, current_leader_epoch=current, leader_epoch=epoch)],
                )
            ],
        )
        answer = round_trip(sock, request, 1, "raw").topics[0].partitions[0]
    return answer.error_code, answer.leader_epoch, answer.end_offset


def test_end_offsets_per_epoch(cluster: MockCluster) -> None:
    produce(cluster, 3)  # offsets 0-2 under epoch 0
    cluster.move_leader("t", 0, 1)
    produce(cluster, 2)  # offsets 3-4 under epoch 1
    cluster.move_leader("t", 0, 2)  # epoch 2, nothing appended yet
    assert ask(cluster, 0) == (ErrorCode.NONE, 0, 3)  # epoch 0 ended where epoch 1 began
    assert ask(cluster, 1) == (ErrorCode.NONE, 1, 5)
    assert ask(cluster, 2) == (ErrorCode.NONE, 2, 5)  # the current epoch: the log end
    assert ask(cluster, 7) == (ErrorCode.NONE, -1, -1)  # an epoch beyond any known
    assert ask(cluster, -1) == (ErrorCode.NONE, -1, -1)
    assert ask(cluster, 1, current=1)[0] == ErrorCode.FENCED_LEADER_EPOCH
    assert ask(cluster, 1, current=9)[0] == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert ask(cluster, 1, version=2) == (ErrorCode.NONE, 1, 5)


def test_librdkafka_validates_its_position_after_a_leader_change(cluster: MockCluster) -> None:
    produce(cluster, 3)
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "v", "auto.offset.reset": "earliest"}
    )
    seen: list[int] = []
    try:
        consumer.subscribe(["t"])
        deadline = time.monotonic() + 30
        while len(seen) < 3:
            assert time.monotonic() < deadline
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                seen.append(int(message.value()))
        cluster.move_leader("t", 0, 1)
        produce(cluster, 2, start=3)
        while len(seen) < 5:
            assert time.monotonic() < deadline
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                seen.append(int(message.value()))
    finally:
        consumer.close()
    assert seen == [0, 1, 2, 3, 4]
    checks = cluster.requests.list(api_key=23)
    assert checks, "librdkafka did not validate its position"
    answered = checks[-1]["response"]["topics"][0]["partitions"][0]
    assert (
        answered["error_code"] == ErrorCode.NONE
        and answered["leader_epoch"] == 0
        and answered["end_offset"] == 3
    )
