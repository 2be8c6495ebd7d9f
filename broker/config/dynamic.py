"""`cluster.configs`: dynamic broker and topic configs, shared by IncrementalAlterConfigs
(44), AlterConfigs (33), DescribeConfigs (32) and the Python API.

Layers as Kafka's DynamicBrokerConfig has them: per broker (resource name = its id) over
the cluster-wide default (empty name) over the static config over the defaults. Each
broker reads a `BrokerConfigView` of its own; the cluster state reads the cluster-wide one.

Checks come in Kafka's order. The receiving broker's preprocessing (ConfigAdminManager)
refuses malformed resources and, for BROKER resources, invalid configs (read-only keys,
bad values, per-broker-only keys at the default level: INVALID_REQUEST) before the
request is authorized; the controller (ConfigurationControlManager) then combines
SET/DELETE/APPEND/SUBTRACT with the stored value and, for topics, checks names, values and
existence (INVALID_CONFIG, UNKNOWN_TOPIC_OR_PARTITION). Each resource is all or nothing.

Changes are serialized by a lock; with a state dir the request's broker layers are
written to SQLite in one transaction on a dedicated executor thread (never on the event
loop) before they are applied in memory. Components that react to configs hook in per
broker: `config_validators` see the would-be effective config and may refuse it (they
run in preprocessing and again under the lock, so they must not act on what they see),
`config_listeners` hear which keys changed once it applies.
"""

from __future__ import annotations

import enum
import logging
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from broker.config.broker_config import (
    CLUSTER_LEVEL_LISTENER_CONFIGS,
    DEFAULTS,
    PER_BROKER_ONLY,
    BrokerConfig,
    BrokerConfigView,
    broker_log_value,
    config_string,
    invalid_value,
    is_read_only,
    listener_base,
)
from broker.config.group_configs import GROUP, group_configs_error
from broker.config.topic_configs import (
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_BROKER,
    SOURCE_DYNAMIC_DEFAULT_BROKER,
    SOURCE_STATIC_BROKER,
    TOPIC_CONFIGS,
    parse_list,
    topic_configs_error,
)
from broker.persistence import PersistentStore
from broker.state.cluster import ClusterError, Topic, validate_topic_name
from broker.state.compaction import CompactionConfig
from broker.telemetry.subscriptions import CLIENT_METRICS, SubscriptionError, parse_subscription
from protocol.errors import ErrorCode
from quotas.store import open_state_db

if TYPE_CHECKING:
    from broker.state.cluster import ClusterState

log = logging.getLogger("broker.dynamic_config")

TOPIC = 2
BROKER = 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
MIN_ISR = "min.insync.replicas"
ELR_VERSION = "eligible.leader.replicas.version"
_OP_NAMES = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
# Broker keys that the logs' retention and timestamp type follow (apply_retention).
_LOG_KEYS = frozenset(
    {
        "log.retention.bytes",
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
        "log.message.timestamp.type",
        "log.cleanup.policy",
        "log.cleaner.delete.retention.ms",
        "log.cleaner.min.compaction.lag.ms",
        "log.cleaner.max.compaction.lag.ms",
        "log.cleaner.min.cleanable.ratio",
        "log.roll.ms",
        "log.segment.bytes",
    }
)


def _retention_ms(view: Any) -> int:
    """Kafka's LogConfig precedence: log.retention.ms, else .minutes, else .hours; -1
    (off here) when the broker config has none of them."""
    for key, scale in (
        ("log.retention.ms", 1),
        ("log.retention.minutes", 60_000),
        ("log.retention.hours", 3_600_000),
    ):
        value = view.get(key)
        if value is not None and value != "":
            number = int(value)
            return number if number < 0 else number * scale
    return -1


def _topic_value(overrides: Mapping[str, str], view: Any, name: str) -> str:
    """A topic config's effective value: the topic's override, else what its broker
    synonym (or that one's group: log.roll.hours for segment.ms) gives as this broker sees
    it, else Kafka's default."""
    if name in overrides:
        return overrides[name]
    config = TOPIC_CONFIGS[name]
    if config.broker_synonym is not None:
        found = broker_log_value(view, config.broker_synonym)
        if found is not None:
            return found
    return config.default


INT32 = (-(2**31), 2**31 - 1)

