"""The transaction coordinator: transactional ids, their producer ids and epochs, and
the state machine of each transaction, after Kafka's TransactionCoordinator and
TransactionMetadata: transaction version 1, and version 2 (KIP-890 part 2: every EndTxn
bumps the epoch, partitions join implicitly) for the request versions that ask for it.

One coordinator serves the whole mock cluster, as `GroupCoordinator` does; handlers
check they are the transactional id's coordinator (`coordinator_for`) first. Ending a
transaction writes its markers (control batches) to every partition in it at once, and
commits or drops the group offsets it carried; Kafka writes them asynchronously between
PrepareCommit/PrepareAbort and CompleteCommit/CompleteAbort, so here a client never sees
those intermediate states (nor the CONCURRENT_TRANSACTIONS they cause).

Methods take plain values rather than wire structs; handlers translate.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from broker.state.cluster import ClusterState
from broker.state.groups import GroupCoordinator, coordinator_of, partition_of
from protocol.errors import ErrorCode

log = logging.getLogger("broker.transactions")

# TransactionState names, as DescribeTransactions and ListTransactions show them.
EMPTY = "Empty"
ONGOING = "Ongoing"
PREPARE_COMMIT = "PrepareCommit"
PREPARE_ABORT = "PrepareAbort"
COMPLETE_COMMIT = "CompleteCommit"
COMPLETE_ABORT = "CompleteAbort"
PREPARE_EPOCH_FENCE = "PrepareEpochFence"
DEAD = "Dead"
STATES = (
    EMPTY,
    ONGOING,
    PREPARE_COMMIT,
    PREPARE_ABORT,
    COMPLETE_COMMIT,
    COMPLETE_ABORT,
    PREPARE_EPOCH_FENCE,
    DEAD,
)

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 2**15 - 1  # Short.MaxValue
OFFSETS_TOPIC = "__consumer_offsets"

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class TransactionMetadata:
    """One transactional id's state (Kafka's TransactionMetadata)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: str = EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)  # AddOffsetsToTxn: offsets ride the transaction
    start_ms: int = -1  # when the ongoing transaction began (-1: none)
    last_update_ms: int = 0
    previous_producer_id: int = NO_PRODUCER_ID  # before the last rotation (an exhausted epoch)

    def to_dict(self) -> dict[str, object]:
        """The transaction as the Python API and the HTTP control plane show it."""
        return {
            "transactional_id": self.transactional_id,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "state": self.state,
            "timeout_ms": self.timeout_ms,
            "start_ms": self.start_ms,
            "partitions": [{"topic": topic, "partition": index} for topic, index in sorted(self.partitions)],
            "groups": sorted(self.groups),
        }


@dataclass(slots=True)
class InitResult:
    error: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


