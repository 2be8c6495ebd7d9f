"""What a quota is: KIP-257's ClientQuotaCallback in Python, and Kafka's default.

The callback alone decides which metric tags a request is measured under (who shares
one sensor) and which limit applies to those tags. The quota managers ask it and
nothing else; `DefaultQuotaCallback` implements the <user, client-id> precedence of
KIP-55 exactly as Apache Kafka's DefaultQuotaCallback does.
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from quotas.entity import CLIENT_ID, USER, QuotaEntity
from quotas.resolution import QuotaIndex


class ClientQuotaType(enum.Enum):
    PRODUCE = "producer_byte_rate"
    FETCH = "consumer_byte_rate"
    REQUEST = "request_percentage"
    CONTROLLER_MUTATION = "controller_mutation_rate"

    @property
    def quota_key(self) -> str:
        """The AlterClientQuotas key that configures this quota type."""
        return self.value


QUOTA_TYPE_OF_KEY = {quota_type.quota_key: quota_type for quota_type in ClientQuotaType}

USER_TAG = "user"
CLIENT_ID_TAG = "client-id"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str
    # Authenticated with a delegation token (SCRAM tokenauth): such a principal may not
    # manage tokens. Not part of equality, as in Kafka's KafkaPrincipal.equals.
    token_authenticated: bool = field(default=False, compare=False)

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")


class ConfigEntityType(enum.Enum):
    USER = "USER"
    CLIENT_ID = "CLIENT_ID"
    DEFAULT_USER = "DEFAULT_USER"
    DEFAULT_CLIENT_ID = "DEFAULT_CLIENT_ID"


@dataclass(frozen=True, slots=True)
class ConfigEntity:
    entity_type: ConfigEntityType
    name: str  # empty for the default entities


@dataclass(frozen=True, slots=True)
class ClientQuotaEntity:
    """KIP-257's ClientQuotaEntity: the config entities a quota was set on, user first."""

    config_entities: tuple[ConfigEntity, ...]

    @classmethod
    def of(cls, entity: QuotaEntity) -> ClientQuotaEntity:
        parts = []
        for entity_type, plain, default in (
            (USER, ConfigEntityType.USER, ConfigEntityType.DEFAULT_USER),
            (CLIENT_ID, ConfigEntityType.CLIENT_ID, ConfigEntityType.DEFAULT_CLIENT_ID),
        ):
            if entity_type in entity:
                name = entity[entity_type]
                parts.append(ConfigEntity(default, "") if name is None else ConfigEntity(plain, name))
        return cls(tuple(parts))

    def to_quota_entity(self) -> QuotaEntity:
        types = {
            ConfigEntityType.USER: USER,
            ConfigEntityType.DEFAULT_USER: USER,
            ConfigEntityType.CLIENT_ID: CLIENT_ID,
            ConfigEntityType.DEFAULT_CLIENT_ID: CLIENT_ID,
        }
        return QuotaEntity(
            {
                types[part.entity_type]: None if part.entity_type.name.startswith("DEFAULT") else part.name
                for part in self.config_entities
            }
        )


@dataclass(frozen=True, slots=True)
class Node:
    id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: Node | None
    replicas: tuple[Node, ...]


@dataclass(frozen=True)
class Cluster:
    """Kafka's org.apache.kafka.common.Cluster, as `update_cluster_metadata` receives it:
    the brokers, and every partition with its leader and replicas."""

    cluster_id: str
    nodes: tuple[Node, ...]
    partitions: tuple[PartitionInfo, ...]

    def topics(self) -> set[str]:
        return {p.topic for p in self.partitions}

    def node_by_id(self, node_id: int) -> Node | None:
        return next((n for n in self.nodes if n.id == node_id), None)

    def partitions_for_topic(self, topic: str) -> list[PartitionInfo]:
        return [p for p in self.partitions if p.topic == topic]

    def partitions_for_node(self, node_id: int) -> list[PartitionInfo]:
        """The partitions `node_id` leads."""
        return [p for p in self.partitions if p.leader is not None and p.leader.id == node_id]


