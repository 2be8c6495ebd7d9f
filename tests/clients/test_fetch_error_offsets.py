"""A fetch partition answered with an error carries no offsets, as Kafka's
FetchResponse.partitionResponse builds it: high watermark, last stable offset and log
start offset -1 (a consumer must not take them for the log's), and a partition the
metadata does not know an empty aborted-transactions list. Raw Fetch v12: clients act on
the error and never show these fields."""

from __future__ import annotations

import socket
from typing import Any

from kafka import KafkaProducer
from kafka.protocol.consumer import FetchRequest, FetchResponse

from broker import MockCluster
from tests.support.wire import encode_request, read_frame

OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION = 1, 3


def fetch(cluster: MockCluster, topic: str, partition: int, offset: int) -> Any:
    Topic = FetchRequest[12].FetchTopic
    request = FetchRequest[12](
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            Topic(
                topic=topic,
                partitions=[
                    Topic.FetchPartition(
                        partition=partition,
                        current_leader_epoch=-1,
                        fetch_offset=offset,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=1 << 20,
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(encode_request(request, 1, "fetch-errors"))
        response = FetchResponse.decode(read_frame(sock), version=12, header=True)
    return response.responses[0].partitions[0]


def test_error_partitions_carry_no_offsets(sync_cluster: MockCluster) -> None:
    sync_cluster.create_topic("fetch-errors", partitions=1)
    producer = KafkaProducer(bootstrap_servers=sync_cluster.bootstrap_servers)
    for i in range(3):
        producer.send("fetch-errors", b"v%d" % i, partition=0).get(timeout=10)
    producer.close()

    served = fetch(sync_cluster, "fetch-errors", 0, 0)
    assert (served.error_code, served.high_watermark, served.log_start_offset) == (0, 3, 0)

    beyond = fetch(sync_cluster, "fetch-errors", 0, 9)
    assert beyond.error_code == OFFSET_OUT_OF_RANGE
    assert (beyond.high_watermark, beyond.last_stable_offset, beyond.log_start_offset) == (-1, -1, -1)
    assert beyond.aborted_transactions is None

    unknown = fetch(sync_cluster, "fetch-errors", 5, 0)
    assert unknown.error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert (unknown.high_watermark, unknown.last_stable_offset, unknown.log_start_offset) == (-1, -1, -1)
    assert unknown.aborted_transactions == []
