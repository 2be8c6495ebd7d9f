"""KIP-848's server-side assignors: Kafka's `uniform` and `range` (ConsumerGroupPartitionAssignor).

Pure functions of the group's subscriptions, the subscribed topics' partition counts and
the current target assignment, so the coordinator calls them on every group epoch bump
and tests can drive them directly. Both are sticky, as Kafka's are: a member keeps the
partitions it has as long as the balance allows, so a rebalance moves as little as it can.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# topic id -> partition indexes
Assignment = dict[uuid.UUID, set[int]]


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """What an assignor knows of a member: its subscribed topic ids and current target."""

    member_id: str
    subscribed: frozenset[uuid.UUID]
    current: Mapping[uuid.UUID, frozenset[int]]
    instance_id: str | None = None
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class TopicSpec:
    topic_id: uuid.UUID
    name: str
    partitions: int


class UniformAssignor:
    """Spreads all subscribed partitions as evenly as possible over the members
    (counts differ by at most one among members with the same subscription), keeping
    current owners where the balance allows (Kafka's UniformAssignor)."""

    name = "uniform"

    def assign(
        self, members: Sequence[MemberSpec], topics: Mapping[uuid.UUID, TopicSpec]
    ) -> dict[str, Assignment]:
        if not members:
            return {}
        subscriptions = {member.subscribed for member in members}
        if len(subscriptions) == 1:
            return self._homogeneous(members, topics)
        return self._heterogeneous(members, topics)

    @staticmethod
    def _partitions(
        topic_ids: frozenset[uuid.UUID], topics: Mapping[uuid.UUID, TopicSpec]
    ) -> list[tuple[uuid.UUID, int]]:
        ordered = sorted((topics[t] for t in topic_ids if t in topics), key=lambda t: t.name)
        return [(t.topic_id, p) for t in ordered for p in range(t.partitions)]

    def _homogeneous(
        self, members: Sequence[MemberSpec], topics: Mapping[uuid.UUID, TopicSpec]
    ) -> dict[str, Assignment]:
        partitions = self._partitions(members[0].subscribed, topics)
        valid = set(partitions)
        minimum, extra = divmod(len(partitions), len(members))
        result: dict[str, Assignment] = {m.member_id: {} for m in members}
        counts = dict.fromkeys(result, 0)
        taken: set[tuple[uuid.UUID, int]] = set()
        # 1. Members keep what they own, up to their quota; a member already above the
        # minimum keeps one more while members may still have an extra partition.
        for member in members:
            owned = sorted(
                (
                    (topic_id, p)
                    for topic_id, ps in member.current.items()
                    for p in ps
                    if (topic_id, p) in valid
                ),
                key=lambda tp: (topics[tp[0]].name, tp[1]),
            )
            quota = minimum
            if len(owned) > minimum and extra > 0:
                quota += 1
                extra -= 1
            for tp in owned[:quota]:
                result[member.member_id].setdefault(tp[0], set()).add(tp[1])
                taken.add(tp)
            counts[member.member_id] = min(len(owned), quota)
        # 2. The rest go to members below their quota, in member order.
        free = [tp for tp in partitions if tp not in taken]
        for member in members:
            if not free:
                break
            quota = minimum
            if (
                counts[member.member_id] <= minimum
                and extra > 0
                and len(free) > minimum - counts[member.member_id]
            ):
                quota += 1
                extra -= 1
            while counts[member.member_id] < quota and free:
                topic_id, p = free.pop(0)
                result[member.member_id].setdefault(topic_id, set()).add(p)
                counts[member.member_id] += 1
        return result

    def _heterogeneous(
        self, members: Sequence[MemberSpec], topics: Mapping[uuid.UUID, TopicSpec]
    ) -> dict[str, Assignment]:
        result: dict[str, Assignment] = {m.member_id: {} for m in members}
        counts = dict.fromkeys(result, 0)
        by_id = {m.member_id: m for m in members}
        ordered_topics = sorted(
            (t for t in topics.values() if any(t.topic_id in m.subscribed for m in members)),
            key=lambda t: t.name,
        )
        owner = {
            (topic_id, p): m.member_id
            for m in members
            for topic_id, ps in m.current.items()
            if topic_id in m.subscribed
            for p in ps
        }
        for topic in ordered_topics:
            subscribers = [m.member_id for m in members if topic.topic_id in m.subscribed]
            share = -(-topic.partitions // len(subscribers))  # ceil
            per_topic = dict.fromkeys(subscribers, 0)
            leftovers: list[int] = []
            for p in range(topic.partitions):
                current = owner.get((topic.topic_id, p))
                if current is not None and current in per_topic and per_topic[current] < share:
                    result[current].setdefault(topic.topic_id, set()).add(p)
                    per_topic[current] += 1
                    counts[current] += 1
                else:
                    leftovers.append(p)
            for p in leftovers:
                chosen = min(subscribers, key=lambda mid: (counts[mid], per_topic[mid], mid))
                result[chosen].setdefault(topic.topic_id, set()).add(p)
                per_topic[chosen] += 1
                counts[chosen] += 1
        del by_id
        return result


class RangeAssignor:
    """Per topic, contiguous ranges of partitions to the subscribed members in member id
    order, the first `partitions % members` getting one more; a member keeps the
    partitions it owns that fall within its quota (Kafka's server-side RangeAssignor)."""

    name = "range"

    def assign(
        self, members: Sequence[MemberSpec], topics: Mapping[uuid.UUID, TopicSpec]
    ) -> dict[str, Assignment]:
        result: dict[str, Assignment] = {m.member_id: {} for m in members}
        for topic in sorted(topics.values(), key=lambda t: t.name):
            subscribers = sorted(
                (m for m in members if topic.topic_id in m.subscribed), key=lambda m: m.member_id
            )
            if not subscribers:
                continue
            minimum, extra = divmod(topic.partitions, len(subscribers))
            quotas = {m.member_id: minimum + (1 if i < extra else 0) for i, m in enumerate(subscribers)}
            taken: set[int] = set()
            for member in subscribers:
                kept = sorted(p for p in member.current.get(topic.topic_id, ()) if p < topic.partitions)
                for p in kept[: quotas[member.member_id]]:
                    result[member.member_id].setdefault(topic.topic_id, set()).add(p)
                    taken.add(p)
            free = [p for p in range(topic.partitions) if p not in taken]
            for member in subscribers:
                have = len(result[member.member_id].get(topic.topic_id, ()))
                need = quotas[member.member_id] - have
                if need > 0:
                    result[member.member_id].setdefault(topic.topic_id, set()).update(free[:need])
                    del free[:need]
        return result


ASSIGNORS: dict[str, UniformAssignor | RangeAssignor] = {
    "uniform": UniformAssignor(),
    "range": RangeAssignor(),
}
# group.consumer.assignors accepts Kafka's class names as well as the short names.
CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}
