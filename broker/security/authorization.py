"""The request pipeline's authorization stage, and the vocabulary handler modules use to
declare how their API is authorized (`AUTHORIZATION`, see broker/handlers/spec.py).

Each handler module says one of three things: the pipeline checks it before the handler
runs (an `Authorization` with a check: what KafkaApis checks first, answered with the
API's error response, per entry where Kafka answers per entry, or by filtering what a
listing shows), the handler checks it itself (`by_handler`: cluster administration whose
answers are per resource, through `Authorizer.authorize_cluster`), or nothing is checked
(`NOT_CHECKED`: ApiVersions, SASL, as in Kafka).

The stage is an interceptor registered only when an authorizer is configured (a broker
without one pays nothing).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from broker.context import CloseConnection, RequestContext
from broker.error_responses import Selection, answer_with_errors, entries_of, error_response, level_for
from broker.security.acls import CLUSTER_NAME, Operation, ResourceType
from broker.security.authorizer import Authorizer
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

Handler = Callable[[RequestContext, Any], Any]
WRITE = Operation.WRITE
TOPIC, GROUP, CLUSTER, TXN = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
)


class Access:
    """One request's questions to the authorizer, as its principal from its host."""

    __slots__ = ("acls", "principal", "host")

    def __init__(self, authorizer: Authorizer, principal: str, host: str) -> None:
        self.acls = authorizer.acls
        self.principal = principal
        self.host = host

    def allows(self, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        return self.acls.authorize(self.principal, self.host, operation, resource_type, name)

    def allows_cluster(self, operation: Operation) -> bool:
        return self.allows(operation, CLUSTER, CLUSTER_NAME)

    def allows_any_topic(self, operation: Operation) -> bool:
        """authorizeByResourceType: some ACL lets this principal `operation` some topic."""
        return self.acls.allows_some(self.principal, self.host, operation, TOPIC)


Check = Callable[[Access, RequestContext, Any, Handler], Any]


@dataclass(frozen=True, slots=True)
class Authorization:
    """How one API is authorized, as its handler module declares it. `summary` says what
    is checked (the API reference shows it); `check` is run by the pipeline's stage
    before the handler; `by_handler` says the handler asks the authorizer itself."""

    summary: str
    check: Check | None = None
    by_handler: bool = False

    def __post_init__(self) -> None:
        if self.check is not None and self.by_handler:
            raise ValueError("an API is checked by the pipeline or by its handler, not both")


def by_handler(summary: str) -> Authorization:
    """The handler checks `summary` itself (answers that are per resource)."""
    return Authorization(summary, by_handler=True)


NOT_CHECKED = Authorization("none: Kafka checks no ACL for it")


class AuthorizationStage:
    """The interceptor: each request through its API's declared check, if it has one."""

    def __init__(self, authorizer: Authorizer, checks: Mapping[int, Check]) -> None:
        self.authorizer = authorizer
        self.checks = dict(checks)
        # The last principal seen and its name: a connection's requests come as one
        # principal, so the name is formatted once per run of them, not per request.
        self._principal: object = None
        self._name = ""

    def intercept(self, ctx: RequestContext, request: Any, call: Handler) -> Any:
        check = self.checks.get(ctx.api_key)
        if check is None:
            return call(ctx, request)
        connection = ctx.connection
        principal = connection.principal
        if principal is not self._principal:
            self._principal, self._name = principal, str(principal)
        return check(Access(self.authorizer, self._name, connection.peer[0]), ctx, request, call)


# -- building blocks -------------------------------------------------------------------
def _topic_name(ctx: RequestContext, entry: Any) -> str:
    if isinstance(entry, str):  # DeleteTopics v0-5 names topics bare
        return entry
    name = getattr(entry, "name", None) or getattr(entry, "topic", None)
    if name:
        return str(name)
    topic = ctx.cluster.topics_by_id.get(getattr(entry, "topic_id", None))  # type: ignore[arg-type]
    return topic.name if topic is not None else ""


def _refuse_entries(
    ctx: RequestContext, request: Any, call: Handler, denied: Callable[[Any], bool], code: int
) -> Any:
    """The handler serves the entries `denied` does not pick; those get `code`."""
    level = level_for(ctx.api_key, ctx.api_version)
    assert level is not None
    selected: Selection = [(entry, None) for entry in entries_of(level, request) if denied(entry)]
    if not selected:
        return call(ctx, request)
    return answer_with_errors(ctx, request, call, level, selected, code)


def per_topic(operation: Operation) -> Check:
    """Each topic the request names needs `operation`; the others are served and those
    answered TOPIC_AUTHORIZATION_FAILED."""

    def check(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
        level = level_for(ctx.api_key, ctx.api_version)
        assert level is not None
        allows = access.allows
        for entry in entries_of(level, request):
            name = _topic_name(ctx, entry)
            if name != "" and not allows(operation, TOPIC, name):
                break
        else:  # every topic allowed, the common case: straight to the handler
            return call(ctx, request)
        refused = _refuse_entries(
            ctx,
            request,
            call,
            lambda entry: (
                (name := _topic_name(ctx, entry)) != "" and not access.allows(operation, TOPIC, name)
            ),
            ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        )
        if ctx.api_key in _REFUSED_WITH_MESSAGE:
            return _after(refused, _refusal_messages(TOPIC_REFUSAL_MESSAGE))
        return refused

    return check


# APIs whose refused topics carry the error's own message (Kafka builds them from
# `new ApiError(TOPIC_AUTHORIZATION_FAILED)`); the others' refusals have none.
_REFUSED_WITH_MESSAGE = frozenset({ApiKey.DELETE_TOPICS, ApiKey.DESCRIBE_PRODUCERS})
TOPIC_REFUSAL_MESSAGE = "Topic authorization failed."


def _refusal_messages(text: str) -> Callable[[Any], None]:
    """Gives every entry refused TOPIC_AUTHORIZATION_FAILED without a message `text`,
    the message Kafka's answer carries."""

    def fill(message: Any) -> None:
        fields = type(message).fields
        if (
            getattr(message, "error_code", None) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
            and "error_message" in fields
            and not getattr(message, "error_message", None)
        ):
            message.error_message = text
        for name, spec in fields.items():
            if spec.is_struct_array():
                for entry in getattr(message, name, None) or ():
                    fill(entry)

    return fill


def on_group(operation: Operation, group_of: Callable[[Any], str] = lambda r: r.group_id) -> Check:
    """The whole request needs `operation` on its group, else GROUP_AUTHORIZATION_FAILED."""

    def check(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
        if not access.allows(operation, GROUP, group_of(request)):
            refused = error_response(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
            if refused is not None and ctx.api_key == ApiKey.JOIN_GROUP and ctx.api_version >= 7:
                refused.protocol_name = None  # nullable from v7: Kafka's refusal names none
            return refused
        return call(ctx, request)

    return check


def per_group(operation: Operation, name_of: Callable[[Any], str] = lambda group: group) -> Check:
    """Each group the request names needs `operation`; the others are answered
    GROUP_AUTHORIZATION_FAILED (`name_of`: the group id of an entry that is not one)."""

    def check(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
        return _refuse_entries(
            ctx,
            request,
            call,
            lambda group: not access.allows(operation, GROUP, name_of(group)),
            ErrorCode.GROUP_AUTHORIZATION_FAILED,
        )

    return check


# -- the APIs --------------------------------------------------------------------------
def _produce(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    """WRITE on each topic (and on the transactional id). An acks=0 produce has nobody to
    tell: a refusal closes the connection, as Kafka does for acks=0 failures."""
    if request.transactional_id is not None and not access.allows(
        Operation.WRITE, TXN, request.transactional_id
    ):
        if request.acks == 0:
            raise CloseConnection("acks=0 produce refused: transactional id authorization failed")
        return error_response(ctx, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    allows, acks_0 = access.allows, request.acks == 0
    for topic in request.topic_data:
        name = _topic_name(ctx, topic)
        if (name != "" or acks_0) and not allows(WRITE, TOPIC, name):
            break
    else:  # every topic writable, the common case: straight to the handler
        return call(ctx, request)
    if acks_0:
        raise CloseConnection("acks=0 produce refused: topic authorization failed")
    return _WRITE_PER_TOPIC(access, ctx, request, call)


_WRITE_PER_TOPIC = per_topic(Operation.WRITE)
_READ_PER_TOPIC = per_topic(Operation.READ)


def _metadata(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    """Named topics need DESCRIBE (TOPIC_AUTHORIZATION_FAILED otherwise, and never
    auto-created), unknown ones CREATE to be auto-created; a listing of all topics shows
    only the described ones."""
    if request.topics is None or (ctx.api_version == 0 and not request.topics):  # all topics
        return _filtered(
            call(ctx, request), lambda t: access.allows(Operation.DESCRIBE, TOPIC, t.name), "topics"
        )
    auto_create = ctx.config.get_bool("auto.create.topics.enable") and (
        ctx.api_version < 4 or request.allow_auto_topic_creation
    )

    def denied(entry: Any) -> bool:
        name = _topic_name(ctx, entry)
        if not name:
            return False  # an unknown topic id: the handler answers UNKNOWN_TOPIC_ID
        if not access.allows(Operation.DESCRIBE, TOPIC, name):
            return True
        creating = auto_create and name not in ctx.cluster.topics
        return creating and not (
            access.allows_cluster(Operation.CREATE) or access.allows(Operation.CREATE, TOPIC, name)
        )

    return _refuse_entries(ctx, request, call, denied, ErrorCode.TOPIC_AUTHORIZATION_FAILED)


def _filtered(result: Any, keep: Callable[[Any], bool], field: str) -> Any:
    """The response with only the `field` entries `keep` accepts (async-aware)."""

    def change(response: Any) -> None:
        setattr(response, field, [entry for entry in getattr(response, field) or () if keep(entry)])

    return _after(result, change)


def _offset_commit(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    if not access.allows(Operation.READ, GROUP, request.group_id):
        return error_response(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return _READ_PER_TOPIC(access, ctx, request, call)


def _offset_fetch(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    """DESCRIBE on the group, then on each topic: a named one the caller may not describe
    answers TOPIC_AUTHORIZATION_FAILED, a listing of all leaves it out."""
    if ctx.api_version >= 8:
        result = _refuse_entries(
            ctx,
            request,
            call,
            lambda group: not access.allows(Operation.DESCRIBE, GROUP, group.group_id),
            ErrorCode.GROUP_AUTHORIZATION_FAILED,
        )
        listing = {g.group_id: g.topics is None for g in request.groups}

        def per_group(response: Any) -> None:
            for group in response.groups:
                _hide_topics(access, group, listing.get(group.group_id, False))

        return _after(result, per_group)
    if not access.allows(Operation.DESCRIBE, GROUP, request.group_id):
        return error_response(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return _after(call(ctx, request), lambda response: _hide_topics(access, response, request.topics is None))


def _hide_topics(access: Access, holder: Any, listing: bool) -> None:
    """The topics of `holder` the caller may not describe: dropped from a listing of all,
    refused when named."""
    topics = holder.topics or []
    if listing:
        holder.topics = [t for t in topics if access.allows(Operation.DESCRIBE, TOPIC, t.name)]
        return
    for topic in topics:
        if topic.name and not access.allows(Operation.DESCRIBE, TOPIC, topic.name):
            for partition in topic.partitions:
                partition.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                partition.committed_offset, partition.committed_leader_epoch, partition.metadata = -1, -1, ""


def _after(result: Any, change: Callable[[Any], None]) -> Any:
    """`change` applied to the response once there is one (async-aware)."""
    if inspect.iscoroutine(result):

        async def later() -> Any:
            return _after(await result, change)

        return later()
    if result is not None:
        change(result)
    return result


def _find_coordinator(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    if ctx.api_version >= 1 and request.key_type == 2:
        # a share coordinator is a broker's question: CLUSTER_ACTION (KafkaApis.getCoordinator)
        if access.allows_cluster(Operation.CLUSTER_ACTION):
            return call(ctx, request)
        return _refuse_entries(ctx, request, call, lambda key: True, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    transaction = ctx.api_version >= 1 and request.key_type == 1
    resource, code = (
        (TXN, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if transaction
        else (GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    )
    if ctx.api_version >= 4:
        return _refuse_entries(
            ctx, request, call, lambda key: not access.allows(Operation.DESCRIBE, resource, key), code
        )
    if not access.allows(Operation.DESCRIBE, resource, request.key):
        return error_response(ctx, code)
    return call(ctx, request)


def _list_groups(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    if access.allows_cluster(Operation.DESCRIBE):
        return call(ctx, request)
    return _filtered(
        call(ctx, request), lambda g: access.allows(Operation.DESCRIBE, GROUP, g.group_id), "groups"
    )


def _consumer_group_heartbeat(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    """READ on the group, then DESCRIBE on every subscribed topic name (KafkaApis: members
    may not learn of topics they cannot see); regex subscriptions are not checked here."""
    if not access.allows(Operation.READ, GROUP, request.group_id):
        return error_response(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if request.subscribed_topic_names and not all(
        access.allows(Operation.DESCRIBE, TOPIC, name) for name in set(request.subscribed_topic_names)
    ):
        return error_response(ctx, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    return call(ctx, request)


def _share_group_heartbeat(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    """KafkaApis.handleShareGroupHeartbeat: READ on the group; then, for a valid member
    id (the handler refuses the others), DESCRIBE on every subscribed topic name."""
    if not access.allows(Operation.READ, GROUP, request.group_id):
        return error_response(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    member_id_valid = bool(request.member_id) and len(request.member_id) <= 36
    if (
        member_id_valid
        and request.subscribed_topic_names
        and not all(
            access.allows(Operation.DESCRIBE, TOPIC, name) for name in set(request.subscribed_topic_names)
        )
    ):
        return error_response(ctx, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    return call(ctx, request)


def _read_group(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    """READ on the group; a request without one is the handler's INVALID_REQUEST."""
    if request.group_id is not None and not access.allows(Operation.READ, GROUP, request.group_id):
        return error_response(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return call(ctx, request)


def _elect_leaders(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    """ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED for the request and each
    partition it names (KafkaApis.handleElectLeaders)."""
    if access.allows_cluster(Operation.ALTER):
        return call(ctx, request)
    Result = response_class(ctx.api_key).ReplicaElectionResult
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        replica_election_results=[
            Result(
                topic=t.topic,
                partition_result=[
                    Result.PartitionResult(partition_id=p, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
                    for p in t.partitions
                ],
            )
            for t in request.topic_partitions or ()
        ],
    )


def _create_topics(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    if access.allows_cluster(Operation.CREATE):
        return call(ctx, request)
    refused = _refuse_entries(
        ctx,
        request,
        call,
        lambda topic: not access.allows(Operation.CREATE, TOPIC, topic.name),
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    )
    # Kafka's ControllerApis answers a topic it may not create with ApiError's message
    return _after(refused, _refusal_messages("Authorization failed."))


def _init_producer_id(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    """WRITE on the transactional id, or (idempotent) IDEMPOTENT_WRITE on the cluster or
    WRITE on some topic; refused with producer id and epoch -1, as Kafka answers."""
    if request.transactional_id is not None:
        if not access.allows(Operation.WRITE, TXN, request.transactional_id):
            code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            return ctx.response(throttle_time_ms=0, error_code=code, producer_id=-1, producer_epoch=-1)
    elif not (access.allows_cluster(Operation.IDEMPOTENT_WRITE) or access.allows_any_topic(Operation.WRITE)):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return ctx.response(throttle_time_ms=0, error_code=code, producer_id=-1, producer_epoch=-1)
    return call(ctx, request)


def on_transaction(then: Check | None = None) -> Check:
    """The transaction APIs: WRITE on the transactional id, then `then`."""

    def check(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
        transactional_id = (
            request.transactional_id
            if ctx.api_key != ApiKey.ADD_PARTITIONS_TO_TXN
            else (request.v3_and_below_transactional_id)
        )
        if not access.allows(Operation.WRITE, TXN, transactional_id):
            return error_response(ctx, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return then(access, ctx, request, call) if then is not None else call(ctx, request)

    return check


def _add_partitions_to_txn(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    if ctx.api_version >= 4:  # the brokers' form: a cluster action
        if not access.allows_cluster(Operation.CLUSTER_ACTION):
            return error_response(ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return call(ctx, request)
    return on_transaction(_add_partitions_v3)(access, ctx, request, call)


def _add_partitions_v3(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    """A topic it may not WRITE fails the whole request, as Kafka fails it: those topics'
    partitions TOPIC_AUTHORIZATION_FAILED, every other OPERATION_NOT_ATTEMPTED."""
    denied = {
        t.name for t in request.v3_and_below_topics if not access.allows(Operation.WRITE, TOPIC, t.name)
    }
    if not denied:
        return call(ctx, request)
    response = error_response(ctx, ErrorCode.OPERATION_NOT_ATTEMPTED)
    assert response is not None  # the producers' form always has its per-partition answer
    for topic in response.results_by_topic_v3_and_below:
        if topic.name in denied:
            for partition in topic.results_by_partition:
                partition.partition_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return response


def _txn_group(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    """AddOffsetsToTxn and TxnOffsetCommit also need READ on the group."""
    if not access.allows(Operation.READ, GROUP, request.group_id):
        return error_response(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if ctx.api_key == ApiKey.TXN_OFFSET_COMMIT:
        return _READ_PER_TOPIC(access, ctx, request, call)
    return call(ctx, request)


def _describe_transactions(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    return _refuse_entries(
        ctx,
        request,
        call,
        lambda tid: not access.allows(Operation.DESCRIBE, TXN, tid),
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    )


def _list_transactions(access: Access, ctx: RequestContext, request: Any, call: Handler) -> Any:
    return _filtered(
        call(ctx, request),
        lambda t: access.allows(Operation.DESCRIBE, TXN, t.transactional_id),
        "transaction_states",
    )


# -- what handler modules declare ------------------------------------------------------
def each_topic(operation: Operation) -> Authorization:
    return Authorization(f"{operation.name} on each topic named", per_topic(operation))


def the_group(operation: Operation) -> Authorization:
    return Authorization(f"{operation.name} on the group", on_group(operation))


def each_group(operation: Operation) -> Authorization:
    return Authorization(f"{operation.name} on each group named", per_group(operation))


PRODUCE = Authorization(
    "WRITE on the transactional id if any, WRITE on each topic (acks=0: a refusal closes the connection)",
    _produce,
)
FETCH = Authorization("READ on each topic", _READ_PER_TOPIC)
METADATA = Authorization(
    "DESCRIBE on each topic named (a listing shows only those), CREATE on the cluster or topic to auto-create",
    _metadata,
)
OFFSET_COMMIT = Authorization("READ on the group, READ on each topic", _offset_commit)
OFFSET_FETCH = Authorization(
    "DESCRIBE on the group, DESCRIBE on each topic (a listing leaves the others out)", _offset_fetch
)
FIND_COORDINATOR = Authorization(
    "DESCRIBE on each group or transactional id; CLUSTER_ACTION for share-partition keys", _find_coordinator
)
LIST_GROUPS = Authorization(
    "DESCRIBE on the cluster, else only groups with DESCRIBE are listed", _list_groups
)
ELECT_LEADERS = Authorization("ALTER on the cluster", _elect_leaders)
CONSUMER_GROUP_HEARTBEAT = Authorization(
    "READ on the group, DESCRIBE on each subscribed topic name", _consumer_group_heartbeat
)
SHARE_GROUP_HEARTBEAT = Authorization(
    "READ on the group, DESCRIBE on each subscribed topic name", _share_group_heartbeat
)
SHARE_FETCH = Authorization(
    "READ on the group; READ on each topic (a refused one answers TOPIC_AUTHORIZATION_FAILED)",
    _read_group,
)
CREATE_TOPICS = Authorization("CREATE on the cluster, else on each topic", _create_topics)
INIT_PRODUCER_ID = Authorization(
    "WRITE on the transactional id; without one IDEMPOTENT_WRITE on the cluster or WRITE on some topic",
    _init_producer_id,
)
ADD_PARTITIONS_TO_TXN = Authorization(
    "WRITE on the transactional id and each topic (v4+, the brokers' form: CLUSTER_ACTION on the cluster)",
    _add_partitions_to_txn,
)
ADD_OFFSETS_TO_TXN = Authorization(
    "WRITE on the transactional id, READ on the group", on_transaction(_txn_group)
)
END_TXN = Authorization("WRITE on the transactional id", on_transaction())
TXN_OFFSET_COMMIT = Authorization(
    "WRITE on the transactional id, READ on the group and each topic", on_transaction(_txn_group)
)
DESCRIBE_TRANSACTIONS = Authorization("DESCRIBE on each transactional id", _describe_transactions)
LIST_TRANSACTIONS = Authorization("only transactional ids with DESCRIBE are listed", _list_transactions)
