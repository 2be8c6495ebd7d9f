"""Authorization hook. Every principal is allowed until authentication and
`authorizer.enabled`/`super.users` arrive (issue 6); handlers already ask here so the
refusals have Kafka's exact shape when they do."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.context import RequestContext

CLUSTER_AUTHORIZATION_FAILED = 31
DESCRIBE_CONFIGS = "DESCRIBE_CONFIGS"
ALTER_CONFIGS = "ALTER_CONFIGS"


class Authorizer:
    def authorize_cluster(self, ctx: RequestContext, operation: str) -> bool:
        """Whether the request's principal may perform `operation` on the CLUSTER resource."""
        return True