ConfigValidator = Callable[[dict[str, str]], str | None]
ConfigListener = Callable[[set[str]], None]


class ConfigSource(enum.IntEnum):
    """Kafka's ConfigSource of a broker config, as DescribeConfigs reports it."""

    DYNAMIC_BROKER_CONFIG = SOURCE_DYNAMIC_BROKER
    DYNAMIC_DEFAULT_BROKER_CONFIG = SOURCE_DYNAMIC_DEFAULT_BROKER
    STATIC_BROKER_CONFIG = SOURCE_STATIC_BROKER
    DEFAULT_CONFIG = SOURCE_DEFAULT


class ConfigError(Exception):
    """A refused alteration, with Kafka's code and message."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class ConfigOp:
    name: str
    op: int = SET
    value: str | None = None


@dataclass(frozen=True, slots=True)
class Alteration:
    """One resource of a request. Incremental (44): the ops change the stored configs;
    otherwise (33, all SET) they replace them: keys not named are removed."""

    resource_type: int
    resource_name: str
    ops: Sequence[ConfigOp]
    incremental: bool = True


class ConfigSubscriber(Protocol):
    """What the store needs of a broker: whose view it is and the hooks to run."""

    node_id: int
    rack: str | None
    config_validators: list[ConfigValidator]
    config_listeners: list[ConfigListener]


@dataclass(slots=True)
class _BrokerChange:
    broker: int | None  # None: the cluster-wide default
    layer: dict[str, str]


@dataclass(slots=True)
class _TopicChange:
    topic: Topic
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class _GroupChange:
    group_id: str
    configs: dict[str, str]


@dataclass(slots=True)
class _ClientMetricsChange:
    name: str
    configs: dict[str, str]


_Change = _BrokerChange | _TopicChange | _GroupChange | _ClientMetricsChange


def java_set(names: Iterable[str]) -> str:
    """How Kafka 4.4's messages print a Java Set: [a, b] (in the order given: Java's hash
    order is not reproduced)."""
    return f"[{', '.join(dict.fromkeys(names))}]"


def java_split(value: str) -> list[str]:
    """Java's String.split(","): trailing empty strings dropped, "" stays [""]."""
    if "," not in value:
        return [value]
    parts = value.split(",")
    while parts and not parts[-1]:
        parts.pop()
    return parts


def parse_broker_id(name: str) -> int | None:
    """Integer.parseInt of a broker resource name; None when it is not an int32."""
    stripped = name[1:] if name[:1] in "+-" else name
    if not stripped.isascii() or not stripped.isdigit():
        return None
    number = int(name)
    return number if INT32[0] <= number <= INT32[1] else None


def check_broker_layer(layer: Mapping[str, str], per_broker: bool) -> None:
    """DynamicBrokerConfig.validateConfigs, then the bounds KafkaConfig enforces; the
    forwarding broker turns their ConfigException into INVALID_REQUEST."""
    read_only = [key for key in layer if is_read_only(key)]
    if read_only:
        raise ConfigError(
            ErrorCode.INVALID_REQUEST, f"Cannot update these configs dynamically: {java_set(read_only)}"
        )
    for key, value in layer.items():
        reason = invalid_value(key, value)
        if reason is not None:
            raise ConfigError(ErrorCode.INVALID_REQUEST, reason)
    if not per_broker:
        wrong = [key for key in layer if _per_broker_only(key)]
        if wrong:
            raise ConfigError(
                ErrorCode.INVALID_REQUEST,
                "Cannot update these configs at default cluster level, broker id must be specified: "
                + java_set(wrong),
            )


def _per_broker_only(key: str) -> bool:
    base = listener_base(key)
    return key in PER_BROKER_ONLY or (base is not None and base not in CLUSTER_LEVEL_LISTENER_CONFIGS)


def _list_config(resource_type: int, name: str) -> tuple[bool, str | None]:
    """(is a LIST config, its default) for APPEND/SUBTRACT."""
    if resource_type in (GROUP, CLIENT_METRICS):
        # Groups: every config is an INT. Client metrics: the controller types only
        # broker and topic configs, so their lists are no LIST to it either.
        return False, None
    if resource_type == TOPIC:
        topic_config = TOPIC_CONFIGS.get(name)
        return (topic_config is not None and topic_config.type == "list"), (
            topic_config.default if topic_config else None
        )
    known = DEFAULTS.get(name)
    if known is None:
        # ConfigAdminManager.prepareIncrementalConfigs' check for keys it has no type for.
        raise ConfigError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {name}")
    return known[1] == "list", known[0]