class TransactionCoordinator:
    def __init__(self, cluster: ClusterState, groups: GroupCoordinator) -> None:
        self.cluster = cluster
        self.groups = groups
        self.transactions: dict[str, TransactionMetadata] = {}
        self.leaders: dict[int, int] = {}  # __transaction_state partition -> its leader (coordinator_of)

    # -- placement -------------------------------------------------------------------
    @property
    def state_partitions(self) -> int:
        return self.cluster.config.get_int("transaction.state.log.num.partitions")

    def partition_for(self, transactional_id: str) -> int:
        """The __transaction_state partition of the id, as Kafka computes it."""
        return partition_of(transactional_id, self.state_partitions)

    def coordinator_for(self, transactional_id: str) -> int:
        """Node id of the live broker coordinating the id, or -1 when none is up."""
        return coordinator_of(self.cluster, self.partition_for(transactional_id), self.leaders)

    # -- InitProducerId --------------------------------------------------------------
    def init_producer_id(
        self, transactional_id: str, timeout_ms: int, producer_id: int = -1, producer_epoch: int = -1
    ) -> InitResult:
        """TransactionCoordinator.handleInitProducerId for a transactional id."""
        if timeout_ms <= 0 or timeout_ms > self.cluster.config.get_int("transaction.max.timeout.ms"):
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        now = _now_ms()
        txn = self.transactions.get(transactional_id)
        if txn is None:
            txn = TransactionMetadata(
                transactional_id,
                self.cluster.next_producer_id(),
                NO_PRODUCER_EPOCH,
                NO_PRODUCER_EPOCH,
                timeout_ms,
            )
            self.transactions[transactional_id] = txn
        expected = producer_id >= 0  # KIP-360: a producer recovering with the id and epoch it had
        if expected and not (txn.producer_epoch == NO_PRODUCER_EPOCH or producer_id == txn.producer_id):
            return InitResult(ErrorCode.PRODUCER_FENCED)
        if txn.state in (PREPARE_COMMIT, PREPARE_ABORT, PREPARE_EPOCH_FENCE):
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if txn.state == ONGOING:
            # A new producer instance fences the old one: its transaction is aborted with a
            # bumped epoch, and the caller retries (CONCURRENT_TRANSACTIONS), as Kafka does.
            self._abort_fencing(txn)
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected and txn.producer_epoch != NO_PRODUCER_EPOCH and producer_epoch != txn.producer_epoch:
            if producer_epoch == txn.last_producer_epoch:
                return InitResult(ErrorCode.NONE, txn.producer_id, txn.producer_epoch)  # a retried bump
            return InitResult(ErrorCode.PRODUCER_FENCED)
        self._bump_epoch(txn)
        txn.timeout_ms = timeout_ms
        txn.state = EMPTY
        txn.partitions.clear()
        txn.groups.clear()
        txn.start_ms = -1
        txn.last_update_ms = now
        return InitResult(ErrorCode.NONE, txn.producer_id, txn.producer_epoch)

    def _bump_epoch(self, txn: TransactionMetadata) -> None:
        """The next epoch, or a new producer id once the epoch is exhausted; the last epoch
        is remembered so that a retried InitProducerId gets the same answer."""
        txn.last_producer_epoch = txn.producer_epoch
        if txn.producer_epoch >= MAX_EPOCH - 1:
            txn.previous_producer_id = txn.producer_id
            txn.producer_id = self.cluster.next_producer_id()
            txn.producer_epoch = 0
            txn.last_producer_epoch = NO_PRODUCER_EPOCH
        else:
            txn.producer_epoch += 1

    # -- checks shared by the transactional APIs -------------------------------------
    def _producer_error(self, txn: TransactionMetadata | None, producer_id: int, producer_epoch: int) -> int:
        if txn is None or txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if producer_epoch != txn.producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        return ErrorCode.NONE

    # -- AddPartitionsToTxn / AddOffsetsToTxn ----------------------------------------
    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> int:
        """TransactionCoordinator.handleAddPartitionsToTransaction: one error for all the
        partitions (the handler answers unknown partitions before asking)."""
        txn = self.transactions.get(transactional_id)
        error = self._producer_error(txn, producer_id, producer_epoch)
        if error != ErrorCode.NONE:
            return error
        assert txn is not None
        if txn.state in (PREPARE_COMMIT, PREPARE_ABORT, PREPARE_EPOCH_FENCE):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        wanted = set(partitions)
        if txn.state != ONGOING:
            txn.state = ONGOING
            txn.start_ms = _now_ms()
        if not wanted <= txn.partitions:
            txn.partitions |= wanted
            txn.last_update_ms = _now_ms()
        return ErrorCode.NONE

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, int]:
        """handleVerifyPartitionsInTransaction (KIP-890 part 1): NONE for each partition
        the ongoing transaction has added, TRANSACTION_ABORTABLE for the others."""
        wanted = list(partitions)
        txn = self.transactions.get(transactional_id)
        error = self._producer_error(txn, producer_id, producer_epoch)
        if error == ErrorCode.NONE and txn is not None and txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
            error = ErrorCode.CONCURRENT_TRANSACTIONS
        if error != ErrorCode.NONE or txn is None:
            return dict.fromkeys(wanted, error)
        return {
            tp: ErrorCode.NONE if tp in txn.partitions else ErrorCode.TRANSACTION_ABORTABLE for tp in wanted
        }

    def add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str) -> int:
        """AddOffsetsToTxn: the group's __consumer_offsets partition joins the transaction."""
        error = self.add_partitions(
            transactional_id,
            producer_id,
            producer_epoch,
            [(OFFSETS_TOPIC, self.groups.partition_for(group_id))],
        )
        if error == ErrorCode.NONE:
            self.transactions[transactional_id].groups.add(group_id)
        return error

    # -- EndTxn ---------------------------------------------------------------------
    def end_transaction(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> int:
        """TransactionCoordinator.handleEndTransaction (TV1)."""
        txn = self.transactions.get(transactional_id)
        error = self._producer_error(txn, producer_id, producer_epoch)
        if error != ErrorCode.NONE:
            return error
        assert txn is not None
        if txn.state == ONGOING:
            self._complete(txn, commit)
            return ErrorCode.NONE
        # endTransactionWithTV1's table: a retry of the same outcome succeeds once complete
        # and waits while it is being prepared; anything else (the other outcome, or Empty
        # with nothing to end) is INVALID_TXN_STATE.
        completed, preparing = (
            (COMPLETE_COMMIT, PREPARE_COMMIT) if commit else (COMPLETE_ABORT, PREPARE_ABORT)
        )
        if txn.state == completed:
            return ErrorCode.NONE
        if txn.state == preparing:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return ErrorCode.INVALID_TXN_STATE

    def end_transaction_v2(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> tuple[int, int, int]:
        """TransactionCoordinator.endTransaction for transaction version 2 (EndTxn v5):
        (error, producer id, producer epoch). Every end bumps the epoch (a new producer id
        once it is exhausted); a retry is recognised by the epoch before the bump; an abort
        with nothing open still bumps it."""
        txn = self.transactions.get(transactional_id)
        if txn is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        retry_on_overflow = (
            txn.previous_producer_id == producer_id
            and producer_epoch == MAX_EPOCH - 1
            and txn.producer_epoch == 0
        )
        retry_on_bump = txn.producer_epoch == producer_epoch + 1
        if txn.state in (COMPLETE_COMMIT, COMPLETE_ABORT):
            valid = retry_on_bump or retry_on_overflow or producer_epoch == txn.producer_epoch
        elif txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
            valid = retry_on_bump
        else:
            valid = producer_epoch == txn.producer_epoch
        retry = retry_on_bump or retry_on_overflow
        if txn.producer_id != producer_id and not retry_on_overflow:
            error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
        elif not valid:
            error = ErrorCode.PRODUCER_FENCED
        elif txn.state == ONGOING:
            self._complete(txn, commit, bump=True)
            error = ErrorCode.NONE
        elif txn.state in (COMPLETE_COMMIT, COMPLETE_ABORT, EMPTY):
            same = txn.state == (COMPLETE_COMMIT if commit else COMPLETE_ABORT)
            if retry:
                error = ErrorCode.NONE if same else ErrorCode.INVALID_TXN_STATE
            elif commit:
                error = ErrorCode.INVALID_TXN_STATE  # nothing to commit
            else:
                self._complete(txn, commit=False, bump=True)  # an empty abort: the epoch moves on
                error = ErrorCode.NONE
        elif txn.state == (PREPARE_COMMIT if commit else PREPARE_ABORT):
            error = ErrorCode.CONCURRENT_TRANSACTIONS
        else:
            error = ErrorCode.INVALID_TXN_STATE
        if error != ErrorCode.NONE:
            return error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        return error, txn.producer_id, txn.producer_epoch

    def _complete(
        self, txn: TransactionMetadata, commit: bool, coordinator_epoch: int = 0, bump: bool = False
    ) -> None:
        """Markers to every data partition of the transaction, the offsets it carried
        committed or dropped, then CompleteCommit/CompleteAbort. With `bump` (transaction
        version 2) the markers carry the next epoch, after which an exhausted epoch moves
        to a new producer id."""
        txn.state = PREPARE_COMMIT if commit else PREPARE_ABORT
        rotate = bump and txn.producer_epoch >= MAX_EPOCH - 1
        if bump:
            txn.last_producer_epoch = txn.producer_epoch
            txn.producer_epoch += 1
        for topic_name, index in sorted(txn.partitions):
            if topic_name == OFFSETS_TOPIC:
                self.groups.complete_transactional_offsets(index, txn.producer_id, commit)
                continue
            topic = self.cluster.topics.get(topic_name)
            if topic is None or index >= len(topic.partitions):
                continue  # deleted meanwhile: Kafka drops markers for unknown partitions
            partition = topic.partitions[index]
            partition.log.append_marker(
                txn.producer_id, txn.producer_epoch, commit, coordinator_epoch, partition.leader_epoch
            )
        if rotate:
            txn.previous_producer_id, txn.producer_id = txn.producer_id, self.cluster.next_producer_id()
            txn.producer_epoch, txn.last_producer_epoch = 0, NO_PRODUCER_EPOCH
        txn.state = COMPLETE_COMMIT if commit else COMPLETE_ABORT
        txn.partitions.clear()
        txn.groups.clear()
        txn.last_update_ms = _now_ms()  # start_ms stays, as DescribeTransactions shows it

    def _abort_fencing(self, txn: TransactionMetadata) -> None:
        """PrepareEpochFence: the ongoing transaction is aborted under a bumped epoch, so
        the producer that started it is fenced (its next request carries the old epoch)."""
        txn.state = PREPARE_EPOCH_FENCE
        # prepareFenceProducerEpoch: the same producer id, the epoch at most Short.MaxValue
        txn.producer_epoch = min(txn.producer_epoch + 1, MAX_EPOCH)
        txn.last_producer_epoch = NO_PRODUCER_EPOCH
        self._complete(txn, commit=False)

    # -- timeouts --------------------------------------------------------------------
    def abort_timed_out(self, now_ms: int | None = None) -> list[str]:
        """TransactionCoordinator.abortTimedOutTransactions: ongoing transactions older
        than their timeout are aborted with an epoch bump. Returns their ids."""
        now = _now_ms() if now_ms is None else now_ms
        expired = [
            txn
            for txn in self.transactions.values()
            if txn.state == ONGOING and txn.start_ms >= 0 and now - txn.start_ms > txn.timeout_ms
        ]
        for txn in expired:
            log.info(
                "aborting transaction %r: older than its timeout of %d ms",
                txn.transactional_id,
                txn.timeout_ms,
            )
            self._abort_fencing(txn)
        return [txn.transactional_id for txn in expired]

    # -- admin ----------------------------------------------------------------------
    def describe(self, transactional_id: str) -> TransactionMetadata | None:
        return self.transactions.get(transactional_id)

    def listed(self) -> list[TransactionMetadata]:
        return sorted(self.transactions.values(), key=lambda txn: txn.transactional_id)


def _now_ms() -> int:
    return int(time.time() * 1000)
