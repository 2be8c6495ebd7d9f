"""protocol.structs.maker builds the nested entries kafka-python's constructors build
without a version (the Metadata and DescribeClientQuotas handlers' entries): the same
slots, the same dicts in recordings, the same bytes inside a response of any version."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kafka.protocol.admin import DescribeClientQuotasResponse
from kafka.protocol.metadata import MetadataResponse
from kafka.protocol.producer import ProduceResponse

from messages.registry import request_class
from protocol.api_keys import ApiKey
from protocol.structs import maker, new

Topic = MetadataResponse.MetadataResponseTopic
Partition = Topic.MetadataResponsePartition
Broker = MetadataResponse.MetadataResponseBroker
Entry = DescribeClientQuotasResponse.EntryData
ProduceTopic = ProduceResponse.TopicProduceResponse
ProducePartition = ProduceTopic.PartitionProduceResponse


def _slots(value: Any) -> dict[str, Any]:
    names = ["_version", "tags", "unknown_tags", *value._struct.fields]
    return {name: getattr(value, name, "<unset>") for name in names}


CASES: list[tuple[type, dict[str, Any]]] = [
    (Broker, {"node_id": 1, "host": "h", "port": 9092, "rack": None}),
    (Broker, {"node_id": 1, "host": "h", "port": 9092}),
    (
        Partition,
        {
            "error_code": 5,
            "partition_index": 0,
            "leader_id": -1,
            "leader_epoch": 3,
            "replica_nodes": [1, 2],
            "isr_nodes": [2],
            "offline_replicas": [1],
        },
    ),
    (
        Topic,
        {
            "error_code": 0,
            "name": "t",
            "topic_id": uuid.uuid4(),
            "is_internal": False,
            "partitions": [],
            "authorized_operations": None,
        },
    ),
    (Entry, {"entity": [], "values": []}),
    (Entry.EntityData, {"entity_type": "client-id", "entity_name": None}),
    (Entry.ValueData, {"key": "producer_byte_rate", "value": 1024.0}),
]


@pytest.mark.parametrize(("cls", "fields"), CASES)
def test_maker_builds_what_the_unversioned_constructor_builds(cls: type, fields: dict[str, Any]) -> None:
    built = maker(cls, *fields)(*fields.values())
    expected = cls(**fields)
    assert type(built) is type(expected)
    assert _slots(built) == _slots(expected)
    assert built.to_dict(meta="all", json=False) == expected.to_dict(meta="all", json=False)
    assert built == expected


def test_maker_refuses_unknown_fields_and_counts_values() -> None:
    with pytest.raises(ValueError):
        maker(Broker, "node_id", "nope")
    with pytest.raises(TypeError):
        maker(Broker, "node_id", "host")(1)


def test_metadata_responses_of_made_entries_encode_the_same() -> None:
    make_partition = maker(
        Partition,
        "error_code",
        "partition_index",
        "leader_id",
        "leader_epoch",
        "replica_nodes",
        "isr_nodes",
        "offline_replicas",
    )
    make_topic = maker(
        Topic, "error_code", "name", "topic_id", "is_internal", "partitions", "authorized_operations"
    )
    make_broker = maker(Broker, "node_id", "host", "port", "rack")
    topic_id = uuid.uuid4()

    def response(version: int, made: bool) -> Any:
        if made:
            partitions = [make_partition(0, i, 1, 2, [1, 2], [1], [2]) for i in range(3)]
            topics = [make_topic(0, "t", topic_id, False, partitions, None)]
            brokers = [make_broker(1, "h", 9092, "r")]
        else:
            partitions = [
                Partition(
                    error_code=0,
                    partition_index=i,
                    leader_id=1,
                    leader_epoch=2,
                    replica_nodes=[1, 2],
                    isr_nodes=[1],
                    offline_replicas=[2],
                )
                for i in range(3)
            ]
            topics = [
                Topic(
                    error_code=0,
                    name="t",
                    topic_id=topic_id,
                    is_internal=False,
                    partitions=partitions,
                    authorized_operations=None,
                )
            ]
            brokers = [Broker(node_id=1, host="h", port=9092, rack="r")]
        return new(
            MetadataResponse,
            version,
            throttle_time_ms=0,
            brokers=brokers,
            cluster_id="c",
            controller_id=1,
            topics=topics,
            error_code=0,
        )

    for version in range(MetadataResponse.min_version, MetadataResponse.max_version + 1):
        made, plain = response(version, True), response(version, False)
        assert bytes(made.encode(version=version)) == bytes(plain.encode(version=version))
        assert made.to_dict(meta="all", json=False) == plain.to_dict(meta="all", json=False)


PRODUCE_RESULT = {
    "index": 3,
    "error_code": 0,
    "base_offset": 42,
    "log_append_time_ms": -1,
    "log_start_offset": 0,
    "record_errors": [],
    "error_message": None,
}


@pytest.mark.parametrize(
    ("cls", "fields"),
    [
        (ProducePartition, PRODUCE_RESULT),
        (ProducePartition, {**PRODUCE_RESULT, "error_code": 6, "error_message": "not the leader"}),
        (ProduceTopic, {"name": "t", "partition_responses": []}),
        (ProduceTopic, {"topic_id": uuid.uuid4(), "partition_responses": []}),
    ],
)
def test_a_versioned_maker_builds_what_the_constructor_builds(cls: type, fields: dict[str, Any]) -> None:
    """With a version: the given fields (in the version or not) and the version's defaults,
    as `cls(version=v, **fields)` (and `new`, which falls back to it) builds them."""
    for version in range(ProduceResponse.min_version, ProduceResponse.max_version + 1):
        built = maker(cls, *fields, version=version)(*fields.values())
        expected = cls(version=version, **fields)
        assert _slots(built) == _slots(expected), version
        assert built.to_dict(meta="all", json=False) == expected.to_dict(meta="all", json=False)
        assert _slots(new(cls, version, **fields)) == _slots(expected)


def test_a_message_without_fields_is_made_and_encodes_empty() -> None:
    """ListConfigResources v0's request has no fields: `new` makes it (it built a
    `def make(*, )` and raised SyntaxError) and it encodes as Kafka's empty body."""
    request = new(request_class(ApiKey.LIST_CONFIG_RESOURCES), 0)
    assert bytes(request.encode(version=0)) == bytes(
        request_class(ApiKey.LIST_CONFIG_RESOURCES)().encode(version=0)
    )