def apply_ops(current: Mapping[str, str], ops: Sequence[ConfigOp], resource_type: int) -> dict[str, str]:
    """The stored configs after `ops`, as the controller computes them
    (ConfigurationControlManager.incrementalAlterConfigResource): APPEND adds the values
    not yet present, SUBTRACT removes one occurrence of each, both starting from the
    stored value or the config's default. APPEND/SUBTRACT on a non-list config is refused
    with the broker's message for BROKER resources, the controller's for topics."""
    configs = dict(current)
    for op in ops:
        if op.op == SET:
            configs[op.name] = op.value or ""
        elif op.op == DELETE:
            configs.pop(op.name, None)
        else:
            is_list, default = _list_config(resource_type, op.name)
            if not is_list:
                verb = _OP_NAMES[op.op]
                raise ConfigError(
                    ErrorCode.INVALID_CONFIG,
                    f"Can't {verb} to key {op.name} because its type is not LIST."
                    if resource_type in (TOPIC, GROUP, CLIENT_METRICS)
                    else f"Config value {verb.lower()} is not allowed for config key: {op.name}",
                )
            parts = [p for p in (configs.get(op.name, default) or "").split(",") if p]
            for value in java_split(op.value or ""):
                if op.op == APPEND and value not in parts:
                    parts.append(value)
                elif op.op == SUBTRACT and value in parts:
                    parts.remove(value)
            configs[op.name] = ",".join(parts)
    return configs


