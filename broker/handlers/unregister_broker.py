"""UnregisterBroker (64): `kafka-cluster.sh unregister`, Admin.unregisterBroker. A broker
forwards it to the controller, which checks ALTER on the cluster (ControllerApis) and
then removes the registration (ReplicationControlManager.unregisterBroker): a stopped
(fenced) broker leaves Metadata, DescribeCluster and the quorum's observers until it
starts again and re-registers; a running one is accepted too, loses its leaderships and
stays out of the metadata until it restarts. An unknown id is BROKER_ID_NOT_REGISTERED,
with Kafka's "Broker ID N is not currently registered"; success has the message "". A
refused request carries the error code only (the mock leaves out Kafka's "Request ... is
not authorized.", as for every refused cluster operation)."""

from __future__ import annotations

from typing import Any

from broker.context import RequestContext
from broker.error_responses import TOP_LEVEL
from broker.handlers.spec import ALWAYS
from broker.security.authorization import by_handler
from broker.security.authorizer import ALTER
from broker.state.cluster import ClusterError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

API_KEY = ApiKey.UNREGISTER_BROKER
VERSIONS = (0, 0)
AUTHORIZATION = by_handler("ALTER on the cluster")
ENABLED = ALWAYS
ERROR_RESPONSE = TOP_LEVEL


def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.broker.authorizer.authorize_cluster(ctx.connection.principal, ALTER, ctx.connection.peer[0]):
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message=None,
        )
    try:
        ctx.cluster.unregister_broker(request.broker_id)
    except ClusterError as exc:
        return ctx.response(throttle_time_ms=0, error_code=exc.code, error_message=exc.message)
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message="")  # Kafka's default
