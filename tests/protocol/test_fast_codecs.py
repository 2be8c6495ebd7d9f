"""The data path's hand-written codecs (protocol/fast_codecs.py) against kafka-python's:
the same objects decoded, the same bytes encoded, for every version, and the generic
decoder left to decide whatever the fast one does not take."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest
from kafka.protocol.consumer import FetchResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from protocol import fast_codecs

TopicData = ProduceRequest.TopicProduceData
PartitionData = TopicData.PartitionProduceData
TopicResult = ProduceResponse.TopicProduceResponse
PartitionResult = TopicResult.PartitionProduceResponse
FetchTopic = FetchResponse.FetchableTopicResponse
FetchPartition = FetchTopic.PartitionData


def _text(rng: random.Random, nullable: bool = False) -> str | None:
    if nullable and rng.random() < 0.3:
        return None
    return "".join(
        rng.choice("abcé-_.ü日") for _ in range(rng.randrange(0, 200 if rng.random() < 0.1 else 12))
    )


def _records(rng: random.Random, nullable: bool = True) -> bytes | None:
    if nullable and rng.random() < 0.1:
        return None
    size = rng.choice(
        [0, 1, 61, 300, fast_codecs.INLINE_RECORDS - 1, fast_codecs.INLINE_RECORDS, 5000, 70000]
    )
    return rng.randbytes(size)


def _produce_request(rng: random.Random, version: int) -> Any:
    topics = []
    for _ in range(rng.randrange(0, 4)):
        partitions = [
            PartitionData(index=rng.randrange(-1, 2**31), records=_records(rng))
            for _ in range(rng.randrange(0, 4))
        ]
        if version >= 13:
            topics.append(TopicData(topic_id=uuid.UUID(int=rng.getrandbits(128)), partition_data=partitions))
        else:
            topics.append(TopicData(name=_text(rng), partition_data=partitions))
    return ProduceRequest(
        transactional_id=_text(rng, nullable=True),
        acks=rng.choice([-1, 0, 1, 2]),
        timeout_ms=rng.randrange(-(2**31), 2**31),
        topic_data=topics,
    )


def _fields(value: Any) -> Any:
    """Every slot a decoder set, recursively (records as bytes)."""
    if isinstance(value, list):
        return [_fields(item) for item in value]
    if isinstance(value, memoryview):
        return bytes(value)
    if hasattr(value, "_struct"):
        names = ["_version", "tags", "unknown_tags", *value._struct.fields]
        return {name: _fields(getattr(value, name)) for name in names}
    return value


@pytest.mark.parametrize("version", range(3, ProduceRequest.max_version + 1))
def test_produce_requests_decode_to_the_same_objects(version: int) -> None:
    rng = random.Random(version)
    for _ in range(200):
        body = memoryview(_produce_request(rng, version).encode(version=version))
        fast = fast_codecs.decode_produce_request(body, version)
        assert fast is not None
        generic = ProduceRequest.decode(body, version=version)
        assert type(fast) is type(generic)
        assert _fields(fast) == _fields(generic)
        assert fast.to_dict() == generic.to_dict()


def test_produced_records_are_views_of_the_frame_not_copies() -> None:
    body = memoryview(
        ProduceRequest(
            transactional_id=None,
            acks=1,
            timeout_ms=100,
            topic_data=[TopicData(name="t", partition_data=[PartitionData(index=0, records=b"x" * 100)])],
        ).encode(version=9)
    )
    records = fast_codecs.decode_produce_request(body, 9).topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.obj is body.obj


@pytest.mark.parametrize("version", [3, 8, 9, 12, 13])
def test_the_generic_decoder_decides_what_the_fast_one_does_not_take(version: int) -> None:
    rng = random.Random(100 + version)
    request = _produce_request(rng, version)
    body = request.encode(version=version)
    for cut in range(len(body)):  # every truncation
        assert fast_codecs.decode_produce_request(memoryview(body[:cut]), version) is None
    if version >= 9:  # a tagged field anywhere: kafka-python keeps unknown ones
        tagged = bytes(body[:-1]) + b"\x01\x05\x01\x00"
        assert fast_codecs.decode_produce_request(memoryview(tagged), version) is None
    null_topics = ProduceRequest(transactional_id=None, acks=1, timeout_ms=1, topic_data=None).encode(
        version=version
    )
    assert fast_codecs.decode_produce_request(memoryview(null_topics), version) is None
    assert fast_codecs.decode_produce_request(memoryview(body), 2) is None  # before v3: generic only


def _produce_response(rng: random.Random, version: int) -> Any:
    topics = []
    for _ in range(rng.randrange(0, 4)):
        partitions = []
        for _ in range(rng.randrange(0, 4)):
            errors = [
                PartitionResult.BatchIndexAndErrorMessage(
                    batch_index=rng.randrange(0, 100), batch_index_error_message=_text(rng, nullable=True)
                )
                for _ in range(rng.choice([0, 0, 2]))
            ]
            partitions.append(
                PartitionResult(
                    index=rng.randrange(0, 100),
                    error_code=rng.choice([0, 0, 1, 87]),
                    base_offset=rng.randrange(-1, 2**62),
                    log_append_time_ms=rng.choice([-1, 1_700_000_000_000]),
                    log_start_offset=rng.randrange(-1, 2**40),
                    record_errors=errors,
                    error_message=_text(rng, nullable=True),
                )
            )
        topic_id = uuid.UUID(int=rng.getrandbits(128)) if version >= 13 else None
        topics.append(TopicResult(name=_text(rng), topic_id=topic_id, partition_responses=partitions))
    return ProduceResponse(version=version, responses=topics, throttle_time_ms=rng.randrange(0, 2**31))


@pytest.mark.parametrize("version", range(3, ProduceResponse.max_version + 1))
def test_produce_responses_encode_to_the_same_bytes(version: int) -> None:
    rng = random.Random(1000 + version)
    for _ in range(200):
        response = _produce_response(rng, version)
        chunks = fast_codecs.encode_produce_response(response, version)
        assert chunks is not None
        assert b"".join(chunks) == bytes(response.encode(version=version))


def test_a_produce_response_with_a_leader_hint_is_left_to_kafka_python() -> None:
    hint = PartitionResult.LeaderIdAndEpoch(leader_id=2, leader_epoch=3)
    partition = PartitionResult(index=0, error_code=6, base_offset=-1, current_leader=hint)
    response = ProduceResponse(version=10, responses=[TopicResult(name="t", partition_responses=[partition])])
    assert fast_codecs.encode_produce_response(response, 10) is None
    assert fast_codecs.encode_produce_response(_produce_response(random.Random(1), 9), 9) is not None


def _fetch_response(rng: random.Random, version: int) -> Any:
    topics = []
    for _ in range(rng.randrange(0, 4)):
        partitions = []
        for _ in range(rng.randrange(0, 4)):
            aborted = rng.choice(
                [
                    None,
                    [],
                    [FetchPartition.AbortedTransaction(producer_id=rng.randrange(0, 2**40), first_offset=5)],
                ]
            )
            records = _records(rng)
            if records is not None and rng.random() < 0.5:
                records = memoryview(records)  # as the log serves them
            partitions.append(
                FetchPartition(
                    partition_index=rng.randrange(0, 100),
                    error_code=rng.choice([0, 0, 1]),
                    high_watermark=rng.randrange(-1, 2**50),
                    last_stable_offset=rng.randrange(-1, 2**50),
                    log_start_offset=rng.randrange(-1, 2**50),
                    aborted_transactions=aborted,
                    preferred_read_replica=rng.choice([-1, 0, 3]),
                    records=records,
                )
            )
        topic_id = uuid.UUID(int=rng.getrandbits(128)) if version >= 13 else None
        topics.append(FetchTopic(topic=_text(rng), topic_id=topic_id, partitions=partitions))
    return FetchResponse(
        version=version,
        throttle_time_ms=rng.randrange(0, 2**31),
        error_code=rng.choice([0, 70]),
        session_id=rng.choice([0, 12345]),
        responses=topics,
    )


@pytest.mark.parametrize("version", range(4, FetchResponse.max_version + 1))
def test_fetch_responses_encode_to_the_same_bytes(version: int) -> None:
    rng = random.Random(2000 + version)
    for _ in range(200):
        response = _fetch_response(rng, version)
        chunks = fast_codecs.encode_fetch_response(response, version)
        assert chunks is not None
        assert b"".join(chunks) == bytes(response.encode(version=version))


def test_fetched_records_pass_through_unjoined() -> None:
    stored = memoryview(bytearray(b"r" * 10_000))
    partition = FetchPartition(partition_index=0, error_code=0, high_watermark=1, records=stored)
    response = FetchResponse(
        version=16, responses=[FetchTopic(topic_id=uuid.uuid4(), partitions=[partition])]
    )
    chunks = fast_codecs.encode_fetch_response(response, 16)
    assert chunks is not None and any(chunk is stored for chunk in chunks)
    assert fast_codecs.chunks_size(chunks) == len(response.encode(version=16))


def test_a_fetch_response_with_a_tagged_field_is_left_to_kafka_python() -> None:
    leader = FetchPartition.LeaderIdAndEpoch(leader_id=1, leader_epoch=2)
    partition = FetchPartition(partition_index=0, error_code=6, high_watermark=-1, current_leader=leader)
    response = FetchResponse(version=12, responses=[FetchTopic(topic="t", partitions=[partition])])
    assert fast_codecs.encode_fetch_response(response, 12) is None
