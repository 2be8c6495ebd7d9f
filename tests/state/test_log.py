"""The partition log and batch-header handling, driven directly (no sockets)."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from broker.state.log import PartitionLog, SequenceError
from broker.state.records import InvalidRecords, split_batches


def batch(
    records: int = 1, producer_id: int = -1, epoch: int = -1, sequence: int = -1, payload: bytes = b""
) -> bytes:
    """A v2 batch header built by hand (independent of the broker's parser) plus payload."""
    body = (
        struct.pack(">hiqqqhii", 0, records - 1, 1000, 2000, producer_id, epoch, sequence, records) + payload
    )
    crc = crc32c(body)
    length = 4 + 1 + 4 + len(body)  # leader epoch, magic, crc, rest
    return struct.pack(">qiibI", 0, length, -1, 2, crc) + body


def test_offsets_assigned_by_rewriting_base_offset() -> None:
    log = PartitionLog()
    assert log.append(split_batches(batch(3))) == 0
    assert log.append(split_batches(batch(2) + batch(4)), leader_epoch=7) == 3
    assert log.log_end_offset == 9
    served = log.read(3, 1 << 20)
    base, _, epoch = struct.unpack_from(">qii", served, 0)
    assert (base, epoch) == (3, 7)
    second = len(batch(2))
    assert struct.unpack_from(">q", served, second)[0] == 5
    # the CRC still holds: only fields outside it were rewritten
    assert split_batches(served)[0].record_count == 2


def test_read_returns_whole_batches_and_at_least_one() -> None:
    log = PartitionLog()
    for _ in range(5):
        log.append(split_batches(batch(1, payload=b"x" * 100)))
    one = len(batch(1, payload=b"x" * 100))
    assert len(log.read(0, one * 2 + 10)) == one * 2
    assert len(log.read(0, 1)) == one  # KIP-74: the first batch even if larger than the limit
    assert log.read(0, 1, min_one=False) == b""
    assert len(log.read(4, 1 << 20)) == one


def test_corrupt_and_invalid_batches_rejected() -> None:
    good = bytearray(batch(2))
    good[-1] ^= 0xFF
    with pytest.raises(InvalidRecords, match="CRC"):
        split_batches(bytes(good))
    # As Kafka's ByteBufferLogInputStream: an incomplete batch is no batch; with none
    # left the records are invalid, otherwise the whole batches before it are kept
    with pytest.raises(InvalidRecords, match="no record batch") as none:
        split_batches(batch(1)[:30], client=True)
    assert not none.value.corrupt
    assert len(split_batches(batch(1) + batch(1, payload=b"abc")[:-1], client=True)) == 1
    assert len(split_batches(batch(1) + b"\x00\x01\x02", client=True)) == 1
    magic_3 = bytearray(batch(1))
    magic_3[16] = 3
    with pytest.raises(InvalidRecords, match="^Invalid magic found in record: 3$") as corrupt:
        split_batches(bytes(magic_3), client=True)
    assert corrupt.value.corrupt and corrupt.value.sent
    # LogValidator: a client's batch starts at offset 0 and has a sequence with its producer id
    with pytest.raises(InvalidRecords) as based:
        split_batches(struct.pack(">q", 7) + batch(1)[8:], client=True)
    assert based.value.validator and not based.value.corrupt
    with pytest.raises(InvalidRecords):
        split_batches(batch(1, producer_id=5, epoch=0, sequence=-1), client=True)
    assert len(split_batches(batch(1, producer_id=5, epoch=0, sequence=-1))) == 1  # a marker's
    old_magic = bytearray(batch(1))
    old_magic[16] = 1
    with pytest.raises(InvalidRecords, match="magic") as info:
        split_batches(bytes(old_magic))
    assert not info.value.corrupt


def test_retention_bytes_trims_oldest_batches() -> None:
    size = len(batch(10))
    log = PartitionLog(retention_bytes=size * 3)
    for _ in range(10):
        log.append(split_batches(batch(10)))
    assert log.log_start_offset == 70
    assert log.size_bytes == size * 3
    assert struct.unpack_from(">q", log.read(70, 1 << 20), 0)[0] == 70


def test_idempotent_sequences() -> None:
    log = PartitionLog()
    # a producer id the partition has no state for may start at any sequence (Kafka)
    assert log.append(split_batches(batch(5, producer_id=8, epoch=0, sequence=42))) == 0
    assert log.append(split_batches(batch(5, producer_id=9, epoch=0, sequence=0))) == 5
    assert log.append(split_batches(batch(5, producer_id=9, epoch=0, sequence=5))) == 10
    assert log.duplicate_timestamp is None
    # a retry of a recent batch returns its original offset and timestamp, appends nothing
    assert log.append(split_batches(batch(5, producer_id=9, epoch=0, sequence=0))) == 5
    assert log.duplicate_timestamp == 2000
    assert log.log_end_offset == 15
    with pytest.raises(SequenceError) as gap:
        log.append(split_batches(batch(1, producer_id=9, epoch=0, sequence=20)))
    assert gap.value.code == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
    with pytest.raises(SequenceError) as new_epoch_gap:
        log.append(split_batches(batch(1, producer_id=9, epoch=1, sequence=3)))
    assert new_epoch_gap.value.code == 45  # a new epoch starts at sequence 0
    assert log.append(split_batches(batch(1, producer_id=9, epoch=1, sequence=0))) == 15
    with pytest.raises(SequenceError) as stale:
        log.append(split_batches(batch(1, producer_id=9, epoch=0, sequence=10)))
    assert stale.value.code == 47  # INVALID_PRODUCER_EPOCH
