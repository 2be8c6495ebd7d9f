"""The one table of Kafka error codes (protocol.errors) and of API keys (protocol.api_keys),
checked against kafka-python's independent copies: `kafka.errors` (hand-maintained, codes
-1..127) and `kafka.protocol.api_key.ApiKey` (from the JSON message schemas)."""

from __future__ import annotations

import re

import kafka.errors
from kafka.protocol.api_key import ApiKey as KafkaPythonApiKey
from kafka.protocol.metadata import ApiVersionsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, error_name

# Where kafka-python's names are older than Kafka 4.x's `Errors` (renamed in Kafka 2.6
# and earlier; kafka-python kept the first names).
KAFKA_PYTHON_NAMES = {
    ErrorCode.UNKNOWN_SERVER_ERROR: "UNKNOWN",
    ErrorCode.NONE: "NO_ERROR",
    ErrorCode.NOT_LEADER_OR_FOLLOWER: "NOT_LEADER_FOR_PARTITION",
    ErrorCode.MESSAGE_TOO_LARGE: "MESSAGE_SIZE_TOO_LARGE",
    ErrorCode.INVALID_TOPIC_EXCEPTION: "INVALID_TOPIC",
    ErrorCode.INVALID_REPLICA_ASSIGNMENT: "INVALID_REPLICATION_ASSIGNMENT",
}
# Kafka's CorruptRecordException is a RetriableException; kafka-python's
# CorruptRecordError is not retriable.
KAFKA_PYTHON_NOT_RETRIABLE = {ErrorCode.CORRUPT_MESSAGE}


def kafka_python_errors() -> dict[int, type[kafka.errors.BrokerResponseError]]:
    return {code: cls for code, cls in kafka.errors.kafka_errors.items() if code is not None}


def test_codes_are_unique_and_contiguous() -> None:
    codes = [member.value for member in ErrorCode]
    assert len(codes) == len(set(codes)) == len(ErrorCode.__members__)  # no aliases
    assert codes == list(range(-1, 134))  # Kafka 4.x: UNKNOWN_SERVER_ERROR .. SHARE_SESSION_LIMIT_REACHED


def test_names_match_kafka_python() -> None:
    known = kafka_python_errors()
    assert set(known) <= {member.value for member in ErrorCode}
    for code, cls in known.items():
        member = ErrorCode(code)
        assert KAFKA_PYTHON_NAMES.get(member, member.name) == cls.message, code


def test_retriable_matches_kafka_python() -> None:
    for code, cls in kafka_python_errors().items():
        member = ErrorCode(code)
        assert member.retriable == (cls.retriable or member in KAFKA_PYTHON_NOT_RETRIABLE), member.name


def test_retriable_beyond_kafka_python() -> None:
    newer = [member for member in ErrorCode if member.value not in kafka_python_errors()]
    assert [m.name for m in newer if m.retriable] == ["SHARE_SESSION_LIMIT_REACHED"]
    assert not ErrorCode.NONE.retriable and not ErrorCode.UNKNOWN_SERVER_ERROR.retriable


def test_error_name() -> None:
    assert error_name(42) == "INVALID_REQUEST"
    assert error_name(-1) == "UNKNOWN_SERVER_ERROR"
    assert error_name(ErrorCode.NOT_LEADER_OR_FOLLOWER) == "NOT_LEADER_OR_FOLLOWER"
    assert error_name(1000) == "UNKNOWN_ERROR_CODE_1000"
    assert error_name(-2) == "UNKNOWN_ERROR_CODE_-2"


def test_members_encode_as_their_ints() -> None:
    def encoded(error: int, key: int, version: int) -> bytes:
        versions = [ApiVersionsResponse.ApiVersion(api_key=key, min_version=0, max_version=9)]
        response = ApiVersionsResponse(error_code=error, api_keys=versions, throttle_time_ms=0)
        return bytes(response.encode(version=version))

    for version in (0, 3):  # classic and flexible encodings
        assert encoded(ErrorCode.UNSUPPORTED_VERSION, ApiKey.PRODUCE, version) == encoded(35, 0, version)
        assert encoded(ErrorCode.UNKNOWN_SERVER_ERROR, ApiKey.FETCH, version) == encoded(-1, 1, version)


def test_api_keys_match_the_schemas() -> None:
    def upper_snake(camel: str) -> str:
        return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).upper()

    ours = {(k.name, k.value) for k in ApiKey}
    kafka_python = {(upper_snake(k.name), k.value) for k in KafkaPythonApiKey}
    # kafka-python 3 predates Kafka 4.4's key 93, whose schema is bundled (messages/schemas)
    assert ours - kafka_python == {("STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE", 93)}
    assert kafka_python <= ours
    assert len({k.value for k in ApiKey}) == len(ApiKey.__members__)
    assert (ApiKey.PRODUCE, ApiKey.API_VERSIONS, ApiKey.ADD_RAFT_VOTER) == (0, 18, 80)
