"""ConsumerGroupDescribe (69): KIP-848 groups with their epochs, the assignor, and each
member's subscription, current assignment and target assignment."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import Level, mirrors
from broker.handlers.common import failed_group_description, group_describe_refusal
from broker.handlers.spec import WITH_CONSUMER_PROTOCOL
from broker.security import authorization
from broker.security.acls import Operation, ResourceType
from broker.state.consumer_groups import ConsumerGroup
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.CONSUMER_GROUP_DESCRIBE
VERSIONS = (0, 1)
AUTHORIZATION = authorization.each_group(Operation.DESCRIBE)
ENABLED = WITH_CONSUMER_PROTOCOL
ERROR_RESPONSE = mirrors(Level(("group_ids",), "groups", (("group_id", ""),)))
ConsumerGroupDescribeResponse = response_class(API_KEY)
Described = ConsumerGroupDescribeResponse.DescribedGroup
Member = Described.Member
Assignment = Member.Assignment
TopicPartitions = Assignment.TopicPartitions
CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1  # MemberType (v1, KIP-1099)


def describe(ctx: RequestContext, group_id: str, include_operations: bool) -> Any:
    refusal = group_describe_refusal(ctx, group_id, "consumer", ctx.groups.consumer.groups)
    if refusal is not None:
        return failed_group_description(Described, group_id, *refusal)
    groups = ctx.groups
    group = groups.consumer.groups[group_id]
    authorizer, principal, host = ctx.broker.authorizer, ctx.connection.principal, ctx.connection.peer[0]
    topics = {
        name
        for member in group.members.values()
        for assignment in (member.assigned, group.target.get(member.member_id, {}))
        for _, name, _ in groups.consumer.assignment_rows(assignment)
    }
    if not all(
        authorizer.authorize(principal, host, Operation.DESCRIBE, ResourceType.TOPIC, t) for t in topics
    ):
        # KafkaApis: a group whose assignments name topics the caller may not describe
        return failed_group_description(
            Described,
            group_id,
            ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            "The group has described topic(s) that the client is not authorized to describe.",
        )
    operations = (
        ctx.broker.authorizer.authorized_operations(
            ctx.connection.principal, ctx.connection.peer[0], ResourceType.GROUP, group_id
        )
        if include_operations
        else None
    )
    return Described(
        error_code=ErrorCode.NONE,
        error_message=None,
        group_id=group_id,
        group_state=group.state,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=group.preferred_server_assignor(groups.consumer.assignor_names()[0]),
        members=[_member(ctx, group, member_id) for member_id in group.members],
        authorized_operations=operations,
    )


def _member(ctx: RequestContext, group: ConsumerGroup, member_id: str) -> Any:
    member = group.members[member_id]
    rows = ctx.groups.consumer.assignment_rows
    return Member(
        member_id=member.member_id,
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=list(member.subscribed_topic_names),
        subscribed_topic_regex=member.subscribed_topic_regex or "",  # Kafka: "" for none
        assignment=Assignment(
            topic_partitions=[
                TopicPartitions(topic_id=t, topic_name=name, partitions=ps)
                for t, name, ps in rows(member.assigned)
            ]
        ),
        target_assignment=Assignment(
            topic_partitions=[
                TopicPartitions(topic_id=t, topic_name=name, partitions=ps)
                for t, name, ps in rows(group.target.get(member_id, {}))
            ]
        ),
        member_type=CLASSIC_MEMBER if member.classic is not None else CONSUMER_MEMBER,
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    return ctx.response(
        throttle_time_ms=0,
        groups=[
            describe(ctx, group_id, bool(request.include_authorized_operations))
            for group_id in request.group_ids
        ],
    )
