"""Hand-written codecs for the data path: Produce requests and responses, Fetch responses.

Why they exist: every produced and fetched byte passes through these three messages, and
kafka-python's generic codecs cost more than the rest of the request together. Its
decoder copies each partition's records out of the frame; its encoder copies fetched
records into one buffer and that buffer into a result, and walks every tagged-field
definition of every struct. Here:

- `decode_produce_request` builds the same kafka-python objects its generated decoder
  builds, but each partition's `records` is a zero-copy memoryview of the frame (the log
  copies a batch once, into its own segment).
- `encode_produce_response` and `encode_fetch_response` write the same bytes as
  kafka-python's encoders, as a list of chunks: fetched records stay the log's
  memoryviews and go to the socket with `writelines`, never joined.

They cover the common case only and say so by returning None: any tagged field in a
request (the generic decoder keeps unknown ones for the conformance report), anything
malformed (the generic decoder raises the error Kafka gives), and any response carrying a
tagged field (KIP-951 leader hints) go through kafka-python. tests/protocol/
test_fast_codecs.py checks that both give identical objects and identical bytes.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from kafka.protocol.consumer import FetchResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")
_PRODUCE_PARTITION = struct.Struct(">ihqqq")  # index, error, base offset, append time, log start
_PRODUCE_PARTITION_V3 = struct.Struct(">ihqq")  # v3-4: no log start offset
_FETCH_PARTITION = struct.Struct(">ihqqq")  # index, error, high watermark, last stable, log start
_FETCH_PARTITION_V4 = struct.Struct(">ihqq")  # v4: no log start offset
_ABORTED = struct.Struct(">qq")
_PRODUCE_FLEXIBLE = 9
_FETCH_FLEXIBLE = 12
_TOPIC_IDS = 13  # both APIs name topics by id from v13
INLINE_RECORDS = 512  # smaller records are copied into the surrounding chunk

_TopicData = ProduceRequest.TopicProduceData
_PartitionData = _TopicData.PartitionProduceData
_PartitionResult = ProduceResponse.TopicProduceResponse.PartitionProduceResponse
_FetchPartition = FetchResponse.FetchableTopicResponse.PartitionData


class _Malformed(Exception):
    """Not for the fast path: the generic decoder decides."""


def _uvarint(data: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise _Malformed


def _no_tags(data: memoryview, pos: int) -> int:
    if data[pos] != 0:
        raise _Malformed  # tagged fields: the generic decoder keeps them
    return pos + 1


def decode_produce_request(body: memoryview, version: int) -> Any | None:
    """The ProduceRequest kafka-python would decode from `body` (v3+), records as
    memoryviews of `body`; None where the generic decoder must decide."""
    if version < 3:
        return None
    try:
        return _decode_produce(body, version)
    except (_Malformed, IndexError, struct.error, UnicodeDecodeError, ValueError):
        return None


def _decode_produce(data: memoryview, version: int) -> Any:
    flexible = version >= _PRODUCE_FLEXIBLE
    by_id = version >= _TOPIC_IDS
    end = len(data)
    if flexible:
        length, pos = _uvarint(data, 0)
        length -= 1
    else:
        length, pos = _I16.unpack_from(data, 0)[0], 2
    transactional_id = None
    if length >= 0:
        if pos + length > end:
            raise _Malformed
        transactional_id = str(data[pos : pos + length], "utf-8")
        pos += length
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(data, pos)
    pos += 6
    if flexible:
        topic_count, pos = _uvarint(data, pos)
        topic_count -= 1
    else:
        topic_count, pos = _I32.unpack_from(data, pos)[0], pos + 4
    if topic_count < 0:
        raise _Malformed  # null array: the generic decoder refuses it
    topics = []
    for _ in range(topic_count):
        topic = object.__new__(_TopicData)
        topic._version, topic.tags, topic.unknown_tags = version, None, None
        if by_id:
            if pos + 16 > end:
                raise _Malformed
            topic.topic_id = uuid.UUID(bytes=bytes(data[pos : pos + 16]))
            pos += 16
        else:
            if flexible:
                length, pos = _uvarint(data, pos)
                length -= 1
            else:
                length, pos = _I16.unpack_from(data, pos)[0], pos + 2
            if length < 0 or pos + length > end:
                raise _Malformed
            topic.name = str(data[pos : pos + length], "utf-8")
            pos += length
        if flexible:
            partition_count, pos = _uvarint(data, pos)
            partition_count -= 1
        else:
            partition_count, pos = _I32.unpack_from(data, pos)[0], pos + 4
        if partition_count < 0:
            raise _Malformed
        partitions = []
        for _ in range(partition_count):
            partition = object.__new__(_PartitionData)
            partition._version, partition.tags, partition.unknown_tags = version, None, None
            partition.index = _I32.unpack_from(data, pos)[0]
            pos += 4
            if flexible:
                length, pos = _uvarint(data, pos)
                length -= 1
            else:
                length, pos = _I32.unpack_from(data, pos)[0], pos + 4
            if length < 0:
                partition.records = None
            else:
                if pos + length > end:
                    raise _Malformed
                partition.records = data[pos : pos + length]
                pos += length
            if flexible:
                pos = _no_tags(data, pos)
            partitions.append(partition)
        topic.partition_data = partitions
        if flexible:
            pos = _no_tags(data, pos)
        topics.append(topic)
    if flexible:
        _no_tags(data, pos)
    request = object.__new__(ProduceRequest)
    request._version, request.tags, request.unknown_tags = version, None, None
    request.transactional_id = transactional_id
    request.acks, request.timeout_ms = acks, timeout_ms
    request.topic_data = topics
    return request


class _Writer:
    """Chunks of an encoded message: small fields gathered in a bytearray, large
    byte fields passed through as they are."""

    __slots__ = ("chunks", "buf", "flexible")

    def __init__(self, flexible: bool) -> None:
        self.chunks: list[Any] = []
        self.buf = bytearray()
        self.flexible = flexible

    def uvarint(self, value: int) -> None:
        buf = self.buf
        while value & 0xFFFFFF80:
            buf.append((value & 0x7F) | 0x80)
            value >>= 7
        buf.append(value)

    def count(self, items: list[Any] | None) -> None:
        """An array's length (compact in flexible versions: +1, 0 for null)."""
        if self.flexible:
            self.uvarint(0 if items is None else len(items) + 1)
        else:
            self.buf += _I32.pack(-1 if items is None else len(items))

    def string(self, value: str | None) -> None:
        if value is None:
            if self.flexible:
                self.buf.append(0)
            else:
                self.buf += _I16.pack(-1)
            return
        encoded = value.encode("utf-8")
        if self.flexible:
            self.uvarint(len(encoded) + 1)
        else:
            self.buf += _I16.pack(len(encoded))
        self.buf += encoded

    def records(self, value: Any) -> None:
        if value is None:
            if self.flexible:
                self.buf.append(0)
            else:
                self.buf += _I32.pack(-1)
            return
        size = len(value)
        if self.flexible:
            self.uvarint(size + 1)
        else:
            self.buf += _I32.pack(size)
        if size < INLINE_RECORDS:
            self.buf += value
        else:
            self.chunks.append(self.buf)
            self.chunks.append(value)
            self.buf = bytearray()

    def topic(self, name: str | None, topic_id: uuid.UUID | None, by_id: bool) -> None:
        if by_id:
            self.buf += (topic_id or _ZERO_UUID).bytes
        else:
            self.string(name)

    def done(self) -> list[Any]:
        if self.buf:
            self.chunks.append(self.buf)
        return self.chunks


