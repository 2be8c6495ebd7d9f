"""Structure-aware request fuzzing over the wire: request frames generated from the
message schemas (kafka-python 3's, and messages/'s for the APIs it lacks), mutated
frames, and a driver that pipelines them over a few TCP connections and checks what
comes back.

Shared by the hypothesis fuzzer in tests/reliability/ and the long run in
scripts/fuzz.py. Values come from a `Source`, so the same generator is driven by
hypothesis (which then shrinks a failing batch to a small one), by a seeded
`random.Random`, or by atheris' bytes.

What a generated request holds: for every field of the (API key, version) the broker
advertises, a value "valid but odd" for its type and its name (empty, huge and negative
numbers, null and empty strings and arrays where nullable, unknown topic names and ids,
odd UTF-8, duplicated entries, known and unknown tagged fields), encoded by this module's
own writer from the schema (not by the codec the broker decodes with). Names that
address state come from finite pools (so a long run's state stays bounded) that never
name what a healthy client uses (`Pools.protected`). A handful of safety rules keep a
generated request from legitimately breaking the healthy client's world (`_SAFETY`:
unregistering the live broker, broker-wide configs that would refuse its records).

Mutations (`mutate`): truncations, flipped bytes, bogus lengths at the offsets the writer
recorded, wrong API keys and versions, and bad size prefixes.

What counts as a finding (`Checker`): a response that does not decode as the response
to the frame it answers (whole frame, right correlation id, in order), a connection
closed after a well-formed request that Kafka answers, no answer within the driver's
timeout where nothing may legitimately wait; the broker's ERROR logs are the caller's to
collect (`ErrorLog`).
"""

from __future__ import annotations

import bisect
import gzip
import logging
import math
import random
import re
import selectors
import socket
import struct
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from messages.registry import request_class, response_class
from protocol.api_keys import ApiKey
from protocol.headers import decode_header, is_flexible

T = TypeVar("T")

INT8 = (-(2**7), 2**7 - 1)
INT16 = (-(2**15), 2**15 - 1)
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
UINT16 = (0, 2**16 - 1)


# -- where values come from ----------------------------------------------------------------
class Source:
    """Draws the generator's decisions. Subclasses implement `integer` and `binary`;
    everything else is built on them, so a source that shrinks them (hypothesis) shrinks
    whole requests toward the first option of each pool."""

    def integer(self, low: int, high: int) -> int:
        raise NotImplementedError

    def binary(self, max_size: int) -> bytes:
        raise NotImplementedError

    def choice(self, options: Sequence[T]) -> T:
        return options[self.integer(0, len(options) - 1)]

    def chance(self, percent: int) -> bool:
        """True with `percent` % probability (shrinks toward False)."""
        return self.integer(0, 99) >= 100 - percent


class RandomSource(Source):
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def binary(self, max_size: int) -> bytes:
        return self.rng.randbytes(self.rng.randint(0, max_size))

    def choice(self, options: Sequence[T]) -> T:
        return self.rng.choice(options)


# -- pools of names ------------------------------------------------------------------------
ODD_TEXT = ["", " ", "ü", "日本語", "\x00", "a\x00b", "🦄", "\u202e", "x" * 300, "-", ".", ".."]


@dataclass
class Pools:
    """Names and ids generated requests draw from: a few that exist (created by the
    caller), a few that do not, and odd ones. None of them is in `protected`."""

    topics: list[str] = field(default_factory=lambda: ["fz-a", "fz-b", "fz-compact", "fz-unknown"])
    topic_ids: list[uuid.UUID] = field(default_factory=list)  # the caller adds the existing ones
    groups: list[str] = field(default_factory=lambda: ["fz-group", "fz-group-2", "fz-txn"])
    transactional_ids: list[str] = field(default_factory=lambda: ["fz-txn", "fz-txn-2"])
    users: list[str] = field(default_factory=lambda: ["fz-user", "fz-user-2"])
    client_ids: list[str] = field(default_factory=lambda: ["fz-client", "fz-client-2"])
    members: list[str] = field(default_factory=lambda: ["fz-member", "fz-member-2"])
    cluster_id: str = "MkU3OEVBNTcwNTJENDM2Qk"
    live_brokers: tuple[int, ...] = (0,)
    protected: frozenset[str] = frozenset()

    def check(self) -> None:
        """Refuses pools that would let the fuzzer touch what a healthy client uses."""
        every = [*self.topics, *self.groups, *self.transactional_ids, *self.users, *self.client_ids]
        clash = self.protected.intersection(every)
        if clash:
            raise ValueError(f"fuzz pools name protected entities: {sorted(clash)}")


# Well-known values by field name (ints), before the type's extremes.
_TIMEOUTS_WAITED = {  # fields the broker waits on: kept short so a pipeline never stalls long
    "max_wait_ms": [-1, 0, 1, 20],
    "rebalance_timeout_ms": [-1, 0, 10, 200],
    "session_timeout_ms": [-1, 0, 10, 300, 2**31 - 1, -(2**31)],
}
_INT_POOLS: dict[str, list[int]] = {
    "partition_index": [0, 1, 2, -1, 2**31 - 1, -(2**31)],
    "partition": [0, 1, 2, -1, 2**31 - 1],
    "partitions": [0, 1, 2, -1, 2**31 - 1],
    "partition_indexes": [0, 1, -1, 2**31 - 1],
    "index": [0, 1, -1, 2**31 - 1],
    "acks": [-1, 1, 0, 2, -2, 2**15 - 1, -(2**15)],
    "producer_id": [-1, 0, 1, 1000, 2**63 - 1, -(2**63)],
    "v3_and_below_producer_id": [-1, 0, 1, 1000, 2**63 - 1],
    "producer_epoch": [-1, 0, 1, 2**15 - 1, -(2**15)],
    "v3_and_below_producer_epoch": [-1, 0, 1, 2**15 - 1],
    "num_partitions": [-1, 1, 2, 3, 0, -2, 10_001, 2**31 - 1],
    "replication_factor": [-1, 1, 0, 2, 2**15 - 1, -(2**15)],
    "count": [2, 3, 1, 0, -1, 20_000, 2**31 - 1],  # 20,000: past the 10,000 records a request may add
    "isolation_level": [0, 1, 2, -1, 127],
    "min_bytes": [0, 1, -1, 2**31 - 1],
    "max_bytes": [1 << 20, 0, 1, -1, 2**31 - 1, -(2**31)],
    "partition_max_bytes": [1 << 20, 0, 1, -1, 2**31 - 1],
    "fetch_offset": [0, 1, -1, 100, 2**63 - 1, -(2**63)],
    "log_start_offset": [-1, 0, 1, 2**63 - 1, -(2**63)],
    "offset": [0, 1, -1, -2, 2**63 - 1, -(2**63)],
    "committed_offset": [0, 1, -1, 2**63 - 1, -(2**63)],
    "timestamp": [-1, -2, -3, -4, -5, 0, 2**63 - 1, -(2**63)],
    "high_watermark": [-1, 0, 2**63 - 1],
    "current_leader_epoch": [-1, 0, 1, 2**31 - 1, -(2**31)],
    "leader_epoch": [-1, 0, 1, 2**31 - 1],
    "last_fetched_epoch": [-1, 0, 1, 2**31 - 1],
    "committed_leader_epoch": [-1, 0, 1, 2**31 - 1],
    "generation_id": [-1, 0, 1, 2**31 - 1, -(2**31)],
    "generation_id_or_member_epoch": [-1, 0, 1, 2**31 - 1],
    "member_epoch": [0, -1, -2, 1, 2**31 - 1, -(2**31)],
    "session_id": [0, 1, -1, 2**31 - 1, -(2**31)],
    "session_epoch": [-1, 0, 1, 2**31 - 1, -(2**31)],
    "replica_id": [-1, 0, 1, 2**31 - 1],
    "broker_id": [1, -1, 0, 99, 2**31 - 1],
    "broker_ids": [0, 1, -1, 99],
    "replicas": [0, 1, -1, 99],
    "voter_id": [0, 1, -1, 2**31 - 1],
    "timeout_ms": [0, 100, -1, 2**31 - 1, -(2**31)],
    "transaction_timeout_ms": [60_000, 0, 1, -1, 2**31 - 1],
    "throttle_time_ms": [0, -1, 2**31 - 1],
    "iterations": [4096, 8192, 0, -1, 4095, 16_385, 2**31 - 1],
    "mechanism": [1, 2, 0, -1, 3, 127],
    "resource_type": [2, 3, 4, 1, 0, 5, 6, 7, 8, 16, -1, 127],
    "resource_type_filter": [1, 2, 3, 4, 0, 5, 6, 7, -1],
    "resource_pattern_type": [3, 4, 0, 1, 2, 5, -1],
    "pattern_type_filter": [3, 1, 2, 4, 0, 5, -1],
    "operation": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, -1],
    "permission_type": [3, 2, 1, 0, 4, -1],
    "config_operation": [0, 1, 2, 3, 4, -1],
    "key_type": [0, 1, 2, -1],
    "election_type": [0, 1, 2, -1],
    "endpoint_type": [1, 2, 0, 3, -1],
    "match_type": [0, 1, 2, 3, -1],
    "upgrade_type": [1, 2, 3, 0, 4, -1],
    "max_version_level": [1, 0, 2, 3, -1, 27, 2**15 - 1, -(2**15)],
    "compression_type": [0, 1, 2, 3, 4, 5, -1, 127],
    "transaction_version": [0, 1, 2, 3, -1],
    "max_lifetime_ms": [-1, 0, 1000, 2**63 - 1, -(2**63)],
    "renew_period_ms": [-1, 0, 1000, 2**63 - 1],
    "expiry_time_period_ms": [-1, 0, 1000, 2**63 - 1],
    "duration_filter": [-1, 0, 1, 2**63 - 1],
    "response_partition_limit": [2000, 0, 1, -1, 2**31 - 1],
    "max_num_offsets": [1, 0, -1, 2**31 - 1],
    "subscription_id": [0, 1, -1],
    "commit_timestamp": [-1, 0, 2**63 - 1],
    "retention_time_ms": [-1, 0, 2**63 - 1],
    "coordinator_epoch": [0, -1, 2**31 - 1],
    "replica_epoch": [-1, 0, 2**63 - 1],
    "port": [9092, 0, 1, 65535],
    **_TIMEOUTS_WAITED,
}
_TYPE_INTS: dict[str, tuple[str, tuple[int, int], list[int]]] = {
    "int8": (">b", INT8, [0, 1, -1, 2, INT8[0], INT8[1]]),
    "int16": (">h", INT16, [0, 1, -1, 2, INT16[0], INT16[1]]),
    "uint16": (">H", UINT16, [0, 1, UINT16[1]]),
    "int32": (">i", INT32, [0, 1, -1, 2, 100, INT32[0], INT32[1]]),
    "int64": (">q", INT64, [0, 1, -1, 2, 1 << 40, INT64[0], INT64[1]]),
}
_FLOATS = [1024.0, 0.0, -0.0, 1.0, -1.0, 1e-300, 5e-324, 1e300, float(2**63), math.nan, math.inf, -math.inf]

