"""Record-batch header access (magic v2) without touching the records inside.

Batches stay opaque bytes on the produce and fetch paths: only the 61-byte header is
read, the CRC-32C is checked, and offsets and the leader epoch are assigned by rewriting
baseOffset and partitionLeaderEpoch in the log's copy of the batch. Records are decoded (with
kafka-python's decoder and builder) only where Kafka must look inside: ListOffsets'
timestamp lookups (`record_timestamps`), and for compacted topics the key check at
produce (`keyless_records`) and the cleaner (`decode_records`, `rebuild_batch`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from crc32c import crc32c
from kafka.record.default_records import DefaultRecord, DefaultRecordBatch, DefaultRecordBatchBuilder

BATCH_HEADER_SIZE = 61
_LENGTH_OFFSET = 8  # baseOffset int64, then batchLength int32
_MAGIC_OFFSET = 16
_LENGTH = struct.Struct(">i")
_MIN_V0_OVERHEAD = 14  # Kafka LegacyRecord.RECORD_OVERHEAD_V0
_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = 21  # the CRC covers attributes..end
_HEADER = struct.Struct(">qiibIhiqqqhii")
_PREFIX = struct.Struct(">qii")  # baseOffset, batchLength, partitionLeaderEpoch
BATCH_PREFIX = _PREFIX  # what stamp_batch writes (the log inlines it: one call per batch fewer)
_LAST_OFFSET_DELTA_OFFSET = 23
_MAX_TIMESTAMP_OFFSET = 35  # after lastOffsetDelta int32 and baseTimestamp int64
_ATTRIBUTES_AND_TIMESTAMPS = struct.Struct(">h")
_TIMESTAMP = struct.Struct(">q")
TIMESTAMP_TYPE_FLAG = 0x08  # attributes bit 3: LogAppendTime
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20


class UndecodableBatch(Exception):
    """The records of a stored batch cannot be decoded here (a codec library kafka-python
    needs is missing, or the records are malformed behind a valid CRC)."""


class InvalidRecords(Exception):
    """The produced bytes are not well-formed v2 batches (Kafka: CORRUPT_MESSAGE / INVALID_RECORD)."""

    def __init__(
        self, message: str, corrupt: bool = True, sent: bool = False, validator: bool = False
    ) -> None:
        super().__init__(message)
        self.corrupt = corrupt
        self.validator = validator  # LogValidator's (the answer keeps the log start offset)
        self.sent = sent  # Kafka answers with this message (else with none)


@dataclass(slots=True)
class BatchInfo:
    """What the broker needs from one batch header."""

    data: memoryview  # the whole batch, as produced
    last_offset_delta: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    attributes: int

    @property
    def size(self) -> int:
        return len(self.data)


def split_batches(records: bytes, client: bool = False) -> list[BatchInfo]:
    """Validates and splits records into batches (no copy), as Kafka's
    ByteBufferLogInputStream reads them: an incomplete batch at the end is not a batch
    (the ones before it are kept); a size below the v0 overhead or a magic above 2 is
    corrupt. With `client` (a produce request), ProduceRequest.validateRecords and
    LogValidator's header checks apply too: at least one batch, magic 2, base offset 0,
    and a sequence wherever there is a producer id (INVALID_RECORD)."""
    view = memoryview(records)
    total = len(view)
    batches: list[BatchInfo] = []
    pos = 0
    while total - pos >= 12:
        length = _LENGTH.unpack_from(view, pos + _LENGTH_OFFSET)[0]
        if length < _MIN_V0_OVERHEAD:
            raise InvalidRecords(
                f"Record size {length} is less than the minimum record overhead ({_MIN_V0_OVERHEAD})",
                sent=True,
            )
        if total - pos < _MAGIC_OFFSET + 1:
            break
        magic = view[pos + _MAGIC_OFFSET]
        if magic > 2:  # a signed byte: > 127 is negative
            raise InvalidRecords(
                f"Invalid magic found in record: {magic if magic < 128 else magic - 256}", sent=True
            )
        end = pos + 12 + length
        if end > total:
            break
        if magic != 2:
            raise InvalidRecords(f"unsupported magic {magic}", corrupt=False)
        if length < BATCH_HEADER_SIZE - 12:
            raise InvalidRecords("record batch length out of range")
        (
            base,
            _length,
            _epoch,
            _magic,
            crc,
            attributes,
            last_delta,
            _base_ts,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        ) = _HEADER.unpack_from(view, pos)
        if crc32c(view[pos + _ATTRIBUTES_OFFSET : end]) != crc:
            raise InvalidRecords("record batch CRC mismatch")
        if count < 0 or last_delta < 0:
            raise InvalidRecords("negative record count")
        if client and (base != 0 or (producer_id >= 0 and base_sequence < 0)):
            raise InvalidRecords("invalid base offset or sequence", corrupt=False, validator=True)
        batches.append(
            BatchInfo(
                view[pos:end],
                last_delta,
                max_ts,
                producer_id,
                producer_epoch,
                base_sequence,
                count,
                attributes,
            )
        )
        pos = end
    if not batches:
        raise InvalidRecords("no record batch", corrupt=False)
    return batches


def set_log_append_time(batch: BatchInfo, now_ms: int) -> None:
    """Kafka's DefaultRecordBatch.setMaxTimestamp(LOG_APPEND_TIME, now), as LogValidator
    applies it to v2 batches: the timestamp-type bit and maxTimestamp are rewritten and the
    CRC-32C recomputed; baseTimestamp and the records (their deltas) stay as produced.
    The batch is copied once (produce buffers are not ours to write)."""
    attributes = batch.attributes | TIMESTAMP_TYPE_FLAG
    if attributes == batch.attributes and batch.max_timestamp == now_ms:
        return
    data = bytearray(batch.data)
    _ATTRIBUTES_AND_TIMESTAMPS.pack_into(data, _ATTRIBUTES_OFFSET, attributes)
    _TIMESTAMP.pack_into(data, _MAX_TIMESTAMP_OFFSET, now_ms)
    struct.pack_into(">I", data, _CRC_OFFSET, crc32c(memoryview(data)[_ATTRIBUTES_OFFSET:]))
    batch.data = memoryview(data)
    batch.attributes = attributes
    batch.max_timestamp = now_ms


def batch_max_timestamp(batch: memoryview) -> int:
    return int(_TIMESTAMP.unpack_from(batch, _MAX_TIMESTAMP_OFFSET)[0])


def stamp_batch(into: memoryview, start: int, size: int, base_offset: int, leader_epoch: int) -> None:
    """Writes the baseOffset and partitionLeaderEpoch of the batch stored at `start` in
    `into` (`size` bytes) into its first 16 bytes (batchLength stays). Both are outside
    the CRC, so the batch stays valid without re-encoding anything: Kafka's LogValidator
    assigns them the same way."""
    _PREFIX.pack_into(into, start, base_offset, size - 12, leader_epoch)


def record_timestamps(batch: memoryview) -> Iterator[tuple[int, int]]:
    """(offset delta, timestamp) of each record of a stored batch, in order, decompressing
    it if needed. A LogAppendTime batch gives every record the batch's max timestamp, as
    Kafka's DefaultRecordBatch does. Raises UndecodableBatch."""
    try:
        decoded = DefaultRecordBatch(batch)  # a copy: the stored bytes stay untouched
        base = decoded.base_offset
        for record in decoded:
            yield record.offset - base, record.timestamp
    except Exception as exc:  # kafka-python raises codec, struct and corrupt-record errors alike
        raise UndecodableBatch(f"{type(exc).__name__}: {exc}") from exc


