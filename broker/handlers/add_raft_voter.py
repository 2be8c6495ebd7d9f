"""AddRaftVoter (80): `kafka-metadata-quorum.sh add-controller` (KIP-853). A broker
forwards it to the controller: ALTER on the cluster (ControllerApis), then
KafkaRaftClient's and AddVoterHandler's checks in their order: the cluster id,
a voter id and directory id, an endpoint on the quorum's listener (the leader's first
listener in the mock), kraft.version 1 (UNSUPPORTED_VERSION while the quorum is static),
an id not yet voting (DUPLICATE_VOTER); then the new voter must answer ApiVersions at
that endpoint and be a caught-up observer with that directory id, else
REQUEST_TIMED_OUT. The mock commits the VotersRecord at once, so every request is
answered when it is committed (AckWhenCommitted changes nothing)."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.common import voter_answer, voter_change_refusal
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from broker.state.quorum import KRAFT_VERSION, Voter, directory_id, replica_key
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.ADD_RAFT_VOTER
VERSIONS = (0, 1)
AUTHORIZATION = by_handler("ALTER on the cluster")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
NOT_IMPLEMENTED = (
    "A voter change commits at once, so the pending-change and no-high-watermark timeouts never happen; an unreachable voter gets REQUEST_TIMED_OUT at once.",
)


def handle(ctx: RequestContext, request: Any) -> Any:
    refusal = voter_change_refusal(ctx, request)
    if refusal is not None:
        return refusal
    cluster = ctx.cluster
    leader = cluster.running_node(cluster.quorum_leader)
    assert leader is not None  # checked by voter_change_refusal
    directory = request.voter_directory_id  # kafka-python decodes the zero uuid as None
    if request.voter_id < 0 or directory is None or directory.int == 0:
        return voter_answer(ctx, ErrorCode.INVALID_REQUEST, "Add voter request didn't include a valid voter")
    endpoints = {listener.name: (listener.host, listener.port) for listener in request.listeners}
    default_listener = next(iter(leader.endpoints))
    if default_listener not in endpoints:
        shown = ", ".join(
            f"ListenerName({name})={host}/<unresolved>:{port}" for name, (host, port) in endpoints.items()
        )
        return voter_answer(
            ctx,
            ErrorCode.INVALID_REQUEST,
            f"Add voter request didn't include the endpoint (Endpoints(endpoints={{{shown}}})) "
            f"for the default listener ListenerName({default_listener})",
        )
    level = cluster.features.finalized.get(KRAFT_VERSION, 0)
    voters = cluster.quorum.voters
    if voters is None:
        return voter_answer(
            ctx,
            ErrorCode.UNSUPPORTED_VERSION,
            f"Cluster doesn't support adding voter because the {KRAFT_VERSION} feature is {level}",
        )
    key = replica_key(request.voter_id, request.voter_directory_id)
    if request.voter_id in voters:
        return voter_answer(
            ctx,
            ErrorCode.DUPLICATE_VOTER,
            f"The voter id for {key} is already part of the set of voters {cluster.quorum.voter_keys()}.",
        )
    running = cluster.running_ids()
    reachable = any(
        (node := cluster.running_node(n)) is not None
        and node.endpoints.get(default_listener) == endpoints[default_listener]
        for n in running
    )
    if not reachable:  # the ApiVersions request finds no one at that endpoint
        return voter_answer(
            ctx,
            ErrorCode.REQUEST_TIMED_OUT,
            "Aborted add voter operation for since API_VERSIONS returned an error BROKER_NOT_AVAILABLE",
        )
    if request.voter_id not in running or request.voter_directory_id != directory_id(
        cluster.cluster_id, request.voter_id
    ):  # no observer with that replica key fetches from the leader
        return voter_answer(
            ctx,
            ErrorCode.REQUEST_TIMED_OUT,
            f"Aborted add voter operation for {key} since it is lagging behind",
        )
    voters[request.voter_id] = Voter(request.voter_id, request.voter_directory_id, endpoints)
    cluster.metadata_changed()  # the VotersRecord
    return voter_answer(ctx, ErrorCode.NONE)
