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
from quotas.manager import NANOS_TO_PERCENTAGE, ClientQuotaManager, ClientSensors, RequestQuotaManager
from quotas.sensor import WindowConfig

PRODUCE_KEY, FETCH_KEY = 0, 1
MUTATION_KEYS = frozenset((19, 20, 37))  # CreateTopics, DeleteTopics, CreatePartitions
# Never measured by the request quota: SASL (before a session exists; the broker records
# nothing while authenticating) and WriteTxnMarkers (a cluster action).
REQUEST_EXEMPT_KEYS = frozenset((17, 36, 27))
FETCH_SESSION_ID_NOT_FOUND = 70  # answered before the fetch quota is recorded
FLEXIBLE_FETCH_SINCE = 12  # response header v1 (one byte of tagged fields) from Fetch v12
US_PER_HANDLER_PERCENT = 1000 * NANOS_TO_PERCENTAGE  # handler_us -> percent-seconds
PRODUCE_ON, FETCH_ON, REQUEST_ON = 1, 2, 4  # quotas_on bits (spark/schema.py)

USER_CLIENT_KEYS = frozenset(QUOTA_TYPE_OF_KEY)
IP_KEYS = frozenset(("connection_creation_rate",))
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
OUTPUT_COLUMNS = (
    ("quota_type", "string"),  # the row's own quota: produce, fetch, else request
    ("amount", "double"),  # what it counts against that quota: bytes, or percent-seconds
    ("request_amount", "double"),  # what it counts against the request quota (percent-seconds)
    ("predicted_throttle_ms", "int32"),
    ("predicted_cause", "string"),
    ("predicted_ts_us", "int64"),
    ("shift_ms", "int64"),  # predicted_ts - ts, in ms (closed loop)
    ("proposed_limit", "double"),  # the proposal's limit for quota_type (null: none)
    ("proposed_user", "string"),  # the metric tags the proposal measures the row under
    ("proposed_client_id", "string"),
    ("limit_entity", "string"),  # the entity giving proposed_limit, e.g. {user=<default>}
)
CAUSES = {
    ClientQuotaType.PRODUCE: "produce",
    ClientQuotaType.FETCH: "fetch",
    ClientQuotaType.REQUEST: "request",
}

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


class _Row:
    """One request's inputs, as the replay needs them (built once per row): the sensors
    it feeds (None: not subject) and with what, when; the throttle it carries over."""

    __slots__ = (
        "index",
        "order",
        "ts_us",
        "rec_ms",
        "principal",
        "client_id",
        "api_key",
        "observed_ms",
        "carried_ms",
        "carried_by_quota",
        "produce",
        "fetch",
        "request",
        "extra",
        "extra_ms",
    )
    index: int
    order: tuple[int, int, int]  # the broker's order: seq (else ts), then input position
    ts_us: int
    rec_ms: int  # when its quotas were (or would have been) checked, quota clock ms
    principal: str
    client_id: str
    api_key: int
    observed_ms: int  # the recorded throttle_time_ms
    carried_ms: int
    carried_by_quota: bool
    produce: float | None
    fetch: float | None
    request: float | None
    extra: float | None
    extra_ms: int


