"""Online migration between the classic and the consumer (KIP-848) group protocols.

`group.consumer.migration.policy` (bidirectional, upgrade, downgrade, disabled) says which
way a non-empty group may change type: the first consumer-protocol member to join a
classic group upgrades it (its members become classic members of a consumer group, with
their generation as member epoch and their assignment as target), and when the last
consumer-protocol member leaves a group of classic members it is downgraded (a Stable
classic group at the group epoch, about to rebalance). Kafka's GroupMetadataManager
(convertToConsumerGroup, convertToClassicGroup) is the reference.
"""

from __future__ import annotations

from collections.abc import Sequence

from broker.state.classic_groups import STABLE, ClassicGroup, Member
from broker.state.cluster import ClusterState
from broker.state.consumer_groups import (
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerMember,
    HeartbeatError,
)
from broker.state.consumer_protocol import (
    PROTOCOL_TYPE,
    MalformedProtocol,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    ids_of,
    names_of,
    version_of,
)
from protocol.errors import ErrorCode

POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


def upgrade_enabled(policy: str) -> bool:
    return policy.strip().lower() in ("bidirectional", "upgrade")


def downgrade_enabled(policy: str) -> bool:
    return policy.strip().lower() in ("bidirectional", "downgrade")


def _cannot_upgrade(group_id: str, why: str) -> HeartbeatError:
    return HeartbeatError(
        ErrorCode.GROUP_ID_NOT_FOUND,
        f"Cannot upgrade classic group {group_id} to consumer group because {why}.",
    )


def to_consumer_group(
    classic: ClassicGroup, cluster: ClusterState, policy: str, max_size: int
) -> ConsumerGroup:
    """validateOnlineUpgrade and ConsumerGroup.fromClassicGroup; HeartbeatError
    (GROUP_ID_NOT_FOUND, Kafka's message) when the group cannot be upgraded."""
    group_id = classic.group_id
    if not upgrade_enabled(policy):
        raise _cannot_upgrade(group_id, "online upgrade is disabled")
    if classic.protocol_type != PROTOCOL_TYPE:
        raise _cannot_upgrade(group_id, "the group does not use the consumer embedded protocol")
    if len(classic.members) > max_size:
        raise _cannot_upgrade(group_id, "the group size exceeds the consumer group maximum size")
    group = ConsumerGroup(group_id)
    group.group_epoch = group.assignment_epoch = classic.generation_id
    for old in classic.members.values():
        try:
            subscription = decode_subscription(old.metadata(classic.protocol_name))
            partitions, user_data = decode_assignment(old.assignment) if old.assignment else ({}, None)
        except MalformedProtocol:
            raise _cannot_upgrade(group_id, "the embedded consumer protocol is malformed") from None
        if user_data:
            raise _cannot_upgrade(
                group_id,
                "an unsupported custom assignor is in use. Please refer to the documentation or switch to a "
                "default assignor before re-attempting the upgrade",
            )
        assigned = ids_of(cluster, partitions)
        if any(group.current_partition_epoch(t, p) != -1 for t, ps in assigned.items() for p in ps):
            # two members own one partition: Kafka's upgrade fails on it as well
            raise _cannot_upgrade(group_id, "the embedded consumer protocol is malformed")
        member = ConsumerMember(
            old.member_id,
            instance_id=old.group_instance_id,
            rack_id=subscription.rack_id,
            client_id=old.client_id,
            client_host=old.client_host,
            rebalance_timeout_ms=old.rebalance_timeout_ms,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            member_epoch=classic.generation_id,
            previous_member_epoch=classic.generation_id,
            assigned=assigned,
            classic=ClassicMemberMetadata(old.session_timeout_ms, tuple(old.protocols)),
        )
        group.target[member.member_id] = assigned
        group.put_member(member)
    return group


def can_downgrade(
    group: ConsumerGroup, leaving: Sequence[ConsumerMember], policy: str, max_size: int
) -> bool:
    """validateOnlineDowngradeWithFencedMembers: after `leaving` go, only classic members
    remain (at least one), the policy allows it and they fit a classic group."""
    gone = {m.member_id for m in leaving}
    remaining = [m for m in group.members.values() if m.member_id not in gone]
    return (
        bool(remaining)
        and all(m.classic is not None for m in remaining)
        and all(m.classic is None for m in leaving)
        and downgrade_enabled(policy)
        and len(remaining) <= max_size
    )


def to_classic_group(
    group: ConsumerGroup, leaving: Sequence[ConsumerMember], cluster: ClusterState
) -> ClassicGroup:
    """ClassicGroup.fromConsumerGroup: a Stable group at the group epoch whose members
    keep their target assignments, ready for the rebalance that follows."""
    gone = {m.member_id for m in leaving}
    classic = ClassicGroup(group.group_id)
    classic.state = STABLE
    classic.generation_id = group.group_epoch
    classic.protocol_type = PROTOCOL_TYPE
    for member in group.members.values():
        if member.member_id in gone or member.classic is None:
            continue
        _, metadata = member.classic.protocols[0]
        assignment = encode_assignment(
            names_of(cluster, group.target.get(member.member_id, {})), version_of(metadata)
        )
        classic.add(
            Member(
                member.member_id,
                member.instance_id,
                member.client_id,
                member.client_host,
                member.rebalance_timeout_ms,
                member.classic.session_timeout_ms,
                PROTOCOL_TYPE,
                list(member.classic.protocols),
                assignment,
            ),
            None,
        )
    classic.protocol_name = classic.select_protocol()
    return classic
