"""KIP-932's share partition: which records of one partition a share group has handed
out, to whom, how often, and how far the group is done with them.

Follows Kafka's `SharePartition`: records between the share-partition start offset
(SPSO) and end offset are in flight, each AVAILABLE, ACQUIRED (by one member, under an
acquisition lock), ACKNOWLEDGED or ARCHIVED. Acquiring takes the AVAILABLE ones again
first, then whole new batches from the log, and counts a delivery; ACCEPT acknowledges,
RELEASE makes a record AVAILABLE again, REJECT and GAP archive it, and a record released
or whose lock expires at the delivery count limit is archived instead. The start offset
moves past every record acknowledged or archived from it on.

Pure state, tracked per offset (Kafka keeps batches and splits them on partial
acknowledgement; the answers are the same): the share-group manager reads the log,
keeps the locks' timers and wakes waiting fetches.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from protocol.errors import ErrorCode

# RecordState
AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = "AVAILABLE", "ACQUIRED", "ACKNOWLEDGED", "ARCHIVED"
# AcknowledgeType, as ShareFetch and ShareAcknowledge carry them
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
ACKNOWLEDGE_TYPES = frozenset((GAP, ACCEPT, RELEASE, REJECT, RENEW))
# Acquisition lock ids, unique across partitions and their states: a lock timer of a
# state since altered or deleted finds no record of its own
_LOCK_IDS = itertools.count(1)


@dataclass(slots=True)
class InFlight:
    """One in-flight record (Kafka's InFlightState)."""

    state: str
    delivery_count: int
    member_id: str | None
    lock_id: int  # the acquisition whose lock holds it (0: none)


@dataclass(frozen=True, slots=True)
class Acquired:
    """A run of records acquired together, as ShareFetch's AcquiredRecords lists them."""

    first_offset: int
    last_offset: int
    delivery_count: int


class AcknowledgeError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class SharePartition:
    """One partition's records as one share group consumes them."""

    def __init__(self, start_offset: int) -> None:
        self.start_offset = start_offset
        self.end_offset = start_offset  # the next offset never acquired
        self.records: dict[int, InFlight] = {}
        # Whether the share coordinator holds this partition's state: Kafka writes it when
        # records are acknowledged, released or archived, or the start offset is altered,
        # not when the partition is first assigned (DescribeShareGroupOffsets says -1 then)
        self.written = False

    # -- reading ------------------------------------------------------------------
    def in_flight(self) -> int:
        return self.end_offset - self.start_offset

    def available(self) -> Iterator[int]:
        """The in-flight offsets that may be acquired again, in order."""
        return (o for o in sorted(self.records) if self.records[o].state == AVAILABLE)

    def has_available(self) -> bool:
        return any(r.state == AVAILABLE for r in self.records.values())

    def delivery_complete(self) -> int:
        """The records past the start offset acknowledged or archived (Kafka's
        deliveryCompleteCount, which the lag leaves out)."""
        return sum(1 for r in self.records.values() if r.state in (ACKNOWLEDGED, ARCHIVED))

    def acquired_by(self, member_id: str) -> list[int]:
        return sorted(o for o, r in self.records.items() if r.state == ACQUIRED and r.member_id == member_id)

    # -- acquiring ------------------------------------------------------------------
    @staticmethod
    def new_lock() -> int:
        return next(_LOCK_IDS)

    def acquire_available(self, member_id: str, max_records: int, lock_id: int) -> list[int]:
        """Takes up to `max_records` AVAILABLE records again; returns their offsets."""
        taken: list[int] = []
        for offset in self.available():
            if len(taken) >= max_records:
                break
            self._take(offset, member_id, lock_id)
            taken.append(offset)
        return taken

    def acquire_new(self, member_id: str, first: int, last: int, lock_id: int) -> list[int]:
        """Takes the records of a batch read from the log at the end offset; offsets the
        log no longer holds before it (compacted or deleted) are passed over."""
        first = max(first, self.end_offset)
        if last < first:
            return []
        for offset in range(first, last + 1):
            self.records[offset] = InFlight(ACQUIRED, 1, member_id, lock_id)
        self.end_offset = last + 1
        self._advance()
        return list(range(first, last + 1))

    def _take(self, offset: int, member_id: str, lock_id: int) -> None:
        record = self.records[offset]
        record.state, record.member_id, record.lock_id = ACQUIRED, member_id, lock_id
        record.delivery_count += 1

    @staticmethod
    def runs(records: dict[int, InFlight], offsets: Iterable[int]) -> list[Acquired]:
        """Consecutive offsets with the same delivery count, as AcquiredRecords."""
        runs: list[Acquired] = []
        for offset in sorted(offsets):
            count = records[offset].delivery_count
            if runs and runs[-1].last_offset == offset - 1 and runs[-1].delivery_count == count:
                runs[-1] = Acquired(runs[-1].first_offset, offset, count)
            else:
                runs.append(Acquired(offset, offset, count))
        return runs

    # -- acknowledging ----------------------------------------------------------------
    def check_acknowledgement(self, member_id: str, first: int, last: int, types: list[int]) -> None:
        """SharePartition's checks of one acknowledgement batch, before any of it applies
        (its offsets before the start offset are done already and pass)."""
        if last < first or (len(types) != 1 and len(types) != last - first + 1):
            raise AcknowledgeError(ErrorCode.INVALID_REQUEST, "Invalid acknowledgement batch")
        if any(t not in ACKNOWLEDGE_TYPES for t in types):
            raise AcknowledgeError(ErrorCode.INVALID_REQUEST, "Invalid acknowledge type")
        for offset in range(max(first, self.start_offset), last + 1):
            record = self.records.get(offset)
            if record is None:
                raise AcknowledgeError(
                    ErrorCode.INVALID_RECORD_STATE,
                    "Batch record not found. The request batch offsets are not found in the cache.",
                )
            if record.state != ACQUIRED:
                raise AcknowledgeError(
                    ErrorCode.INVALID_RECORD_STATE,
                    "The offset cannot be acknowledged. The offset is not acquired.",
                )
            if record.member_id != member_id:
                raise AcknowledgeError(ErrorCode.INVALID_RECORD_STATE, "Member is not the owner of offset")

    def acknowledge(
        self, member_id: str, first: int, last: int, types: list[int], delivery_limit: int
    ) -> list[int]:
        """Applies a checked batch; returns the offsets renewed (RENEW: a fresh lock)."""
        self.check_acknowledgement(member_id, first, last, types)
        renewed: list[int] = []
        for offset in range(max(first, self.start_offset), last + 1):  # before the start: done
            kind = types[0] if len(types) == 1 else types[offset - first]
            record = self.records[offset]
            if kind == ACCEPT:
                self._finish(record, ACKNOWLEDGED)
            elif kind == RELEASE:
                self._release(record, delivery_limit)
            elif kind == RENEW:
                renewed.append(offset)
            else:  # REJECT, GAP
                self._finish(record, ARCHIVED)
        self._advance()
        self.written = True
        return renewed

    def archive(self, offsets: Iterable[int]) -> None:
        """Records no member may have (aborted transactions' under read_committed)."""
        for offset in offsets:
            record = self.records.get(offset)
            if record is not None:
                self._finish(record, ARCHIVED)
        self._advance()

    def renew(self, offsets: list[int], lock_id: int) -> None:
        for offset in offsets:
            self.records[offset].lock_id = lock_id

    # -- locks and members ------------------------------------------------------------
    def expire_lock(self, lock_id: int, delivery_limit: int) -> int:
        """The acquisition lock ran out: its records still acquired go back (or are
        archived at the delivery limit). Returns how many went back."""
        return self._release_where(lambda record: record.lock_id == lock_id, delivery_limit)

    def release_member(self, member_id: str, delivery_limit: int) -> int:
        """A member's share session ended: what it holds goes back."""
        return self._release_where(lambda record: record.member_id == member_id, delivery_limit)

    def _release_where(self, holds: Callable[[InFlight], bool], delivery_limit: int) -> int:
        released = 0
        for record in self.records.values():
            if record.state == ACQUIRED and holds(record):
                self._release(record, delivery_limit)
                released += 1
        self._advance()
        self.written = self.written or released > 0
        return released

    def skip_to(self, log_start_offset: int) -> None:
        """Retention or DeleteRecords removed records the group had not finished: the
        start offset moves with the log's (SharePartition.updateCacheAndOffsets)."""
        if log_start_offset <= self.start_offset:
            return
        for offset in [o for o in self.records if o < log_start_offset]:
            del self.records[offset]
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset)

    def _release(self, record: InFlight, delivery_limit: int) -> None:
        if record.delivery_count >= delivery_limit:
            self._finish(record, ARCHIVED)
        else:
            record.state, record.member_id, record.lock_id = AVAILABLE, None, 0

    @staticmethod
    def _finish(record: InFlight, state: str) -> None:
        record.state, record.member_id, record.lock_id = state, None, 0

    def _advance(self) -> None:
        """The start offset moves past records acknowledged or archived (and offsets the
        log never held) up to the first still in flight."""
        start, records = self.start_offset, self.records
        while start < self.end_offset:
            record = records.get(start)
            if record is not None and record.state in (AVAILABLE, ACQUIRED):
                break
            records.pop(start, None)
            start += 1
        self.start_offset = start
