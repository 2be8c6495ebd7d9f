"""A decoded response as a plain tree, with only what legitimately differs made equal.

`tree(response, version)` turns a kafka-python response into dicts, lists and scalars.
Arrays of structs become dicts keyed by the field Kafka's schema marks `mapKey`, or by the
first identifying field below (names, API keys, partition indexes): Kafka's collections
are hash maps or sets in many answers, so their order carries no meaning, and a keyed
array gives a difference a stable path (`topics[orders].partitions[0].error_code`).

What is replaced (always on both sides, so equal values stay equal):

- generated identifiers: cluster ids, topic ids (non-zero), member ids (never array
  keys; JoinGroup's `leader` too), producer ids
  (non-negative), delegation token ids and HMACs, the ApiVersions features epoch;
- wall-clock times: fields named `*timestamp*` or `*_time_ms` (never `throttle_time_ms`)
  that are positive (a `*timestamp*` below `CLIENT_TIME_LIMIT` is a scenario's own record
  timestamp, kept);
- where each side listens and writes: `host`, `port`, `log_dir`, a log dir's
  `total_bytes` and `usable_bytes`, and the config values that name local addresses or
  directories (`listeners`, `log.dirs`, ...);
- on request only (`throttle_positive_only`), `throttle_time_ms` as "0" or ">0"; on
  `throttle_timed` steps the runner makes it a `Close` value (zero or not exactly, the
  value within a tolerance it derives from both sides' timings);
- a `records` field (a fetch's record batches) is decoded into each batch's header fields
  and records (`batches`), its timestamps kept when below `CLIENT_TIME_LIMIT` (what the
  scenarios' producers set) and "<append time>" above (a broker's clock under
  LogAppendTime), the CRC as whether it checks.

Nothing else is normalised: error codes, error messages, config sources, synonyms,
documentation, versions and node ids are compared as sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

# Identifying fields of array elements, in order of preference, where the schema names none.
IDENTITY = (
    "api_key",
    "name",
    "topic_name",
    "topic",
    "resource_name",
    "config_name",
    "group_id",
    "transactional_id",
    "partition_index",
    "partition",
    "index",  # Produce's partitions
    "broker_id",
    "node_id",
    "member_id",
    "key",
    "entity_type",
    "path",
    "principal",
    "mechanism",
    "user",
    "error_code",
)

# Config values bound to where each side runs, not to how it behaves.
LOCAL_CONFIGS = frozenset(
    {
        "listeners",
        "advertised.listeners",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "log.dirs",
        "log.dir",
        "metadata.log.dir",
        "listener.security.protocol.map",
        "controller.listener.names",
        "inter.broker.listener.name",
    }
)

# Timestamps a scenario puts in its records are below this (2020); a broker's clock is above.
CLIENT_TIME_LIMIT = 1_577_836_800_000

GENERATED_IDS = frozenset({"cluster_id", "member_id", "token_id", "hmac", "finalized_features_epoch"})
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def tree(message: Any, version: int) -> Any:
    """The fields of `message` present in `version`, as plain values."""
    if message is None:
        return None
    out: dict[str, Any] = {}
    for spec in message._struct._fields:
        if not spec.for_version_q(version):
            continue
        value = getattr(message, spec.name)
        if spec.is_struct():
            out[spec.name] = tree(value, version)
        elif spec.is_struct_array():
            out[spec.name] = None if value is None else keyed(spec, [tree(v, version) for v in value], version)
        elif spec.name == "records" and isinstance(value, bytes | bytearray | memoryview):
            out[spec.name] = bytes(value).hex()  # decoded by normalise (`batches`)
        else:
            out[spec.name] = scalar(spec.to_json(value) if value is not None else None)
    return out


def scalar(value: Any) -> Any:
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, list | tuple):
        return [scalar(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    return value


def keyed(spec: Any, items: list[Any], version: int) -> Any:
    """A struct array as a dict keyed by its identifying field, when it has one whose
    values are unique; else the list, in the order received."""
    if not items:
        return Keyed()
    mapped = spec.map_key[1].name if spec.map_key and spec.map_key[1].for_version_q(version) else None
    candidates = ([mapped] if mapped else []) + [name for name in IDENTITY if all(name in item for item in items)]
    # a generated id (a member id) is no key: it differs between the sides
    candidates = [name for name in candidates if name not in GENERATED_IDS]
    for name in candidates:
        # as normalised: a topic id differs between the sides, its "<topic_id>" does not
        keys = [str(normalise(item.get(name), name)) for item in items]
        if len(set(keys)) == len(keys):
            return Keyed(zip(keys, items, strict=True))
    # No identifying field (e.g. quota entries, keyed by their entity list): the canonical
    # text of the first field, when unique.
    first = next(iter(items[0]))
    keys = [json.dumps(normalise(item.get(first), first), sort_keys=True) for item in items]
    if len(set(keys)) == len(keys):
        return Keyed(zip(keys, items, strict=True))
    return items


def normalise(value: Any, field: str = "", throttle_positive_only: bool = False) -> Any:
    if isinstance(value, Keyed):
        return Keyed((k, normalise(v, field, throttle_positive_only)) for k, v in value.items())
    if isinstance(value, dict):
        out = {k: normalise(v, k, throttle_positive_only) for k, v in value.items()}
        name = out.get("name")
        if isinstance(name, str) and name in LOCAL_CONFIGS and "value" in out and out["value"] is not None:
            out["value"] = "<local>"
        return out
    if isinstance(value, list):
        return [normalise(v, field, throttle_positive_only) for v in value]
    if field == "records" and isinstance(value, str):
        return batches(bytes.fromhex(value))
    if field == "throttle_time_ms":
        return (">0" if value else "0") if throttle_positive_only else value
    if field in GENERATED_IDS and value not in (None, ""):
        return f"<{field}>"
    if field == "leader" and isinstance(value, str) and value:  # JoinGroup's leader: a member id
        return "<member_id>"
    if field == "topic_id" and value not in (None, ZERO_UUID, "00000000-0000-0000-0000-000000000000"):
        return "<topic_id>"
    if field == "producer_id" and isinstance(value, int) and value >= 0:
        return "<producer_id>"
    if field == "log_dir" and value:
        return "<local>"
    if field in ("total_bytes", "usable_bytes") and isinstance(value, int) and value >= 0:
        return "<disk>"
    if field in ("host", "port"):
        return f"<{field}>"
    if "timestamp" in field and isinstance(value, int) and 0 < value < CLIENT_TIME_LIMIT:
        return value  # a scenario's own record timestamp, not a clock's
    if ("timestamp" in field or field.endswith("_time_ms")) and isinstance(value, int) and value > 0:
        return "<time>"
    return value


def batches(data: bytes) -> Any:
    """Record batches (magic 2) as their header fields and records; a trailing partial
    batch (a fetch's size limit) as its size."""
    from kafka.record.default_records import DefaultRecordBatch

    out: list[Any] = []
    position = 0
    while position < len(data):
        if len(data) - position < 17:
            out.append({"partial": len(data) - position})
            break
        length = int.from_bytes(data[position + 8 : position + 12], "big", signed=True)
        if length < 0 or position + 12 + length > len(data):
            out.append({"partial": len(data) - position})
            break
        chunk = data[position : position + 12 + length]
        position += 12 + length
        if chunk[16] != 2:
            out.append({"magic": chunk[16], "size": len(chunk)})
            continue
        batch = DefaultRecordBatch(chunk)
        header: dict[str, Any] = {
            "base_offset": batch.base_offset,
            "last_offset_delta": batch.last_offset_delta,
            "partition_leader_epoch": batch.leader_epoch,
            "attributes": batch.attributes,
            "producer_id": "<producer_id>" if batch.producer_id >= 0 else batch.producer_id,
            "producer_epoch": batch.producer_epoch,
            "base_sequence": batch.base_sequence,
            "record_count": batch.records_count,
            "base_timestamp": _stamp(batch.first_timestamp),
            "max_timestamp": _stamp(batch.max_timestamp),
            "crc_valid": batch.validate_crc(),
        }
        try:
            header["records"] = [_record(r, batch.is_control_batch) for r in batch]
        except Exception as exc:  # noqa: BLE001 (undecodable records are a difference too)
            header["records"] = f"<undecodable: {type(exc).__name__}>"
        out.append(header)
    return out


def _stamp(value: int) -> Any:
    return value if value < CLIENT_TIME_LIMIT else "<append time>"


def _record(record: Any, control: bool) -> dict[str, Any]:
    key, value = record.key, record.value
    return {
        "offset": record.offset,
        "timestamp": _stamp(record.timestamp),
        "key": _bytes(key, control),
        "value": _bytes(value, control),
        "headers": [[k, None if v is None else bytes(v).decode("latin-1")] for k, v in record.headers],
    }


def _bytes(value: Any, control: bool) -> str | None:
    """A control record's key and value as hex, a data record's as text."""
    if value is None:
        return None
    return bytes(value).hex() if control else bytes(value).decode("latin-1")


def differences(reference: Any, mock: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(path, reference value, mock value) for every place the two trees differ."""
    if isinstance(reference, dict) and isinstance(mock, dict):
        for name in list(reference) + [k for k in mock if k not in reference]:
            sub = f"{path}[{name}]" if _is_key(reference, mock) else (f"{path}.{name}" if path else name)
            if name not in mock:
                yield sub, reference[name], "<absent>"
            elif name not in reference:
                yield sub, "<absent>", mock[name]
            else:
                yield from differences(reference[name], mock[name], sub)
    elif isinstance(reference, list) and isinstance(mock, list) and len(reference) == len(mock):
        for index, (a, b) in enumerate(zip(reference, mock, strict=True)):
            yield from differences(a, b, f"{path}[{index}]")
    elif reference != mock:
        yield path or "<answer>", reference, mock


def _is_key(*maps: dict[str, Any]) -> bool:
    """A keyed array (its keys are data), not a struct (its keys are field names)."""
    return any(getattr(m, "keyed", False) for m in maps)


class Close:
    """A timing-dependent number (a throttle time, in ms) that equals another `Close` when
    both are zero or both are not, and they are at most `tolerance` apart (the tolerance
    of either side: the runner gives both sides the same one)."""

    __slots__ = ("tolerance", "value")

    def __init__(self, value: int, tolerance: int) -> None:
        self.value = value
        self.tolerance = tolerance

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Close):
            return NotImplemented
        if (self.value == 0) != (other.value == 0):
            return False
        return abs(self.value - other.value) <= max(self.tolerance, other.tolerance)

    def __hash__(self) -> int:
        return hash(self.value == 0)

    def __str__(self) -> str:
        return f"{self.value} (±{self.tolerance})"

    __repr__ = __str__


def close_throttles(reference: Any, mock: Any, tolerance: int) -> tuple[Any, Any]:
    """Both answers with their top-level `throttle_time_ms` as `Close` values."""
    out = []
    for answer in (reference, mock):
        if isinstance(answer, dict) and isinstance(answer.get("throttle_time_ms"), int):
            answer = {**answer, "throttle_time_ms": Close(answer["throttle_time_ms"], tolerance)}
        out.append(answer)
    return out[0], out[1]


class Keyed(dict[str, Any]):
    """A struct array keyed by its identifying field."""

    keyed = True