_ZERO_UUID = uuid.UUID(int=0)


_TAGS_IN_VERSION: dict[tuple[type, int, tuple[str, ...]], tuple[str, ...]] = {}


def _tags_in(cls: Any, version: int, *names: str) -> tuple[str, ...]:
    """Which of the tagged fields `names` the version of `cls` has (cached): reading a
    field the version lacks goes through DataContainer.__getattr__ and an exception,
    which costs more than encoding the rest of the object."""
    key = (cls, version, names)
    found = _TAGS_IN_VERSION.get(key)
    if found is None:
        found = _TAGS_IN_VERSION[key] = tuple(
            field.name for field in cls._struct._fields if field.name in names and field.for_version_q(version)
        )
    return found


def _tagged_set(item: Any, names: tuple[str, ...]) -> bool:
    """Whether a tagged field is set: one of `names` (kafka-python writes those that
    differ from their defaults, None or an empty list here) or an unknown one."""
    if item.unknown_tags:
        return True
    for name in names:
        if getattr(item, name, None):
            return True
    return False


_PRODUCE_TAGS: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}  # version -> (response's, partition's)


def encode_produce_response(response: Any, version: int) -> list[Any] | None:
    """ProduceResponse v3+ as kafka-python encodes it; None when a leader hint (KIP-951)
    or any other tagged field is set."""
    if version < 3:
        return None
    flexible = version >= _PRODUCE_FLEXIBLE
    by_id = version >= _TOPIC_IDS
    tags = _PRODUCE_TAGS.get(version)
    if tags is None:
        tags = _PRODUCE_TAGS[version] = (
            _tags_in(ProduceResponse, version, "node_endpoints"),
            _tags_in(_PartitionResult, version, "current_leader"),
        )
    if flexible and _tagged_set(response, tags[0]):
        return None
    partition_tags = tags[1]
    out = _Writer(flexible)
    buf = out.buf
    out.count(response.responses)
    for topic in response.responses:
        out.topic(topic.name, topic.topic_id, by_id)
        out.count(topic.partition_responses)
        for p in topic.partition_responses:
            if flexible and _tagged_set(p, partition_tags):
                return None
            if version >= 5:
                buf += _PRODUCE_PARTITION.pack(
                    p.index, p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset
                )
            else:
                buf += _PRODUCE_PARTITION_V3.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms)
            if version >= 8:
                out.count(p.record_errors)
                for error in p.record_errors or ():
                    buf += _I32.pack(error.batch_index)
                    out.string(error.batch_index_error_message)
                    if flexible:
                        buf.append(0)
                out.string(p.error_message)
            if flexible:
                buf.append(0)
        if flexible:
            buf.append(0)
    buf += _I32.pack(response.throttle_time_ms)
    if flexible:
        buf.append(0)
    return out.done()


