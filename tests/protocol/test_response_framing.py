"""protocol.headers frames a response kafka-python encodes in one buffer (header written in
front of the body by the compiled encoder's own buffer) instead of `response.encode()` and a
header chunk: the same bytes, for every API and version this broker serves, for default
responses and for the responses real clients got from a broker."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

from broker import MockCluster
from broker.handlers import HANDLERS
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.headers import encode_body, encode_response, is_flexible
from protocol.structs import copy_struct, new
from tests.conftest import FAST


def reference(response: Any, api_key: int, version: int, correlation_id: int) -> bytes:
    """What the broker wrote before: kafka-python's encode, then the header in front."""
    body = bytes(response.encode(version=version))
    if api_key != ApiKey.API_VERSIONS and is_flexible(api_key, version):
        return struct.pack(">iiB", len(body) + 5, correlation_id, 0) + body
    return struct.pack(">ii", len(body) + 4, correlation_id) + body


def framed(response: Any, api_key: int, version: int, correlation_id: int) -> bytes:
    return b"".join(bytes(chunk) for chunk in encode_response(response, api_key, version, correlation_id))


PAIRS = [
    (key, version)
    for key, spec in HANDLERS.items()
    for version in range(spec.min_version, spec.max_version + 1)
]


@pytest.mark.parametrize(("api_key", "version"), PAIRS)
def test_default_responses_frame_as_before(api_key: int, version: int) -> None:
    response = new(response_class(api_key), version)
    try:
        expected = reference(copy_struct(response), api_key, version, 7)
    except Exception as exc:  # a default kafka-python cannot encode: both fail alike
        with pytest.raises(type(exc)):
            framed(response, api_key, version, 7)
        return
    assert framed(response, api_key, version, 7) == expected
    header = 9 if api_key != ApiKey.API_VERSIONS and is_flexible(api_key, version) else 8
    assert b"".join(bytes(c) for c in encode_body(response, api_key, version)) == expected[header:]


def test_a_response_built_without_version_gets_it_as_encode_sets_it() -> None:
    cls = response_class(ApiKey.HEARTBEAT)
    response = cls(error_code=27, throttle_time_ms=5)
    twin = cls(error_code=27, throttle_time_ms=5)
    assert framed(response, ApiKey.HEARTBEAT, 4, 1) == reference(twin, ApiKey.HEARTBEAT, 4, 1)
    assert response.version == twin.version == 4


def test_responses_real_clients_got_frame_as_before() -> None:
    with MockCluster(config={**FAST, "record.requests.max": "10000"}) as cluster:
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, client_id="framing")
        for i in range(20):
            producer.send("framing", b"v%d" % i, key=b"k")
        producer.flush(10)
        producer.close()
        consumer = KafkaConsumer(
            "framing",
            bootstrap_servers=cluster.bootstrap_servers,
            group_id="framing-group",
            auto_offset_reset="earliest",
            consumer_timeout_ms=2000,
        )
        assert len(list(consumer)) == 20
        consumer.close()
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        admin.describe_groups(["framing-group"])
        admin.list_topics()
        admin.close()
        entries = cluster.on_loop(lambda: list(cluster.requests._ring))
    seen = set()
    for _time, ctx, response, *_ in entries:
        if response is None:
            continue
        seen.add(ctx.api_key)
        expected = reference(copy_struct(response), ctx.api_key, ctx.api_version, ctx.correlation_id)
        assert framed(response, ctx.api_key, ctx.api_version, ctx.correlation_id) == expected
    assert {ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA, ApiKey.JOIN_GROUP} <= seen


def test_a_throttled_answer_encoded_ahead_is_changed_as_a_copy() -> None:
    """ApiVersions answers with one cached object encoded once; a throttle (here forced by
    a fault rule) goes into a copy, and the next answer carries none."""
    import socket

    from kafka.protocol.metadata import ApiVersionsRequest

    from tests.support.wire import round_trip

    with MockCluster(config=FAST) as cluster:
        cluster.faults.throttle("throttled", 150, count=1)
        host, _, port = cluster.bootstrap_servers.rpartition(":")
        hello = ApiVersionsRequest[3](client_software_name="t", client_software_version="1")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            first = round_trip(sock, hello, 1, "throttled", version=3)
            second = round_trip(sock, hello, 2, "throttled", version=3)
            third = round_trip(sock, hello, 3, "other", version=3)
        recorded = [entry["response"]["throttle_time_ms"] for entry in cluster.requests.list(api_key=18)]
    assert (first.throttle_time_ms, second.throttle_time_ms, third.throttle_time_ms) == (150, 0, 0)
    assert recorded[-3:] == [150, 0, 0]  # what observers saw: the shared answer unchanged
    assert first.api_keys == second.api_keys == third.api_keys
