"""State shared by every broker of one mock cluster: brokers, topics, partitions."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from broker.config.broker_config import CATCH_UP_CONFIG, BrokerConfig
from broker.config.topic_configs import topic_configs_error
from broker.state.features import FeatureControl
from broker.state.log import PartitionLog
from broker.state.quorum import KRAFT_VERSION, Quorum
from broker.telemetry.subscriptions import Subscriptions
from protocol.errors import ErrorCode
from quotas.callback import Cluster, Node, PartitionInfo

_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_NAME_LENGTH = 249
Charge = Callable[[int], None]  # takes partition mutations from a quota, raises to refuse
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
METADATA_TOPIC = "__cluster_metadata"  # the KRaft log: never a topic of its own


class ClusterError(Exception):
    """A request that Kafka refuses with `code` (kept apart from kafka-python's exceptions)."""

    def __init__(self, code: int, message: str, *, answered: bool = True) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        # What the response carries: Kafka sends no message for an exception made
        # without one (ApiError.fromThrowable), though Python callers get one here.
        self.reply: str | None = message if answered else None


@dataclass(slots=True)
class BrokerNode:
    node_id: int
    endpoints: dict[str, tuple[str, int]]  # listener name -> advertised (host, port)
    rack: str | None = None
    up: bool = True

    def endpoint(self, listener: str) -> tuple[str, int]:
        """Where a client that came in on `listener` reaches this broker."""
        return self.endpoints.get(listener) or next(iter(self.endpoints.values()))


@dataclass(slots=True)
class Partition:
    topic: str
    index: int
    leader: int
    replicas: list[int]
    log: PartitionLog
    leader_epoch: int = 0
    # An ongoing reassignment (AlterPartitionReassignments): replicas being added, which
    # have not caught up yet (not in the ISR), and replicas to drop once they have.
    adding: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)
    # When the added replicas, their brokers up, have caught up (time.monotonic()).
    caught_up_at: float = 0.0


@dataclass(slots=True)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