_CONFIG_NAMES = [
    "cleanup.policy",
    "retention.ms",
    "retention.bytes",
    "max.message.bytes",
    "segment.bytes",
    "min.insync.replicas",
    "compression.type",
    "message.timestamp.type",
    "min.compaction.lag.ms",
    "consumer.session.timeout.ms",
    "consumer.heartbeat.interval.ms",
    "metrics",
    "interval.ms",
    "match",
    "log.cleaner.threads",
    "num.io.threads",
    "broker.id",
    "fz.unknown",
    "",
]
_CONFIG_VALUES = [
    "1",
    "",
    "-1",
    "0",
    "compact",
    "delete,compact",
    "delete",
    "gzip",
    "abc",
    "9" * 30,
    "1.5",
    "true",
]
_RESOURCE_NAMES = ["0", "", "1", "-1", "abc", "fz-a", "fz-group", "fz-metrics", "99999999999"]


def _strings(g: Pools, key: str) -> list[str | None]:
    """The pool for a kind of string field (None only where the field is nullable)."""
    if key == "topic":
        return [*g.topics, *ODD_TEXT[:6], "a" * 249, "a" * 250, "bad name!", "__consumer_offsets"]
    if key == "group":
        return [*g.groups, "", "ü", "x" * 300]
    if key == "txn":
        return [*g.transactional_ids, "", "ü"]
    if key == "member":
        return [*g.members, "", "ü", str(uuid.UUID(int=1)), "x" * 300]
    if key == "instance":
        return ["fz-instance", "", "ü"]
    if key == "user":
        return [*g.users, "", "ü", "<default>", "x" * 300]
    if key == "principal":
        return ["User:fz-user", "User:*", "User:", "fz-user", "", "Group:x", "User:ü"]
    if key == "host":
        return ["*", "10.0.0.1", "", "::1", "bad host"]
    if key == "acl_resource":
        return [*g.topics[:2], *g.groups[:1], "*", "kafka-cluster", "", "fz-"]
    if key == "entity_type":
        return ["client-id", "user", "ip", "", "bogus", "USER"]
    if key == "entity_name":
        return [*g.users, *g.client_ids, "", "10.0.0.1", "::1", "999.1.1.1", "ü"]
    if key == "quota_key":
        return [
            "producer_byte_rate",
            "consumer_byte_rate",
            "request_percentage",
            "controller_mutation_rate",
            "connection_creation_rate",
            "bogus",
            "",
        ]
    if key == "config_name":
        return list(_CONFIG_NAMES)
    if key == "config_value":
        return list(_CONFIG_VALUES)
    if key == "resource_name":
        return list(_RESOURCE_NAMES)
    if key == "protocol_type":
        return ["consumer", "", "connect", "ü"]
    if key == "protocol_name":
        return ["range", "roundrobin", "cooperative-sticky", "", "ü"]
    if key == "assignor":
        return ["uniform", "range", "", "bogus"]
    if key == "software":
        return ["fz-client", "1.0", "", "ü", "bad name!", "x" * 300]
    if key == "mechanism":
        return ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER", "", "plain"]
    if key == "feature":
        return ["group.version", "transaction.version", "metadata.version", "kraft.version", "bogus", ""]
    if key == "cluster_id":
        return [g.cluster_id, "", "bogus"]
    if key == "state":
        return ["Stable", "Empty", "Ongoing", "PrepareCommit", "bogus", "", "classic", "consumer"]
    if key == "regex":
        return ["fz-.*", ".*", "", "(", "[", "fz-a", "(a+)+$"]
    if key == "path":
        return ["", "/tmp/fz-bogus", "ü"]
    if key == "listener":
        return ["PLAINTEXT", "", "bogus"]
    if key == "rack":
        return ["rack-a", ""]
    if key == "metadata":
        return ["", "m", "x" * 5000, "ü"]
    if key == "client":  # the request header's client id
        return [*g.client_ids, "", "ü日本", "x" * 300, "bad name!"]
    return ["fz", "", "ü", "x" * 300]


# (api-independent) field name -> kind of string, looked up after the parent-specific names
_STRING_KIND: dict[str, str] = {
    "topic": "topic",
    "topic_name": "topic",
    "topic_names": "topic",
    "subscribed_topic_names": "topic",
    "group_id": "group",
    "group_ids": "group",
    "groups": "group",
    "groups_names": "group",
    "key": "group",
    "coordinator_keys": "group",
    "transactional_id": "txn",
    "transactional_ids": "txn",
    "v3_and_below_transactional_id": "txn",
    "member_id": "member",
    "group_instance_id": "instance",
    "instance_id": "instance",
    "principal": "principal",
    "principal_filter": "principal",
    "host": "host",
    "host_filter": "host",
    "entity_type": "entity_type",
    "entity_name": "entity_name",
    "match": "entity_name",
    "resource_name_filter": "acl_resource",
    "configuration_keys": "config_name",
    "protocol_type": "protocol_type",
    "protocol_name": "protocol_name",
    "server_assignor": "assignor",
    "client_software_name": "software",
    "client_software_version": "software",
    "mechanism": "mechanism",
    "feature": "feature",
    "cluster_id": "cluster_id",
    "states_filter": "state",
    "state_filters": "state",
    "types_filter": "state",
    "transactional_id_pattern": "regex",
    "subscribed_topic_regex": "regex",
    "path": "path",
    "rack_id": "rack",
    "committed_metadata": "metadata",
    "owner_principal_type": "principal_type",
    "principal_type": "principal_type",
}


def _string_kind(api_key: int, path: tuple[str, ...]) -> str:
    name = path[-1]
    parent = path[-2] if len(path) > 1 else ""
    if name == "name":
        if parent in ("topics", "topic_data", "v3_and_below_topics", "topic_partitions"):
            return "topic"
        if parent == "configs":
            return "config_name"
        if parent in ("users", "deletions", "upsertions"):
            return "user"
        if parent == "protocols":
            return "protocol_name"
        if parent == "listeners":
            return "listener"
        return "fz"
    if name == "value":
        return "config_value"
    if name == "key" and parent == "ops":
        return "quota_key"
    if name == "resource_name":
        return "acl_resource" if api_key in (ApiKey.CREATE_ACLS,) else "resource_name"
    if name in ("owner_principal_name", "principal_name"):
        return "user"
    if name == "topic_name" and api_key == ApiKey.DESCRIBE_QUORUM:
        return "quorum_topic"
    return _STRING_KIND.get(name, "fz")


# -- record batches ------------------------------------------------------------------------
def _batch(
    magic: int = 2,
    compression: int = 0,
    count: int = 1,
    transactional: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    key: bytes | None = b"k",
    value: bytes | None = b"v",
    timestamp: int | None = None,
) -> bytes:
    if magic == 2:
        builder: Any = DefaultRecordBatchBuilder(
            2, compression, transactional, producer_id, producer_epoch, base_sequence, 1 << 20
        )
        for i in range(count):
            builder.append(
                i,
                timestamp=timestamp if timestamp is not None else 1_700_000_000_000,
                key=key,
                value=value,
                headers=[],
            )
    else:
        builder = LegacyRecordBatchBuilder(magic, compression, 1 << 20)
        for i in range(count):
            builder.append(i, timestamp=1_700_000_000_000 if magic else None, key=key, value=value)
    return bytes(builder.build())


