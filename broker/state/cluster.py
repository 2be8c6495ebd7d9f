"""State shared by every broker of one mock cluster: brokers, topics, partitions."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from broker.config.broker_config import BrokerConfig
from broker.state.log import PartitionLog
from protocol.errors import ErrorCode
from quotas.callback import Cluster, Node, PartitionInfo

_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME_LENGTH = 249
Charge = Callable[[int], None]  # takes partition mutations from a quota, raises to refuse
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


class ClusterError(Exception):
    """A request that Kafka refuses with `code` (kept apart from kafka-python's exceptions)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


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
    if not name or name in (".", ".."):
        raise ClusterError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name {name!r} is illegal")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise ClusterError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name {name!r} is longer than {MAX_TOPIC_NAME_LENGTH} characters",
        )
    if not _LEGAL_TOPIC.match(name):
        raise ClusterError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name {name!r} contains characters other than ASCII alphanumerics, '.', '_' and '-'",
        )


class ClusterState:
    """Topics and brokers; every broker of the cluster reads and writes this one object."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.cluster_id = config.get_str("cluster.id")
        self.brokers: dict[int, BrokerNode] = {}
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        self._next_producer_id = 1000
        self.transactional_producers: dict[str, tuple[int, int]] = {}  # id -> (producer id, epoch)
        self._placement = 0
        self.metadata_listeners: list[Callable[[], None]] = []

    # -- brokers -------------------------------------------------------------
    @property
    def controller_id(self) -> int:
        live = self.live_broker_ids()
        return live[0] if live else -1

    def live_broker_ids(self) -> list[int]:
        return sorted(node_id for node_id, node in self.brokers.items() if node.up)

    def broker_down(self, node_id: int) -> None:
        """A broker stopped: each partition it led gets the first live replica as its
        leader, with a new epoch, as the controller elects from the ISR; a partition
        with no live replica is offline until its leader returns."""
        self.brokers[node_id].up = False
        live = set(self.live_broker_ids())
        for topic in self.topics.values():
            for partition in topic.partitions:
                if partition.leader == node_id:
                    successor = next((r for r in partition.replicas if r in live), None)
                    if successor is not None:
                        partition.leader = successor
                        partition.leader_epoch += 1
        self.metadata_changed()

    def broker_up(self, node_id: int) -> None:
        """A broker is back. It leads again only its offline partitions (leaders elsewhere
        stay, as with Kafka before its preferred-leader rebalance)."""
        self.brokers[node_id].up = True
        for topic in self.topics.values():
            for partition in topic.partitions:
                if partition.leader == node_id:  # it was offline
                    partition.leader_epoch += 1
        self.metadata_changed()

    # -- topics --------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: dict[str, str] | None = None,
        validate_only: bool = False,
        charge: Charge | None = None,
    ) -> Topic | None:
        """`charge` is called with the partition count once the request is valid (the
        controller mutation quota; it raises to refuse), validate_only included."""
        validate_topic_name(name)
        if name in self.topics:
            raise ClusterError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if num_partitions == -1:
            num_partitions = self.config.get_int("num.partitions")
        if replication_factor == -1:
            replication_factor = self.config.get_int("default.replication.factor")
        if num_partitions <= 0:
            raise ClusterError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        if replication_factor <= 0:
            raise ClusterError(
                ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."
            )
        brokers = self.live_broker_ids()
        if replication_factor > len(brokers):
            raise ClusterError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {replication_factor} time(s): "
                f"The target replication factor of {replication_factor} cannot be reached "
                f"because only {len(brokers)} broker(s) are registered.",
            )
        if charge is not None:
            charge(num_partitions)
        if validate_only:
            return None
        topic = Topic(name, uuid.uuid4(), [], dict(configs or {}))
        self._add_partitions(topic, num_partitions, replication_factor)
        self.topics[name] = topic
        self.topics_by_id[topic.topic_id] = topic
        self.metadata_changed()
        return topic

    def _add_partitions(self, topic: Topic, count: int, replication_factor: int) -> None:
        brokers = self.live_broker_ids() or sorted(self.brokers)
        retention = int(topic.configs.get("retention.bytes", self.config.get_str("log.retention.bytes")))
        start = self._placement
        self._placement += 1
        for _ in range(count):
            index = len(topic.partitions)
            first = (start + index) % len(brokers)
            replicas = [brokers[(first + r) % len(brokers)] for r in range(replication_factor)]
            topic.partitions.append(
                Partition(topic.name, index, replicas[0], replicas, PartitionLog(retention))
            )

    def create_partitions(
        self, name: str, total: int, validate_only: bool = False, charge: Charge | None = None
    ) -> None:
        topic = self.topics.get(name)
        if topic is None:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        current = len(topic.partitions)
        if total < current:
            raise ClusterError(
                ErrorCode.INVALID_PARTITIONS,
                f"Topic currently has {current} partitions, which is higher than the requested {total}.",
            )
        if total == current:
            raise ClusterError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
        if charge is not None:
            charge(total - current)
        if validate_only:
            return
        self._add_partitions(topic, total - current, len(topic.partitions[0].replicas))
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
        for listener in self.metadata_listeners:
            listener()
