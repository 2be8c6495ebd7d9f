"""The what-if's model: recorded requests replayed through this project's own quota code
under a proposed set of quotas. No pyspark here: the Spark job (`spark.what_if_job`)
runs `replay_table` on its executors, one call per group of rows that share state, and
the single-threaded reference of `scripts/bench_spark.py` runs the very same function.

What the broker does per request (broker/throttling.py), the replay does per row, with
the broker's own objects: a `DefaultQuotaCallback` fed the proposal as AlterClientQuotas
would feed it (default entities, the 8-level precedence, the metric-tag rule), and per
group fresh `ClientQuotaManager`s (produce, fetch) and a `RequestQuotaManager` whose
`sensors_for`, `record`, `unrecord` and `record_no_throttle` are the broker's calls:
sampled windows, padding, expiry, the throttle formula and its caps, NaN limits.

Inputs per row. A row written while a quota type was on (`quotas_on`) carries what that
type's sensor was fed: when (`quota_ms`), the bytes (`quota_bytes`), the thread time
(`request_time`) and the network time recorded after the response
(`request_time_after`, at `request_time_after_ms`); a missing value then means the
request was not subject to it (SASL handshakes, acks=0, a failed fetch session). For a
type that was off, the row is subject by its API, as the broker decides, and its input is
estimated: the request size (produce), the response size (fetch), `handler_us` (request
quota), at the time the response was written (`ts` + `total_us`).

Groups. Rows interact through a shared sensor (same broker run, quota type and metric
tags), through their connection (closed loop: a mute delays the connection's later
requests) and within a fetch (a throttled fetch takes its bytes back). `assign_groups`
joins those into connected components over the distinct (broker, run, connection,
principal, client id) identities, which are few, so rows never meet on the driver.

Time model. Closed loop (default): a connection is muted for the throttle it gets, so its
later requests shift by the extra mute, predicted minus recorded throttle; the recorded
gaps between requests are kept (never moving a request before the one it followed).
Open loop: every request at its recorded time. Replaying a run under the quotas it ran
with gives every row its recorded throttle, so nothing shifts and the replay is exact.

Not replayed: controller_mutation_rate (a row throttled by it keeps its recorded throttle,
the request quota still applies), connection_creation_rate, custom quota callbacks, and
throttles injected by faults (kept where the row says nothing else throttled it).
"""

from __future__ import annotations

import heapq
import json
import sqlite3
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quotas.callback import (
    QUOTA_TYPE_OF_KEY,
    ClientQuotaEntity,
    ClientQuotaType,
    DefaultQuotaCallback,
    KafkaPrincipal,
)
from quotas.entity import ENTITY_TYPES, IP, QuotaEntity
from quotas.key_types import IP_KEYS, USER_CLIENT_KEYS, whole_number_problem
from quotas.manager import NANOS_TO_PERCENTAGE, ClientQuotaManager, ClientSensors, RequestQuotaManager
from quotas.sensor import WindowConfig

PRODUCE_KEY, FETCH_KEY, SHARE_FETCH_KEY = 0, 1, 78
FETCH_KEYS = (FETCH_KEY, SHARE_FETCH_KEY)  # a share fetch is measured as a fetch (KafkaApis)
MUTATION_KEYS = frozenset((19, 20, 37))  # CreateTopics, DeleteTopics, CreatePartitions
# Never measured by the request quota: SASL (before a session exists; the broker records
# nothing while authenticating) and WriteTxnMarkers (a cluster action).
REQUEST_EXEMPT_KEYS = frozenset((17, 36, 27))
FETCH_SESSION_ID_NOT_FOUND = 70  # answered before the fetch quota is recorded
FLEXIBLE_FETCH_SINCE = 12  # response header v1 (one byte of tagged fields) from Fetch v12
US_PER_HANDLER_PERCENT = 1000 * NANOS_TO_PERCENTAGE  # handler_us -> percent-seconds
PRODUCE_ON, FETCH_ON, REQUEST_ON = 1, 2, 4  # quotas_on bits (spark/schema.py)

REPLAYED = (ClientQuotaType.PRODUCE, ClientQuotaType.FETCH, ClientQuotaType.REQUEST)

