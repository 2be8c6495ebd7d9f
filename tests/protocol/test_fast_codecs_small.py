"""The hand-framed small responses (protocol/fast_codecs.py) against kafka-python's encoder
and the generic framing: identical bytes for every version and a spread of values, and the
generic path taken where the fast one stands aside (tagged fields, values that do not fit)."""

from __future__ import annotations

import random
import struct
import uuid
from typing import Any

import pytest
from kafka.protocol.consumer import HeartbeatResponse
from kafka.protocol.metadata import MetadataResponse

from protocol.api_keys import ApiKey
from protocol.fast_codecs import encode_metadata_response, frame_heartbeat_response
from protocol.headers import encode_response, is_flexible
from protocol.structs import new


def generic(response: object, api_key: int, version: int, correlation_id: int) -> bytes:
    """Header in front of kafka-python's own encoding: what the broker wrote before."""
    body = bytes(response.encode(version=version))  # type: ignore[attr-defined]
    if is_flexible(api_key, version):
        return struct.pack(">iiB", len(body) + 5, correlation_id, 0) + body
    return struct.pack(">ii", len(body) + 4, correlation_id) + body


VERSIONS = range(HeartbeatResponse.min_version, HeartbeatResponse.max_version + 1)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("error_code", [0, 22, 25, 27, 15, -1, 32767, -32768])
@pytest.mark.parametrize("throttle_ms", [0, 1, 1000, 2**31 - 1])
@pytest.mark.parametrize("correlation_id", [0, 7, -5, 2**31 - 1])
def test_heartbeat_responses_frame_as_kafka_python_encodes_them(
    version: int, error_code: int, throttle_ms: int, correlation_id: int
) -> None:
    fields = (
        {"error_code": error_code}
        if version == 0
        else {"error_code": error_code, "throttle_time_ms": throttle_ms}
    )
    response = new(HeartbeatResponse, version, **fields)
    framed = frame_heartbeat_response(response, version, correlation_id)
    assert framed == generic(response, ApiKey.HEARTBEAT, version, correlation_id)
    assert encode_response(response, ApiKey.HEARTBEAT, version, correlation_id) == [framed]


def test_the_generic_path_where_the_fast_one_stands_aside() -> None:
    tagged = HeartbeatResponse(version=4, throttle_time_ms=0, error_code=0, _unknown=b"x")
    assert tagged.unknown_tags
    assert frame_heartbeat_response(tagged, 4, 1) is None
    chunks = encode_response(tagged, ApiKey.HEARTBEAT, 4, 1)
    assert b"".join(bytes(c) for c in chunks) == generic(tagged, ApiKey.HEARTBEAT, 4, 1)
    too_big = new(HeartbeatResponse, 4, throttle_time_ms=0, error_code=40000)
    assert frame_heartbeat_response(too_big, 4, 1) is None
    with pytest.raises(struct.error):
        encode_response(too_big, ApiKey.HEARTBEAT, 4, 1)  # as kafka-python's encoder fails


Topic = MetadataResponse.MetadataResponseTopic
Partition = Topic.MetadataResponsePartition
Broker = MetadataResponse.MetadataResponseBroker
METADATA_VERSIONS = range(MetadataResponse.min_version, MetadataResponse.max_version + 1)


def _random_metadata(rng: random.Random, version: int, versioned_entries: bool) -> Any:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.15 else value

    def ints() -> Any:
        return rng.choice([[], [1], [1, 2, 3], None if rng.random() < 0.1 else [0]])

    def ops() -> Any:
        return rng.choice([None, frozenset(), frozenset({3, 4, 8}), {2, 31}])

    v = version if versioned_entries else None
    brokers = [
        Broker(
            version=v,
            node_id=rng.randrange(5),
            host=rng.choice(["h", "localhost", "é"]),
            port=9092,
            rack=maybe("r"),
        )
        for _ in range(rng.randrange(4))
    ]
    topics = []
    for _ in range(rng.randrange(4)):
        partitions = [
            Partition(
                version=v,
                error_code=rng.choice([0, 0, 5, 9]),
                partition_index=i,
                leader_id=rng.choice([-1, 0, 1]),
                leader_epoch=rng.randrange(-1, 10),
                replica_nodes=ints(),
                isr_nodes=ints(),
                offline_replicas=ints(),
            )
            for i in range(rng.randrange(5))
        ]
        topics.append(
            Topic(
                version=v,
                error_code=rng.choice([0, 3, 29]),
                name=rng.choice(["t", "orders", "ü" * 3, None if version >= 12 else "n"]),
                topic_id=rng.choice([None, uuid.uuid4(), str(uuid.uuid4())]),
                is_internal=rng.random() < 0.2,
                partitions=rng.choice([partitions, partitions, []]),
                authorized_operations=ops(),
            )
        )
    fields: dict[str, Any] = {"brokers": brokers, "topics": topics}
    if version >= 1:
        fields["controller_id"] = rng.choice([-1, 0, 2])
    if version >= 2:
        fields["cluster_id"] = maybe("cluster")
    if version >= 3:
        fields["throttle_time_ms"] = rng.choice([0, 100])
    if 8 <= version <= 10:
        fields["authorized_operations"] = ops()
    if version >= 13:
        fields["error_code"] = rng.choice([0, 58])
    return MetadataResponse(version=version, **fields)


@pytest.mark.parametrize("version", METADATA_VERSIONS)
def test_metadata_responses_encode_as_kafka_python_encodes_them(version: int) -> None:
    rng = random.Random(version)
    for case in range(150):
        response = _random_metadata(rng, version, versioned_entries=case % 2 == 0)
        expected = bytes(response.encode(version=version))
        chunks = encode_metadata_response(response, version)
        assert chunks is not None
        assert b"".join(bytes(c) for c in chunks) == expected, case
        framed = b"".join(bytes(c) for c in encode_response(response, ApiKey.METADATA, version, 3))
        assert framed == generic(response, ApiKey.METADATA, version, 3)


def test_metadata_entries_as_tuples_or_odd_values_take_the_generic_path() -> None:
    as_tuples = MetadataResponse(version=1, brokers=[(1, "h", 9092, None)], controller_id=1, topics=[])
    assert encode_metadata_response(as_tuples, 1) is None
    assert b"".join(bytes(c) for c in encode_response(as_tuples, ApiKey.METADATA, 1, 1)) == generic(
        as_tuples, ApiKey.METADATA, 1, 1
    )
    too_big = MetadataResponse(version=12, brokers=[], topics=[], controller_id=2**31, cluster_id=None)
    assert encode_metadata_response(too_big, 12) is None
