"""Error codes for requests no client library sends in ordinary use, over raw frames
built with kafka-python's structs: a leader epoch ahead of or behind the partition's
(FENCED_LEADER_EPOCH 74, UNKNOWN_LEADER_EPOCH 75, as Kafka's Partition checks it) and a
DescribeCluster for controller or unknown endpoints (MISMATCHED_ENDPOINT_TYPE 114,
UNSUPPORTED_ENDPOINT_TYPE 115, as Kafka's AuthHelper answers it). The expected codes
are written out here rather than taken from the broker's own table."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from kafka.protocol.admin import DescribeClusterRequest
from kafka.protocol.consumer import ListOffsetsRequest

from broker import MockCluster
from tests.support.wire import round_trip

FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH = 74, 75
MISMATCHED_ENDPOINT_TYPE, UNSUPPORTED_ENDPOINT_TYPE = 114, 115


@pytest.fixture
def conn(sync_cluster: MockCluster) -> Iterator[socket.socket]:
    host, port = sync_cluster.bootstrap_servers.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        yield sock


def list_offsets_error(sock: socket.socket, epoch: int) -> int:
    topic = ListOffsetsRequest.ListOffsetsTopic
    request = ListOffsetsRequest[7](
        replica_id=-1,
        isolation_level=0,
        topics=[
            topic(
                name="epochs",
                partitions=[
                    topic.ListOffsetsPartition(partition_index=0, current_leader_epoch=epoch, timestamp=-1)
                ],
            )
        ],
    )
    response = round_trip(sock, request, 1, "raw")
    return int(response.topics[0].partitions[0].error_code)


def test_leader_epochs_behind_and_ahead(sync_cluster3: MockCluster) -> None:
    sync_cluster3.create_topic("epochs", replication_factor=3)
    first = sync_cluster3.brokers[0].node_id
    sync_cluster3.move_leader("epochs", 0, sync_cluster3.brokers[1].node_id)
    sync_cluster3.move_leader("epochs", 0, first)  # two elections: epoch 2 or more, led by `first`
    epoch = sync_cluster3.state.topics["epochs"].partitions[0].leader_epoch
    assert epoch >= 2
    host, port = sync_cluster3.bootstrap_servers.split(",")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        assert list_offsets_error(sock, epoch) == 0
        assert list_offsets_error(sock, epoch - 1) == FENCED_LEADER_EPOCH
        assert list_offsets_error(sock, epoch + 1) == UNKNOWN_LEADER_EPOCH


@pytest.mark.parametrize(
    ("endpoint_type", "error_code", "message"),
    [
        (
            2,
            MISMATCHED_ENDPOINT_TYPE,
            "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER",
        ),
        (7, UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 7"),
    ],
)
def test_describe_cluster_for_other_endpoints(
    conn: socket.socket, endpoint_type: int, error_code: int, message: str
) -> None:
    request = DescribeClusterRequest[1](
        include_cluster_authorized_operations=False, endpoint_type=endpoint_type
    )
    response = round_trip(conn, request, 1, "raw")
    assert (response.error_code, response.error_message, response.brokers) == (error_code, message, [])
    broker_request = DescribeClusterRequest[1](include_cluster_authorized_operations=False, endpoint_type=1)
    assert round_trip(conn, broker_request, 2, "raw").error_code == 0  # the connection stays usable