def _rows(cols: Mapping[str, Sequence[Any]]) -> list[_Row]:
    """The replay's view of each row (see the module docstring for the rules)."""
    rows = []
    c = cols
    n = len(c["ts_us"])
    for i in range(n):
        row = _Row()
        row.index = i
        seq = c["seq"][i]
        ts_us = c["ts_us"][i]
        row.order = (seq if seq is not None else -1, ts_us, i)
        row.ts_us = ts_us
        quota_ms = c["quota_ms"][i]
        row.rec_ms = quota_ms if quota_ms is not None else (ts_us + c["total_us"][i]) // 1000
        row.principal = c["principal"][i]
        row.client_id = c["client_id"][i] or ""
        api_key = row.api_key = c["api_key"][i]
        observed = row.observed_ms = c["throttle_time_ms"][i]
        cause = c["throttle_cause"][i]
        # Throttles the replay does not compute stay as recorded: a controller mutation
        # throttle (it was the larger one when the cause says so), a fault's forced one.
        row.carried_ms = observed if cause in ("mutation", "none") and observed > 0 else 0
        row.carried_by_quota = cause == "mutation"
        on = c["quotas_on"][i]
        on = -1 if on is None else on  # schema 1: nothing recorded, estimate every type
        recorded_bytes = c["quota_bytes"][i]
        row.produce = row.fetch = row.request = row.extra = None
        row.extra_ms = 0
        if api_key == PRODUCE_KEY:
            if on >= 0 and on & PRODUCE_ON:
                row.produce = recorded_bytes
            else:
                row.produce = float(c["request_bytes"][i])
        elif api_key == FETCH_KEY:
            if on >= 0 and on & FETCH_ON:
                row.fetch = recorded_bytes
            elif c["error_code"][i] != FETCH_SESSION_ID_NOT_FOUND:
                header = 5 if c["api_version"][i] >= FLEXIBLE_FETCH_SINCE else 4
                row.fetch = float(c["response_bytes"][i] - header + 4)
        if on >= 0 and on & REQUEST_ON:
            row.request = c["request_time"][i]
            row.extra = c["request_time_after"][i]
            if row.extra is not None:
                row.extra_ms = c["request_time_after_ms"][i]
        elif api_key not in REQUEST_EXEMPT_KEYS and not (api_key == PRODUCE_KEY and c["acks"][i] == 0):
            row.request = c["handler_us"][i] * US_PER_HANDLER_PERCENT
        rows.append(row)
    return rows