def validate_topic_name(name: str) -> None:
    """Kafka's Topic.validate, with its messages (INVALID_TOPIC_EXCEPTION)."""
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name.encode("utf-16-le")) // 2 > MAX_TOPIC_NAME_LENGTH:  # Java counts UTF-16 units
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
    elif not _LEGAL_TOPIC.fullmatch(name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    else:
        return
    raise ClusterError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: {reason}")


def _unified(name: str) -> str:
    """Topic.unifyCollisionChars: '.' and '_' collide in metric names."""
    return name.replace(".", "_")


def _manual_assignment_error(
    replicas: Sequence[int], registered: Mapping[int, object], expected: int | None
) -> str | None:
    """ReplicationControlManager.validateManualPartitionAssignment: the message of
    INVALID_REPLICA_ASSIGNMENT for one partition's replicas, or None."""
    if not replicas:
        return "The manual partition assignment includes an empty replica list."
    previous = None
    for broker in sorted(replicas):
        if broker not in registered:
            return (
                f"The manual partition assignment includes broker {broker}, but no such broker is registered."
            )
        if broker == previous:
            return f"The manual partition assignment includes the broker {previous} more than once."
        previous = broker
    if expected is not None and len(replicas) != expected:
        return (
            f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but this "
            f"is not consistent with previous partitions, which have {expected} replica(s)."
        )
    return None


class ClusterState:
    """Topics and brokers; every broker of the cluster reads and writes this one object."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.cluster_id = config.get_str("cluster.id")
        self.brokers: dict[int, BrokerNode] = {}
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        self._next_producer_id = 1000
        self._placement = 0
        self.metadata_listeners: list[Callable[[], None]] = []
        # Bumped when a topic is created (Kafka's lastMetadataImageWithNewTopics), for
        # consumer groups' regex subscriptions.
        self.topic_version = 0
        # The metadata log the mock pretends the controller keeps (DescribeQuorum): one
        # record per change, and a new leader epoch whenever the controller moves.
        self.metadata_offset = 0
        self.controller_epoch = 1
        self._last_controller = -1
        self.features = FeatureControl()  # finalized features (ApiVersions, UpdateFeatures)
        self.quorum = Quorum(self.cluster_id)  # the voters (DescribeQuorum, Add/RemoveRaftVoter)
        # Brokers unregistered (UnregisterBroker) while running: out of the metadata until
        # they restart, still replicating the metadata log (quorum observers or voters).
        self.unregistered_running: dict[int, BrokerNode] = {}
        # GROUP config resources (KIP-848 GroupConfig): group id -> configs it sets
        self.group_configs: dict[str, dict[str, str]] = {}
        # CLIENT_METRICS config resources (KIP-714 subscriptions)
        self.client_metrics = Subscriptions()
        # Topics a Metadata request asked to auto-create, until the controller is done
        # (Kafka's AutoTopicCreationManager inflightTopics).
        self.auto_creating: set[str] = set()

    # -- brokers -------------------------------------------------------------
    @property
    def controller_id(self) -> int:
        live = self.live_broker_ids()
        return live[0] if live else -1

    def live_broker_ids(self) -> list[int]:
        return sorted(node_id for node_id, node in self.brokers.items() if node.up)

    def running_ids(self) -> list[int]:
        """Nodes that replicate the metadata log: live brokers, registered or not."""
        return sorted([*self.live_broker_ids(), *self.unregistered_running])

    def running_node(self, node_id: int) -> BrokerNode | None:
        node = self.brokers.get(node_id)
        if node is not None and node.up:
            return node
        return self.unregistered_running.get(node_id)

    @property
    def quorum_leader(self) -> int:
        return self.quorum.leader(self.controller_id, self.running_ids(), self._last_controller)

    def register_broker(self, node: BrokerNode) -> None:
        """A broker (re)registers as it starts: after UnregisterBroker it comes back as a
        new registration, and partitions it led while offline get a new epoch."""
        self.brokers[node.node_id] = node
        self.unregistered_running.pop(node.node_id, None)
        self.broker_up(node.node_id)

    def unregister_broker(self, node_id: int) -> None:
        """ReplicationControlManager.unregisterBroker: any registered broker, fenced or
        not, loses its registration and its leaderships (the first live replica takes
        each over). A running one keeps running unregistered (its heartbeats fail) until
        it restarts."""
        node = self.brokers.pop(node_id, None)
        if node is None:
            raise ClusterError(
                ErrorCode.BROKER_ID_NOT_REGISTERED, f"Broker ID {node_id} is not currently registered"
            )
        if node.up:
            self.unregistered_running[node_id] = node
        self._elect_leaders_without(node_id)
        self.metadata_changed()

    def unregistered_broker_stopped(self, node_id: int) -> None:
        """A broker that ran unregistered stopped: it no longer replicates the log."""
        if self.unregistered_running.pop(node_id, None) is not None:
            self.metadata_changed()

    def broker_down(self, node_id: int) -> None:
        """A broker stopped: each partition it led gets the first live replica as its
        leader, with a new epoch, as the controller elects from the ISR; a partition
        with no live replica is offline until its leader returns."""
        self.brokers[node_id].up = False
        self._elect_leaders_without(node_id)
        self.metadata_changed()

    def _elect_leaders_without(self, node_id: int) -> None:
        """Each partition `node_id` led gets its first live replica as leader, with a new
        epoch; one without a live replica stays offline."""
        live = set(self.live_broker_ids())
        for topic in self.topics.values():
            for partition in topic.partitions:
                if partition.leader == node_id:
                    successor = next((r for r in partition.replicas if r in live), None)
                    if successor is not None:
                        partition.leader = successor
                        partition.leader_epoch += 1

    def broker_up(self, node_id: int) -> None:
        """A broker is back. It leads again only its offline partitions (leaders elsewhere
        stay, as with Kafka before its preferred-leader rebalance); reassignments that
        waited for its replicas complete."""
        self.brokers[node_id].up = True
        for topic in self.topics.values():
            for partition in topic.partitions:
                if partition.leader == node_id:  # it was offline
                    partition.leader_epoch += 1
                if node_id in partition.adding:  # its new replica starts fetching now
                    self._start_catch_up(partition)
                if partition.adding:
                    self._maybe_complete_reassignment(partition)
        self.metadata_changed()

    # -- topics --------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str | None] | None = None,
        validate_only: bool = False,
        charge: Charge | None = None,
        assignments: Sequence[tuple[int, Sequence[int]]] = (),
    ) -> Topic | None:
        """ReplicationControlManager.createTopics for one topic, in its order: the name
        (and its collision with existing names), existence, the configs, then either the
        manual `assignments` ((partition index, replicas) each, leader first) or the
        partition count and replication factor (-1: the broker's default) and the
        placement. `charge` is called with the partition count once all that is valid
        (the controller mutation quota; it raises to refuse), validate_only included.
        __consumer_offsets and __transaction_state count as existing, as on a Kafka
        cluster whose coordinators answered a FindCoordinator (which the mock's always do)."""
        validate_topic_name(name)
        if name == METADATA_TOPIC:
            raise ClusterError(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
        if name in self.topics or name in INTERNAL_TOPICS:
            raise ClusterError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if "." in name or "_" in name:
            colliding = sorted(t for t in [*self.topics, *INTERNAL_TOPICS] if _unified(t) == _unified(name))
            if colliding:
                raise ClusterError(
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    f"Topic '{name}' collides with existing topic: {colliding[0]}",
                )
        configs = dict(configs or {})
        nulls = [key for key, value in configs.items() if value is None]
        if nulls:
            raise ClusterError(
                ErrorCode.INVALID_CONFIG, "Null value not supported for topic configs: " + ",".join(nulls)
            )
        checked = {key: value for key, value in configs.items() if value is not None}
        reason = topic_configs_error(checked)
        if reason is not None:
            raise ClusterError(ErrorCode.INVALID_CONFIG, reason)
        if assignments:
            placement = self._manual_topic_placement(num_partitions, replication_factor, assignments)
        else:
            placement = self._topic_placement(num_partitions, replication_factor)
        if charge is not None:
            charge(len(placement))
        if validate_only:
            return None
        topic = Topic(name, uuid.uuid4(), [], checked)
        self._add_partitions(topic, placement)
        self.topics[name] = topic
        self.topics_by_id[topic.topic_id] = topic
        self.topic_version += 1
        self.metadata_changed()
        return topic

    def _manual_topic_placement(
        self, num_partitions: int, replication_factor: int, assignments: Sequence[tuple[int, Sequence[int]]]
    ) -> list[list[int]]:
        if replication_factor != -1:
            raise ClusterError(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but replication factor was not set to -1.",
            )
        if num_partitions != -1:
            raise ClusterError(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but numPartitions was not set to -1.",
            )
        placed: dict[int, list[int]] = {}
        expected: int | None = None
        for index, replicas in assignments:
            if index in placed:
                raise ClusterError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Found multiple manual partition assignments for partition {index}",
                )
            reason = _manual_assignment_error(replicas, self.brokers, expected)
            if reason is not None:
                raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, reason)
            expected = len(replicas)
            if not any(self.brokers[r].up for r in replicas):
                raise ClusterError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"All brokers specified in the manual partition assignment for partition {index} "
                    "are fenced or in controlled shutdown.",
                )
            placed[index] = list(replicas)
        if any(index not in placed for index in range(len(placed))):
            raise ClusterError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "partitions should be a consecutive 0-based integer sequence",
            )
        return [placed[index] for index in range(len(placed))]

    def _topic_placement(self, num_partitions: int, replication_factor: int) -> list[list[int]]:
        if replication_factor < -1 or replication_factor == 0:
            raise ClusterError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if num_partitions < -1 or num_partitions == 0:
            raise ClusterError(
                ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
            )
        if num_partitions == -1:
            num_partitions = self.config.get_int("num.partitions")
        if replication_factor == -1:
            replication_factor = self.config.get_int("default.replication.factor")
        try:
            return self._place(0, num_partitions, replication_factor)
        except ClusterError as exc:
            raise ClusterError(
                exc.code, f"Unable to replicate the partition {replication_factor} time(s): {exc.message}"
            ) from None

    def _place(self, first_index: int, count: int, replication_factor: int) -> list[list[int]]:
        """Replicas of `count` new partitions, leader first, as StripedReplicaPlacer
        refuses them: a positive factor, an unfenced (live) broker, enough registered
        brokers. Leaders go round the live brokers, followers are live brokers first,
        brokers that are down only when the factor needs them."""
        if replication_factor <= 0:
            raise ClusterError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Invalid replication factor {replication_factor}: the replication factor must be positive.",
            )
        live = self.live_broker_ids()
        if not live:
            raise ClusterError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                "All brokers are currently fenced, or have all their log directories cordoned.",
            )
        if replication_factor > len(self.brokers):
            raise ClusterError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"The target replication factor of {replication_factor} cannot be reached because only "
                f"{len(self.brokers)} broker(s) are registered or some brokers have all their log "
                "directories cordoned.",
            )
        down = sorted(node_id for node_id in self.brokers if node_id not in live)
        start = self._placement
        self._placement += 1
        placement = []
        for index in range(first_index, first_index + count):
            first = (start + index) % len(live)
            replicas = [live[(first + r) % len(live)] for r in range(min(replication_factor, len(live)))]
            placement.append(replicas + down[: replication_factor - len(replicas)])
        return placement

    def _add_partitions(self, topic: Topic, placement: Sequence[Sequence[int]]) -> None:
        """Appends one partition per replica list; its leader is the first replica on a
        live broker (the first of the ISR the controller registers)."""
        retention = int(topic.configs.get("retention.bytes", self.config.get_str("log.retention.bytes")))
        for replicas in placement:
            leader = next((r for r in replicas if r in self.brokers and self.brokers[r].up), replicas[0])
            topic.partitions.append(
                Partition(topic.name, len(topic.partitions), leader, list(replicas), PartitionLog(retention))
            )

    def create_partitions(
        self,
        name: str,
        total: int,
        validate_only: bool = False,
        charge: Charge | None = None,
        assignments: Sequence[Sequence[int]] | None = None,
    ) -> None:
        """ReplicationControlManager.createPartitions for one topic: grows it to `total`
        partitions, placed as `assignments` asks (one replica list per new partition,
        leader first, each with the topic's replication factor) or by the placer."""
        topic = self.topics.get(name)
        if topic is None:
            raise ClusterError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.", answered=False
            )
        current = len(topic.partitions)
        if total == current:
            raise ClusterError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
        if total < current:
            raise ClusterError(
                ErrorCode.INVALID_PARTITIONS,
                f"The topic {name} currently has {current} partition(s); {total} would not be an increase.",
            )
        additional = total - current
        if assignments is not None and len(assignments) != additional:
            raise ClusterError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Attempted to add {additional} additional partition(s), but only {len(assignments)} "
                "assignment(s) were specified.",
            )
        if charge is not None:
            charge(additional)
        replication_factor = len(topic.partitions[0].replicas)
        if assignments is not None:
            for offset, replicas in enumerate(assignments):
                reason = _manual_assignment_error(replicas, self.brokers, replication_factor)
                if reason is not None:
                    raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, reason)
                if not any(self.brokers[r].up for r in replicas):
                    raise ClusterError(
                        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"All brokers specified in the manual partition assignment for partition "
                        f"{current + offset} are fenced or in controlled shutdown.",
                    )
            placement = [list(replicas) for replicas in assignments]
        else:
            placement = self._place(current, additional, replication_factor)
        if validate_only:
            return
        self._add_partitions(topic, placement)
        self.metadata_changed()

    def delete_topic(self, name: str, charge: Charge | None = None) -> Topic:
        topic = self.topics.get(name)
        if topic is None:
            raise ClusterError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
            )
        if charge is not None:
            charge(len(topic.partitions))
        del self.topics[name]
        del self.topics_by_id[topic.topic_id]
        self.metadata_changed()
        return topic

    def partition(self, topic: str, index: int) -> Partition | None:
        found = self.topics.get(topic)
        if found is None or not 0 <= index < len(found.partitions):
            return None
        return found.partitions[index]

    def next_producer_id(self) -> int:
        self._next_producer_id += 1
        return self._next_producer_id

    def move_leader(self, topic: str, index: int, node_id: int) -> Partition:
        """Makes `node_id` the partition's leader (a reassignment when it holds no
        replica), with a new leader epoch, as a controller's election does."""
        partition = self.partition(topic, index)
        if partition is None:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unknown partition {topic}-{index}")
        if node_id not in self.brokers:
            raise ClusterError(ErrorCode.INVALID_REQUEST, f"Unknown broker {node_id}")
        if not self.brokers[node_id].up:
            raise ClusterError(
                ErrorCode.BROKER_NOT_AVAILABLE, f"Broker {node_id} is not available to lead {topic}-{index}"
            )
        if partition.leader != node_id:
            others = [r for r in partition.replicas if r != node_id]
            partition.replicas = [node_id, *others[: len(partition.replicas) - 1]]
            partition.leader = node_id
            partition.leader_epoch += 1
            self.metadata_changed()
        return partition

    def elect_leader(self, topic: str, index: int, preferred: bool) -> tuple[int, str | None]:
        """ReplicationControlManager.electLeader: a preferred election gives the partition
        back to its first replica if that broker is up; an unclean one gives an offline
        partition to any live replica. (error code, message); NONE when elected."""
        found = self.topics.get(topic)
        if found is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
        if not 0 <= index < len(found.partitions):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{index}"
        partition = found.partitions[index]
        live = set(self.live_broker_ids())
        has_leader = partition.leader in live
        if preferred:
            if has_leader and partition.leader == partition.replicas[0]:
                return ErrorCode.ELECTION_NOT_NEEDED, None
            successor: int | None = partition.replicas[0] if partition.replicas[0] in live else None
            missing = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
        else:
            if has_leader:
                return ErrorCode.ELECTION_NOT_NEEDED, None
            successor = next((r for r in partition.replicas if r in live), None)
            missing = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
        if successor is None:
            return missing, None
        partition.leader = successor
        partition.leader_epoch += 1
        self.metadata_changed()
        return ErrorCode.NONE, None

    # -- reassignments (AlterPartitionReassignments, ReplicationControlManager) ---------
    def reassign(
        self,
        topic: str,
        index: int,
        target: Sequence[int] | None,
        allow_replication_factor_change: bool = True,
    ) -> None:
        """Moves a partition to the `target` replicas (None cancels an ongoing move), as
        ReplicationControlManager does: the replicas are the target then those to remove,
        and the new ones stay out of the ISR until they have caught up, which here is
        `replica.catch.up.ms` after the move (or after their broker returns); then the
        removed replicas go. ClusterError with Kafka's code and message otherwise."""
        found = self.topics.get(topic)
        if found is None:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}.")
        if not 0 <= index < len(found.partitions):
            raise ClusterError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{index}."
            )
        partition = found.partitions[index]
        original = [r for r in partition.replicas if r not in partition.adding]
        if target is None:
            if not partition.adding and not partition.removing:
                raise ClusterError(
                    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress."
                )
            self._set_replicas(partition, original)
            return
        self._validate_assignment(target)
        if not allow_replication_factor_change and len(target) != len(original):
            raise ClusterError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"The replication factor is changed from {len(original)} to {len(target)} but "
                "allowReplicationFactorChange is false",
            )
        partition.adding = [r for r in target if r not in original]
        partition.removing = [r for r in original if r not in target]
        partition.replicas = list(target) + partition.removing
        self._start_catch_up(partition)
        if not self._maybe_complete_reassignment(partition):
            self.metadata_changed()

    def reassignments(self) -> list[tuple[str, Partition]]:
        """(topic, partition) of every reassignment in progress."""
        for topic in self.topics.values():
            for p in topic.partitions:
                if p.adding:
                    self._maybe_complete_reassignment(p)  # a catch-up no timer saw
        return [
            (name, p)
            for name, topic in self.topics.items()
            for p in topic.partitions
            if p.adding or p.removing
        ]

    def _validate_assignment(self, replicas: Sequence[int]) -> None:
        """validateManualPartitionAssignment, with its messages."""
        if not replicas:
            raise ClusterError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            )
        previous = None
        for broker in sorted(replicas):
            if broker not in self.brokers:
                raise ClusterError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {broker}, but no such broker is registered.",
                )
            if broker == previous:
                raise ClusterError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes the broker {broker} more than once.",
                )
            previous = broker

    def _start_catch_up(self, partition: Partition) -> None:
        """The added replicas start fetching: they join the ISR `replica.catch.up.ms`
        later (Kafka: once a follower's fetch reached the leader's log end), checked then
        by a loop timer (none without a running loop: the next look completes it)."""
        if not partition.adding:
            return
        delay_ms = self.config.get_int(CATCH_UP_CONFIG)
        partition.caught_up_at = time.monotonic() + max(delay_ms, 0) / 1000.0
        if delay_ms <= 0:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        loop.call_later(delay_ms / 1000.0, self._caught_up, partition, partition.caught_up_at)

    def _caught_up(self, partition: Partition, deadline: float) -> None:
        if partition.adding and partition.caught_up_at == deadline:  # not a newer move's
            partition.caught_up_at = 0.0  # (the loop's timers may run a little early)
            self._maybe_complete_reassignment(partition)

    def _maybe_complete_reassignment(self, partition: Partition) -> bool:
        """Stage 3: once every added replica is in sync (its broker up and caught up),
        the removed ones go."""
        live = set(self.live_broker_ids())
        if not all(r in live for r in partition.adding):
            return False
        if time.monotonic() < partition.caught_up_at:
            return False
        self._set_replicas(partition, [r for r in partition.replicas if r not in partition.removing])
        return True

    def _set_replicas(self, partition: Partition, replicas: list[int]) -> None:
        partition.replicas = replicas
        partition.adding, partition.removing = [], []
        live = set(self.live_broker_ids())
        if partition.leader not in replicas or partition.leader not in live:
            successor = next((r for r in replicas if r in live), None)
            if successor is not None and successor != partition.leader:
                partition.leader = successor
                partition.leader_epoch += 1
        self.metadata_changed()

    def snapshot(self, listener: str | None = None) -> Cluster:
        """The cluster as a quota callback sees it (KIP-257's Cluster): nodes at their
        endpoint on `listener` (the first listener when None), partitions and leaders."""
        nodes = {
            node_id: Node(node_id, *node.endpoint(listener or next(iter(node.endpoints), "")), node.rack)
            for node_id, node in sorted(self.brokers.items())
            if node.endpoints
        }
        partitions = tuple(
            PartitionInfo(
                p.topic,
                p.index,
                nodes.get(p.leader),
                tuple(nodes[r] for r in p.replicas if r in nodes),
            )
            for topic in self.topics.values()
            for p in topic.partitions
        )
        return Cluster(self.cluster_id, tuple(nodes.values()), partitions)

    def metadata_changed(self) -> None:
        self.metadata_offset += 1
        if not self.quorum.dynamic and self.features.finalized.get(KRAFT_VERSION, 0) >= 1:
            leader = self.controller_id  # kraft.version 1: the static voter starts the VotersRecord
            self.quorum.make_dynamic(leader, self.brokers[leader].endpoints if leader >= 0 else {})
        controller = self.quorum_leader
        if controller != self._last_controller:
            if self._last_controller != -1:
                self.controller_epoch += 1
            self._last_controller = controller
        for listener in self.metadata_listeners:
            listener()
