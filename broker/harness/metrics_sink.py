"""The request-metrics sink: one row per request, to Parquet files Spark can read, and
(KIP-714) one row per metric data point clients push, as a second table.

Rows are buffered on the event loop as tuples (columns in spark/schema.py's order) and
handed in batches to one writer thread, which writes each file under a hidden
temporary name and renames it into `broker=<id>/date=<yyyy-mm-dd>/`: a reader only ever
sees whole `.parquet` files, even after kill -9. Files roll by rows
(`metrics.roll.rows`) and by time (`metrics.roll.ms`). The buffer is bounded
(`metrics.buffer.rows`): when the writer falls behind, connections stop reading
(backpressure) until it catches up, so no row is ever dropped.

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
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from broker.context import RequestContext
from broker.pipeline import Observer
from broker.telemetry.manager import TelemetryPush
from messages.registry import api_name
from quotas.callback import ClientQuotaType
from quotas.sensor import Metric
from spark.schema import CLIENT_METRICS_DIR, arrow_schema, client_metrics_arrow_schema

log = logging.getLogger("broker.metrics")

Row = tuple[Any, ...]
BROKER_COLUMN = 1  # index of broker_id in a row
TS_COLUMN = 0
# Monotonic request times to wall-clock microseconds.
EPOCH_OFFSET_NS = time.time_ns() - time.monotonic_ns()
# The quota clock (monotonic ms) to UTC ms: one integer offset, so differences between a
# run's quota times stay exact (a sensor's windows depend on them to the millisecond).
EPOCH_OFFSET_MS = EPOCH_OFFSET_NS // 1_000_000
RUN_ID = time.time_ns() // 1000  # this process's run: seq and connection ids restart with it
PRODUCE_OR_FETCH = (0, 1)  # the APIs whose quota_sensors are a byte-rate sensor
THROTTLE_CAUSE = {
    ClientQuotaType.PRODUCE: "produce",
    ClientQuotaType.FETCH: "fetch",
    ClientQuotaType.REQUEST: "request",
    ClientQuotaType.CONTROLLER_MUTATION: "mutation",
}
_API_NAMES: dict[int, str] = {}
_ERROR_FIELDS: dict[type, tuple[bool, tuple[str, ...]]] = {}


class ParquetTable:
    """One table: rows buffered on the loop, written by its own thread as whole files."""

    def __init__(
        self,
        directory: str | Path,
        schema: Any,
        roll_rows: int = 100_000,
        roll_ms: int = 10_000,
        buffer_rows: int = 400_000,
    ) -> None:
        self.directory = Path(directory)
        self.roll_rows = max(1, roll_rows)
        self.roll_ms = max(1, roll_ms)
        self.buffer_rows = max(self.roll_rows, buffer_rows)
        self.schema = schema
        self._rows: list[Row] = []
        self._writing_rows = 0  # handed to the writer, not yet on disk
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
        self.rows_added = 0
        self.rows_written = 0
        self.files_written = 0
        self.bytes_written = 0
        self.write_errors = 0

    @property
    def backlogged(self) -> bool:
        """True while more rows wait than `metrics.buffer.rows`: stop reading requests."""
        return len(self._rows) + self._writing_rows >= self.buffer_rows

    @property
    def lag_rows(self) -> int:
        return len(self._rows) + self._writing_rows

    def add(self, row: Row) -> None:
        self._rows.append(row)
        self.rows_added += 1
        if not self._held and self.backlogged:
            self._held = True
            for listener in self.backlog_listeners:
                listener(True)
        if len(self._rows) >= self.roll_rows:
            self._roll()
        elif self._timer is None:
            loop = self._loop = self._loop or asyncio.get_running_loop()
            self._timer = loop.call_later(self.roll_ms / 1000, self._roll)

    def _roll(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._rows:
            return
        rows, self._rows = self._rows, []
        self._writing_rows += len(rows)
        loop = self._loop = self._loop or asyncio.get_running_loop()
        future = loop.run_in_executor(self._executor, self._write, rows, next(self._sequence))
        self._in_flight.add(future)
        future.add_done_callback(lambda done: self._written(done, rows))

    def _written(self, done: asyncio.Future[Any], rows: list[Row]) -> None:
        self._in_flight.discard(done)
        self._writing_rows -= len(rows)
        if done.cancelled() or done.exception() is not None:
            failed, files, size = rows, 0, 0
            error: BaseException | None = None if done.cancelled() else done.exception()
        else:
            failed, files, size, error = done.result()
        self.rows_written += len(rows) - len(failed)
        self.files_written += files
        self.bytes_written += size
        if failed:
            # Kept for the next roll rather than lost: a full disk may recover.
            self.write_errors += 1
            log.error("writing %d metrics rows failed (retried on the next roll): %s", len(failed), error)
            self._rows[:0] = failed
            if self._timer is None and not self._closed and self._loop is not None:
                self._timer = self._loop.call_later(self.roll_ms / 1000, self._roll)
        if self._held and not self.backlogged:
            self._held = False
            for listener in self.backlog_listeners:
                listener(False)

    def _write(self, rows: Sequence[Row], sequence: int) -> tuple[list[Row], int, int, BaseException | None]:
        """Writer thread: one file per (broker, UTC date) among the rows. Returns the rows
        of files that failed (the others are on disk, so a retry never duplicates)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        groups: dict[tuple[int, str], list[Row]] = {}
        for row in rows:
            day = datetime.datetime.fromtimestamp(row[TS_COLUMN] / 1e6, datetime.UTC).date().isoformat()
            groups.setdefault((row[BROKER_COLUMN], day), []).append(row)
        failed: list[Row] = []
        error: BaseException | None = None
        files = size = 0
        for (broker_id, day), group in groups.items():
            try:
                columns = list(zip(*group, strict=True))
                arrays = [pa.array(c, type=field.type) for c, field in zip(columns, self.schema, strict=True)]
                table = pa.Table.from_arrays(arrays, schema=self.schema)
                folder = self.directory / f"broker={broker_id}" / f"date={day}"
                folder.mkdir(parents=True, exist_ok=True)
                name = f"part-{group[0][TS_COLUMN]:016d}-{os.getpid()}-{sequence:06d}.parquet"
                temporary = folder / f".{name}.tmp"
                pq.write_table(table, temporary)
                os.replace(temporary, folder / name)
            except Exception as exc:  # reported and retried by the loop side
                failed.extend(group)
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
            if not self._rows:
                break
        if self._rows:
            log.error("%d metrics rows could not be written and are lost", len(self._rows))
        await asyncio.get_running_loop().run_in_executor(None, self._executor.shutdown)


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
        super().__init__(directory, arrow_schema(), roll_rows, roll_ms, buffer_rows)
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
        if not ctx.disconnected:  # a row per answered (or acks=0) request
            self.add(request_row(ctx, response, next(self._seq)))

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


