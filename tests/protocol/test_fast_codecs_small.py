"""The hand-framed small responses (protocol/fast_codecs.py) against kafka-python's encoder
and the generic framing: identical bytes for every version and a spread of values, and the
generic path taken where the fast one stands aside (tagged fields, values that do not fit)."""

from __future__ import annotations

import struct

import pytest
from kafka.protocol.consumer import HeartbeatResponse

from protocol.api_keys import ApiKey
from protocol.fast_codecs import frame_heartbeat_response
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