# The columns `replay_table` reads (`ts_us` is `ts` as epoch microseconds) and the ones it adds.
INPUT_COLUMNS = (
    "ts_us",
    "broker_id",
    "run_id",
    "connection_id",
    "seq",
    "principal",
    "client_id",
    "api_key",
    "api_version",
    "acks",
    "error_code",
    "request_bytes",
    "response_bytes",
    "handler_us",
    "total_us",
    "throttle_time_ms",
    "throttle_cause",
    "quotas_on",
    "quota_ms",
    "quota_bytes",
    "request_time",
    "request_time_after",
    "request_time_after_ms",
)
# Codes of OUTPUT_COLUMNS' quota_type and predicted_cause (small integers cross from
# Python to the JVM far cheaper than strings): QUOTA_TYPES[code], CAUSE_NAMES[code].
QUOTA_TYPES = ("produce", "fetch", "request")
PRODUCE_TYPE, FETCH_TYPE, REQUEST_TYPE = range(3)
CAUSE_NAMES = ("none", "produce", "fetch", "request", "mutation")  # as the throttle_cause column
CAUSE_NONE, CAUSE_PRODUCE, CAUSE_FETCH, CAUSE_REQUEST, CAUSE_MUTATION = range(5)
OUTPUT_COLUMNS = (
    ("quota_type", "int8"),  # the row's own quota: produce, fetch, else request
    ("amount", "double"),  # what it counts against that quota: bytes, or percent-seconds
    ("request_amount", "double"),  # what it counts against the request quota (percent-seconds)
    ("predicted_throttle_ms", "int32"),
    ("predicted_cause", "int8"),
    ("predicted_ts_us", "int64"),
    ("shift_ms", "int64"),  # predicted_ts - ts, in ms (closed loop)
)

_CARRIED = frozenset(("none", "mutation", CAUSE_NONE, CAUSE_MUTATION))
_MUTATION = frozenset(("mutation", CAUSE_MUTATION))

Change = tuple[QuotaEntity, str, float | None]  # None: remove the key
Identity = tuple[int, int | None, int, str, str | None]  # broker, run, connection, principal, client id


# -- proposals -------------------------------------------------------------------------


class ProposalError(ValueError):
    """A proposal file that cannot be used; the message says where and why."""


def read_proposal(path: str | Path) -> list[Change]:
    """The changes a proposal file makes, in order: a state dir's `quotas.sqlite` (every
    stored quota), or JSON as the HTTP control plane speaks it: POST /v1/quotas bodies
    ({"entity": {...}, "set": {...}, "remove": [...]}) or GET /v1/quotas entries
    ({"entity": {...}, "values": {...}}), one object or a list of them."""
    path = Path(path)
    if path.is_dir() and (path / "quotas.sqlite").is_file():
        path = path / "quotas.sqlite"
    try:
        with path.open("rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise ProposalError(f"{path}: {exc.strerror or exc}") from exc
    if head.startswith(b"SQLite format 3"):
        return read_quota_sqlite(path)
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProposalError(f"{path}: neither a quotas.sqlite nor JSON: {exc}") from exc
    entries = body if isinstance(body, list) else [body]
    changes: list[Change] = []
    for i, entry in enumerate(entries):
        changes.extend(_json_entry(entry, f"{path}: entry {i}"))
    return changes


def read_quota_sqlite(path: str | Path) -> list[Change]:
    """Every quota of a state dir's quotas.sqlite, as quotas.store.SqliteQuotaStorage
    writes it: (entity JSON, key, value as a big-endian double)."""
    try:
        db = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True)
        try:
            rows = db.execute("SELECT entity, quota_key, value FROM client_quotas ORDER BY rowid").fetchall()
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise ProposalError(f"{path}: not a quotas.sqlite: {exc}") from exc
    changes: list[Change] = []
    for entity, key, value in rows:
        changes.append((QuotaEntity(json.loads(entity)), key, struct.unpack(">d", value)[0]))
    return changes