def request_row(ctx: RequestContext, response: Any, seq: int | None = None) -> Row:
    """The metrics row of one answered request, columns in spark/schema.py's order.

    The last columns are what the quota sensors were fed (see spark/schema.py): the
    sensors keep the last values recorded, and nothing else records on them between
    this request's recording and this row (both run in one step on the event loop)."""
    connection = ctx.connection
    name = _API_NAMES.get(ctx.api_key)
    if name is None:
        name = _API_NAMES[ctx.api_key] = api_name(ctx.api_key)
    cause = "none"
    sensors = ctx.quota_sensors or ctx.request_sensors
    if ctx.throttle_ms > 0 and ctx.throttled_by is not None:
        manager, sensors = ctx.throttled_by
        cause = THROTTLE_CAUSE[manager.quota_type]
    if ctx.error_code is not None:
        error_code, error_count = ctx.error_code, ctx.error_count
    else:
        error_code, error_count = error_summary(response) if response is not None else (0, 0)
    managers = ctx.broker.quota_managers
    quotas_on = (
        managers.produce.enabled
        | managers.fetch.enabled << 1
        | managers.request.enabled << 2
        | managers.controller_mutation.enabled << 3
    )
    quota_ms = quota_bytes = request_time = request_time_after = request_time_after_ms = None
    request_sensors = ctx.request_sensors
    if request_sensors is not None:
        quota_ms = request_sensors.last_check_ms + EPOCH_OFFSET_MS
        request_time = request_sensors.last_value
        if response is not None:  # the response's encoding was recorded after it
            request_time_after = request_sensors.last_extra
            request_time_after_ms = request_sensors.last_record_ms + EPOCH_OFFSET_MS
    if ctx.quota_sensors is not None and ctx.api_key in PRODUCE_OR_FETCH:
        quota_ms = ctx.quota_sensors.last_check_ms + EPOCH_OFFSET_MS  # the same time
        quota_bytes = ctx.quota_sensors.last_value
    return (
        (ctx.received_ns + EPOCH_OFFSET_NS) // 1000,
        ctx.broker.node_id,
        connection.listener,
        connection.connection_id,
        connection.peer[0],
        str(connection.principal),
        ctx.client_id,
        connection.client_software_name or None,
        connection.client_software_version or None,
        ctx.api_key,
        name,
        ctx.api_version,
        ctx.correlation_id,
        ctx.request_bytes,
        ctx.response_bytes,
        ctx.busy_ns // 1000,
        (ctx.done_ns - ctx.received_ns) // 1000,
        ctx.throttle_ms,
        cause,
        sensors.tags.get("user") if sensors is not None else None,
        sensors.tags.get("client-id") if sensors is not None else None,
        sensors.bound if sensors is not None else None,
        sensors.last_rate if sensors is not None else None,
        error_code,
        error_count,
        ctx.record_count,
        ctx.partition_count,
        ctx.acks,
    ) + (  # two tuples: CPython builds one of more than 30 items through a list, far slower
        RUN_ID,
        seq,
        quotas_on,
        quota_ms,
        quota_bytes,
        request_time,
        request_time_after,
        request_time_after_ms,
    )


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