def _with(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def record_pool() -> list[bytes | None]:
    """Record sets for Produce: valid batches of each magic, codec and kind, then broken
    ones (bad CRC, counts, lengths, magic, codec; truncated, concatenated, garbage)."""
    good = _batch()
    rng = random.Random(22)
    pool: list[bytes | None] = [
        good,
        b"",
        None,
        _batch(count=5),
        _batch(compression=1, count=3),  # gzip
        _batch(compression=2),  # snappy
        _batch(compression=3, count=2),  # lz4
        _batch(compression=4),  # zstd
        _batch(key=None),
        _batch(value=None),
        _batch(key=b"", value=b"x" * 3000),
        _batch(producer_id=1000, producer_epoch=0, base_sequence=0),
        _batch(producer_id=1000, producer_epoch=0, base_sequence=5),
        _batch(transactional=True, producer_id=1000, producer_epoch=0, base_sequence=0),
        _batch(timestamp=-1),
        _batch(timestamp=2**63 - 1),
        _batch(magic=0),
        _batch(magic=1),
        _batch(magic=1, compression=1),
        good + good,
        good[:-1],
        good[:20],
        good + b"\x00",
        _with(good, 17, ">I", 0xDEADBEEF),  # crc
        _with(good, 16, ">b", 3),  # magic
        _with(good, 16, ">b", -1),
        _with(good, 21, ">h", 7),  # attributes: codec 7
        _with(good, 21, ">h", 0x20),  # control batch
        _with(good, 8, ">i", 2**31 - 1),  # batch length
        _with(good, 8, ">i", -1),
        _with(good, 8, ">i", 0),
        _with(good, 57, ">i", 2**31 - 1),  # record count
        _with(good, 57, ">i", -1),
        _with(good, 23, ">i", -1),  # last offset delta
        _with(_batch(compression=1), 61, ">I", 0),  # compressed garbage
        rng.randbytes(61),
        rng.randbytes(200),
    ]
    return pool


def _sasl_tokens() -> list[bytes]:
    return [
        b"\x00fz-user\x00secret",
        b"\x00alice\x00wrong",
        b"",
        b"\x00\x00",
        b"fz-user",
        b"a\x00b\x00c\x00d",
        b"\xff\xfe\x00\xc3",
        b"n,,n=fz-user,r=abcdef",
        b"n,,n=alice,r=",
        b"p=n,,n=fz,r=x",
        b"y,,n=fz,r=x",
        b"n,a=other,n=alice,r=abc",
        b"c=biws,r=abc,p=AAAA",
        b"n,,n=fz,r=abc,e=1",
        b"x" * 5000,
    ]


def _bytes_pool(kind: str) -> list[bytes]:
    rng = random.Random(len(kind))
    if kind == "sasl":
        return _sasl_tokens()
    if kind == "metrics":
        return [
            b"",
            rng.randbytes(40),
            gzip.compress(b"\x0a\x00"),
            gzip.compress(rng.randbytes(30)),
            b"\x1f\x8b",
        ]
    if kind == "member_metadata":
        # ConsumerProtocolSubscription v0-v3 shapes: valid, empty, truncated, garbage
        sub = struct.pack(">hi", 0, 1) + struct.pack(">h", 4) + b"fz-a" + struct.pack(">i", -1)
        return [
            sub,
            b"",
            sub[:5],
            struct.pack(">h", 3) + sub[2:],
            rng.randbytes(30),
            struct.pack(">hi", 0, 2**31 - 1),
        ]
    if kind == "assignment":
        asg = (
            struct.pack(">hi", 0, 1)
            + struct.pack(">h", 4)
            + b"fz-a"
            + struct.pack(">ii", 1, 0)
            + struct.pack(">i", -1)
        )
        return [asg, b"", asg[:7], rng.randbytes(20), struct.pack(">hi", 0, 2**31 - 1)]
    return [b"", b"\x00", rng.randbytes(16), rng.randbytes(32), b"x" * 1000]


def _bytes_kind(path: tuple[str, ...]) -> str:
    name = path[-1]
    return {
        "auth_bytes": "sasl",
        "metrics": "metrics",
        "metadata": "member_metadata",
        "assignment": "assignment",
    }.get(name, "random")


# -- the schema walked into generators and encoders ------------------------------------------
class _Writer:
    """A growing body; records where each length prefix sits (for bogus-length mutations)."""

    __slots__ = ("buf", "lengths")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.lengths: list[tuple[int, str]] = []

    def pack(self, fmt: str, *values: Any) -> None:
        self.buf += struct.pack(fmt, *values)

    def uvarint(self, value: int) -> None:
        value &= 0xFFFFFFFF
        while value >= 0x80:
            self.buf.append((value & 0x7F) | 0x80)
            value >>= 7
        self.buf.append(value)

    def length(self, count: int, flexible: bool, fmt: str) -> None:
        """A length or count; -1 is null. Compact lengths are count + 1 as a uvarint."""
        if flexible:
            self.lengths.append((len(self.buf), "uvarint"))
            self.uvarint(count + 1)
        else:
            self.lengths.append((len(self.buf), fmt))
            self.pack(fmt, count)


class _Node:
    nullable = False

    def gen(self, src: Source, g: RequestGenerator) -> Any:
        raise NotImplementedError

    def encode(self, w: _Writer, value: Any, flexible: bool) -> None:
        raise NotImplementedError


class _Int(_Node):
    def __init__(self, type_str: str, name: str) -> None:
        self.fmt, self.range, extremes = _TYPE_INTS[type_str]
        low, high = self.range
        named = [v for v in _INT_POOLS.get(name, []) if low <= v <= high]
        self.pool = named or extremes
        self.waited = name in _TIMEOUTS_WAITED  # never drawn from the whole range

    def gen(self, src: Source, g: RequestGenerator) -> Any:
        if self.waited or src.integer(0, 9) < 8:
            return src.choice(self.pool)
        low, high = self.range
        if src.chance(50):
            return src.integer(max(low, -3), 3)
        return src.integer(low, high)

    def encode(self, w: _Writer, value: Any, flexible: bool) -> None:
        w.pack(self.fmt, value)


class _Float(_Node):
    def gen(self, src: Source, g: RequestGenerator) -> Any:
        return src.choice(_FLOATS)

    def encode(self, w: _Writer, value: Any, flexible: bool) -> None:
        w.pack(">d", value)


class _Bool(_Node):
    def gen(self, src: Source, g: RequestGenerator) -> Any:
        return src.chance(50)

    def encode(self, w: _Writer, value: Any, flexible: bool) -> None:
        w.buf.append(1 if value else 0)


class _Uuid(_Node):
    def gen(self, src: Source, g: RequestGenerator) -> Any:
        return src.choice(g.uuids)

    def encode(self, w: _Writer, value: Any, flexible: bool) -> None:
        w.buf += (value or uuid.UUID(int=0)).bytes


class _String(_Node):
    def __init__(self, kind: str, nullable: bool) -> None:
        self.kind, self.nullable = kind, nullable

    def gen(self, src: Source, g: RequestGenerator) -> Any:
        if self.nullable and src.chance(10):
            return None
        if src.chance(4):  # anything at all, rarely: names the pools never thought of
            raw = src.binary(12)
            return raw.decode("utf-8", "replace").replace("\ufffd", "?")
        pool = g.strings(self.kind)
        return src.choice(pool)

    def encode(self, w: _Writer, value: Any, flexible: bool) -> None:
        if value is None:
            w.length(-1, flexible, ">h")
            return
        data = value.encode("utf-8")
        w.length(len(data), flexible, ">h")
        w.buf += data


class _Bytes(_Node):
    def __init__(self, kind: str, nullable: bool) -> None:
        self.kind, self.nullable = kind, nullable

    def gen(self, src: Source, g: RequestGenerator) -> Any:
        if self.nullable and src.chance(5):
            return None
        if self.kind == "records":
            return src.choice(g.records)
        if src.chance(10):
            return src.binary(64)
        return src.choice(g.byte_pools[self.kind])

    def encode(self, w: _Writer, value: Any, flexible: bool) -> None:
        if value is None:
            w.length(-1, flexible, ">i")
            return
        w.length(len(value), flexible, ">i")
        w.buf += value


class _Array(_Node):
    def __init__(self, element: _Node, nullable: bool) -> None:
        self.element, self.nullable = element, nullable

    def gen(self, src: Source, g: RequestGenerator) -> Any:
        shape = src.integer(0, 19)
        if shape == 19 and self.nullable:
            return None
        if shape == 0:
            return []
        if shape == 18:  # duplicates
            item = self.element.gen(src, g)
            return [item] * src.integer(2, 4)
        if shape == 17 and g.allow_large:  # many entries
            item = self.element.gen(src, g)
            return [item if i % 2 else self.element.gen(src, g) for i in range(src.integer(20, 60))]
        return [self.element.gen(src, g) for _ in range(1 if shape < 12 else src.integer(2, 3))]

    def encode(self, w: _Writer, value: Any, flexible: bool) -> None:
        if value is None:
            w.length(-1, flexible, ">i")
            return
        w.length(len(value), flexible, ">i")
        for item in value:
            self.element.encode(w, item, flexible)


UNKNOWN_TAGS = "\x00unknown_tags"


class _Struct(_Node):
    """A struct of one version: its untagged fields in order, then (flexible versions)
    its tagged fields, which a generated value carries only when drawn."""

    def __init__(
        self,
        untagged: list[tuple[str, _Node]],
        tagged: list[tuple[str, int, _Node]],
        nullable: bool,
        flexible: bool,
    ) -> None:
        self.untagged, self.tagged, self.nullable, self.flexible = untagged, tagged, nullable, flexible
        self.known_tags = {tag for _, tag, _ in tagged}
        self.untagged_only = False  # inside a tagged field: an empty tag section only

    def gen(self, src: Source, g: RequestGenerator) -> Any:
        if self.nullable and src.chance(10):
            return None
        value: dict[str, Any] = {name: node.gen(src, g) for name, node in self.untagged}
        for name, _tag, node in self.tagged:
            if src.chance(30):
                value[name] = node.gen(src, g)
        if self.flexible and not self.untagged_only and src.chance(5):
            tag = src.choice([t for t in (10, 77, 1000, 2**20) if t not in self.known_tags])
            value[UNKNOWN_TAGS] = [(tag, src.binary(8))]
        return value

    def encode(self, w: _Writer, value: Any, flexible: bool) -> None:
        if self.nullable:
            if value is None:
                w.buf.append(0xFF)
                return
            w.buf.append(1)
        for name, node in self.untagged:
            node.encode(w, value[name], flexible)
        if not flexible:
            return
        tags: list[tuple[int, bytes]] = []
        for name, tag, node in self.tagged:
            if name in value:
                inner = _Writer()
                node.encode(inner, value[name], True)
                tags.append((tag, bytes(inner.buf)))
        tags.extend(value.get(UNKNOWN_TAGS, ()))
        tags.sort()
        w.uvarint(len(tags))
        for tag, data in tags:
            w.uvarint(tag)
            w.uvarint(len(data))
            w.buf += data


def _untag(node: _Node) -> None:
    """A struct inside a tagged field carries no tagged fields of its own: kafka-python
    decodes it expecting an empty tag section (Kafka would read them)."""
    if isinstance(node, _Array):
        _untag(node.element)
    elif isinstance(node, _Struct):
        node.tagged = []
        node.untagged_only = True
        for _, inner in node.untagged:
            _untag(inner)


def _node(api_key: int, f: Any, version: int, flexible: bool, path: tuple[str, ...]) -> _Node:
    nullable = bool(f.nullable_for_version_q(version))
    if f.is_struct() or f.is_struct_array():
        inner = _struct_node(api_key, f, version, flexible, path, nullable and f.is_struct())
        return _Array(inner, nullable) if f.is_struct_array() else inner
    if f.is_array():
        element = _scalar_node(api_key, f.array_of.type_str, version, path, False)
        return _Array(element, nullable)
    return _scalar_node(api_key, f.type_str, version, path, nullable)


def _scalar_node(api_key: int, type_str: str, version: int, path: tuple[str, ...], nullable: bool) -> _Node:
    if type_str in _TYPE_INTS:
        return _Int(type_str, path[-1])
    if type_str == "float64":
        return _Float()
    if type_str == "bool":
        return _Bool()
    if type_str == "uuid":
        return _Uuid()
    if type_str == "string":
        return _String(_string_kind(api_key, path), nullable)
    if type_str == "records":
        return _Bytes("records", nullable)
    if type_str == "bytes":
        return _Bytes(_bytes_kind(path), nullable)
    raise ValueError(f"no generator for type {type_str} at {'.'.join(path)}")


def _struct_node(
    api_key: int, struct_field: Any, version: int, flexible: bool, path: tuple[str, ...], nullable: bool
) -> _Struct:
    untagged: list[tuple[str, _Node]] = []
    tagged: list[tuple[str, int, _Node]] = []
    fields = struct_field.fields.values() if isinstance(struct_field.fields, dict) else struct_field.fields
    for f in fields:
        if not f.for_version_q(version):
            continue
        node = _node(api_key, f, version, flexible, (*path, f.name))
        if flexible and f.tagged_field_q(version):
            _untag(node)
            tagged.append((f.name, f.tag, node))
        else:
            untagged.append((f.name, node))
    return _Struct(untagged, tagged, nullable, flexible)


# -- frames ------------------------------------------------------------------------------
@dataclass
class Frame:
    """One size-prefixed request as sent, and what may follow it."""

    data: bytes
    api_key: int
    version: int
    correlation_id: int
    expects_response: bool = True  # Kafka answers it (False: acks=0 produce, a raw SASL token...)
    may_close: bool = False  # Kafka may close the connection after it
    may_wait: bool = False  # the broker may hold it (long poll, group join) past the driver's timeout
    mutated: str | None = None  # how it was mutated; None: as generated
    raw: bool = False  # a bare SASL token (answered with a bare token, no header)
    ends_stream: bool = False  # the connection ends after it (the driver shuts its write side)
    lengths: list[tuple[int, str]] = field(default_factory=list)  # offsets of length prefixes in `data`

    def describe(self) -> str:
        what = f"{_name(self.api_key)} v{self.version} correlation id {self.correlation_id}"
        if self.mutated:
            what += f" mutated ({self.mutated})"
        head = self.data[:64].hex()
        return f"{what}: {len(self.data)} bytes {head}{'...' if len(self.data) > 64 else ''}"


def _name(api_key: int) -> str:
    try:
        return str(request_class(api_key).__name__).removesuffix("Request")
    except KeyError:
        return f"api key {api_key}"


SafetyRule = Callable[[dict[str, Any], int, "RequestGenerator"], None]


def _safe_unregister(value: dict[str, Any], version: int, g: RequestGenerator) -> None:
    """Unregistering a live broker takes its leaderships away (as in Kafka)."""
    if value["broker_id"] in g.pools.live_brokers:
        value["broker_id"] = 99


def _safe_broker_configs(value: dict[str, Any], version: int, g: RequestGenerator) -> None:
    """Broker-wide configs may legitimately refuse the healthy client's records
    (message.max.bytes) or delete them (log.retention.*): changes to a live broker's or
    the default BROKER resource are validated only."""
    live = {"", *(str(b) for b in g.pools.live_brokers)}
    for resource in value["resources"] or ():
        if resource["resource_type"] in (4, 8) and resource["resource_name"] in live:
            value["validate_only"] = True


def _safe_scram(value: dict[str, Any], version: int, g: RequestGenerator) -> None:
    for entry in (value.get("deletions") or []) + (value.get("upsertions") or []):
        if entry["name"] in g.pools.protected:
            entry["name"] = g.pools.users[0]


def _unknown_acl_elements(value: dict[str, Any], version: int) -> bool:
    """Kafka's ACL requests refuse UNKNOWN (or unknown) resource types, pattern types,
    operations and permissions while they are parsed: the connection is closed."""
    entries = value.get("creations") or value.get("filters") or [value]
    for entry in entries:
        for name, valid in _ACL_ENUMS.items():
            if name in entry and entry[name] not in valid:
                return True
    return False


_ACL_ENUMS = {
    "resource_type": range(1, 8),
    "resource_type_filter": range(1, 8),
    "resource_pattern_type": range(1, 5),
    "pattern_type_filter": range(1, 5),
    "operation": range(1, 15),
    "permission_type": range(1, 4),
}
# Requests Kafka refuses while parsing them (the connection closes): per API, whether
# a generated value is one.
_CLOSES: dict[int, Callable[[dict[str, Any], int], bool]] = {
    ApiKey.DESCRIBE_ACLS: _unknown_acl_elements,
    ApiKey.CREATE_ACLS: _unknown_acl_elements,
    ApiKey.DELETE_ACLS: _unknown_acl_elements,
}

_SAFETY: dict[int, SafetyRule] = {
    ApiKey.UNREGISTER_BROKER: _safe_unregister,
    ApiKey.ALTER_CONFIGS: _safe_broker_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _safe_broker_configs,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _safe_scram,
}
# APIs whose handling may wait (long poll, group membership): bounded by the pools'
# waited timeouts when generated, not when mutated.
WAITING_APIS = frozenset({ApiKey.FETCH, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP})


class RequestGenerator:
    """Requests for every advertised (API key, version), from `pools`."""

    def __init__(self, advertised: Mapping[int, tuple[int, int]], pools: Pools | None = None) -> None:
        self.advertised = dict(advertised)
        self.pools = pools or Pools()
        self.pools.check()
        self.allow_large = True
        self.records = record_pool()
        self.byte_pools = {
            k: _bytes_pool(k) for k in ("sasl", "metrics", "member_metadata", "assignment", "random")
        }
        self._plans: dict[tuple[int, int], _Struct] = {}
        self.protected_ids: set[uuid.UUID] = set()  # ids of the topics the healthy clients use
        self._strings: dict[str, list[Any]] = {}
        self.refresh()

    def refresh(self) -> None:
        """Re-reads the pools (after the caller adds topic ids)."""
        self.uuids = [uuid.UUID(int=0), *self.pools.topic_ids, uuid.UUID(int=1), uuid.UUID(int=2**128 - 1)]
        self._strings.clear()

    def strings(self, kind: str) -> list[Any]:
        found = self._strings.get(kind)
        if found is None:
            if kind == "quorum_topic":
                found = ["__cluster_metadata", *self.pools.topics[:1], ""]
            elif kind == "principal_type":
                found = ["User", "", "Group"]
            else:
                found = [s for s in _strings(self.pools, kind) if s not in self.pools.protected]
            self._strings[kind] = found
        return found

    def pairs(self) -> list[tuple[int, int]]:
        """Every advertised (API key, version)."""
        return [(k, v) for k, (low, high) in sorted(self.advertised.items()) for v in range(low, high + 1)]

    def plan(self, api_key: int, version: int) -> _Struct:
        plan = self._plans.get((api_key, version))
        if plan is None:
            cls = request_class(api_key)
            flexible = bool(cls.flexible_version_q(version))
            plan = self._plans[(api_key, version)] = _struct_node(
                api_key, cls._struct, version, flexible, (), False
            )
        return plan

    def value(self, src: Source, api_key: int, version: int) -> dict[str, Any]:
        value: dict[str, Any] = self.plan(api_key, version).gen(src, self)
        rule = _SAFETY.get(api_key)
        if rule is not None:
            rule(value, version, self)
        return value

    def touches_protected(self, frame: Frame) -> bool:
        """Whether `frame`, decoded as the broker would decode it, names what the
        healthy clients use (a protected name, or the id of a protected topic in
        `protected_ids`) or would change a live broker's config or registration: the
        safety rules, for frames the generator did not write (a coverage-guided fuzzer
        learns names from the comparisons it observes). Undecodable frames touch nothing."""
        body = memoryview(frame.data)[4:]
        try:
            api_key, version, _ = struct.unpack_from(">hhi", body)
            low, high = self.advertised.get(api_key, (0, -1))
            if not low <= version <= high:
                return False
            _, offset = decode_header(body, is_flexible(api_key, version))
            request = request_class(api_key).decode(body[offset:], version=version)
        except Exception:  # noqa: BLE001  (the broker cannot decode it either)
            return False
        strings: set[str] = set()
        ids: set[uuid.UUID] = set()
        _collect(request, strings, ids)
        if strings & self.pools.protected or ids & self.protected_ids:
            return True
        live = {"", *(str(b) for b in self.pools.live_brokers)}
        if api_key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS) and not request.validate_only:
            return any(r.resource_type in (4, 8) and r.resource_name in live for r in request.resources or ())
        if api_key == ApiKey.UNREGISTER_BROKER:
            return request.broker_id in self.pools.live_brokers
        return False

    def request(
        self,
        src: Source,
        api_key: int,
        version: int,
        correlation_id: int,
        value: dict[str, Any] | None = None,
    ) -> Frame:
        """One well-formed request frame (valid on the wire, odd in its values)."""
        if value is None:
            value = self.value(src, api_key, version)
        client_id = None if src.chance(5) else src.choice(self.strings("client"))
        flexible = bool(request_class(api_key).flexible_version_q(version))
        header = _Writer()
        header.pack(">hhi", api_key, version, correlation_id)
        if client_id is None:
            header.pack(">h", -1)
        else:
            encoded = client_id.encode("utf-8")
            header.pack(">h", len(encoded))
            header.buf += encoded
        if flexible:
            if src.chance(3):
                header.uvarint(1)
                header.uvarint(1000)
                header.uvarint(1)
                header.buf.append(0)
            else:
                header.uvarint(0)
        body = _Writer()
        self.plan(api_key, version).encode(body, value, flexible)
        size = len(header.buf) + len(body.buf)
        data = struct.pack(">i", size) + bytes(header.buf) + bytes(body.buf)
        shift = 4 + len(header.buf)
        frame = Frame(
            data, api_key, version, correlation_id, lengths=[(o + shift, k) for o, k in body.lengths]
        )
        closes = _CLOSES.get(api_key)
        if closes is not None and closes(value, version):
            frame.may_close = True
        if api_key == ApiKey.PRODUCE and value["acks"] == 0:
            frame.expects_response = False  # never answered; a failure closes the connection
            frame.may_close = True
        return frame


