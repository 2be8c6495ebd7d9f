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
from broker.error_responses import TOP_LEVEL
from broker.handlers.common import voter_answer, voter_change_refusal
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from broker.state.quorum import KRAFT_VERSION, replica_key
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.REMOVE_RAFT_VOTER
VERSIONS = (0, 0)
AUTHORIZATION = by_handler("ALTER on the cluster")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL


def handle(ctx: RequestContext, request: Any) -> Any:
    refusal = voter_change_refusal(ctx, request)
    if refusal is not None:
        return refusal
    cluster = ctx.cluster
    directory = request.voter_directory_id  # kafka-python decodes the zero uuid as None
    if request.voter_id < 0 or directory is None or directory.int == 0:
        return voter_answer(
            ctx, ErrorCode.INVALID_REQUEST, "Remove voter request didn't include a valid voter"
        )
    voters = cluster.quorum.voters
    if voters is None:
        level = cluster.features.finalized.get(KRAFT_VERSION, 0)
        return voter_answer(
            ctx,
            ErrorCode.UNSUPPORTED_VERSION,
            f"Cluster doesn't support removing voter because the {KRAFT_VERSION} feature is {level}",
        )
    key = replica_key(request.voter_id, request.voter_directory_id)
    voter = voters.get(request.voter_id)
    if voter is None or voter.directory != request.voter_directory_id or len(voters) == 1:
        return voter_answer(
            ctx,
            ErrorCode.VOTER_NOT_FOUND,
            f"Cannot remove voter {key} from the set of voters {cluster.quorum.voter_keys()}",
        )
    del voters[request.voter_id]
    cluster.metadata_changed()  # the VotersRecord; a removed leader resigns
    return voter_answer(ctx, ErrorCode.NONE)
