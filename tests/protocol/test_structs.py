"""protocol.structs.new builds the objects kafka-python's constructors build."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kafka.protocol.consumer import FetchResponse
from kafka.protocol.metadata import MetadataResponse
from kafka.protocol.producer import ProduceResponse

from protocol.structs import copy_struct, new

PartitionResult = ProduceResponse.TopicProduceResponse.PartitionProduceResponse
FetchPartition = FetchResponse.FetchableTopicResponse.PartitionData


def _slots(value: Any) -> dict[str, Any]:
    names = ["_version", "tags", "unknown_tags", *value._struct.fields]
    return {name: getattr(value, name, "<unset>") for name in names}


CASES: list[tuple[type, dict[str, Any]]] = [
    (PartitionResult, {"index": 1, "error_code": 0, "base_offset": 7, "log_append_time_ms": -1}),
    (
        PartitionResult,
        {
            "index": 1,
            "error_code": 6,
            "current_leader": PartitionResult.LeaderIdAndEpoch(leader_id=1, leader_epoch=2),
        },
    ),
    (ProduceResponse, {"responses": [], "throttle_time_ms": 0}),
    (FetchResponse, {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": []}),
    (FetchPartition, {"partition_index": 0, "error_code": 0, "high_watermark": 5, "records": b"x"}),
    (MetadataResponse, {"brokers": [], "topics": [], "cluster_id": "c", "controller_id": 0}),
]


@pytest.mark.parametrize("cls,fields", CASES)
def test_new_builds_what_the_constructor_builds(cls: type, fields: dict[str, Any]) -> None:
    for version in range(cls._struct.min_version, cls._struct.max_version + 1):
        try:
            expected = cls(version=version, **fields)
        except ValueError:
            with pytest.raises(ValueError):
                new(cls, version, **fields)
            continue
        built = new(cls, version, **fields)
        assert type(built) is type(expected)
        assert _slots(built) == _slots(expected)
        if hasattr(cls, "encode") and hasattr(expected, "_header"):
            assert built._header is None
            assert bytes(built.encode(version=version)) == bytes(expected.encode(version=version))


def test_fields_outside_the_version_and_unknown_names_behave_as_the_constructor() -> None:
    outside = new(PartitionResult, 3, index=0, error_code=0, error_message="only from v8")
    assert _slots(outside) == _slots(
        PartitionResult(version=3, index=0, error_code=0, error_message="only from v8")
    )
    with pytest.raises(ValueError):
        new(PartitionResult, 9, index=0, no_such_field=1)


@pytest.mark.parametrize("cls,fields", CASES)
def test_copy_struct_is_copy_copy(cls: type, fields: dict[str, Any]) -> None:
    for original in (cls(version=cls._struct.max_version, **fields), cls(**fields)):
        copied = copy_struct(original)
        expected = copy.copy(original)
        assert copied is not original and type(copied) is type(original)
        for klass in type(original).__mro__:
            for name in getattr(klass, "__slots__", ()):
                assert hasattr(copied, name) == hasattr(expected, name)
                if hasattr(expected, name):
                    assert getattr(copied, name) is getattr(expected, name)
