"""RemoveRaftVoter (81): `kafka-metadata-quorum.sh remove-controller` (KIP-853). A broker
forwards it to the controller: ALTER on the cluster (ControllerApis), then
KafkaRaftClient's and RemoveVoterHandler's checks in their order: the cluster id, a
voter id and directory id, kraft.version 1 (UNSUPPORTED_VERSION while the quorum is
static), then VoterSet.removeVoter: the id and directory id of a voter, never the last
one (VOTER_NOT_FOUND). A removed leader resigns once the VotersRecord commits: the
lowest running voter leads at the next epoch."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.security.authorizer import ALTER
from broker.state.quorum import KRAFT_VERSION, replica_key
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.REMOVE_RAFT_VOTER


def _answer(ctx: RequestContext, code: int, message: str | None = None) -> Any:
    return ctx.response(throttle_time_ms=0, error_code=code, error_message=message)


def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.broker.authorizer.authorize_cluster(ctx.connection.principal, ALTER, ctx.connection.peer[0]):
        return _answer(ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)  # no message, as elsewhere
    cluster = ctx.cluster
    if request.cluster_id is not None and request.cluster_id != cluster.cluster_id:
        return _answer(
            ctx,
            ErrorCode.INCONSISTENT_CLUSTER_ID,
            f'The given id "{request.cluster_id}" doesn\'t match the cluster id "{cluster.cluster_id}"',
        )
    if cluster.running_node(cluster.quorum_leader) is None:
        return _answer(ctx, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    directory = request.voter_directory_id  # kafka-python decodes the zero uuid as None
    if request.voter_id < 0 or directory is None or directory.int == 0:
        return _answer(ctx, ErrorCode.INVALID_REQUEST, "Remove voter request didn't include a valid voter")
    voters = cluster.quorum.voters
    if voters is None:
        level = cluster.features.finalized.get(KRAFT_VERSION, 0)
        return _answer(
            ctx,
            ErrorCode.UNSUPPORTED_VERSION,
            f"Cluster doesn't support removing voter because the {KRAFT_VERSION} feature is {level}",
        )
    key = replica_key(request.voter_id, request.voter_directory_id)
    voter = voters.get(request.voter_id)
    if voter is None or voter.directory != request.voter_directory_id or len(voters) == 1:
        return _answer(
            ctx,
            ErrorCode.VOTER_NOT_FOUND,
            f"Cannot remove voter {key} from the set of voters {cluster.quorum.voter_keys()}",
        )
    del voters[request.voter_id]
    cluster.metadata_changed()  # the VotersRecord; a removed leader resigns
    return _answer(ctx, ErrorCode.NONE)