def encode_fetch_response(response: Any, version: int) -> list[Any] | None:
    """FetchResponse v4+ as kafka-python encodes it, each partition's records passed
    through as a chunk of their own; None when a tagged field is set."""
    if version < 4:
        return None
    flexible = version >= _FETCH_FLEXIBLE
    by_id = version >= _TOPIC_IDS
    if flexible and _tagged_set(response, _tags_in(FetchResponse, version, "node_endpoints")):
        return None
    partition_tags = _tags_in(_FetchPartition, version, "diverging_epoch", "current_leader", "snapshot_id")
    out = _Writer(flexible)
    buf = out.buf
    buf += _I32.pack(response.throttle_time_ms)
    if version >= 7:
        buf += _I16.pack(response.error_code) + _I32.pack(response.session_id)
    out.count(response.responses)
    for topic in response.responses:
        out.topic(topic.topic, topic.topic_id, by_id)
        out.count(topic.partitions)
        for p in topic.partitions:
            if flexible and _tagged_set(p, partition_tags):
                return None
            if version >= 5:
                buf += _FETCH_PARTITION.pack(
                    p.partition_index,
                    p.error_code,
                    p.high_watermark,
                    p.last_stable_offset,
                    p.log_start_offset,
                )
            else:
                buf += _FETCH_PARTITION_V4.pack(
                    p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset
                )
            aborted = p.aborted_transactions
            out.count(aborted)
            for transaction in aborted or ():
                buf += _ABORTED.pack(transaction.producer_id, transaction.first_offset)
                if flexible:
                    buf.append(0)
            if version >= 11:
                buf += _I32.pack(p.preferred_read_replica)
            out.records(p.records)
            buf = out.buf  # a large records chunk starts a new buffer
            if flexible:
                buf.append(0)
        if flexible:
            buf.append(0)
    if flexible:
        buf.append(0)
    return out.done()


_METADATA_PARTITION = struct.Struct(">hii")  # error code, partition index, leader id
_BOOL = struct.Struct(">?")
_BITFIELD = struct.Struct(">I")
_METADATA_FLEXIBLE = 9


def encode_metadata_response(response: Any, version: int) -> list[Any] | None:
    """MetadataResponse as kafka-python's compiled encoder writes it (its schema has no
    tagged fields, so each struct ends with an empty tag section in flexible versions):
    every client refreshes metadata, and the generic encoder made up a third of a small
    Metadata request's cost. None where the generic encoder must decide: entries given as
    tuples, or a value it would refuse (tests/protocol/test_fast_codecs_small.py checks
    identical bytes for every version)."""
    try:
        return _encode_metadata(response, version)
    except (_Malformed, struct.error, TypeError, ValueError, AttributeError, OverflowError):
        return None


_INT32_ARRAYS: dict[int, struct.Struct] = {}


