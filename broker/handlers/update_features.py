"""UpdateFeatures (57): finalizes feature levels cluster-wide (kafka-features.sh,
AdminClient.updateFeatures), as FeatureControlManager checks them; ApiVersions then
reports the new levels. All or nothing; ALTER on the cluster. Turning
eligible.leader.replicas.version on writes a cluster-level min.insync.replicas and drops the
broker-level ones, as Kafka's controller does."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from broker.security.authorizer import ALTER
from broker.state.features import ELR_VERSION, SAFE_DOWNGRADE, UPGRADE
from messages.registry import response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.UPDATE_FEATURES
VERSIONS = (0, 2)
AUTHORIZATION = by_handler("ALTER on the cluster")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL
Result = response_class(API_KEY).UpdatableFeatureResult


async def handle(ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    updates = {
        u.feature: (
            u.max_version_level,
            u.upgrade_type if version >= 1 else (SAFE_DOWNGRADE if u.allow_downgrade else UPGRADE),
        )
        for u in request.feature_updates
    }
    code: int
    message: str | None
    if not ctx.broker.authorizer.authorize_cluster(ctx.connection.principal, ALTER, ctx.connection.peer[0]):
        code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    else:
        cluster = ctx.cluster
        elr_before = cluster.features.finalized.get(ELR_VERSION, 0)
        code, message = cluster.features.update(
            updates,
            cluster.controller_id,
            validate_only=version >= 1 and bool(request.validate_only),
            offset=cluster.metadata_offset,
        )
        if code == ErrorCode.NONE and updates:
            if elr_before < 1 <= cluster.features.finalized.get(ELR_VERSION, 0):
                await ctx.broker.configs.enable_elr()  # the cluster-level min.insync.replicas
            cluster.metadata_changed()
    # createWithErrors: before v2 every feature carries the request's outcome
    results = (
        [Result(feature=name, error_code=code, error_message=message) for name in updates]
        if version < 2
        else []
    )
    return ctx.response(throttle_time_ms=0, error_code=code, error_message=message, results=results)
