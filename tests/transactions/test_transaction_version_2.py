"""Transaction version 2 (KIP-890 part 2), over raw frames: no client in the test set
speaks it (the Java client does, when ApiVersions finalizes transaction.version 2).
EndTxn v5 bumps the epoch and answers the new one, Produce v12 and TxnOffsetCommit v5
add their partitions implicitly, a retried EndTxn is recognised by the old epoch."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.consumer import OffsetFetchRequest
from kafka.protocol.metadata import ApiVersionsRequest
from kafka.protocol.producer import TxnOffsetCommitRequest

from broker import MockCluster
from protocol.errors import ErrorCode
from tests.transactions.test_transaction_errors import Wire


@pytest.fixture
def wire(sync_cluster: MockCluster) -> Iterator[Wire]:
    sync_cluster.create_topic("tv2", 2)
    connection = Wire(sync_cluster)
    yield connection
    connection.sock.close()


def _end(wire: Wire, producer: tuple[int, int], commit: bool) -> Any:
    return wire.end_txn("v2", producer, commit, version=5)


def _produce(wire: Wire, producer: tuple[int, int], partition: int, seq: int) -> int:
    return wire.produce("v2", producer, "tv2", partition, seq, version=12)


def test_api_versions_finalizes_transaction_version_2(wire: Wire) -> None:
    response = wire(ApiVersionsRequest[4](client_software_name="raw", client_software_version="1"))
    supported = {f.name: (f.min_version, f.max_version) for f in response.supported_features}
    assert (supported["transaction.version"], supported["kraft.version"]) == ((0, 2), (0, 1))
    assert {f.name: f.max_version_level for f in response.finalized_features}["transaction.version"] == 2
    versions = {k.api_key: k.max_version for k in response.api_keys}
    assert (versions[24], versions[25], versions[26], versions[28]) == (5, 4, 5, 6)


def test_end_txn_v5_bumps_the_epoch_and_recognises_a_retry(wire: Wire, sync_cluster: MockCluster) -> None:
    producer = wire.init("v2")
    assert _produce(wire, producer, 0, 0) == ErrorCode.NONE  # Produce v12 adds the partition itself
    log = sync_cluster.state.topics["tv2"].partitions[0].log
    assert log.last_stable_offset == 0
    ended = _end(wire, producer, commit=True)
    assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (
        ErrorCode.NONE,
        producer[0],
        producer[1] + 1,
    )
    assert log.last_stable_offset == log.high_watermark == 2
    assert log.producer_epoch(producer[0]) == producer[1] + 1  # the marker carries the new epoch
    retried = _end(wire, producer, commit=True)  # the same request again, old epoch
    assert (retried.error_code, retried.producer_epoch) == (ErrorCode.NONE, producer[1] + 1)
    assert _end(wire, producer, commit=False).error_code == ErrorCode.INVALID_TXN_STATE  # not a retry of that
    bumped = (producer[0], producer[1] + 1)
    # the next transaction runs under the new epoch, sequences from 0 again
    assert _produce(wire, bumped, 0, 0) == ErrorCode.NONE
    assert _produce(wire, producer, 1, 1) == ErrorCode.INVALID_PRODUCER_EPOCH  # the old epoch is fenced
    assert _end(wire, producer, commit=True).error_code == ErrorCode.PRODUCER_FENCED
    aborted = _end(wire, bumped, commit=False)
    assert (aborted.error_code, aborted.producer_epoch) == (ErrorCode.NONE, producer[1] + 2)
    assert log.aborted[-1][:2] == (producer[0], 2)


def test_an_empty_abort_bumps_the_epoch_and_an_empty_commit_is_refused(wire: Wire) -> None:
    producer = wire.init("v2")
    assert _end(wire, producer, commit=True).error_code == ErrorCode.INVALID_TXN_STATE
    aborted = _end(wire, producer, commit=False)
    assert (aborted.error_code, aborted.producer_epoch) == (ErrorCode.NONE, producer[1] + 1)


def test_txn_offset_commit_v5_adds_the_offsets_partition(wire: Wire) -> None:
    producer = wire.init("v2")
    committed = wire(
        TxnOffsetCommitRequest[5](
            transactional_id="v2",
            group_id="tv2-readers",
            producer_id=producer[0],
            producer_epoch=producer[1],
            generation_id=-1,
            member_id="",
            group_instance_id=None,
            topics=[("tv2", [(0, 11, -1, "")])],
        )
    )
    assert committed.topics[0].partitions[0].error_code == ErrorCode.NONE
    assert _end(wire, producer, commit=True).error_code == ErrorCode.NONE
    fetched = wire(OffsetFetchRequest[7](group_id="tv2-readers", topics=[("tv2", [0])], require_stable=True))
    assert fetched.topics[0].partitions[0].committed_offset == 11