def _json_entry(entry: Any, where: str) -> list[Change]:
    if not isinstance(entry, dict) or "entity" not in entry:
        raise ProposalError(f'{where}: expected an object with "entity" and "set", "remove" or "values"')
    unknown = set(entry) - {"entity", "set", "remove", "values", "validate_only"}
    if unknown:
        raise ProposalError(f"{where}: unknown fields {sorted(unknown)}")
    if entry.get("validate_only"):
        return []  # the control plane would change nothing
    raw = entry["entity"]
    if not isinstance(raw, dict) or not raw:
        raise ProposalError(f'{where}: entity must be a non-empty object such as {{"user": "alice"}}')
    for entity_type, name in raw.items():
        if entity_type not in ENTITY_TYPES:
            raise ProposalError(f"{where}: unknown entity type {entity_type!r}")
        if name is not None and (not isinstance(name, str) or not name):
            raise ProposalError(f"{where}: {entity_type} must be a non-empty name or null (the default)")
    entity = QuotaEntity(raw)
    if IP in entity and len(entity) > 1:
        raise ProposalError(f"{where}: an ip entity cannot have user or client-id")
    allowed = IP_KEYS if IP in entity else USER_CLIENT_KEYS
    changes: list[Change] = []
    for field in ("values", "set"):
        values = entry.get(field) or {}
        if not isinstance(values, dict):
            raise ProposalError(f"{where}: {field} must be an object of quota keys to numbers")
        for key, value in values.items():
            if key not in allowed:
                raise ProposalError(f"{where}: {key} is not a quota key of {entity.display()}")
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ProposalError(f"{where}: {key} must be a number above 0, not {value!r}")
            problem = whole_number_problem(key, value)  # what the control plane refuses too
            if problem is not None:
                raise ProposalError(f"{where}: {problem}")
            changes.append((entity, key, float(value)))
    remove = entry.get("remove") or []
    if not isinstance(remove, list) or not all(isinstance(key, str) for key in remove):
        raise ProposalError(f"{where}: remove must be an array of quota keys")
    changes.extend((entity, key, None) for key in remove)
    return changes


def apply_changes(changes: Iterable[Change]) -> dict[QuotaEntity, dict[str, float]]:
    """The quotas after `changes`, applied in order over none."""
    configs: dict[QuotaEntity, dict[str, float]] = {}
    for entity, key, value in changes:
        if value is None:
            values = configs.get(entity, {})
            values.pop(key, None)
            if not values:
                configs.pop(entity, None)
        else:
            configs.setdefault(entity, {})[key] = value
    return configs


# -- the replay's configuration ----------------------------------------------------------


@dataclass(frozen=True)
class ReplayConfig:
    """A proposal and how to replay it. `quotas` holds plain tuples (entity items, key,
    value), not QuotaEntity objects: it is pickled to the executors, and a QuotaEntity
    carries its hash, which differs between Python processes."""

    quotas: tuple[tuple[tuple[tuple[str, str | None], ...], str, float], ...]
    samples: int = 11  # quota.window.num
    window_ms: int = 1000  # quota.window.size.seconds x 1000
    closed_loop: bool = True

    @classmethod
    def of(
        cls,
        configs: Mapping[QuotaEntity, Mapping[str, float]],
        samples: int = 11,
        window_seconds: int = 1,
        closed_loop: bool = True,
    ) -> ReplayConfig:
        if samples < 1 or window_seconds < 1:
            raise ValueError("quota.window.num and quota.window.size.seconds must be at least 1")
        quotas = tuple(
            (tuple(entity.items()), key, float(value))
            for entity, values in configs.items()
            for key, value in sorted(values.items())
        )
        return cls(quotas, samples, window_seconds * 1000, closed_loop)

    @property
    def window(self) -> WindowConfig:
        return WindowConfig(self.samples, self.window_ms)

    def entities(self) -> dict[QuotaEntity, dict[str, float]]:
        configs: dict[QuotaEntity, dict[str, float]] = {}
        for items, key, value in self.quotas:
            configs.setdefault(QuotaEntity(items), {})[key] = value
        return configs

    def callback(self) -> DefaultQuotaCallback:
        """Kafka's default callback told of every quota of the proposal, as the broker's
        QuotaManagers tell it of each AlterClientQuotas change. One per process and
        proposal (it is only read afterwards)."""
        found = _CALLBACKS.get(self)
        if found is None:
            found = DefaultQuotaCallback()
            for items, key, value in self.quotas:
                quota_type = QUOTA_TYPE_OF_KEY.get(key)
                entity = QuotaEntity(items)
                if quota_type is not None and IP not in entity:
                    found.update_quota(quota_type, ClientQuotaEntity.of(entity), value)
            _CALLBACKS.clear()  # one proposal at a time per process is the rule
            _CALLBACKS[self] = found
        return found


_CALLBACKS: dict[ReplayConfig, DefaultQuotaCallback] = {}


def principal_of(text: str) -> KafkaPrincipal:
    """ "User:alice" (the metrics column) -> KafkaPrincipal("User", "alice")."""
    kind, sep, name = text.partition(":")
    return KafkaPrincipal(kind, name) if sep else KafkaPrincipal("User", text)


# -- groups ----------------------------------------------------------------------------


