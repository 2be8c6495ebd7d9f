"""The request-metrics sink: one row per request, to Parquet files Spark can read, and
(KIP-714) one row per metric data point clients push, as a second table.

Rows are buffered on the event loop flat, their values one after another in one list
(no object per row: a tuple kept per request was a container the garbage collector
counted and walked, which cost more than building it), and handed in batches to one
writer thread. It turns each batch into Arrow columns a column at a time (a slice of the
flat list each; the request table's per-connection, derived and constant columns in C,
see `MetricsSink._arrays`), splits it by broker and UTC day with integer arithmetic, and
writes each file under a hidden temporary name and renames it into
`broker=<id>/date=<yyyy-mm-dd>/`: a reader only ever sees whole `.parquet` files, even
after kill -9. Files roll by rows (`metrics.roll.rows`) and by time (`metrics.roll.ms`).
The buffer is bounded (`metrics.buffer.rows`): when the writer falls behind, connections
stop reading (backpressure) until it catches up, so no row is ever dropped.

Client metrics go the same way into `_client_metrics/` under the same directory (the
leading underscore keeps them out of Spark's and pyarrow's reads of the request table).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime
import itertools
import logging
import os
import struct
import time
from collections import Counter, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker.context import RequestContext
from broker.extras import require
from broker.pipeline import Observer
from broker.telemetry.manager import TelemetryPush
from messages.registry import api_name
from quotas.callback import ClientQuotaType
from quotas.manager import QuotaManagers
from quotas.sensor import Metric
from spark.schema import CLIENT_METRICS_DIR, arrow_schema, client_metrics_arrow_schema

log = logging.getLogger("broker.metrics")

Row = tuple[Any, ...]
TS_COLUMN = 0  # the columns every table starts with: ts (UTC µs), then broker_id
BROKER_COLUMN = 1
DAY_US = 86_400_000_000
EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()
# Monotonic request times to wall-clock microseconds.
EPOCH_OFFSET_NS = time.time_ns() - time.monotonic_ns()
# The quota clock (monotonic ms) to UTC ms: one integer offset, so differences between a
# run's quota times stay exact (a sensor's windows depend on them to the millisecond).
EPOCH_OFFSET_MS = EPOCH_OFFSET_NS // 1_000_000
RUN_ID = time.time_ns() // 1000  # this process's run: seq and connection ids restart with it
PRODUCE_OR_FETCH = (0, 1, 78)  # the APIs whose quota_sensors are a byte-rate sensor (78: ShareFetch)
CAUSES = ("none", "produce", "fetch", "request", "mutation")  # throttle_cause, by the code a row keeps
THROTTLE_CAUSE = {  # the code of each quota type's cause
    ClientQuotaType.PRODUCE: 1,
    ClientQuotaType.FETCH: 2,
    ClientQuotaType.REQUEST: 3,
    ClientQuotaType.CONTROLLER_MUTATION: 4,
}
_API_NAMES: dict[int, str] = {}
_ERROR_FIELDS: dict[type, tuple[bool, tuple[str, ...]]] = {}


class ParquetTable:
    """One table: rows buffered on the loop, written by its own thread as whole files.

    The buffer is flat: `width` values per row, one row after another. `add` appends a
    row's values; `_arrays` turns a batch of them into the schema's columns (each column
    by default: the row's value at its position)."""

    def __init__(
        self,
        directory: str | Path,
        schema: Any,
        roll_rows: int = 100_000,
        roll_ms: int = 10_000,
        buffer_rows: int = 400_000,
        width: int | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.roll_rows = max(1, roll_rows)
        self.roll_ms = max(1, roll_ms)
        self.buffer_rows = max(self.roll_rows, buffer_rows)
        self.schema = schema
        self.width = width if width is not None else len(schema)
        # Dictionary-encoded in the files: the string columns (few distinct values each).
        # Numbers are written plain: their dictionaries took a quarter of the write's
        # time for files 7 % smaller; readers see the same values either way.
        self._dictionary_columns = [field.name for field in schema if str(field.type) == "string"]
        self._values: list[Any] = []  # the rows not yet handed to the writer, flat
        self._writing_rows = 0  # handed to the writer, not yet on disk
        self._added_before = 0  # rows_added, less the rows in _values
        # add() looks at the timer, a roll and the backlog only once _values is this long.
        self._check_len = self.width
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="metrics-sink")
        self._in_flight: set[asyncio.Future[Any]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sequence = itertools.count()
        self._closed = False
        # Told True when the backlog reaches `buffer_rows` (stop reading requests) and
        # False once it has drained (read again).
        self.backlog_listeners: list[Callable[[bool], None]] = []
        self._held = False
        self.rows_written = 0
        self.files_written = 0
        self.bytes_written = 0
        self.write_errors = 0

    @property
    def rows_added(self) -> int:
        return self._added_before + len(self._values) // self.width

    @property
    def backlogged(self) -> bool:
        """True while more rows wait than `metrics.buffer.rows`: stop reading requests."""
        return self.lag_rows >= self.buffer_rows

    @property
    def lag_rows(self) -> int:
        return len(self._values) // self.width + self._writing_rows

    def add(self, row: Row) -> None:
        """One row: `width` values."""
        values = self._values
        values += row
        if len(values) >= self._check_len:
            self._check()

    def _check(self) -> None:
        """What add() does once in a while: hold reading at the backlog, roll at
        `roll_rows`, start the roll timer for the first row after a roll."""
        rows = len(self._values) // self.width
        if not self._held and rows + self._writing_rows >= self.buffer_rows:
            self._held = True
            for listener in self.backlog_listeners:
                listener(True)
        if rows >= self.roll_rows:
            self._roll()
        elif self._timer is None and rows:
            loop = self._loop = self._loop or asyncio.get_running_loop()
            self._timer = loop.call_later(self.roll_ms / 1000, self._roll)
        self._next_check()

    def _next_check(self) -> None:
        """The buffer length at which add() must call _check again."""
        if self._timer is None:
            rows = 1
        elif self._held:
            rows = self.roll_rows
        else:
            rows = min(self.roll_rows, self.buffer_rows - self._writing_rows)
        self._check_len = max(rows, len(self._values) // self.width + 1) * self.width

    def _roll(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        values = self._values
        if values:
            rows = len(values) // self.width
            self._values = []
            self._added_before += rows
            self._writing_rows += rows
            loop = self._loop = self._loop or asyncio.get_running_loop()
            future = loop.run_in_executor(self._executor, self._write, values, next(self._sequence))
            self._in_flight.add(future)
            future.add_done_callback(lambda done: self._written(done, values))
        self._next_check()

    def _written(self, done: asyncio.Future[Any], values: list[Any]) -> None:
        self._in_flight.discard(done)
        rows = len(values) // self.width
        self._writing_rows -= rows
        if done.cancelled() or done.exception() is not None:
            failed, files, size = values, 0, 0
            error: BaseException | None = None if done.cancelled() else done.exception()
        else:
            failed, files, size, error = done.result()
        failed_rows = len(failed) // self.width
        self.rows_written += rows - failed_rows
        self.files_written += files
        self.bytes_written += size
        if failed:
            # Kept for the next roll rather than lost: a full disk may recover.
            self.write_errors += 1
            log.error("writing %d metrics rows failed (retried on the next roll): %s", failed_rows, error)
            self._values[:0] = failed
            self._added_before -= failed_rows
            if self._timer is None and not self._closed and self._loop is not None:
                self._timer = self._loop.call_later(self.roll_ms / 1000, self._roll)
        if self._held and not self.backlogged:
            self._held = False
            for listener in self.backlog_listeners:
                listener(False)
        self._next_check()

    def _arrays(self, values: list[Any]) -> list[Any]:
        """Writer thread: the schema's columns (pyarrow arrays) of a batch of rows."""

        width = self.width
        return [_column(values[i::width], field.type) for i, field in enumerate(self.schema)]

    def _write(self, values: list[Any], sequence: int) -> tuple[list[Any], int, int, BaseException | None]:
        """Writer thread: one file per (broker, UTC date) among the rows. Returns the
        values of the rows of files that failed (the others are on disk, so a retry never
        duplicates)."""
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        try:
            table = pa.Table.from_arrays(self._arrays(values), schema=self.schema)
            groups = _groups(table)
        except Exception as exc:  # reported and retried by the loop side
            return values, 0, 0, exc
        failed: list[Any] = []
        error: BaseException | None = None
        files = size = 0
        width = self.width
        for broker_id, day, mask in groups:
            group = table if mask is None else table.filter(mask)
            try:
                date = datetime.date.fromordinal(EPOCH_ORDINAL + day).isoformat()
                folder = self.directory / f"broker={broker_id}" / f"date={date}"
                folder.mkdir(parents=True, exist_ok=True)
                first_ts = group.column(TS_COLUMN)[0].value
                name = f"part-{first_ts:016d}-{os.getpid()}-{sequence:06d}.parquet"
                temporary = folder / f".{name}.tmp"
                pq.write_table(group, temporary, use_dictionary=self._dictionary_columns)
                os.replace(temporary, folder / name)
            except Exception as exc:  # reported and retried by the loop side
                if mask is None:
                    failed = values
                else:
                    for row in pc.indices_nonzero(mask).to_pylist():
                        failed += values[row * width : (row + 1) * width]
                error = exc
                continue
            files += 1
            size += (folder / name).stat().st_size
        return failed, files, size, error

    async def close(self, attempts: int = 3) -> None:
        """Writes every buffered row and waits for the writer (SIGTERM, stop); a failing
        write is retried `attempts` times, then the rows left are reported as lost."""
        if self._closed:
            return
        self._closed = True
        for _ in range(attempts):
            self._roll()
            while self._in_flight:
                await asyncio.gather(*list(self._in_flight), return_exceptions=True)
            if not self._values:
                break
        if self._values:
            log.error("%d metrics rows could not be written and are lost", len(self._values) // self.width)
        await asyncio.get_running_loop().run_in_executor(None, self._executor.shutdown)


def _groups(table: Any) -> list[tuple[int, int, Any]]:
    """Writer thread: the (broker id, UTC day since 1970, row mask) of each file to
    write, in the order of their first rows; mask None: the whole table (one broker and
    one day, the usual batch). Days by integer division of the µs timestamp (floored),
    not a datetime per row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    day = _floor_divide(table.column(TS_COLUMN).cast(pa.int64()), DAY_US)
    broker = table.column(BROKER_COLUMN)
    days, brokers = pc.min_max(day), pc.min_max(broker)
    if days["min"] == days["max"] and brokers["min"] == brokers["max"]:
        return [(brokers["min"].as_py(), days["min"].as_py(), None)]
    keys = pa.table({"broker": broker, "day": day, "row": pa.array(range(table.num_rows), pa.int64())})
    found = keys.group_by(["broker", "day"], use_threads=False).aggregate([("row", "min")])
    return [
        (broker_id, day_number, pc.and_(pc.equal(broker, broker_id), pc.equal(day, day_number)))
        for broker_id, day_number, _ in sorted(
            zip(*(found.column(name).to_pylist() for name in ("broker", "day", "row_min")), strict=True),
            key=lambda group: group[2],
        )
    ]


def _column(values: list[Any], type: Any) -> Any:
    """Writer thread: `pa.array(values, type)`, the same array; an all-null column (the
    quota columns while no quota is set) without pyarrow looking at each value. (Lists of
    numbers gain nothing through array.array or struct: ~350 instructions a value either
    way in this build, and `list.count(None)` costs half of that again.)"""
    import pyarrow as pa

    count = len(values)
    if count and values[0] is None and values[-1] is None and values == [None] * count:
        return pa.nulls(count, type)
    return pa.array(values, type)


def _floor_divide(values: Any, divisor: int) -> Any:
    """Python's // over an int64 array (Arrow's divide truncates toward zero)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    quotient = pc.divide(values, divisor)
    below = pc.greater(pc.multiply(quotient, divisor), values)  # only where negative and inexact
    return pc.subtract(quotient, below.cast(pa.int64()))


# A request's row as buffered on the loop: what changes from request to request, and
# no more (`MetricsSink._arrays` makes spark/schema.py's columns of it in the writer
# thread). Its integers go packed, one `struct` record of int64s per request (PACKED):
# pyarrow's converter of Python ints costs ~350 instructions a value, the pack a fifth of
# that, and the writer reads each field as a column of the records in C. The receive and
# done times are in ns (ts, handler_us and total_us are computed in the writer),
# throttle_cause is its index in CAUSES, and a None among the nullable integers packs as
# NULL_INT. Then `origin`, for the eight columns that stay while a connection's
# principal, client id and client software do, and the quota columns that may be None or
# not integers. No api_name or run_id: the API key and the process give them.
PACKED = (
    "received_ns",
    "api_key",
    "api_version",
    "correlation_id",
    "request_bytes",
    "response_bytes",
    "busy_ns",
    "done_ns",
    "throttle_time_ms",
    "throttle_cause",
    "error_code",
    "error_count",
    "record_count",  # nullable: NULL_INT
    "partition_count",  # nullable: NULL_INT
    "acks",  # nullable: NULL_INT
    "seq",
    "quotas_on",
)
NULLABLE_PACKED = ("record_count", "partition_count", "acks")
NULL_INT = -(2**63)  # outside each nullable packed column's type (int32, int16)
PACK = struct.Struct(f"={len(PACKED)}q").pack  # native order: Arrow's
ROW_VALUES = (
    "packed",
    "origin",
    "quota_user",
    "quota_client_id",
    "quota_limit",
    "quota_rate",
    "quota_ms",
    "quota_bytes",
    "request_time",
    "request_time_after",
    "request_time_after_ms",
)
ROW_WIDTH = len(ROW_VALUES)
ORIGIN_COLUMNS = (
    "broker_id",
    "listener",
    "connection_id",
    "client_host",
    "principal",
    "client_id",
    "client_software_name",
    "client_software_version",
)


class Origin:
    """Who sent a connection's requests: the row's per-connection columns, built once
    and kept in the connection's memo while its principal (re-authentication), client
    id (any request may change it) and client software (ApiVersions) stay. Hashed by
    identity, so the writer finds a batch's distinct origins cheaply. It also keeps the
    broker's quotas_on while its quota managers' `epoch` stays (a manager's `enabled`
    changes only with it): one attribute of an object the quota step touched already,
    instead of two each of four managers the request may not have touched."""

    __slots__ = (
        "principal",
        "client_id",
        "software_name",
        "software_version",
        "values",
        "quota_managers",
        "quota_epoch",
        "quotas_on",
    )

    def __init__(self, ctx: RequestContext) -> None:
        connection = ctx.connection
        self.principal = connection.principal
        self.client_id = ctx.client_id
        self.software_name = connection.client_software_name
        self.software_version = connection.client_software_version
        self.values = (  # in ORIGIN_COLUMNS' order
            ctx.broker.node_id,
            connection.listener,
            connection.connection_id,
            connection.peer[0],
            str(self.principal),
            self.client_id,
            self.software_name or None,
            self.software_version or None,
        )
        self.quotas(ctx.broker.quota_managers)
        connection.memo[Origin] = self

    def quotas(self, managers: QuotaManagers) -> int:
        """The quota types on now (the quotas_on column), remembered with the epoch."""
        self.quota_managers = managers
        self.quota_epoch = managers.epoch
        self.quotas_on = (
            managers.produce.enabled
            | managers.fetch.enabled << 1
            | managers.request.enabled << 2
            | managers.controller_mutation.enabled << 3
        )
        return self.quotas_on


class MetricsSink(ParquetTable, Observer):
    """The request table, observing every broker's pipeline, and the client metrics
    table, fed by the brokers' telemetry exporters."""

    def __init__(
        self,
        directory: str | Path,
        roll_rows: int = 100_000,
        roll_ms: int = 10_000,
        buffer_rows: int = 400_000,
    ) -> None:
        require("metrics")  # pyarrow: MissingExtra, not a traceback
        super().__init__(directory, arrow_schema(), roll_rows, roll_ms, buffer_rows, ROW_WIDTH)
        # The order requests finish in: a request records its quotas just before its
        # observers run, with nothing in between, so this is the order of the recordings.
        self._seq = itertools.count()
        self.client_metrics = ParquetTable(
            self.directory / CLIENT_METRICS_DIR,
            client_metrics_arrow_schema(),
            roll_rows,
            roll_ms,
            buffer_rows,
        )

    def request_done(self, ctx: RequestContext, response: Any) -> None:
        """One row: the values of ROW_VALUES (its integers packed as PACKED), added to
        the buffer. Written out in one function (no call per request for the row: this
        runs once per request, and a call costs as much as a tenth of it).

        The quota columns are what the quota sensors were fed (see spark/schema.py): the
        sensors keep the last values recorded, and nothing else records on them between
        this request's recording and this row (both run in one step on the event loop)."""
        if ctx.disconnected:
            return  # a row per answered (or acks=0) request
        connection = ctx.connection
        client_id = ctx.client_id
        origin = connection.memo.get(Origin)
        if (
            origin is None
            or origin.client_id != client_id
            or origin.principal is not connection.principal
            or origin.software_name is not connection.client_software_name
            or origin.software_version is not connection.client_software_version
        ):
            origin = Origin(ctx)
        if ctx.error_code is not None:
            error_code, error_count = ctx.error_code, ctx.error_count
        else:
            error_code, error_count = error_summary(response) if response is not None else (0, 0)
        managers = ctx.broker.quota_managers
        if origin.quota_epoch == managers.epoch and origin.quota_managers is managers:
            quotas_on = origin.quotas_on
        else:
            quotas_on = origin.quotas(managers)
        request_sensors = ctx.request_sensors
        quota_sensors = ctx.quota_sensors
        sensors = quota_sensors or request_sensors
        cause = 0  # "none"
        throttled_by = ctx.throttled_by
        if throttled_by is not None and ctx.throttle_ms > 0:
            manager, sensors = throttled_by
            cause = THROTTLE_CAUSE[manager.quota_type]
        packed = PACK(
            ctx.received_ns,
            ctx.api_key,
            ctx.api_version,
            ctx.correlation_id,
            ctx.request_bytes,
            ctx.response_bytes,
            ctx.busy_ns,
            ctx.done_ns,
            ctx.throttle_ms,
            cause,
            error_code,
            error_count,
            NULL_INT if ctx.record_count is None else ctx.record_count,
            NULL_INT if ctx.partition_count is None else ctx.partition_count,
            NULL_INT if ctx.acks is None else ctx.acks,
            next(self._seq),
            quotas_on,
        )
        values = self._values  # add(), inline
        if sensors is None:  # nothing recorded on a quota (none of the kind set): the usual row
            values += (packed, origin, None, None, None, None, None, None, None, None, None)
            if len(values) >= self._check_len:
                self._check()
            return
        quota_ms = quota_bytes = request_time = request_time_after = request_time_after_ms = None
        if request_sensors is not None:
            quota_ms = request_sensors.last_check_ms + EPOCH_OFFSET_MS
            request_time = request_sensors.last_value
            if response is not None:  # the response's encoding was recorded after it
                request_time_after = request_sensors.last_extra
                request_time_after_ms = request_sensors.last_record_ms + EPOCH_OFFSET_MS
        if quota_sensors is not None and ctx.api_key in PRODUCE_OR_FETCH:
            quota_ms = quota_sensors.last_check_ms + EPOCH_OFFSET_MS  # the same time
            quota_bytes = quota_sensors.last_value
        tags = sensors.tags
        values += (
            packed,
            origin,
            tags.get("user"),
            tags.get("client-id"),
            sensors.bound,
            sensors.last_rate,
            quota_ms,
            quota_bytes,
            request_time,
            request_time_after,
            request_time_after_ms,
        )
        if len(values) >= self._check_len:
            self._check()

    def _arrays(self, values: list[Any]) -> list[Any]:
        """Writer thread: spark/schema.py's columns of a batch of buffered rows. The
        derived columns are computed on whole columns in Arrow, exactly as Python would
        per row (floored division); each distinct origin's columns are converted once
        and spread over its rows."""
        import pyarrow as pa
        import pyarrow.compute as pc

        column = {name: values[i::ROW_WIDTH] for i, name in enumerate(ROW_VALUES)}
        types = {field.name: field.type for field in self.schema}
        count = len(column["origin"])
        records = pa.FixedSizeListArray.from_arrays(
            pa.Array.from_buffers(
                pa.int64(), count * len(PACKED), [None, pa.py_buffer(b"".join(column["packed"]))]
            ),
            len(PACKED),
        )
        packed = {name: pc.list_element(records, i) for i, name in enumerate(PACKED)}
        for name in NULLABLE_PACKED:
            packed[name] = pc.if_else(
                pc.equal(packed[name], NULL_INT), pa.scalar(None, pa.int64()), packed[name]
            )
        received = packed["received_ns"]
        api_keys = packed["api_key"].cast(types["api_key"])
        keys = pc.unique(api_keys)
        names = pa.array([_api_name(key) for key in keys.to_pylist()], pa.string())
        arrays = {
            "ts": _floor_divide(pc.add(received, EPOCH_OFFSET_NS), 1000).cast(types["ts"]),
            "api_key": api_keys,
            "api_name": names.take(pc.index_in(api_keys, value_set=keys)),
            "handler_us": _floor_divide(packed["busy_ns"], 1000),
            "total_us": _floor_divide(pc.subtract(packed["done_ns"], received), 1000),
            "throttle_cause": pa.array(CAUSES, pa.string()).take(packed["throttle_cause"]),
            "run_id": pa.repeat(pa.scalar(RUN_ID, types["run_id"]), count),
        }
        for name in PACKED:
            if name in types and name not in arrays:
                arrays[name] = packed[name].cast(types[name])  # safe: out of range fails the write
        origins = column["origin"]
        distinct = list(dict.fromkeys(origins))
        if len(distinct) == 1:
            for value, name in zip(distinct[0].values, ORIGIN_COLUMNS, strict=True):
                arrays[name] = pa.repeat(pa.scalar(value, types[name]), count)
        else:
            index = {origin: i for i, origin in enumerate(distinct)}
            rows = _column(list(map(index.__getitem__, origins)), pa.int32())
            for i, name in enumerate(ORIGIN_COLUMNS):
                arrays[name] = pa.array([origin.values[i] for origin in distinct], types[name]).take(rows)
        return [
            arrays[field.name] if field.name in arrays else _column(column[field.name], field.type)
            for field in self.schema
        ]

    def export_client_metrics(self, push: TelemetryPush) -> None:
        """A telemetry exporter: one row per pushed data point."""
        for row in client_metrics_rows(push):
            self.client_metrics.add(row)

    async def close(self, attempts: int = 3) -> None:
        await self.client_metrics.close(attempts)
        await super().close(attempts)

    def metrics(self) -> list[Metric]:
        group = "metrics-sink"
        return [
            Metric("rows-added", group, {}, float(self.rows_added)),
            Metric("rows-written", group, {}, float(self.rows_written)),
            Metric("files-written", group, {}, float(self.files_written)),
            Metric("bytes-written", group, {}, float(self.bytes_written)),
            Metric("lag-rows", group, {}, float(self.lag_rows)),
            Metric("write-errors", group, {}, float(self.write_errors)),
        ]


def _api_name(api_key: int) -> str:
    name = _API_NAMES.get(api_key)
    if name is None:
        name = _API_NAMES[api_key] = api_name(api_key)
    return name


def client_metrics_rows(push: TelemetryPush) -> list[Row]:
    """The client metrics rows of one push, columns in spark/schema.py's order."""
    client = push.client
    received_us = int(push.received_ms * 1000)
    instance_id = str(push.instance_id)
    return [
        (
            point.time_ns // 1000 if point.time_ns else received_us,
            client.broker_id,
            instance_id,
            client.client_id,
            client.software_name,
            client.software_version,
            client.principal,
            client.address,
            client.connection_id,
            point.name,
            point.kind,
            point.temporality,
            point.start_ns // 1000 if point.start_ns else None,
            point.value,
            list(point.attributes.items()),
            received_us,
        )
        for point in push.points
    ]


def error_summary(response: Any) -> tuple[int, int]:
    """(the top-level error code, else the first non-zero one; how many are non-zero)."""
    codes = error_codes(response)
    return next(iter(codes), 0), sum(codes.values())


def error_codes(response: Any) -> Counter[int]:
    """Every non-zero error code in a response, counted, in the order first met walking
    its nested structs breadth first (so the top-level one comes first)."""
    found: Counter[int] = Counter()
    queue: deque[Any] = deque([response])
    while queue:
        item = queue.popleft()
        has_error, nested = error_fields(type(item))
        code = item.error_code if has_error else 0
        if code:
            found[code] += 1
        for field in nested:
            value = getattr(item, field, None)
            if isinstance(value, list):
                queue.extend(value)
            elif value is not None:
                queue.append(value)
    return found


def error_fields(cls: type) -> tuple[bool, tuple[str, ...]]:
    """Whether a message class has error_code, and its struct (array) fields; cached."""
    found = _ERROR_FIELDS.get(cls)
    if found is None:
        struct = getattr(cls, "_struct", None)
        fields = struct.fields.values() if struct is not None else ()
        nested = tuple(f.name for f in fields if f.is_struct() or f.is_struct_array())
        found = _ERROR_FIELDS[cls] = (any(f.name == "error_code" for f in fields), nested)
    return found
