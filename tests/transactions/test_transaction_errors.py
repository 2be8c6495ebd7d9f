"""The transaction APIs' error paths, over raw frames (what no real client sends)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer
from kafka.protocol.consumer import ListOffsetsRequest, OffsetFetchRequest
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.producer import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
    WriteTxnMarkersRequest,
)
from kafka.record.default_records import DefaultRecordBatchBuilder

from broker import MockCluster
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.support.wire import round_trip


class Wire:
    """One connection to a broker of the cluster."""

    def __init__(self, cluster: MockCluster, broker: int = 0) -> None:
        host, port = cluster.bootstrap_servers.split(",")[broker].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.correlation_id = 0

    def __call__(self, request: Any) -> Any:
        self.correlation_id += 1
        return round_trip(self.sock, request, self.correlation_id, "raw")

    def init(self, transactional_id: str, timeout_ms: int = 60_000) -> tuple[int, int]:
        response = self(
            InitProducerIdRequest[4](transactional_id=transactional_id, transaction_timeout_ms=timeout_ms)
        )
        assert response.error_code == ErrorCode.NONE
        return response.producer_id, response.producer_epoch

    def add(
        self, transactional_id: str, producer: tuple[int, int], topic: str, *partitions: int
    ) -> dict[int, int]:
        response = self(
            AddPartitionsToTxnRequest[3](
                v3_and_below_transactional_id=transactional_id,
                v3_and_below_producer_id=producer[0],
                v3_and_below_producer_epoch=producer[1],
                v3_and_below_topics=[(topic, list(partitions))],
            )
        )
        return {
            p.partition_index: p.partition_error_code
            for t in response.results_by_topic_v3_and_below
            for p in t.results_by_partition
        }

    def end_txn(
        self, transactional_id: str, producer: tuple[int, int], commit: bool, version: int = 3
    ) -> Any:
        return self(
            EndTxnRequest[version](
                transactional_id=transactional_id,
                producer_id=producer[0],
                producer_epoch=producer[1],
                committed=commit,
            )
        )

    def end(self, transactional_id: str, producer: tuple[int, int], commit: bool) -> int:
        return int(self.end_txn(transactional_id, producer, commit).error_code)

    def produce(
        self,
        transactional_id: str,
        producer: tuple[int, int],
        topic: str,
        partition: int,
        seq: int,
        version: int = 9,
    ) -> int:
        builder = DefaultRecordBatchBuilder(2, 0, True, producer[0], producer[1], seq, 2**20)
        builder.append(0, 1000, None, b"v", [])
        response = self(
            ProduceRequest[version](
                transactional_id=transactional_id,
                acks=-1,
                timeout_ms=5000,
                topic_data=[(topic, [(partition, bytes(builder.build()))])],
            )
        )
        return int(response.responses[0].partition_responses[0].error_code)


@pytest.fixture
def wire(sync_cluster: MockCluster) -> Iterator[Wire]:
    sync_cluster.create_topic("txn", 2)
    connection = Wire(sync_cluster)
    yield connection
    connection.sock.close()


def test_find_coordinator_for_transactional_ids(sync_cluster3: MockCluster) -> None:
    wire = Wire(sync_cluster3)
    found = wire(FindCoordinatorRequest[4](key_type=1, coordinator_keys=["app-1", ""]))
    by_key = {c.key: c for c in found.coordinators}
    assert by_key["app-1"].error_code == ErrorCode.NONE
    assert by_key["app-1"].node_id == sync_cluster3.transactions.coordinator_for("app-1")
    # Kafka does not refuse an empty key: "".hashCode() is 0, so partition 0's leader
    assert by_key[""].error_code == ErrorCode.NONE
    assert by_key[""].node_id == sync_cluster3.transactions.coordinator_for("")
    other = next(b for b in range(3) if sync_cluster3.brokers[b].node_id != by_key["app-1"].node_id)
    elsewhere = Wire(sync_cluster3, other)
    refused = elsewhere(InitProducerIdRequest[4](transactional_id="app-1", transaction_timeout_ms=60_000))
    assert refused.error_code == ErrorCode.NOT_COORDINATOR


def test_init_producer_id_checks_the_timeout_and_bumps_the_epoch(wire: Wire) -> None:
    too_long = wire(InitProducerIdRequest[4](transactional_id="t", transaction_timeout_ms=900_001))
    assert too_long.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    first = wire.init("t")
    second = wire.init("t")
    assert second == (first[0], first[1] + 1)

    def recover(producer_id: int, producer_epoch: int) -> Any:
        return wire(
            InitProducerIdRequest[4](
                transactional_id="t",
                transaction_timeout_ms=60_000,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
            )
        )

    # KIP-360: recovering with the current epoch bumps it; a retry with the one before gets
    # the same answer; another producer id, or an older epoch, is fenced.
    third = recover(*second)
    assert (third.error_code, third.producer_epoch) == (ErrorCode.NONE, second[1] + 1)
    retried = recover(*second)
    assert (retried.error_code, retried.producer_epoch) == (ErrorCode.NONE, second[1] + 1)
    assert recover(first[0] + 1, third.producer_epoch).error_code == ErrorCode.PRODUCER_FENCED
    assert recover(first[0], first[1]).error_code == ErrorCode.PRODUCER_FENCED
    assert recover(first[0], -1).error_code == ErrorCode.INVALID_REQUEST  # only one of the two


def test_end_txn_errors(wire: Wire) -> None:
    producer = wire.init("ender")
    assert wire.end("ender", producer, commit=True) == ErrorCode.INVALID_TXN_STATE  # no transaction
    assert wire.add("ender", producer, "txn", 0) == {0: ErrorCode.NONE}
    assert wire.end("ender", (producer[0], producer[1] - 1), commit=True) == ErrorCode.PRODUCER_FENCED
    assert (
        wire.end("ender", (producer[0] + 100, producer[1]), commit=True)
        == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    )
    assert wire.end("ender", producer, commit=False) == ErrorCode.NONE
    assert wire.end("ender", producer, commit=False) == ErrorCode.NONE  # a retried abort
    assert wire.end("ender", producer, commit=True) == ErrorCode.INVALID_TXN_STATE  # commit after abort


def test_add_partitions_with_an_unknown_topic_attempts_nothing(wire: Wire) -> None:
    producer = wire.init("adder")
    response = wire(
        AddPartitionsToTxnRequest[3](
            v3_and_below_transactional_id="adder",
            v3_and_below_producer_id=producer[0],
            v3_and_below_producer_epoch=producer[1],
            v3_and_below_topics=[("txn", [0]), ("missing", [0])],
        )
    )
    errors = {
        (t.name, p.partition_index): p.partition_error_code
        for t in response.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }
    assert errors == {
        ("txn", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }


def test_a_transactional_produce_needs_its_partition_added(wire: Wire, sync_cluster: MockCluster) -> None:
    producer = wire.init("producer")
    assert wire.add("producer", producer, "txn", 0) == {0: ErrorCode.NONE}
    assert wire.produce("producer", producer, "txn", 1, 0) == ErrorCode.INVALID_TXN_STATE
    assert wire.produce("producer", producer, "txn", 0, 0) == ErrorCode.NONE
    log = sync_cluster.state.topics["txn"].partitions[0].log
    assert (log.last_stable_offset, log.high_watermark) == (0, 1)
    committed = (
        wire(ListOffsetsRequest[4](replica_id=-1, isolation_level=1, topics=[("txn", [(0, -1, -1)])]))
        .topics[0]
        .partitions[0]
    )
    assert committed.offset == 0  # read_committed: the last stable offset
    assert wire.end("producer", producer, commit=True) == ErrorCode.NONE
    assert (log.last_stable_offset, log.high_watermark) == (2, 2)


def test_txn_offsets_are_unstable_until_the_commit(wire: Wire, sync_cluster: MockCluster) -> None:
    consumer = KafkaConsumer("txn", bootstrap_servers=sync_cluster.bootstrap_servers, group_id="readers")
    consumer.poll(timeout_ms=3000)  # joins: the group has generation 1
    generation = sync_cluster.groups.groups["readers"].generation_id
    member = next(iter(sync_cluster.groups.groups["readers"].members))
    producer = wire.init("offsets")
    added = wire(
        AddOffsetsToTxnRequest[3](
            transactional_id="offsets",
            producer_id=producer[0],
            producer_epoch=producer[1],
            group_id="readers",
        )
    )
    assert added.error_code == ErrorCode.NONE

    def commit(generation_id: int) -> int:
        response = wire(
            TxnOffsetCommitRequest[3](
                transactional_id="offsets",
                group_id="readers",
                producer_id=producer[0],
                producer_epoch=producer[1],
                generation_id=generation_id,
                member_id=member,
                group_instance_id=None,
                topics=[("txn", [(0, 42, -1, "")])],
            )
        )
        return int(response.topics[0].partitions[0].error_code)

    assert commit(generation + 1) == ErrorCode.ILLEGAL_GENERATION
    assert commit(generation) == ErrorCode.NONE

    def fetched() -> tuple[int, int]:
        response = wire(OffsetFetchRequest[7](group_id="readers", topics=[("txn", [0])], require_stable=True))
        partition = response.topics[0].partitions[0]
        return partition.error_code, partition.committed_offset

    assert fetched() == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
    assert wire.end("offsets", producer, commit=True) == ErrorCode.NONE
    assert fetched() == (ErrorCode.NONE, 42)
    consumer.close()


def test_transaction_apis_pay_the_request_quota(wire: Wire, sync_cluster: MockCluster) -> None:
    """The request quota applies to the coordinator's APIs as to any other (KafkaApis'
    sendResponseMaybeThrottle): a tiny request_percentage throttles InitProducerId."""
    sync_cluster.quotas.alter({"client-id": "raw"}, set={"request_percentage": 0.0001})
    response = wire(InitProducerIdRequest[4](transactional_id="slow", transaction_timeout_ms=60_000))
    assert response.error_code == ErrorCode.NONE
    assert response.throttle_time_ms > 0


def test_offsets_of_every_group_on_the_offsets_partition_complete(
    wire: Wire, sync_cluster: MockCluster
) -> None:
    """group-8 and group-20 share __consumer_offsets partition 6: adding one adds the
    partition, and the commit marker completes both groups' offsets (as Kafka's marker
    on that partition does), so neither stays UNSTABLE_OFFSET_COMMIT."""
    producer = wire.init("two-groups")
    added = wire(
        AddOffsetsToTxnRequest[3](
            transactional_id="two-groups",
            producer_id=producer[0],
            producer_epoch=producer[1],
            group_id="group-8",
        )
    )
    assert added.error_code == ErrorCode.NONE
    for group in ("group-8", "group-20"):
        response = wire(
            TxnOffsetCommitRequest[2](
                transactional_id="two-groups",
                group_id=group,
                producer_id=producer[0],
                producer_epoch=producer[1],
                topics=[("txn", [(0, 7, -1, "")])],
            )
        )
        assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
    assert wire.end("two-groups", producer, commit=True) == ErrorCode.NONE
    for group in ("group-8", "group-20"):
        fetched = wire(OffsetFetchRequest[7](group_id=group, topics=[("txn", [0])], require_stable=True))
        partition = fetched.topics[0].partitions[0]
        assert (partition.error_code, partition.committed_offset) == (ErrorCode.NONE, 7)


def test_a_failing_transaction_handler_answers_each_partition(wire: Wire, sync_cluster: MockCluster) -> None:
    """getErrorResponse for AddPartitionsToTxn v0-3: UNKNOWN_SERVER_ERROR per partition."""
    from tests.protocol.test_wire_errors import _failing

    producer = wire.init("broken")
    _failing(sync_cluster, ApiKey.ADD_PARTITIONS_TO_TXN)
    assert wire.add("broken", producer, "txn", 0, 1) == {
        0: ErrorCode.UNKNOWN_SERVER_ERROR,
        1: ErrorCode.UNKNOWN_SERVER_ERROR,
    }


def test_write_txn_markers_refuses_a_marker_without_producer(wire: Wire, sync_cluster: MockCluster) -> None:
    response = wire(WriteTxnMarkersRequest[1](markers=[(-1, -1, False, [("txn", [0])], 0)]))
    assert response.markers[0].topics[0].partitions[0].error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert sync_cluster.state.topics["txn"].partitions[0].log.log_end_offset == 0


def test_fencing_an_exhausted_epoch_keeps_the_producer_id(sync_cluster: MockCluster) -> None:
    """prepareFenceProducerEpoch bumps to at most Short.MaxValue under the same id (its
    markers must reach the old transaction); the next InitProducerId rotates the id."""
    sync_cluster.create_topic("txn", 1)
    coordinator = sync_cluster.transactions
    first = coordinator.init_producer_id("old-timer", 60_000)
    txn = coordinator.describe("old-timer")
    assert txn is not None
    txn.producer_epoch = 32766  # as after 32,766 restarts
    assert coordinator.add_partitions("old-timer", first.producer_id, 32766, [("txn", 0)]) == ErrorCode.NONE
    fenced = coordinator.init_producer_id("old-timer", 60_000)
    assert fenced.error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert (txn.producer_id, txn.producer_epoch, txn.state) == (first.producer_id, 32767, "CompleteAbort")
    rotated = coordinator.init_producer_id("old-timer", 60_000)
    assert rotated.error == ErrorCode.NONE
    assert rotated.producer_id != first.producer_id and rotated.producer_epoch == 0