def _collect(value: Any, strings: set[str], ids: set[uuid.UUID]) -> None:
    """Every string and UUID in a decoded message, however deep."""
    if isinstance(value, str):
        strings.add(value)
    elif isinstance(value, uuid.UUID):
        ids.add(value)
    elif isinstance(value, list):
        for item in value:
            _collect(item, strings, ids)
    elif hasattr(value, "_struct"):
        for name in value._struct.fields:
            _collect(getattr(value, name, None), strings, ids)


# -- mutations -----------------------------------------------------------------------------
MUTATIONS = (
    "truncate",
    "flip",
    "bogus_length",
    "insert",
    "delete",
    "api_key",
    "version",
    "trailing",
    "size_prefix",
    "garbage",
)


def _peek(body: bytes) -> tuple[int, int, int]:
    if len(body) >= 8:
        api_key, version, correlation_id = struct.unpack_from(">hhi", body)
        return api_key, version, correlation_id
    return -1, -1, -1


def mutate(
    src: Source, frame: Frame, advertised: Mapping[int, tuple[int, int]], how: str | None = None
) -> Frame:
    """`frame` mutated one way (drawn unless `how` names it). The result keeps a
    consistent size prefix except for "size_prefix", which ends its connection."""
    how = how or src.choice(MUTATIONS)
    body = bytearray(frame.data[4:])
    ends_stream = False
    prefix: int | None = None
    if how == "truncate":
        body = body[: src.integer(0, max(0, len(body) - 1))]
    elif how == "flip":
        for _ in range(src.integer(1, 4)):
            if body:
                at = src.integer(0, len(body) - 1)
                body[at] ^= src.choice([0xFF, 0x80, 0x01, src.integer(1, 255)])
    elif how == "bogus_length" and frame.lengths:
        offset, kind = src.choice(frame.lengths)
        at = offset - 4
        if kind == "uvarint":
            end = at
            while end < len(body) and body[end] & 0x80:
                end += 1
            w = _Writer()
            w.uvarint(src.choice([0, 1, 2, 0x7FFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x10000000]))
            body[at : end + 1] = w.buf
        else:
            fmt = kind
            low, high = INT16 if fmt == ">h" else INT32
            struct.pack_into(fmt, body, at, src.choice([-2, -1, 0, 1, high, low, high // 2]))
    elif how == "insert":
        at = src.integer(0, len(body))
        body[at:at] = src.binary(16) or b"\x00"
    elif how == "delete" and body:
        at = src.integer(0, len(body) - 1)
        del body[at : at + src.integer(1, 8)]
    elif how == "api_key" and len(body) >= 2:
        struct.pack_into(">h", body, 0, src.choice([*advertised, -1, 32767, 99, 1000]))
    elif how == "version" and len(body) >= 4:
        api_key = struct.unpack_from(">h", body)[0]
        low, high = advertised.get(api_key, (0, 0))
        struct.pack_into(">h", body, 2, src.choice([low, high, high + 1, low - 1, -1, 32767, -32768]))
    elif how == "trailing":
        body += src.binary(32) or b"\x00"
    elif how == "size_prefix":
        ends_stream = True
        prefix = src.choice(
            [-1, -(2**31), 2**31 - 1, len(body) + 1, len(body) + 100, max(0, len(body) - 1), 0]
        )
    else:  # garbage, or a mutation that did not apply
        how = "garbage"
        body = bytearray(src.binary(64))
    api_key, version, correlation_id = _peek(bytes(body))
    size = len(body) if prefix is None else prefix
    data = struct.pack(">i", size) + bytes(body)
    return Frame(
        data,
        api_key,
        version,
        correlation_id,
        expects_response=False,
        may_close=True,
        may_wait=api_key in WAITING_APIS or ends_stream,
        mutated=how,
        ends_stream=ends_stream,
    )


# -- SASL listeners before authentication ------------------------------------------------
def raw_token(token: bytes) -> Frame:
    """A bare SASL token (after a SaslHandshake v0): answered with a bare challenge or a
    closed connection."""
    return Frame(
        struct.pack(">i", len(token)) + token, -1, -1, -1, expects_response=False, may_close=True, raw=True
    )


def sasl_exchange(src: Source, g: RequestGenerator, correlation: Iterable[int]) -> list[Frame]:
    """What a client may send a SASL listener before it has authenticated: ApiVersions,
    SaslHandshake v0/v1 (mechanisms enabled or not), SaslAuthenticate with odd tokens,
    any other API out of turn, and mutations of these; bare tokens after a v0 handshake.
    Kafka closes the connection on anything out of turn and after a failed login, so any
    frame may close it; what is answered must be well-formed."""
    ids = iter(correlation)
    frames: list[Frame] = []
    raw = False
    for _ in range(src.integer(1, 5)):
        if raw:
            frames.append(raw_token(src.choice(g.byte_pools["sasl"]) if src.chance(80) else src.binary(64)))
            continue
        kind = src.integer(0, 9)
        api_key: int
        if kind <= 1:
            api_key = ApiKey.API_VERSIONS
        elif kind <= 4:
            api_key = ApiKey.SASL_HANDSHAKE
        elif kind <= 7:
            api_key = ApiKey.SASL_AUTHENTICATE
        else:
            api_key = src.choice(sorted(g.advertised))
        low, high = g.advertised[api_key]
        frame = g.request(src, api_key, src.integer(low, high), next(ids))
        if kind == 9 or src.chance(10):
            frame = mutate(src, frame, g.advertised)
        frame.may_close = True
        frames.append(frame)
        if frame.ends_stream:
            break
        raw = frame.api_key == ApiKey.SASL_HANDSHAKE and frame.version == 0
    return frames


# -- checking answers ----------------------------------------------------------------------
def response_problem(frame: Frame, payload: bytes, advertised: Mapping[int, tuple[int, int]]) -> str | None:
    """Why `payload` (a response without its size) is not a well-formed answer to
    `frame`; None when it is. The whole payload must decode (header and body)."""
    if frame.raw:
        return None  # a bare SASL challenge: any bytes
    api_key, version = frame.api_key, frame.version
    low, high = advertised.get(api_key, (0, -1))
    if api_key == ApiKey.API_VERSIONS and not low <= version <= high:
        version = 0  # KIP-511: an unsupported ApiVersions version is answered in v0
    try:
        cls = response_class(api_key)
        flexible = bool(cls.flexible_version_q(version)) and api_key != ApiKey.API_VERSIONS
        (correlation_id,) = struct.unpack_from(">i", payload)
        pos = 4
        if flexible:
            pos = _skip_tags(payload, pos)
        decode = cls._struct.compiled_decode_from(
            version,
            compact=bool(cls.flexible_version_q(version)),
            tagged=bool(cls.flexible_version_q(version)),
            data_class=cls[None],
        )
        _, end = decode(memoryview(payload), pos)
    except Exception as exc:  # noqa: BLE001  (whatever the decoder trips on is the finding)
        return f"response does not decode: {exc!r}"
    if correlation_id != frame.correlation_id:
        return f"correlation id {correlation_id}, expected {frame.correlation_id}"
    if end != len(payload):
        return f"response decodes to {end} of its {len(payload)} bytes"
    return None


def _skip_tags(data: bytes, pos: int) -> int:
    count, pos = _read_uvarint(data, pos)
    for _ in range(count):
        _, pos = _read_uvarint(data, pos)
        size, pos = _read_uvarint(data, pos)
        pos += size
    return pos


def _read_uvarint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise ValueError("uvarint too long")


@dataclass
class Finding:
    what: str
    frame: Frame | None
    connection: int

    def __str__(self) -> str:
        where = f" after {self.frame.describe()}" if self.frame is not None else ""
        return f"connection {self.connection}: {self.what}{where}"


@dataclass
class _Conn:
    index: int
    sock: socket.socket
    out: bytearray = field(default_factory=bytearray)
    inbuf: bytearray = field(default_factory=bytearray)
    pending: deque[Frame] = field(default_factory=deque)
    closed: bool = False
    write_shut: bool = False
    answered: int = 0
    deferred: Frame | None = None  # a frame that ends the stream, sent once the rest are answered


class WireDriver:
    """Pipelines frames over a few connections to one listener, non-blocking, reading
    while it writes (a broker that stops reading while its answers are unread cannot
    deadlock it), and checks each connection's answers in order. Connections the broker
    closed are reopened for the next batch."""

    def __init__(
        self,
        address: tuple[str, int],
        advertised: Mapping[int, tuple[int, int]],
        connections: int = 3,
        timeout: float = 30.0,
        on_connect: Callable[[socket.socket], None] | None = None,
        wait_timeout: float = 3.0,
    ) -> None:
        self.address = address
        self.advertised = advertised
        self.timeout = timeout
        # A connection held by a frame that may legitimately wait (a long poll, a group
        # join, an unfinished frame) is given up after this long, without a finding.
        self.wait_timeout = min(wait_timeout, timeout)
        self.on_connect = on_connect
        self.selector = selectors.DefaultSelector()
        self.conns: list[_Conn | None] = [None] * connections
        self.sent = self.answered = self.closes = 0

    def _open(self, index: int) -> _Conn:
        sock = socket.create_connection(self.address, timeout=10)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.on_connect is not None:
            self.on_connect(sock)
        sock.setblocking(False)
        conn = _Conn(index, sock)
        self.selector.register(sock, selectors.EVENT_READ, conn)
        self.conns[index] = conn
        return conn

    def _drop(self, conn: _Conn) -> None:
        if self.conns[conn.index] is conn:
            self.conns[conn.index] = None
        try:
            self.selector.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        conn.sock.close()

    def reset(self) -> None:
        """Drops every connection: the next batch starts on new ones (a SASL exchange
        starts unauthenticated)."""
        for conn in self.conns:
            if conn is not None:
                self._drop(conn)

    def close(self) -> None:
        self.reset()
        self.selector.close()

    def run(self, batches: Sequence[Sequence[Frame]]) -> list[Finding]:
        """Sends batch i on connection i (opened if needed), all at once, and waits for
        every answer or close. Returns what was wrong."""
        findings: list[Finding] = []
        active: list[_Conn] = []
        for index, frames in enumerate(batches):
            if not frames:
                continue
            conn = self.conns[index] or self._open(index)
            for frame in frames:
                self.sent += 1
                if frame.ends_stream:
                    # Sent once everything before it is answered: Kafka reads one request
                    # at a time, so whatever came before a bad size prefix is answered.
                    conn.deferred = frame
                    break
                conn.out += frame.data
                conn.pending.append(frame)
            active.append(conn)
        started = time.monotonic()
        deadline = started + self.timeout
        waited = False
        waiting = {c.index: c for c in active}
        for conn in active:
            self._release(conn)
            self._want(conn)
        while waiting:
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                for conn in waiting.values():
                    findings.extend(self._timed_out(conn))
                break
            if not waited and now - started > self.wait_timeout:
                waited = True
                for index, conn in list(waiting.items()):
                    if self._held(conn):
                        del waiting[index]
                        self._drop(conn)
            for key, events in self.selector.select(min(remaining, 1.0)):
                conn = key.data
                if events & selectors.EVENT_WRITE:
                    self._write(conn)
                if events & selectors.EVENT_READ:
                    findings.extend(self._read(conn))
                mine = waiting.get(conn.index) is conn
                if conn.closed:
                    if mine:
                        del waiting[conn.index]
                    self._drop(conn)
                elif mine and self._done(conn) and not self._release(conn):
                    del waiting[conn.index]
                else:
                    self._want(conn)
        return findings

    def _release(self, conn: _Conn) -> bool:
        """Queues the deferred frame once everything before it is answered."""
        if conn.deferred is None or conn.closed or not self._done(conn):
            return False
        conn.out += conn.deferred.data
        conn.pending.append(conn.deferred)
        conn.deferred = None
        self._want(conn)
        return True

    def _want(self, conn: _Conn) -> None:
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.out else 0)
        self.selector.modify(conn.sock, events, conn)

    def _write(self, conn: _Conn) -> None:
        if not conn.out:
            return
        try:
            sent = conn.sock.send(conn.out)
        except BlockingIOError:
            return
        except OSError:
            conn.out.clear()  # the broker closed it: what is unsent is moot
            return
        del conn.out[:sent]
        if not conn.out and conn.pending and conn.pending[-1].ends_stream and not conn.write_shut:
            conn.write_shut = True
            try:
                conn.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def _done(self, conn: _Conn) -> bool:
        if conn.closed:
            return True
        return not conn.out and not any(f.expects_response for f in conn.pending) and not conn.write_shut

    def _read(self, conn: _Conn) -> list[Finding]:
        findings: list[Finding] = []
        try:
            data = conn.sock.recv(1 << 20)
        except BlockingIOError:
            return findings
        except OSError:
            data = b""
        if data:
            conn.inbuf += data
            while len(conn.inbuf) >= 4:
                (size,) = struct.unpack_from(">i", conn.inbuf)
                if len(conn.inbuf) < 4 + size:
                    break
                payload = bytes(conn.inbuf[4 : 4 + size])
                del conn.inbuf[: 4 + size]
                findings.extend(self._answer(conn, payload))
            return findings
        conn.closed = True
        self.closes += 1
        findings.extend(self._closed(conn))
        return findings

    def _answer(self, conn: _Conn, payload: bytes) -> list[Finding]:
        """Matches one response to the next frame that could have produced it."""
        correlation_id = struct.unpack_from(">i", payload)[0] if len(payload) >= 4 else None
        skipped: list[Frame] = []
        while conn.pending:
            frame = conn.pending.popleft()
            if frame.raw or frame.correlation_id == correlation_id:
                self.answered += 1
                conn.answered += 1
                problem = response_problem(frame, payload, self.advertised)
                if problem is not None and not frame.mutated:
                    return [Finding(problem, frame, conn.index)]
                if problem is not None and frame.mutated and frame.correlation_id == correlation_id:
                    # a mutated frame may decode as another API or version than its
                    # header says only if the broker read it so: the header is what it read
                    return [Finding(problem, frame, conn.index)]
                return [
                    Finding("no answer, but a later frame was answered", f, conn.index)
                    for f in skipped
                    if f.expects_response
                ]
            skipped.append(frame)
        return [
            Finding(f"response with correlation id {correlation_id} matches no frame sent", None, conn.index)
        ]

    def _closed(self, conn: _Conn) -> list[Finding]:
        """A close is fine when an unanswered frame up to the first one Kafka must
        answer may close the connection."""
        for frame in conn.pending:
            if frame.may_close:
                return []
            if frame.expects_response:
                return [Finding("connection closed instead of an answer", frame, conn.index)]
        return []

    @staticmethod
    def _held(conn: _Conn) -> bool:
        """Whether the first frame holding the connection up may legitimately wait."""
        for frame in conn.pending:
            if frame.may_wait:
                return True
            if frame.expects_response or frame.ends_stream:
                return False
        return False

    def _timed_out(self, conn: _Conn) -> list[Finding]:
        for frame in conn.pending:
            if frame.may_wait:
                self._drop(conn)
                return []
            if frame.expects_response or frame.ends_stream:
                break
        head = next((f for f in conn.pending if f.expects_response or f.ends_stream), None)
        self._drop(conn)
        return [Finding(f"no answer within {self.timeout:.0f} s", head, conn.index)]


# -- the broker's log ----------------------------------------------------------------------
class ErrorLog(logging.Handler):
    """Collects ERROR records (a handler that raised, an exception in a callback) from
    every logger while installed, except the clients' own (`ignore`: logger name
    prefixes; kafka-python logs as "kafka.*")."""

    def __init__(self, ignore: tuple[str, ...] = ("kafka",)) -> None:
        super().__init__(logging.ERROR)
        self.ignore = ignore
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not record.name.startswith(self.ignore):
            self.records.append(record)

    def __enter__(self) -> ErrorLog:
        logging.getLogger().addHandler(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        logging.getLogger().removeHandler(self)

    def take(self) -> list[str]:
        """The records so far, formatted with their tracebacks, and forgets them."""
        taken, self.records = self.records, []
        formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
        return [formatter.format(r) for r in taken]


class Numbers:
    """A set of ints kept as sorted, disjoint [start, end) runs. The healthy client's
    record numbers come nearly in order, so a run of hours keeps a handful of runs where
    a list would grow by every record (the fuzz script measures its process's memory,
    the healthy clients' included). Thread-safe: one thread adds, another reads."""

    def __init__(self, values: Iterable[int] = ()) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._count = 0
        self._lock = threading.Lock()
        for value in values:
            self.add(value)

    def add(self, value: int) -> bool:
        """Adds `value`; False when it was there already."""
        with self._lock:
            starts, ends = self._starts, self._ends
            i = bisect.bisect_right(starts, value) - 1  # the run starting at or before it
            if i >= 0 and value < ends[i]:
                return False
            self._count += 1
            joins_left = i >= 0 and ends[i] == value
            joins_right = i + 1 < len(starts) and starts[i + 1] == value + 1
            if joins_left and joins_right:
                ends[i] = ends[i + 1]
                del starts[i + 1], ends[i + 1]
            elif joins_left:
                ends[i] = value + 1
            elif joins_right:
                starts[i + 1] = value
            else:
                starts.insert(i + 1, value)
                ends.insert(i + 1, value + 1)
            return True

    def runs(self) -> list[tuple[int, int]]:
        with self._lock:
            return list(zip(self._starts, self._ends, strict=True))

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[int]:
        for start, end in self.runs():
            yield from range(start, end)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Numbers) and self.runs() == other.runs()

    def __repr__(self) -> str:
        return f"Numbers({len(self)} in {self.runs()[:5]}{'...' if len(self.runs()) > 5 else ''})"

    def missing_from(self, other: Numbers, show: int = 10) -> tuple[int, list[int]]:
        """How many of these `other` lacks, and the first `show` of them."""
        count, first = 0, list[int]()
        theirs = other.runs()
        starts = [start for start, _ in theirs]
        for start, end in self.runs():
            pos = start
            i = max(bisect.bisect_right(starts, start) - 1, 0)
            while pos < end:
                if i < len(theirs) and theirs[i][0] <= pos < theirs[i][1]:
                    pos = theirs[i][1]  # covered up to the end of their run
                    i += 1
                    continue
                if i < len(theirs) and theirs[i][1] <= pos:
                    i += 1
                    continue
                gap_end = min(end, theirs[i][0]) if i < len(theirs) else end
                count += gap_end - pos
                first.extend(range(pos, min(gap_end, pos + show - len(first))))
                pos = gap_end
        return count, first[:show]


@dataclass
class HealthyReport:
    sent: int
    acknowledged: Numbers
    failed: list[str]  # the first few failures and a count of the rest
    received: Numbers  # distinct record numbers consumed
    consumed: int = 0  # records consumed, duplicates included
    out_of_order: int = 0  # records consumed after one with a higher number
    foreign: list[bytes] = field(default_factory=list)  # the first records its producer did not send
    foreign_count: int = 0
    crashed: str | None = None  # what stopped a client thread, or a flush that timed out
    # What explains a failure: the consumer's own state at the end, the broker's view of
    # its group and topic, and the client's group events (kafka-python's log records).
    consumer_state: str = ""
    broker_view: str = ""
    events: list[str] = field(default_factory=list)

    @property
    def missing(self) -> tuple[int, list[int]]:
        """How many acknowledged records the consumer never saw, and the first of them."""
        return self.acknowledged.missing_from(self.received)

    @property
    def duplicates(self) -> int:
        return self.consumed - len(self.received)

    def problems(self) -> list[str]:
        """What went wrong, followed (when anything did) by what explains it."""
        out = [f"send failed: {f}" for f in self.failed[:5]]
        if self.crashed:
            out.append(self.crashed)
        if self.foreign_count:
            out.append(f"{self.foreign_count} records its producer never sent: {self.foreign[:3]}")
        if not self.acknowledged:
            out.append("no record was acknowledged")
        missing, first = self.missing
        if missing:
            out.append(
                f"{missing} acknowledged records never consumed: {first} ({len(self.received)} consumed)"
            )
        if self.out_of_order:
            out.append(f"records consumed out of order ({self.out_of_order} times)")
        if out:
            out.append(f"consumer at the end: {self.consumer_state or '?'}")
            out.append(f"broker: {self.broker_view or '?'}")
            out.append("group events:\n  " + "\n  ".join(self.events or ["(none)"]))
        return out


class _GroupEvents(logging.Handler):
    """Keeps kafka-python's INFO-and-above records about one group or topic (joins,
    assignments, heartbeat and commit failures, offset resets), the last `keep` of them,
    timestamped: the story of a consumer that got nothing."""

    _LOGGERS = ("kafka.coordinator", "kafka.consumer")
    _installed = 0  # handlers installed: the loggers' levels are restored with the last
    _levels: dict[str, int] = {}

    def __init__(self, group: str, topic: str, keep: int = 200) -> None:
        super().__init__(logging.INFO)
        self.pattern = re.compile(rf"(?<![\w-])({re.escape(group)}|{re.escape(topic)})(?![\w-])")
        self.records: deque[str] = deque(maxlen=keep)
        self.started = time.time()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001  (a bad format string is not ours to raise)
            return
        if self.pattern.search(message):
            self.records.append(
                f"{record.created - self.started:7.2f} s {record.name} {record.levelname}: {message[:300]}"
            )

    def install(self) -> None:
        cls = type(self)
        for name in self._LOGGERS:
            logger = logging.getLogger(name)
            if cls._installed == 0:
                cls._levels[name] = logger.level
                if logger.getEffectiveLevel() > logging.INFO:
                    logger.setLevel(logging.INFO)
            logger.addHandler(self)
        cls._installed += 1

    def uninstall(self) -> None:
        cls = type(self)
        cls._installed -= 1
        for name in self._LOGGERS:
            logger = logging.getLogger(name)
            logger.removeHandler(self)
            if cls._installed == 0:
                logger.setLevel(cls._levels.pop(name, logging.NOTSET))


def broker_view(cluster: Any, group: str, topic: str) -> Callable[[], str]:
    """The broker's side of a healthy client, for its report: the group's state,
    generation and members, its committed offsets, and the topic's partitions (leader,
    log start, high watermark, end). `cluster` is a running MockCluster."""

    def read() -> str:
        details = cluster.groups.group_details(group)
        committed = {f"{t}-{p}": c.offset for (t, p), c in cluster.groups.offsets.get(group, {}).items()}
        found = cluster.state.topics.get(topic)
        partitions = (
            [
                (p.index, p.leader, p.log.log_start_offset, p.log.high_watermark, p.log.log_end_offset)
                for p in found.partitions
            ]
            if found is not None
            else None
        )
        return (
            f"group {group}: {details}; committed offsets {committed}; topic {topic} "
            f"(partition, leader, log start, high watermark, end): {partitions}"
        )

    return lambda: str(cluster.on_loop(read))


def await_pending_joins(consumer: Any) -> None:
    """Works around a kafka-python 3.0.12 bug that left the healthy consumer of the
    fuzz tests with nothing for a whole run under load: its coordinator's `need_rejoin()`
    forgets a join still in flight. A rejoin asked for because the leader's assignment
    was made from stale metadata (the first generation of a group on a fresh client,
    assigned before its metadata named the topic: "No partition metadata for topic")
    stops being needed the moment that join's leader assignment refreshes the snapshot,
    so when `poll()`'s timeout ends between JoinGroup and the SyncGroup answer, no later
    poll awaits the join: the assignment is never applied, heartbeats stay disabled,
    the broker expires the member and LeaveGroup at close gets UNKNOWN_MEMBER_ID. Java's
    AbstractCoordinator.rejoinNeededOrPending() is `rejoinNeeded || joinFuture != null`;
    this gives the consumer's coordinator the same (tests/reliability/test_fuzz_healthy.py
    shows the bug and the cure)."""
    coordinator = consumer._coordinator
    need_rejoin = coordinator.need_rejoin

    def rejoin_needed_or_pending() -> bool:
        return bool(need_rejoin()) or coordinator._join_task is not None

    coordinator.need_rejoin = rejoin_needed_or_pending


class HealthyClient:
    """A real kafka-python producer (acks=all) and consumer (a group) on one topic,
    working in their own threads while the fuzzer runs: every record acknowledged must
    be consumed, in order. `security` goes to both clients (SASL settings); `describe`
    gives the broker's view of the group and topic for the report (`broker_view`)."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        group: str,
        client_id: str,
        interval_s: float = 0.02,
        describe: Callable[[], str] | None = None,
        **security: Any,
    ) -> None:
        from kafka import KafkaConsumer, KafkaProducer  # the client only where a healthy one runs

        self.topic, self.group, self.interval_s, self.describe = topic, group, interval_s, describe
        self.events = _GroupEvents(group, topic)
        self.events.install()
        self.producer = KafkaProducer(
            bootstrap_servers=bootstrap_servers, client_id=client_id, acks="all", linger_ms=0, **security
        )
        self.consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap_servers,
            client_id=client_id,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=True,
            auto_commit_interval_ms=500,
            **security,
        )
        await_pending_joins(self.consumer)
        # Outcomes, not futures: each future holds locks and events, and a long run sends
        # hundreds of thousands of records.
        self.sent = 0
        self.acknowledged = Numbers()
        self.failed: list[str] = []  # the first KEEP
        self.failed_count = 0
        self.received = Numbers()
        self.consumed = self.out_of_order = 0
        self._last_received = -1
        self.foreign: list[bytes] = []  # the first KEEP
        self.foreign_count = 0
        self.crashed: str | None = None
        self._stop_producing = threading.Event()
        self._stop_consuming = threading.Event()
        self._threads = [
            threading.Thread(target=self._produce, name="healthy-producer", daemon=True),
            threading.Thread(target=self._consume, name="healthy-consumer", daemon=True),
        ]

    def start(self) -> HealthyClient:
        for thread in self._threads:
            thread.start()
        return self

    def _produce(self) -> None:
        try:
            while not self._stop_producing.wait(self.interval_s):
                number = self.sent
                future = self.producer.send(self.topic, value=str(number).encode())
                future.add_callback(self._acknowledged, number)
                future.add_errback(self._failed, number)
                self.sent += 1
        except Exception as exc:  # noqa: BLE001  (reported, not raised in a thread)
            self.crashed = f"producer thread stopped: {exc!r}"

    KEEP = 10  # failures and foreign records kept to show (the rest are counted)

    def _acknowledged(self, number: int, metadata: Any) -> None:
        self.acknowledged.add(number)

    def _failed(self, number: int, exc: Exception) -> None:
        self.failed_count += 1
        if len(self.failed) < self.KEEP:
            self.failed.append(f"record {number}: {exc!r}")

    def _consume(self) -> None:
        try:
            while not self._stop_consuming.is_set():
                for records in self.consumer.poll(timeout_ms=200).values():
                    for record in records:
                        value = record.value or b""
                        if value.isdigit():
                            number = int(value)
                            self.consumed += 1
                            self.out_of_order += number < self._last_received
                            self._last_received = number
                            self.received.add(number)
                        else:
                            self.foreign_count += 1
                            if len(self.foreign) < self.KEEP:
                                self.foreign.append(bytes(value[:40]))
        except Exception as exc:  # noqa: BLE001
            self.crashed = f"consumer thread stopped: {exc!r}"

    def stop(self, timeout_s: float = 60.0, at_least: int = 10) -> HealthyReport:
        """Stops producing (once `at_least` records were sent), waits for the
        acknowledged records to be consumed (up to `timeout_s`), closes both clients."""
        deadline = time.monotonic() + timeout_s
        while self.sent < at_least and time.monotonic() < deadline:
            time.sleep(self.interval_s)
        self._stop_producing.set()
        self._threads[0].join()
        try:
            self.producer.flush(timeout=timeout_s)
        except Exception as exc:  # noqa: BLE001  (a timeout: what was unanswered is counted below)
            self.crashed = self.crashed or f"producer flush: {exc!r}"
        acknowledged, failed = self.acknowledged, list(self.failed)
        if self.failed_count > len(failed):
            failed.append(f"... and {self.failed_count - len(failed)} more")
        unanswered = self.sent - len(acknowledged) - self.failed_count
        if unanswered:
            failed.append(f"{unanswered} records unanswered")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and acknowledged.missing_from(self.received)[0]:
            time.sleep(0.1)
        self._stop_consuming.set()
        self._threads[1].join()
        consumer_state = self._consumer_state()
        try:
            view = self.describe() if self.describe is not None else ""
        except Exception as exc:  # noqa: BLE001  (a report, not a second failure)
            view = f"not read: {exc!r}"
        for close in (self.consumer.close, lambda: self.producer.close(timeout=10)):
            try:
                close()
            except Exception as exc:  # noqa: BLE001
                self.crashed = self.crashed or f"closing: {exc!r}"
        self.events.uninstall()
        return HealthyReport(
            self.sent,
            acknowledged,
            failed,
            self.received,
            self.consumed,
            self.out_of_order,
            list(self.foreign),
            self.foreign_count,
            self.crashed,
            consumer_state,
            view,
            list(self.events.records),
        )

    def _consumer_state(self) -> str:
        """The consumer's assignment, generation and positions, read from kafka-python's
        internals once its thread has stopped (a report, so nothing here may raise)."""
        try:
            coordinator = self.consumer._coordinator
            generation = coordinator._generation
            partitions = {}
            for tp, state in dict(self.consumer._subscription.assignment).items():
                partitions[f"{tp.topic}-{tp.partition}"] = {
                    "position": getattr(state, "_position", None),
                    "highwater": state.highwater,
                    "awaiting_reset": getattr(state, "awaiting_reset", None),
                    "paused": state.paused,
                }
            return (
                f"assignment {partitions or '{}'}; generation {generation.generation_id} member "
                f"{generation.member_id!r}; state {coordinator.state}; coordinator "
                f"{coordinator.coordinator_id}; join in flight {coordinator._join_task is not None}; "
                f"needs rejoin {coordinator.need_rejoin()}"
            )
        except Exception as exc:  # noqa: BLE001
            return f"not read: {exc!r}"


def batches_of(frames: Iterable[Frame], connections: int) -> list[list[Frame]]:
    """Spreads frames over connections round-robin (a frame that ends its stream goes
    last on its connection)."""
    out: list[list[Frame]] = [[] for _ in range(connections)]
    enders: list[Frame] = []
    for i, frame in enumerate(frames):
        (enders if frame.ends_stream else out[i % connections]).append(frame)
    for i, frame in enumerate(enders[:connections]):
        out[i].append(frame)
    return out


__all__ = [
    "ErrorLog",
    "Finding",
    "Frame",
    "MUTATIONS",
    "Numbers",
    "Pools",
    "RandomSource",
    "RequestGenerator",
    "Source",
    "WireDriver",
    "await_pending_joins",
    "batches_of",
    "broker_view",
    "mutate",
    "raw_token",
    "sasl_exchange",
    "record_pool",
    "response_problem",
]