class ClientQuotaCallback:
    """KIP-257's interface. Subclass it and override what your quota scheme needs.

    Called on the broker's event loop: methods must not block. `quota_limit` returns
    the bound in the quota type's unit (bytes/s, percent of one thread, partition
    mutations/s), or None for no limit."""

    def configure(self, configs: Mapping[str, str]) -> None:
        """Every broker config, as strings, before first use."""

    def quota_metric_tags(
        self, quota_type: ClientQuotaType, principal: KafkaPrincipal, client_id: str
    ) -> dict[str, str]:
        """The tags of the sensor this request is measured on: requests with equal
        tags share one allowance."""
        raise NotImplementedError

    def quota_limit(self, quota_type: ClientQuotaType, metric_tags: Mapping[str, str]) -> float | None:
        raise NotImplementedError

    def update_quota(self, quota_type: ClientQuotaType, entity: ClientQuotaEntity, new_value: float) -> None:
        """A quota was set through AlterClientQuotas (or loaded at start)."""

    def remove_quota(self, quota_type: ClientQuotaType, entity: ClientQuotaEntity) -> None:
        """A quota was removed through AlterClientQuotas."""

    def quota_reset_required(self, quota_type: ClientQuotaType) -> bool:
        """True makes the broker refresh every sensor's limit from `quota_limit`."""
        return False

    def update_cluster_metadata(self, cluster: Cluster) -> bool:
        """Topics, partitions or leaders changed; True when limits must be refreshed."""
        return False

    def close(self) -> None:
        """The broker is stopping or replacing this callback."""


class DefaultQuotaCallback(ClientQuotaCallback):
    """Apache Kafka's default: quotas on user, client-id and <user, client-id> entities
    with the 8-level precedence of KIP-55 (see quotas/resolution.py)."""

    def __init__(self) -> None:
        self.index = QuotaIndex()

    def has_quotas(self, quota_type: ClientQuotaType) -> bool:
        """Whether any entity configures this type (Kafka's quotaTypesEnabled)."""
        return self.index.has_key(quota_type.quota_key)

    def quota_metric_tags(
        self, quota_type: ClientQuotaType, principal: KafkaPrincipal, client_id: str
    ) -> dict[str, str]:
        user, client = self.index.metric_tags(quota_type.quota_key, principal.name, client_id)
        return {USER_TAG: user, CLIENT_ID_TAG: client}

    def quota_limit(self, quota_type: ClientQuotaType, metric_tags: Mapping[str, str]) -> float | None:
        return self.index.limit(
            quota_type.quota_key, metric_tags.get(USER_TAG, ""), metric_tags.get(CLIENT_ID_TAG, "")
        )

    def update_quota(self, quota_type: ClientQuotaType, entity: ClientQuotaEntity, new_value: float) -> None:
        self.index.set(entity.to_quota_entity(), quota_type.quota_key, new_value)

    def remove_quota(self, quota_type: ClientQuotaType, entity: ClientQuotaEntity) -> None:
        self.index.set(entity.to_quota_entity(), quota_type.quota_key, None)


class CallbackError(ValueError):
    """`client.quota.callback.class` names no usable callback; the message says why."""


CALLBACK_CONFIG = "client.quota.callback.class"


def load_callback(class_name: str, configs: Mapping[str, str]) -> ClientQuotaCallback:
    """A configured instance of `package.module.Class` (or `package.module:Class`),
    imported from sys.path; the empty name is Kafka's DefaultQuotaCallback."""
    name = class_name.strip()
    if not name:
        callback: ClientQuotaCallback = DefaultQuotaCallback()
    else:
        module_name, _, attribute = name.partition(":") if ":" in name else name.rpartition(".")
        try:
            found = getattr(importlib.import_module(module_name), attribute)
        except Exception as exc:  # ImportError, AttributeError, or the module failing as it loads
            raise CallbackError(
                f"Invalid value {name} for configuration {CALLBACK_CONFIG}: Class {name} could not be found: {exc!r}"
            ) from exc
        if not (isinstance(found, type) and issubclass(found, ClientQuotaCallback)):
            raise CallbackError(f"{name} is not an instance of ClientQuotaCallback")
        try:
            callback = found()
        except Exception as exc:
            raise CallbackError(f"{name} could not be instantiated: {exc!r}") from exc
    try:
        callback.configure(dict(configs))
    except Exception as exc:
        callback.close()
        raise CallbackError(f"{name or 'DefaultQuotaCallback'}.configure() failed: {exc!r}") from exc
    return callback