def header_base_offset(batch: memoryview) -> int:
    """The baseOffset field as the producer wrote it (0 from every client we know); the
    records' `offset` from kafka-python's decoder counts from it."""
    return int.from_bytes(batch[:8], "big", signed=True)


def producer_id_of(batch: memoryview) -> int:
    return int.from_bytes(batch[43:51], "big", signed=True)


def decode_records(batch: memoryview) -> list[DefaultRecord]:
    """The records of a batch (decompressed); their `offset` is the header's base offset
    plus the offset delta. Raises UndecodableBatch."""
    try:
        return list(DefaultRecordBatch(batch))
    except Exception as exc:
        raise UndecodableBatch(f"{type(exc).__name__}: {exc}") from exc


def keyless_records(batch: memoryview) -> list[int]:
    """Indexes (within the batch) of the records without a key, for LogValidator's check
    on compacted topics. Raises UndecodableBatch."""
    return [index for index, record in enumerate(decode_records(batch)) if record.key is None]


def rebuild_batch(original: memoryview, records: Sequence[DefaultRecord]) -> bytes:
    """A batch holding only `records` of `original`, as Kafka's cleaner writes it
    (MemoryRecords.filterTo): same producer state, attributes, compression and last
    offset (so the producer's sequence numbers still line up), offsets kept, max
    timestamp of the records left (the original for LogAppendTime). The base offset and
    leader epoch are rewritten when served, as for any stored batch."""
    info = split_batches(bytes(original))[0]
    attributes = info.attributes
    builder = DefaultRecordBatchBuilder(
        2,
        attributes & DefaultRecordBatch.CODEC_MASK,
        bool(attributes & TRANSACTIONAL_FLAG),
        info.producer_id,
        info.producer_epoch,
        info.base_sequence,
        2**31 - 1,
    )
    base = header_base_offset(original)
    for record in records:
        builder.append(record.offset - base, record.timestamp, record.key, record.value, record.headers)
    data = builder.build()
    (built_attributes,) = _ATTRIBUTES_AND_TIMESTAMPS.unpack_from(data, _ATTRIBUTES_OFFSET)
    kept_flags = attributes & (TIMESTAMP_TYPE_FLAG | CONTROL_FLAG)
    _ATTRIBUTES_AND_TIMESTAMPS.pack_into(data, _ATTRIBUTES_OFFSET, built_attributes | kept_flags)
    struct.pack_into(">i", data, _LAST_OFFSET_DELTA_OFFSET, info.last_offset_delta)
    if attributes & TIMESTAMP_TYPE_FLAG or not records:
        _TIMESTAMP.pack_into(data, _MAX_TIMESTAMP_OFFSET, info.max_timestamp)
    struct.pack_into(">I", data, _CRC_OFFSET, crc32c(memoryview(data)[_ATTRIBUTES_OFFSET:]))
    return bytes(data)


def control_batch(
    producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int, now_ms: int
) -> bytes:
    """A transaction marker as Kafka's MemoryRecords.withEndTransactionMarker writes it:
    a transactional control batch of one record, key (version 0, type 1 commit / 0
    abort), value (version 0, the coordinator epoch), no sequence."""
    builder = DefaultRecordBatchBuilder(2, 0, True, producer_id, producer_epoch, -1, 2**31 - 1)
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, coordinator_epoch)
    builder.append(0, now_ms, key, value, [])
    data = builder.build()
    (attributes,) = _ATTRIBUTES_AND_TIMESTAMPS.unpack_from(data, _ATTRIBUTES_OFFSET)
    _ATTRIBUTES_AND_TIMESTAMPS.pack_into(data, _ATTRIBUTES_OFFSET, attributes | CONTROL_FLAG)
    struct.pack_into(">I", data, _CRC_OFFSET, crc32c(memoryview(data)[_ATTRIBUTES_OFFSET:]))
    return bytes(data)