def assign_groups(identities: Iterable[Identity], config: ReplayConfig) -> dict[Identity, int]:
    """A group number per identity (broker, run, connection, principal, client id): the
    connected components of identities joined by a shared connection or by a sensor the
    proposal makes them share (same broker run, quota type and metric tags). Groups are
    numbered 0.. in the order of their first identity."""
    callback = config.callback()
    types = [t for t in REPLAYED if callback.has_quotas(t)]
    parent: dict[Any, Any] = {}

    def find(node: Any) -> Any:
        root = node
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[node] != root:  # path compression
            parent[node], node = root, parent[node]
        return root

    def union(a: Any, b: Any) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra

    listed = list(identities)
    tags_of: dict[tuple[ClientQuotaType, str, str], tuple[str, ...]] = {}
    for identity in listed:
        broker, run, connection, principal, client_id = identity
        node = ("c", broker, run, connection)
        union(node, ("i", identity))
        for quota_type in types:
            key = (quota_type, principal, client_id or "")
            tags = tags_of.get(key)
            if tags is None:
                found = callback.quota_metric_tags(quota_type, principal_of(principal), client_id or "")
                tags = tags_of[key] = tuple(sorted(found.items()))  # type: ignore[arg-type]
            union(node, ("s", broker, run, quota_type.value, tags))
    numbers: dict[Any, int] = {}
    return {identity: numbers.setdefault(find(("i", identity)), len(numbers)) for identity in listed}


# -- the replay ------------------------------------------------------------------------


def _inputs(cols: Mapping[str, Sequence[Any]], i: int) -> tuple[Any, ...]:
    """One row's inputs (see the module docstring for the rules): (quota type code, when
    its quotas are checked in quota clock ms, produce bytes, fetch bytes, request time,
    request time after the response and when, carried throttle, carried by the mutation
    quota), a sensor's input None where the row is not subject to it."""
    api_key = cols["api_key"][i]
    on = cols["quotas_on"][i]
    on = -1 if on is None else on  # schema 1: nothing recorded, estimate every type
    quota_ms = cols["quota_ms"][i]
    rec_ms = quota_ms if quota_ms is not None else (cols["ts_us"][i] + cols["total_us"][i]) // 1000
    produce = fetch = request = extra = None
    extra_ms = 0
    if api_key == PRODUCE_KEY:
        kind = PRODUCE_TYPE
        produce = cols["quota_bytes"][i] if on >= 0 and on & PRODUCE_ON else float(cols["request_bytes"][i])
    elif api_key in FETCH_KEYS:
        kind = FETCH_TYPE
        if on >= 0 and on & FETCH_ON:
            fetch = cols["quota_bytes"][i]
        elif cols["error_code"][i] != FETCH_SESSION_ID_NOT_FOUND:
            flexible = api_key == SHARE_FETCH_KEY or cols["api_version"][i] >= FLEXIBLE_FETCH_SINCE
            header = 5 if flexible else 4
            fetch = float(cols["response_bytes"][i] - header + 4)
    else:
        kind = REQUEST_TYPE
    if on >= 0 and on & REQUEST_ON:
        request = cols["request_time"][i]
        extra = cols["request_time_after"][i]
        if extra is not None:
            extra_ms = cols["request_time_after_ms"][i]
    elif api_key not in REQUEST_EXEMPT_KEYS and not (api_key == PRODUCE_KEY and cols["acks"][i] == 0):
        request = cols["handler_us"][i] * US_PER_HANDLER_PERCENT
    observed = cols["throttle_time_ms"][i]
    cause = cols["throttle_cause"][i]  # its name, or its code in CAUSE_NAMES
    # Throttles the replay does not compute stay as recorded: a controller mutation
    # throttle (it was the larger one when the cause says so), a fault's forced one.
    carried = observed if observed > 0 and cause in _CARRIED else 0
    return kind, rec_ms, produce, fetch, request, extra, extra_ms, carried, cause in _MUTATION