def _int32s(out: _Writer, values: Any) -> None:
    """An array of int32 (replica ids): its length, then the values in one pack."""
    if values is None:
        out.count(None)
        return
    count = len(values)
    if out.flexible and count < 127:
        out.buf.append(count + 1)  # the one-byte uvarint
    else:
        out.count(values)
    if count:
        packer = _INT32_ARRAYS.get(count)
        if packer is None:
            packer = struct.Struct(f">{count}i")
            if count <= 64:  # replica lists: a few lengths
                _INT32_ARRAYS[count] = packer
        out.buf += packer.pack(*values)


def _bitfield(values: Any) -> bytes:
    bits = 0
    for bit in {31} if values is None else values:
        bits |= 1 << bit
    return _BITFIELD.pack(bits)


def _encode_metadata(response: Any, version: int) -> list[Any]:
    flexible = version >= _METADATA_FLEXIBLE
    out = _Writer(flexible)
    buf = out.buf
    if version >= 3:
        buf += _I32.pack(response.throttle_time_ms)
    brokers = response.brokers
    if brokers and type(brokers[0]) is tuple:
        raise _Malformed
    out.count(brokers)
    for broker in brokers or ():
        buf += _I32.pack(broker.node_id)
        out.string(str(broker.host) if broker.host is not None else None)
        buf += _I32.pack(broker.port)
        if version >= 1:
            out.string(str(broker.rack) if broker.rack is not None else None)
        if flexible:
            buf.append(0)
    if version >= 2:
        out.string(str(response.cluster_id) if response.cluster_id is not None else None)
    if version >= 1:
        buf += _I32.pack(response.controller_id)
    topics = response.topics
    if topics and type(topics[0]) is tuple:
        raise _Malformed
    out.count(topics)
    for topic in topics or ():
        buf += _I16.pack(topic.error_code)
        out.string(str(topic.name) if topic.name is not None else None)
        if version >= 10:
            topic_id = topic.topic_id
            if topic_id is None:
                topic_id = _ZERO_UUID
            buf += topic_id.bytes if hasattr(topic_id, "bytes") else uuid.UUID(topic_id).bytes
        if version >= 1:
            buf += _BOOL.pack(topic.is_internal)
        partitions = topic.partitions
        if partitions and type(partitions[0]) is tuple:
            raise _Malformed
        out.count(partitions)
        for p in partitions or ():
            buf += _METADATA_PARTITION.pack(p.error_code, p.partition_index, p.leader_id)
            if version >= 7:
                buf += _I32.pack(p.leader_epoch)
            _int32s(out, p.replica_nodes)
            _int32s(out, p.isr_nodes)
            if version >= 5:
                _int32s(out, p.offline_replicas)
            if flexible:
                buf.append(0)
        if version >= 8:
            buf += _bitfield(topic.authorized_operations)
        if flexible:
            buf.append(0)
    if 8 <= version <= 10:
        buf += _bitfield(response.authorized_operations)
    if version >= 13:
        buf += _I16.pack(response.error_code)
    if flexible:
        buf.append(0)
    return out.done()


# HeartbeatResponse framed whole: size, correlation id (and the flexible header's empty
# tags), then throttle_time_ms (v1+) and error_code (and the body's empty tags in v4+).
_HEARTBEAT_V0 = struct.Struct(">iih")
_HEARTBEAT_V1 = struct.Struct(">iiih")
_HEARTBEAT_V4 = struct.Struct(">iiBihB")


def frame_heartbeat_response(response: Any, version: int, correlation_id: int) -> bytes | None:
    """A HeartbeatResponse with its size prefix and response header, as kafka-python's
    encoder and protocol.headers frame it: an established consumer group's members send
    one per member every few seconds, and the generic encoder (a call per struct for its
    tagged fields) cost more than the handler. None when a tagged field is set or a value
    does not fit (the generic encoder decides); tests/protocol/test_fast_codecs_small.py
    checks the bytes for every version."""
    try:
        if version >= 4:
            if response.tags or response.unknown_tags:
                return None
            return _HEARTBEAT_V4.pack(12, correlation_id, 0, response.throttle_time_ms, response.error_code, 0)
        if version >= 1:
            return _HEARTBEAT_V1.pack(10, correlation_id, response.throttle_time_ms, response.error_code)
        return _HEARTBEAT_V0.pack(6, correlation_id, response.error_code)
    except struct.error:
        return None


def chunks_size(chunks: list[Any]) -> int:
    """The bytes of an encoded message written as chunks."""
    return sum(len(chunk) for chunk in chunks)