class DynamicConfigStore(PersistentStore):
    def __init__(
        self,
        static: BrokerConfig,
        storage: SqliteConfigStorage | None = None,
        run: Callable[[Coroutine[Any, Any, Any]], Any] | None = None,
    ) -> None:
        """`run` executes a coroutine on the cluster's loop for synchronous callers (the
        thread-backed cluster); without it only the async Python API is available."""
        super().__init__(storage, run, "config-store")
        self.storage: SqliteConfigStorage | None = storage
        self.static = static
        self.cluster_default: dict[str, str] = {}
        self.per_broker: dict[int, dict[str, str]] = {}
        if storage is not None:
            for broker, layer in storage.load().items():
                self._layer(broker).update(_loadable(broker, layer))
        self.cluster_view = BrokerConfigView(static, self.cluster_default)
        self.cluster: ClusterState | None = None  # for TOPIC resources; set by the cluster
        self._brokers: dict[int, tuple[ConfigSubscriber, BrokerConfigView]] = {}

    def attach(self, broker: ConfigSubscriber) -> BrokerConfigView:
        """Registers a broker's hooks; returns its view (its persisted layer included)."""
        static = self.static.for_broker(broker.node_id, broker.rack)
        view = BrokerConfigView(static, self.cluster_default, self._layer(broker.node_id))
        self._brokers[broker.node_id] = (broker, view)
        return view

    def view(self, broker: int) -> BrokerConfigView:
        if broker not in self._brokers:
            raise ConfigError(ErrorCode.BROKER_ID_NOT_REGISTERED, f"No node with id {broker} found.")
        return self._brokers[broker][1]

    def _layer(self, broker: int | None) -> dict[str, str]:
        return self.cluster_default if broker is None else self.per_broker.setdefault(broker, {})

    # -- one request ---------------------------------------------------------------
    def preprocess(self, alterations: Sequence[Alteration], node_id: int) -> list[ConfigError | None]:
        """The receiving broker's checks (ConfigAdminManager.preprocess), made before
        authorization: repeated resources or keys, null values, the broker id (empty or
        `node_id`), and the whole validation of BROKER resources."""
        counts = Counter((a.resource_type, a.resource_name) for a in alterations)
        errors: list[ConfigError | None] = []
        for alteration in alterations:
            try:
                if counts[alteration.resource_type, alteration.resource_name] > 1:
                    raise ConfigError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
                self._preprocess_one(alteration, node_id)
            except ConfigError as exc:
                errors.append(exc)
            else:
                errors.append(None)
        return errors

    def _preprocess_one(self, alteration: Alteration, node_id: int) -> None:
        names = [op.name for op in alteration.ops]
        if len(set(names)) != len(names):
            raise ConfigError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
        nulls = [op.name for op in alteration.ops if op.value is None and op.op != DELETE]
        if nulls:
            raise ConfigError(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
        if alteration.resource_type in (TOPIC, GROUP, CLIENT_METRICS):
            return
        if alteration.resource_type != BROKER:
            raise ConfigError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {alteration.resource_type}")
        if alteration.resource_name:
            broker = parse_broker_id(alteration.resource_name)
            if broker is None:
                raise ConfigError(
                    ErrorCode.INVALID_REQUEST,
                    f"Node id must be an integer, but it is: {alteration.resource_name}",
                )
            if broker != node_id:
                raise ConfigError(
                    ErrorCode.INVALID_REQUEST,
                    f"Unexpected broker id, expected {node_id}, but received {alteration.resource_name}",
                )
        self._plan(alteration)

    async def alter_resources(
        self, alterations: Sequence[Alteration], validate_only: bool = False
    ) -> list[ConfigError | None]:
        """Validates each resource (all or nothing per resource), then persists the
        accepted ones in one transaction and applies them; one result per resource."""
        async with self._lock:
            results: list[ConfigError | None] = []
            changes: list[_Change] = []
            # Each resource is checked against the layers as the earlier accepted ones of
            # this request leave them, so what is validated is what will be in force.
            pending: dict[int | None, dict[str, str]] = {}
            for alteration in alterations:
                try:
                    change = self._plan(alteration, pending)
                    changes.append(change)
                    if isinstance(change, _BrokerChange):
                        pending[change.broker] = change.layer
                except ConfigError as exc:
                    results.append(exc)
                else:
                    results.append(None)
            if validate_only or not changes:
                return results
            layers = [(c.broker, c.layer) for c in changes if isinstance(c, _BrokerChange)]
            if layers:
                await self._persist(layers)
            self._apply(changes)
        return results

    def _plan(
        self, alteration: Alteration, pending: Mapping[int | None, dict[str, str]] | None = None
    ) -> _Change:
        for op in alteration.ops:
            if op.op not in (SET, DELETE, APPEND, SUBTRACT):
                if alteration.resource_type != BROKER:
                    # the controller's OpType.forId finds no type: an unexpected exception
                    raise ConfigError(ErrorCode.UNKNOWN_SERVER_ERROR, None)
                raise ConfigError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op.op}")
        if alteration.resource_type == TOPIC:
            return self._plan_topic(alteration)
        if alteration.resource_type == GROUP:
            return self._plan_group(alteration)
        if alteration.resource_type == CLIENT_METRICS:
            return self._plan_client_metrics(alteration)
        broker = parse_broker_id(alteration.resource_name) if alteration.resource_name else None
        pending = pending or {}
        if alteration.incremental:
            layer = apply_ops(pending.get(broker, self._layer(broker)), alteration.ops, BROKER)
        else:
            layer = {op.name: op.value or "" for op in alteration.ops}
        check_broker_layer(layer, per_broker=broker is not None)
        if self.elr_enabled():
            self._check_elr(alteration, broker, layer)
        for node_id, (subscriber, view) in self._brokers.items():
            if broker is None:
                effective = view.merged(layer, pending.get(node_id, view.own))
            elif node_id == broker:
                effective = view.merged(pending.get(None, self.cluster_default), layer)
            else:
                continue
            if effective != view.values:  # only brokers whose effective config changes are asked
                for validator in subscriber.config_validators:
                    reason = validator(dict(effective))
                    if reason is not None:
                        raise ConfigError(ErrorCode.INVALID_CONFIG, reason)
        return _BrokerChange(broker, layer)

    def _check_elr(self, alteration: Alteration, broker: int | None, layer: Mapping[str, str]) -> None:
        """ConfigurationControlManager while eligible leader replicas are on: only the
        cluster-level min.insync.replicas may change, and it may not go."""
        if broker is not None:
            if any(op.name == MIN_ISR for op in alteration.ops) or MIN_ISR in layer:
                raise ConfigError(
                    ErrorCode.INVALID_CONFIG,
                    "Broker-level min.insync.replicas cannot be altered while ELR is enabled.",
                )
        elif MIN_ISR not in layer and MIN_ISR in self.cluster_default:
            raise ConfigError(
                ErrorCode.INVALID_CONFIG,
                "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.",
            )

    def elr_enabled(self) -> bool:
        """Whether eligible.leader.replicas.version is finalized at 1 or more."""
        return self.cluster is not None and self.cluster.features.finalized.get(ELR_VERSION, 0) >= 1

    def _elr_safety(self) -> list[tuple[int | None, dict[str, str]]]:
        """ConfigurationControlManager.maybeGenerateElrSafetyRecords: the layers that make
        a cluster-level min.insync.replicas (the static value, else the default) and drop
        every broker-level one, as Kafka writes them when ELR is turned on (and
        `kafka-storage format` at bootstrap)."""
        changes: list[tuple[int | None, dict[str, str]]] = []
        if MIN_ISR not in self.cluster_default:
            changes.append((None, {**self.cluster_default, MIN_ISR: self.static.get_str(MIN_ISR)}))
        for broker, layer in self.per_broker.items():
            if MIN_ISR in layer:
                changes.append((broker, {k: v for k, v in layer.items() if k != MIN_ISR}))
        return changes

    def bootstrap_elr(self) -> None:
        """A new cluster with ELR on (Kafka 4.1+): the cluster-level min.insync.replicas
        record, in memory before any broker attaches (kept in `state.dir` with the next
        change of the cluster-wide layer, made again at each start)."""
        for broker, layer in self._elr_safety():
            target = self._layer(broker)
            target.clear()
            target.update(layer)
        self.cluster_view.refresh()
        for _, view in self._brokers.values():
            view.refresh()

    async def enable_elr(self) -> None:
        """UpdateFeatures turned ELR on: its safety records, persisted and applied."""
        async with self._lock:
            changes = self._elr_safety()
            if changes:
                await self._persist(changes)
                self._apply([_BrokerChange(broker, layer) for broker, layer in changes])

    def _plan_topic(self, alteration: Alteration) -> _TopicChange:
        """After the ops, ControllerConfigurationValidator (the name, then every config
        of the topic as LogConfig.validate checks them) and then the controller's
        existence check, in that order."""
        assert self.cluster is not None, "topic configs need the cluster state"
        topic = self.cluster.topics.get(alteration.resource_name)
        current = topic.configs if topic is not None else {}
        if alteration.incremental:
            configs = apply_ops(current, alteration.ops, TOPIC)
        else:
            configs = {op.name: op.value or "" for op in alteration.ops}
        if not alteration.resource_name:
            raise ConfigError(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
        try:
            validate_topic_name(alteration.resource_name)
        except ClusterError as exc:
            raise ConfigError(exc.code, exc.message) from None
        reason = topic_configs_error(configs)
        if reason is not None:
            raise ConfigError(ErrorCode.INVALID_CONFIG, reason)
        if topic is None:
            raise ConfigError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"The topic '{alteration.resource_name}' does not exist.",
            )
        return _TopicChange(topic, configs)

    def _plan_group(self, alteration: Alteration) -> _GroupChange:
        """ControllerConfigurationValidator for a GROUP resource: the name, then
        GroupConfig.validate against the broker's bounds. The group need not exist."""
        assert self.cluster is not None, "group configs need the cluster state"
        if not alteration.resource_name:
            raise ConfigError(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
        current = self.cluster.group_configs.get(alteration.resource_name, {})
        if alteration.incremental:
            configs = apply_ops(current, alteration.ops, GROUP)
        else:
            configs = {op.name: op.value or "" for op in alteration.ops}
        reason = group_configs_error(configs, self.cluster_view)
        if reason is not None:
            raise ConfigError(ErrorCode.INVALID_CONFIG, reason)
        return _GroupChange(alteration.resource_name, configs)

    def _plan_client_metrics(self, alteration: Alteration) -> _ClientMetricsChange:
        """ClientMetricsConfigs.validate on the subscription as the ops leave it; a
        subscription left without configs is deleted (deleting an unknown one is fine)."""
        assert self.cluster is not None, "client metrics need the cluster state"
        current = self.cluster.client_metrics.configs.get(alteration.resource_name, {})
        if alteration.incremental:
            configs = apply_ops(current, alteration.ops, CLIENT_METRICS)
        else:
            configs = {op.name: op.value or "" for op in alteration.ops}
        try:
            parse_subscription(alteration.resource_name, configs)
        except SubscriptionError as exc:
            raise ConfigError(exc.code, exc.message) from None
        return _ClientMetricsChange(alteration.resource_name, configs)

    def _apply(self, changes: Sequence[_Change]) -> None:
        """Installs the layers (in place: views share them), refreshes every view and
        tells each broker which of its effective keys changed."""
        before = {node_id: view.values for node_id, (_, view) in self._brokers.items()}
        topics = []
        for change in changes:
            if isinstance(change, _BrokerChange):
                layer = self._layer(change.broker)
                layer.clear()
                layer.update(change.layer)
            elif isinstance(change, _ClientMetricsChange):
                assert self.cluster is not None
                self.cluster.client_metrics.put(change.name, change.configs)
            elif isinstance(change, _GroupChange):
                assert self.cluster is not None
                if change.configs:
                    self.cluster.group_configs[change.group_id] = change.configs
                else:
                    self.cluster.group_configs.pop(change.group_id, None)
            else:
                change.topic.configs.clear()
                change.topic.configs.update(change.configs)
                topics.append(change.topic)
        self.cluster_view.refresh()
        retention_changed = False
        for node_id, (subscriber, view) in self._brokers.items():
            view.refresh()
            old = before[node_id]
            changed = {k for k in old.keys() | view.values.keys() if old.get(k) != view.values.get(k)}
            retention_changed = retention_changed or not changed.isdisjoint(_LOG_KEYS)
            if changed:
                for listener in subscriber.config_listeners:
                    try:
                        listener(changed)
                    except Exception:  # one failing component must not undo an applied change
                        log.exception("config listener of broker %d failed on %s", node_id, sorted(changed))
        if retention_changed and self.cluster is not None:
            topics = list(self.cluster.topics.values())
        self.apply_retention(topics)

    def apply_retention(self, topics: Iterable[Topic]) -> None:
        """Retention follows the topic's retention.bytes and retention.ms, else
        log.retention.bytes and log.retention.ms/minutes/hours of the partition leader's
        effective config (Kafka's DynamicLogConfig reconfigures live logs); the same for
        message.timestamp.type / log.message.timestamp.type. Time retention is applied at
        once (and at each append), as Kafka's next retention check would.

        Without a retention.ms override nor a log.retention.* key in the broker config,
        time retention stays off (the broker config has no such default; Kafka's is 7 days)."""
        now_ms = int(time.time() * 1000)
        for topic in topics:
            for partition in topic.partitions:
                leader = self._brokers.get(partition.leader)
                view = leader[1] if leader is not None else self.cluster_view

                def value(name: str, overrides: Mapping[str, str] = topic.configs, view: Any = view) -> str:
                    return _topic_value(overrides, view, name)

                plog = partition.log
                policy = parse_list(value("cleanup.policy"))
                deletes = "delete" in policy  # compact alone: no size or time retention, as Kafka
                plog.delete_policy = deletes
                plog.retention_bytes = int(value("retention.bytes")) if deletes else -1
                override = topic.configs.get("retention.ms")
                plog.retention_ms = (
                    (int(override) if override is not None else _retention_ms(view)) if deletes else -1
                )
                plog.log_append_time = value("message.timestamp.type") == "LogAppendTime"
                plog.compaction = (
                    CompactionConfig(
                        int(value("delete.retention.ms")),
                        int(value("min.compaction.lag.ms")),
                        int(value("max.compaction.lag.ms")),
                        float(value("min.cleanable.dirty.ratio")),
                        int(value("segment.ms")),
                        int(value("segment.bytes")),
                    )
                    if "compact" in policy
                    else None
                )
                plog.enforce_retention_ms(now_ms)

    # -- Python API for harnesses ------------------------------------------------------
    async def alter_async(
        self,
        broker: int | None,
        set: Mapping[str, object] | None = None,  # noqa: A002 - the operation's name
        delete: Iterable[str] = (),
        append: Mapping[str, object] | None = None,
        subtract: Mapping[str, object] | None = None,
        validate_only: bool = False,
    ) -> None:
        """Changes one broker's layer (`broker=None`: the cluster-wide default), e.g.
        `alter_async(0, set={"num.partitions": 3}, delete=["message.max.bytes"])`; the same
        checks and hooks as the wire APIs; raises ConfigError when refused."""
        if broker is not None:
            self.view(broker)  # the controller's "No node with id N found."
        ops = [ConfigOp(k, SET, config_string(v)) for k, v in (set or {}).items()]
        ops += [ConfigOp(k, DELETE) for k in delete]
        ops += [ConfigOp(k, APPEND, config_string(v)) for k, v in (append or {}).items()]
        ops += [ConfigOp(k, SUBTRACT, config_string(v)) for k, v in (subtract or {}).items()]
        if len({op.name for op in ops}) != len(ops):
            raise ConfigError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
        name = "" if broker is None else str(broker)
        [error] = await self.alter_resources([Alteration(BROKER, name, ops)], validate_only)
        if error is not None:
            raise error

    def alter(
        self,
        broker: int | None,
        set: Mapping[str, object] | None = None,  # noqa: A002
        delete: Iterable[str] = (),
        append: Mapping[str, object] | None = None,
        subtract: Mapping[str, object] | None = None,
        validate_only: bool = False,
    ) -> None:
        """`alter_async` for synchronous callers of a thread-backed cluster."""
        if self._run is None:
            raise RuntimeError("on the cluster's own event loop use `await cluster.configs.alter_async(...)`")
        self._run(self.alter_async(broker, set, delete, append, subtract, validate_only))

    def describe(self, broker: int | None) -> dict[str, tuple[str, ConfigSource]]:
        """{key: (value, source)}: every effective config of `broker`, or (None) the
        cluster-wide dynamic defaults only, as DescribeConfigs answers the empty name."""
        if broker is None:
            return {
                k: (v, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
                for k, v in dict(self.cluster_default).items()
            }
        view = self.view(broker)
        described = {}
        for key, value in view.values.items():
            layers = view.synonyms(key)
            described[key] = (value, ConfigSource(layers[0][2]) if layers else ConfigSource.DEFAULT_CONFIG)
        return described


def _loadable(broker: int | None, layer: dict[str, str]) -> dict[str, str]:
    """A persisted layer without what may no longer be set dynamically (Kafka's
    fromPersistentProps drops such keys with an error in its log, and carries on)."""
    kept = {}
    for key, value in layer.items():
        try:
            check_broker_layer({key: value}, per_broker=broker is not None)
        except ConfigError as exc:
            log.error("dynamic config %s=%r of %s ignored: %s", key, value, broker, exc.message)
            continue
        kept[key] = value
    return kept


class SqliteConfigStorage:
    """Dynamic broker configs in SQLite, one row per (resource name, key) as Kafka's
    ConfigRecords: the name is the broker id, or empty for the cluster-wide default.

    WAL with synchronous=NORMAL: a committed transaction survives the process being
    killed. Not thread-safe: the store calls it from one executor thread at a time.
    """

    def __init__(self, directory: str | Path) -> None:
        self.path, self._db = open_state_db(
            directory,
            "configs.sqlite",
            "CREATE TABLE IF NOT EXISTS broker_configs ("
            " resource_name TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL,"
            " PRIMARY KEY (resource_name, name))",
        )

    def load(self) -> dict[int | None, dict[str, str]]:
        layers: dict[int | None, dict[str, str]] = {}
        rows = self._db.execute("SELECT resource_name, name, value FROM broker_configs ORDER BY rowid")
        for resource_name, name, value in rows.fetchall():
            layers.setdefault(int(resource_name) if resource_name else None, {})[name] = value
        return layers

    def write(self, layers: Sequence[tuple[int | None, Mapping[str, str]]]) -> None:
        """Replaces each named layer, all in one transaction."""
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            for broker, layer in layers:
                resource_name = "" if broker is None else str(broker)
                self._db.execute("DELETE FROM broker_configs WHERE resource_name = ?", (resource_name,))
                self._db.executemany(
                    "INSERT INTO broker_configs (resource_name, name, value) VALUES (?, ?, ?)",
                    [(resource_name, name, value) for name, value in layer.items()],
                )

    def close(self) -> None:
        self._db.close()