def replay_columns(
    cols: Mapping[str, Sequence[Any]],
    config: ReplayConfig,
    pairs: Mapping[tuple[str, str | None], int] | None = None,
) -> dict[str, list[Any]]:
    """Replays one group's rows (INPUT_COLUMNS, any order) under `config`; returns the
    OUTPUT_COLUMNS for the rows in their input order (quota type and cause as codes of
    QUOTA_TYPES and CAUSE_NAMES), and with `pairs` a "pair" column: the number `pairs`
    gives each row's (principal, client id)."""
    callback = config.callback()
    window = config.window
    produce = ClientQuotaManager(ClientQuotaType.PRODUCE, callback, window)
    fetch = ClientQuotaManager(ClientQuotaType.FETCH, callback, window)
    request = RequestQuotaManager(callback, window)
    produce_on, fetch_on, request_on = produce.enabled, fetch.enabled, request.enabled
    ts_us, seq, observed = cols["ts_us"], cols["seq"], cols["throttle_time_ms"]
    principal_texts, client_ids = cols["principal"], cols["client_id"]
    n = len(ts_us)
    inputs = [_inputs(cols, i) for i in range(n)]
    out_type: list[Any] = [None] * n
    out_amount: list[Any] = [None] * n
    out_request: list[Any] = [None] * n
    out_throttle: list[Any] = [None] * n
    out_cause: list[Any] = [None] * n
    out_ts: list[Any] = [None] * n
    out_shift: list[Any] = [None] * n

    # Per connection, its rows in the order the broker handled them (seq, else ts).
    order = sorted(range(n), key=lambda i: (-1 if seq[i] is None else seq[i], ts_us[i], i))
    brokers, runs, connection_ids = cols["broker_id"], cols["run_id"], cols["connection_id"]
    queues: dict[tuple[Any, Any, Any], list[int]] = {}
    for i in order:
        queues.setdefault((brokers[i], runs[i], connection_ids[i]), []).append(i)
    # Every connection's next row, earliest (shifted) sensor time first, then the broker's
    # order: the order the sensors see their events in.
    rank = {i: position for position, i in enumerate(order)}
    heap = [(inputs[q[0]][1], rank[q[0]], number, 0) for number, q in enumerate(queues.values())]
    heapq.heapify(heap)
    queue_list = list(queues.values())
    shift_us = [0] * len(queue_list)
    principals: dict[str, KafkaPrincipal] = {}
    closed = config.closed_loop
    while heap:
        key_ms, _, number, position = heapq.heappop(heap)
        queue = queue_list[number]
        i = queue[position]
        kind, rec_ms, produce_bytes, fetch_bytes, request_time, extra, extra_ms, carried, by_mutation = (
            inputs[i]
        )
        shift = shift_us[number]
        shift_ms = shift // 1000
        now = rec_ms + shift_ms
        principal = principals.get(principal_texts[i])
        if principal is None:
            principal = principals[principal_texts[i]] = principal_of(principal_texts[i])
        client_id = client_ids[i] or ""
        # The broker's steps (broker/throttling.py): byte quota, request quota, combine.
        bandwidth = requested = 0
        byte_cause = CAUSE_NONE
        request_sensors: ClientSensors | None = None
        if produce_bytes is not None and produce_on:
            sensors = produce.sensors_for(principal, client_id, now)
            bandwidth, byte_cause = produce.record(sensors, produce_bytes, now), CAUSE_PRODUCE
        if request_time is not None and request_on:
            request_sensors = request.sensors_for(principal, client_id, now)
            requested = request.record(request_sensors, request_time, now)
        if fetch_bytes is not None and fetch_on:
            sensors = fetch.sensors_for(principal, client_id, now)
            bandwidth, byte_cause = fetch.record(sensors, fetch_bytes, now), CAUSE_FETCH
            if bandwidth > 0 or requested > 0:  # a throttled fetch sends nothing: taken back
                fetch.unrecord(sensors, fetch_bytes, now)
        if by_mutation:  # the mutation quota's throttle, combined like the others
            bandwidth, byte_cause = carried, CAUSE_MUTATION
        if bandwidth <= 0 and requested <= 0:
            throttle, cause = 0, CAUSE_NONE
        elif bandwidth > requested and byte_cause != CAUSE_NONE:
            throttle, cause = bandwidth, byte_cause
        else:
            throttle, cause = requested, CAUSE_REQUEST
        if carried > throttle:  # a fault's forced throttle
            throttle = carried
        if request_sensors is not None and extra is not None:
            request.record_no_throttle(request_sensors, extra, extra_ms + shift_ms)

        request_amount = None if request_time is None else request_time + (extra or 0.0)
        out_type[i] = kind
        out_amount[i] = (
            produce_bytes if kind == PRODUCE_TYPE else fetch_bytes if kind == FETCH_TYPE else request_amount
        )
        out_request[i] = request_amount
        out_throttle[i] = throttle
        out_cause[i] = cause
        out_ts[i] = ts_us[i] + shift
        out_shift[i] = shift_ms

        if position + 1 < len(queue):
            after = queue[position + 1]
            if closed:
                # Muted for `throttle` instead of the recorded time: the next request comes
                # that much later (or sooner), never before this one.
                shift = max(shift + (throttle - observed[i]) * 1000, ts_us[i] + shift - ts_us[after])
                shift_us[number] = shift
            heapq.heappush(
                heap, (max(inputs[after][1] + shift // 1000, key_ms), rank[after], number, position + 1)
            )
    found: dict[str, list[Any]] = {}
    if pairs is not None:
        found["pair"] = [pairs[(principal_texts[i], client_ids[i])] for i in range(n)]
    return {
        **found,
        "quota_type": out_type,
        "amount": out_amount,
        "request_amount": out_request,
        "predicted_throttle_ms": out_throttle,
        "predicted_cause": out_cause,
        "predicted_ts_us": out_ts,
        "shift_ms": out_shift,
    }


def proposed_limits(
    entities: Iterable[tuple[str, str | None]], config: ReplayConfig
) -> list[tuple[str, str | None, str, float | None, str, str, str]]:
    """Per (principal, client id) and replayed quota type: (principal, client id, quota
    type, limit, user tag, client-id tag, the entity giving the limit) under the proposal."""
    callback = config.callback()
    found = []
    for principal, client_id in entities:
        for quota_type in REPLAYED:
            limit = _limit(callback, quota_type, principal_of(principal), client_id or "")
            found.append((principal, client_id, QUOTA_TYPES[REPLAYED.index(quota_type)], *limit))
    return found


def _limit(
    callback: DefaultQuotaCallback, quota_type: ClientQuotaType, principal: KafkaPrincipal, client_id: str
) -> tuple[float | None, str, str, str]:
    """(limit, user tag, client-id tag, the entity that gives the limit) under the proposal."""
    if not callback.has_quotas(quota_type):
        return None, "", "", ""
    tags = callback.quota_metric_tags(quota_type, principal, client_id)
    user, client = tags.get("user", ""), tags.get("client-id", "")
    found = callback.index.limit_entity(quota_type.quota_key, user, client)
    if found is None:
        return None, user, client, ""
    value, entity = found
    return value, user, client, entity.display()


def pack_groups(rows_per_group: Mapping[int, int], buckets: int) -> dict[int, int]:
    """A bucket per group, `buckets` at most, balanced by rows (largest group first, into
    the bucket with the fewest rows so far): a bucket is one call of the replay on an
    executor, and a call has a fixed cost, so thousands of small groups go a few hundred
    to a call."""
    heap = [(0, bucket) for bucket in range(max(1, min(buckets, len(rows_per_group))))]
    assigned = {}
    for group, rows in sorted(rows_per_group.items(), key=lambda item: (-item[1], item[0])):
        load, bucket = heapq.heappop(heap)
        assigned[group] = bucket
        heapq.heappush(heap, (load + rows, bucket))
    return assigned


def replay_groups(
    table: Any,
    config: ReplayConfig,
    group_column: str = "group",
    pairs: Mapping[tuple[str, str | None], int] | None = None,
) -> Any:
    """`replay_table` for each group of `table` (a pyarrow Table with `group_column`):
    the replayed rows, group after group."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return replay_table(table, config)
    table = table.take(pc.sort_indices(table, [(group_column, "ascending")]))
    groups = table.column(group_column).to_pylist()
    parts = []
    start = 0
    for end in range(1, len(groups) + 1):
        if end == len(groups) or groups[end] != groups[start]:
            parts.append(replay_table(table.slice(start, end - start), config, pairs))
            start = end
    return pa.concat_tables(parts).combine_chunks()  # one chunk, not one per group


def replay_table(
    table: Any, config: ReplayConfig, pairs: Mapping[tuple[str, str | None], int] | None = None
) -> Any:
    """`replay_columns` over a pyarrow Table (INPUT_COLUMNS and any others): the Table
    with the OUTPUT_COLUMNS (and with `pairs`, "pair") appended, rows in the same order."""
    import pyarrow as pa

    cols = {name: table.column(name).to_pylist() for name in INPUT_COLUMNS}
    out = replay_columns(cols, config, pairs)
    if pairs is not None:
        table = table.append_column("pair", pa.array(out["pair"], type=pa.int32()))
    types = {"int8": pa.int8(), "double": pa.float64(), "int32": pa.int32(), "int64": pa.int64()}
    for name, kind in OUTPUT_COLUMNS:
        table = table.append_column(name, pa.array(out[name], type=types[kind]))
    return table
