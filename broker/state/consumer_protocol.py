"""The consumer protocol embedded in classic JoinGroup/SyncGroup (Kafka's ConsumerProtocol):
what a classic member subscribes to and owns, and the assignment it is given, read and
written with kafka-python's ConsumerProtocolSubscription/Assignment schemas.

Consumer groups (KIP-848) need it to serve classic members and to convert groups between
the two protocols; topics travel by name here and by id in consumer groups.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from broker.state.cluster import ClusterState

PROTOCOL_TYPE = "consumer"
MAX_ASSIGNMENT_VERSION = 3


class MalformedProtocol(Exception):
    """Embedded protocol bytes that do not decode (Kafka's SchemaException)."""


@dataclass(frozen=True, slots=True)
class Subscription:
    topics: tuple[str, ...]
    owned: tuple[tuple[str, tuple[int, ...]], ...]
    rack_id: str | None


def version_of(metadata: bytes) -> int:
    """The version an embedded protocol message starts with (0 when too short)."""
    return struct.unpack(">h", metadata[:2])[0] if len(metadata) >= 2 else 0


def decode_subscription(metadata: bytes) -> Subscription:
    """ConsumerProtocol.deserializeSubscription; newer versions read as the newest known."""
    version = version_of(metadata)
    try:
        decoded = ConsumerProtocolSubscription.decode(
            bytes(metadata[2:]), version=max(0, min(version, 3)), header=False
        )
    except Exception as exc:  # kafka-python raises struct and value errors alike
        raise MalformedProtocol(str(exc)) from exc
    owned = (
        tuple((tp.topic, tuple(tp.partitions)) for tp in decoded.owned_partitions or ())
        if version >= 1
        else ()
    )
    topics = tuple(decoded.topics or ())
    if None in topics or any(topic is None for topic, _ in owned):
        raise MalformedProtocol("null topic name")
    return Subscription(topics, owned, decoded.rack_id if version >= 3 else None)


def decode_assignment(data: bytes) -> tuple[dict[str, list[int]], bytes | None]:
    """(partitions by topic name, user data) of a serialized ConsumerProtocolAssignment."""
    version = version_of(data)
    try:
        decoded = ConsumerProtocolAssignment.decode(
            bytes(data[2:]), version=max(0, min(version, 3)), header=False
        )
    except Exception as exc:
        raise MalformedProtocol(str(exc)) from exc
    partitions: dict[str, list[int]] = {}
    for tp in decoded.assigned_partitions or ():
        if tp.topic is None:
            raise MalformedProtocol("null topic name")
        partitions.setdefault(tp.topic, []).extend(tp.partitions)
    return partitions, decoded.user_data


def encode_assignment(partitions: Mapping[str, list[int]], version: int) -> bytes:
    """ConsumerProtocol.serializeAssignment at the member's metadata version (capped)."""
    version = max(0, min(version, MAX_ASSIGNMENT_VERSION))
    message = ConsumerProtocolAssignment(
        version=version,
        assigned_partitions=[
            ConsumerProtocolAssignment.TopicPartition(topic=topic, partitions=sorted(ps))
            for topic, ps in sorted(partitions.items())
        ],
        user_data=None,
    )
    return bytes(message.encode(version=version))


def ids_of(
    cluster: ClusterState, by_name: Mapping[str, list[int]] | tuple[tuple[str, tuple[int, ...]], ...]
) -> dict[uuid.UUID, frozenset[int]]:
    """Partitions by topic id; topics that do not exist are dropped, as Kafka does."""
    items = by_name.items() if isinstance(by_name, Mapping) else by_name
    found: dict[uuid.UUID, frozenset[int]] = {}
    for name, partitions in items:
        topic = cluster.topics.get(name)
        if topic is not None and partitions:
            found[topic.topic_id] = found.get(topic.topic_id, frozenset()) | frozenset(partitions)
    return found


def names_of(cluster: ClusterState, by_id: Mapping[uuid.UUID, frozenset[int]]) -> dict[str, list[int]]:
    """Partitions by topic name, for topics that still exist."""
    return {
        topic.name: sorted(partitions)
        for topic_id, partitions in by_id.items()
        if (topic := cluster.topics_by_id.get(topic_id)) is not None
    }
