"""Who may administer the cluster: `authorizer.enabled` and `super.users`.

Without an authorizer (the default, like a broker with no `authorizer.class.name`)
everyone may do everything. With one, this mock has no ACLs: operations on the CLUSTER
resource (quota, config and SCRAM credential administration) need a super user, which
is what Kafka's StandardAuthorizer gives a principal without ACLs
(`allow.everyone.if.no.acl.found=false`). Data-plane requests stay open.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.config.broker_config import BrokerConfig

DESCRIBE_CONFIGS = "DESCRIBE_CONFIGS"
ALTER_CONFIGS = "ALTER_CONFIGS"
DESCRIBE = "DESCRIBE"
ALTER = "ALTER"


class Authorizer:
    def __init__(self, enabled: bool = False, super_users: Iterable[str] = ()) -> None:
        self.enabled = enabled
        self.super_users = frozenset(super_users)

    @classmethod
    def from_config(cls, config: BrokerConfig) -> Authorizer:
        """`super.users` is `User:admin;User:ops`, as in Kafka (semicolon-separated)."""
        users = (u.strip() for u in config.get_str("super.users").split(";"))
        return cls(config.get_bool("authorizer.enabled"), filter(None, users))

    def is_super_user(self, principal: object) -> bool:
        return str(principal) in self.super_users

    def authorize_cluster(self, principal: object, operation: str) -> bool:
        """Whether `principal` may perform `operation` on the CLUSTER resource."""
        return not self.enabled or self.is_super_user(principal)
