"""The broker's authorizer, configured as Kafka configures it.

`authorizer.class.name` naming Kafka's StandardAuthorizer (or the older AclAuthorizer)
turns it on; `authorizer.enabled=true` is this broker's older switch for the same thing.
Without one (the default) everyone may do everything and no request pays for checks.
With one, ACLs decide (acls.py): `super.users` may do anything, and a resource no ACL
names is refused unless `allow.everyone.if.no.acl.found=true`.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from broker.security.acl_admin import AclAdmin, SqliteAclStorage
from broker.security.acls import CLUSTER_NAME, AclAuthorizer, Operation, ResourceType

if TYPE_CHECKING:
    from broker.config.broker_config import BrokerConfig

# Kafka's authorizers; either gives StandardAuthorizer's semantics here.
AUTHORIZER_CLASSES = frozenset(
    {
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "kafka.security.authorizer.AclAuthorizer",
    }
)
# AclEntry.supportedOperations: what authorized_operations reports on, per resource type.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[Operation, ...]] = {
    ResourceType.TOPIC: (
        Operation.READ,
        Operation.WRITE,
        Operation.CREATE,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.ALTER,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (
        Operation.READ,
        Operation.DESCRIBE,
        Operation.DELETE,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        Operation.CREATE,
        Operation.CLUSTER_ACTION,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
        Operation.IDEMPOTENT_WRITE,
        Operation.ALTER,
        Operation.DESCRIBE,
    ),
}
DESCRIBE_CONFIGS = "DESCRIBE_CONFIGS"
ALTER_CONFIGS = "ALTER_CONFIGS"
DESCRIBE = "DESCRIBE"
ALTER = "ALTER"


class Authorizer:
    def __init__(
        self,
        enabled: bool = False,
        super_users: tuple[str, ...] = (),
        allow_if_no_acl: bool = False,
        storage: SqliteAclStorage | None = None,
        run: Callable[[Coroutine[Any, Any, Any]], Any] | None = None,
    ) -> None:
        self.enabled = enabled
        self.acls = AclAuthorizer(super_users, allow_if_no_acl)
        self.admin = AclAdmin(self.acls, storage, run)  # the ACL APIs and `cluster.acls`

    @classmethod
    def from_config(
        cls,
        config: BrokerConfig,
        storage: SqliteAclStorage | None = None,
        run: Callable[[Coroutine[Any, Any, Any]], Any] | None = None,
    ) -> Authorizer:
        """`super.users` is `User:admin;User:ops`, as in Kafka (semicolon-separated)."""
        class_name = config.get_str("authorizer.class.name")
        if class_name and class_name not in AUTHORIZER_CLASSES:
            raise ValueError(
                f"authorizer.class.name={class_name}: only Kafka's StandardAuthorizer "
                f"({', '.join(sorted(AUTHORIZER_CLASSES))}) is available"
            )
        users = tuple(filter(None, (u.strip() for u in config.get_str("super.users").split(";"))))
        enabled = bool(class_name) or config.get_bool("authorizer.enabled")
        return cls(enabled, users, config.get_bool("allow.everyone.if.no.acl.found"), storage, run)

    def is_super_user(self, principal: object) -> bool:
        return str(principal) in self.acls.super_users

    def authorize(
        self, principal: object, host: str, operation: Operation, resource_type: ResourceType, name: str
    ) -> bool:
        return not self.enabled or self.acls.authorize(str(principal), host, operation, resource_type, name)

    def authorized_operations(
        self, principal: object, host: str, resource_type: ResourceType, name: str = CLUSTER_NAME
    ) -> frozenset[int]:
        """The operations the principal may perform on the resource, as the codes of the
        bitfield Kafka's responses carry (every supported one without an authorizer)."""
        supported = SUPPORTED_OPERATIONS[resource_type]
        return frozenset(
            int(op) for op in supported if self.authorize(principal, host, op, resource_type, name)
        )

    def authorize_cluster(self, principal: object, operation: str, host: str = "*") -> bool:
        """Whether `principal` may perform `operation` on the CLUSTER resource."""
        return self.authorize(principal, host, Operation[operation], ResourceType.CLUSTER, CLUSTER_NAME)