def replay_columns(cols: Mapping[str, Sequence[Any]], config: ReplayConfig) -> dict[str, list[Any]]:
    """Replays one group's rows (INPUT_COLUMNS, any order) under `config`; returns the
    OUTPUT_COLUMNS for the rows in their input order."""
    callback = config.callback()
    window = config.window
    produce = ClientQuotaManager(ClientQuotaType.PRODUCE, callback, window)
    fetch = ClientQuotaManager(ClientQuotaType.FETCH, callback, window)
    request = RequestQuotaManager(callback, window)
    rows = _rows(cols)
    n = len(rows)
    out: dict[str, list[Any]] = {name: [None] * n for name, _ in OUTPUT_COLUMNS}

    # Per connection, its rows in the order the broker handled them.
    connections: dict[tuple[Any, Any, Any], list[_Row]] = {}
    for row in sorted(rows, key=lambda r: r.order):
        i = row.index
        key = (cols["broker_id"][i], cols["run_id"][i], cols["connection_id"][i])
        connections.setdefault(key, []).append(row)
    # Every connection's next row, earliest (shifted) sensor time first, then the broker's
    # order: the order the sensors see their events in.
    heap: list[tuple[int, tuple[Any, ...], int, int]] = []
    shift_us: list[int] = []
    queues = list(connections.values())
    for number, queue in enumerate(queues):
        shift_us.append(0)
        first = queue[0]
        heapq.heappush(heap, (first.rec_ms, first.order, number, 0))
    limits: dict[tuple[ClientQuotaType, str, str], tuple[float | None, str, str, str]] = {}
    principals: dict[str, KafkaPrincipal] = {}
    closed = config.closed_loop
    while heap:
        key_ms, _, number, position = heapq.heappop(heap)
        queue = queues[number]
        row = queue[position]
        shift = shift_us[number]
        shift_ms = shift // 1000
        now = row.rec_ms + shift_ms
        principal = principals.get(row.principal)
        if principal is None:
            principal = principals[row.principal] = principal_of(row.principal)
        client_id = row.client_id
        # The broker's steps (broker/throttling.py): byte quota, request quota, combine.
        bandwidth = requested = 0
        byte_cause: str | None = None
        request_sensors: ClientSensors | None = None
        if row.produce is not None and produce.enabled:
            sensors = produce.sensors_for(principal, client_id, now)
            bandwidth, byte_cause = produce.record(sensors, row.produce, now), "produce"
        if row.request is not None and request.enabled:
            request_sensors = request.sensors_for(principal, client_id, now)
            requested = request.record(request_sensors, row.request, now)
        if row.fetch is not None and fetch.enabled:
            sensors = fetch.sensors_for(principal, client_id, now)
            bandwidth, byte_cause = fetch.record(sensors, row.fetch, now), "fetch"
            if max(bandwidth, requested) > 0:  # a throttled fetch sends nothing: taken back
                fetch.unrecord(sensors, row.fetch, now)
        if row.carried_by_quota:  # the mutation quota's throttle, combined like the others
            bandwidth, byte_cause = row.carried_ms, "mutation"
        if max(bandwidth, requested) <= 0:
            throttle, cause = 0, "none"
        elif bandwidth > requested and byte_cause is not None:
            throttle, cause = bandwidth, byte_cause
        else:
            throttle, cause = requested, "request"
        if row.carried_ms > throttle:  # a fault's forced throttle
            throttle = row.carried_ms
        if request_sensors is not None and row.extra is not None:
            request.record_no_throttle(request_sensors, row.extra, row.extra_ms + shift_ms)

        i = row.index
        quota_type = (
            ClientQuotaType.PRODUCE
            if row.api_key == PRODUCE_KEY
            else ClientQuotaType.FETCH
            if row.api_key == FETCH_KEY
            else ClientQuotaType.REQUEST
        )
        request_amount = None if row.request is None else row.request + (row.extra or 0.0)
        amount = row.produce if quota_type is ClientQuotaType.PRODUCE else row.fetch
        if quota_type is ClientQuotaType.REQUEST:
            amount = request_amount
        limit_key = (quota_type, row.principal, client_id)
        found = limits.get(limit_key)
        if found is None:
            found = limits[limit_key] = _limit(callback, quota_type, principal, client_id)
        out["quota_type"][i] = CAUSES[quota_type]
        out["amount"][i] = amount
        out["request_amount"][i] = request_amount
        out["predicted_throttle_ms"][i] = throttle
        out["predicted_cause"][i] = cause
        out["predicted_ts_us"][i] = row.ts_us + shift
        out["shift_ms"][i] = shift_ms
        out["proposed_limit"][i], out["proposed_user"][i], out["proposed_client_id"][i] = found[:3]
        out["limit_entity"][i] = found[3]

        if position + 1 < len(queue):
            after = queue[position + 1]
            if closed:
                # Muted for `throttle` instead of the recorded time: the next request comes
                # that much later (or sooner), never before this one.
                shift += (throttle - row.observed_ms) * 1000
                shift = max(shift, row.ts_us + shift_us[number] - after.ts_us)
                shift_us[number] = shift
            heapq.heappush(
                heap, (max(after.rec_ms + shift // 1000, key_ms), after.order, number, position + 1)
            )
    return out


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
            found.append((principal, client_id, CAUSES[quota_type], *limit))
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


def replay_table(table: Any, config: ReplayConfig) -> Any:
    """`replay_columns` over a pyarrow Table (INPUT_COLUMNS and any others): the Table
    with the OUTPUT_COLUMNS appended, rows in the same order."""
    import pyarrow as pa

    cols = {name: table.column(name).to_pylist() for name in INPUT_COLUMNS}
    out = replay_columns(cols, config)
    types = {"string": pa.string(), "double": pa.float64(), "int32": pa.int32(), "int64": pa.int64()}
    for name, kind in OUTPUT_COLUMNS:
        table = table.append_column(name, pa.array(out[name], type=types[kind]))
    return table
