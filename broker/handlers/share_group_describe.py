"""ShareGroupDescribe (77): share groups with their epochs, the assignor, and each
member's subscription and assignment."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import Level, mirrors
from broker.handlers.common import failed_group_description, group_describe_refusal
from broker.handlers.spec import ALWAYS
from broker.security import authorization
from broker.security.acls import Operation, ResourceType
from broker.state.share_groups import ASSIGNOR_NAME, ShareMember
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.SHARE_GROUP_DESCRIBE
VERSIONS = (1, 1)
AUTHORIZATION = authorization.each_group(Operation.DESCRIBE)
ENABLED = ALWAYS
ERROR_RESPONSE = mirrors(Level(("group_ids",), "groups", (("group_id", ""),)))
ShareGroupDescribeResponse = response_class(API_KEY)
Described = ShareGroupDescribeResponse.DescribedGroup
Member = Described.Member
Assignment = Member.Assignment
TopicPartitions = Assignment.TopicPartitions


def describe(ctx: RequestContext, group_id: str, include_operations: bool) -> Any:
    refusal = group_describe_refusal(ctx, group_id, "share", ctx.groups.share.groups)
    if refusal is not None:
        return failed_group_description(Described, group_id, *refusal)
    group = ctx.groups.share.groups[group_id]
    authorizer, principal, host = ctx.broker.authorizer, ctx.connection.principal, ctx.connection.peer[0]
    topics = {
        topic.name
        for member in group.members.values()
        for topic_id in member.assigned
        if (topic := ctx.cluster.topics_by_id.get(topic_id)) is not None
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
        authorizer.authorized_operations(principal, host, ResourceType.GROUP, group_id)
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
        assignor_name=ASSIGNOR_NAME,
        members=[_member(ctx, member) for member in group.members.values()],
        authorized_operations=operations,
    )


def _member(ctx: RequestContext, member: ShareMember) -> Any:
    rows = []
    for topic_id, partitions in member.assigned.items():
        topic = ctx.cluster.topics_by_id.get(topic_id)
        rows.append(
            TopicPartitions(
                topic_id=topic_id, topic_name=topic.name if topic else "", partitions=sorted(partitions)
            )
        )
    return Member(
        member_id=member.member_id,
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=list(member.subscribed_topic_names),
        assignment=Assignment(topic_partitions=rows),
    )


def handle(ctx: RequestContext, request: Any) -> Any:
    return ctx.response(
        throttle_time_ms=0,
        groups=[
            describe(ctx, group_id, bool(request.include_authorized_operations))
            for group_id in request.group_ids
        ],
    )
