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
        """UniformHomogeneousAssignmentBuilder: the first `total % members` members (in
        group order) may hold one partition more; each keeps its current partitions up
        to its quota, and the rest (unowned first, then those taken away) fill the
        members below quota in order."""
        subscribed = members[0].subscribed
        partitions = self._partitions(subscribed, topics)
        if not partitions:
            return {m.member_id: {} for m in members}
        owned = {(t, p) for m in members for t, ps in m.current.items() for p in ps}
        unassigned = [tp for tp in partitions if tp not in owned]
        minimum, extra = divmod(len(partitions), len(members))
        result: dict[str, Assignment] = {}
        unfilled: list[tuple[str, int]] = []
        for member in members:
            quota = minimum
            if extra > 0:
                quota += 1
                extra -= 1
            kept: Assignment = {}
            for topic_id in sorted(member.current, key=lambda t: topics[t].name if t in topics else ""):
                if topic_id not in subscribed or topic_id not in topics:
                    continue
                for p in sorted(member.current[topic_id]):
                    if p >= topics[topic_id].partitions:
                        continue
                    if quota > 0:
                        kept.setdefault(topic_id, set()).add(p)
                        quota -= 1
                    else:
                        unassigned.append((topic_id, p))
            result[member.member_id] = kept
            if quota > 0:
                unfilled.append((member.member_id, quota))
        for member_id, quota in unfilled:
            for topic_id, p in unassigned[:quota]:
                result[member_id].setdefault(topic_id, set()).add(p)
            del unassigned[:quota]
        return result

    def _heterogeneous(
        self, members: Sequence[MemberSpec], topics: Mapping[uuid.UUID, TopicSpec]
    ) -> dict[str, Assignment]:
        """UniformHeterogeneousAssignmentBuilder's approach: members keep every partition
        of a topic they still subscribe to; unowned partitions go to the least loaded
        subscriber, topics with most partitions per subscriber first; then partitions
        move from the most to the least loaded subscriber of each shared topic until
        totals differ by at most one (or 16 passes find nothing to move)."""
        index = {m.member_id: i for i, m in enumerate(members)}
        result: dict[str, Assignment] = {m.member_id: {} for m in members}
        size = dict.fromkeys(result, 0)
        owner: dict[tuple[uuid.UUID, int], str] = {}
        subscribers: dict[uuid.UUID, list[str]] = {}
        for member in members:
            for topic_id in member.subscribed:
                if topic_id in topics:
                    subscribers.setdefault(topic_id, []).append(member.member_id)
            for topic_id, ps in member.current.items():
                if topic_id in member.subscribed and topic_id in topics:
                    for p in ps:
                        if p < topics[topic_id].partitions and (topic_id, p) not in owner:
                            owner[(topic_id, p)] = member.member_id
                            result[member.member_id].setdefault(topic_id, set()).add(p)
                            size[member.member_id] += 1
        order = sorted(
            subscribers,
            key=lambda t: (-topics[t].partitions / len(subscribers[t]), len(subscribers[t]), t.int),
        )

        def least_loaded(candidates: list[str]) -> str:
            return min(candidates, key=lambda m: (size[m], index[m]))

        def move(topic_id: uuid.UUID, p: int, to: str) -> None:
            previous = owner.get((topic_id, p))
            if previous is not None:
                result[previous][topic_id].discard(p)
                size[previous] -= 1
            owner[(topic_id, p)] = to
            result[to].setdefault(topic_id, set()).add(p)
            size[to] += 1

        for topic_id in order:
            for p in range(topics[topic_id].partitions):
                if (topic_id, p) not in owner:
                    move(topic_id, p, least_loaded(subscribers[topic_id]))
        shared = [t for t in order if len(subscribers[t]) >= 2]
        for _ in range(16):
            moved = False
            for topic_id in shared:
                candidates = subscribers[topic_id]
                while True:
                    holders = [m for m in candidates if result[m].get(topic_id)]
                    most = max(holders, key=lambda m: (size[m], -index[m]))
                    least = least_loaded(candidates)
                    if size[most] - size[least] <= 1:
                        break
                    move(topic_id, max(result[most][topic_id]), least)
                    moved = True
            if not moved:
                break
        return result


class RangeAssignor:
    """Kafka's server-side RangeAssignor: per topic, contiguous ranges to its subscribers
    sorted static members first (by instance id), then the others (by member id), the
    first `partitions % subscribers` getting one more. Deterministic, not sticky; a
    group with one subscription gets co-partitioned assignments."""

    name = "range"

    def assign(
        self, members: Sequence[MemberSpec], topics: Mapping[uuid.UUID, TopicSpec]
    ) -> dict[str, Assignment]:
        ordered = sorted(
            members,
            key=lambda m: (0, m.instance_id, "") if m.instance_id is not None else (1, "", m.member_id),
        )
        result: dict[str, Assignment] = {m.member_id: {} for m in members}
        for topic in topics.values():
            subscribers = [m for m in ordered if topic.topic_id in m.subscribed]
            if not subscribers:
                continue
            minimum, extra = divmod(topic.partitions, len(subscribers))
            start = 0
            for index, member in enumerate(subscribers):
                end = start + minimum + (1 if index < extra else 0)
                if end > start:
                    result[member.member_id][topic.topic_id] = set(range(start, end))
                start = end
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
