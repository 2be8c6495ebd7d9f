"""The metrics schemas: the one contract between the broker's Parquet sink and the Spark
jobs (and any other reader). Both build their schemas from `COLUMNS` and
`CLIENT_METRICS_COLUMNS` here.

The request table: one row per request, written after its response. The client metrics
table (KIP-714, under `CLIENT_METRICS_DIR` of the same directory): one row per data point
a client pushed. Column names are fixed: tools rely
on them. Bump SCHEMA_VERSION when a column changes; it is stored in every file's
Parquet metadata under SCHEMA_VERSION_KEY.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SCHEMA_VERSION = 2  # 2: the replay columns (run_id .. request_time_after_ms)
SCHEMA_VERSION_KEY = b"kafka_mock_broker.metrics_schema_version"


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    kind: str  # timestamp_us, int16, int32, int64, double, string, map_string
    nullable: bool
    doc: str


COLUMNS: tuple[Column, ...] = (
    Column("ts", "timestamp_us", False, "when the request was received (UTC, microseconds)"),
    Column("broker_id", "int32", False, "node id of the broker that answered"),
    Column("listener", "string", False, "listener name the connection came in on"),
    Column("connection_id", "int64", False, "broker-unique connection number"),
    Column("client_host", "string", False, "client address"),
    Column("principal", "string", False, "e.g. User:ANONYMOUS"),
    Column("client_id", "string", True, "request header client id"),
    Column("client_software_name", "string", True, "from ApiVersions v3+ (KIP-511)"),
    Column("client_software_version", "string", True, "from ApiVersions v3+ (KIP-511)"),
    Column("api_key", "int16", False, "request API key"),
    Column("api_name", "string", False, "Kafka's API name, e.g. Produce"),
    Column("api_version", "int16", False, "request API version"),
    Column("correlation_id", "int32", False, "request header correlation id"),
    Column("request_bytes", "int32", False, "request size: header and body, without the size prefix"),
    Column("response_bytes", "int32", False, "response size without the size prefix; 0 when none was sent"),
    Column("handler_us", "int64", False, "handler and encoding time (the request quota's measure)"),
    Column("total_us", "int64", False, "received to response written"),
    Column("throttle_time_ms", "int32", False, "throttle time sent (or muted, when no response)"),
    Column("throttle_cause", "string", False, "produce, fetch, request, mutation or none"),
    Column("quota_user", "string", True, "user metric tag of the quota that applied"),
    Column("quota_client_id", "string", True, "client-id metric tag of the quota that applied"),
    Column("quota_limit", "double", True, "its limit (bytes/s, percent, mutations/s); null: none"),
    Column("quota_rate", "double", True, "its measured rate at this request"),
    Column("error_code", "int16", False, "top-level error, else the first non-zero one"),
    Column("error_count", "int32", False, "how many error codes in the response are non-zero"),
    Column("record_count", "int32", True, "records produced or fetched (produce/fetch only)"),
    Column("partition_count", "int32", True, "partitions in the request (produce/fetch only)"),
    Column("acks", "int16", True, "produce acks (produce only)"),
    # Schema 2: what the broker's quota sensors were fed, so that spark's what-if replays a
    # run exactly (null in files of schema 1, and where nothing was recorded).
    Column("run_id", "int64", True, "broker process start (UTC us): seq, connections, sensors are per run"),
    Column("seq", "int64", True, "order in which the run finished its requests (and recorded their quotas)"),
    Column("quotas_on", "int16", True, "quota types on then: 1 produce, 2 fetch, 4 request, 8 mutation"),
    Column("quota_ms", "int64", True, "quota clock when this request's quotas were checked (UTC ms, +-1 ms)"),
    Column("quota_bytes", "double", True, "bytes recorded on the produce or fetch sensor"),
    Column("request_time", "double", True, "request quota: thread time recorded, checked (percent x s)"),
    Column("request_time_after", "double", True, "request quota: network time recorded after the response"),
    Column("request_time_after_ms", "int64", True, "quota clock when request_time_after was recorded"),
)

COLUMN_NAMES = tuple(column.name for column in COLUMNS)

CLIENT_METRICS_DIR = "_client_metrics"
CLIENT_METRICS_COLUMNS: tuple[Column, ...] = (
    Column("ts", "timestamp_us", False, "the data point's time (UTC, microseconds; the push's if unset)"),
    Column("broker_id", "int32", False, "node id of the broker the client pushed to"),
    Column("client_instance_id", "string", False, "KIP-714 client instance id (a UUID)"),
    Column("client_id", "string", True, "request header client id of the push"),
    Column("client_software_name", "string", True, "from ApiVersions v3+ (KIP-511)"),
    Column("client_software_version", "string", True, "from ApiVersions v3+ (KIP-511)"),
    Column("principal", "string", False, "e.g. User:ANONYMOUS"),
    Column("client_host", "string", False, "client address"),
    Column("connection_id", "int64", False, "broker-unique connection number"),
    Column("metric", "string", False, "OTLP metric name, e.g. org.apache.kafka.producer.request.latency.avg"),
    Column("kind", "string", False, "gauge, sum, histogram, exponential_histogram or summary"),
    Column("temporality", "string", True, "delta or cumulative (sums and histograms)"),
    Column("start_ts", "timestamp_us", True, "start of a delta or cumulative point"),
    Column("value", "double", False, "the number (histograms and summaries: their sum)"),
    Column("attributes", "map_string", False, "the point's attributes over its resource's"),
    Column("received_ts", "timestamp_us", False, "when the broker received the push"),
)
CLIENT_METRICS_COLUMN_NAMES = tuple(column.name for column in CLIENT_METRICS_COLUMNS)

_ARROW_TYPES = {
    "timestamp_us": lambda pa: pa.timestamp("us", tz="UTC"),
    "int16": lambda pa: pa.int16(),
    "int32": lambda pa: pa.int32(),
    "int64": lambda pa: pa.int64(),
    "double": lambda pa: pa.float64(),
    "string": lambda pa: pa.string(),
    "map_string": lambda pa: pa.map_(pa.string(), pa.string()),
}
SPARK_TYPES = {  # pyspark.sql.types class per kind (spark.jobs builds the StructType)
    "timestamp_us": "TimestampType",
    "int16": "ShortType",
    "int32": "IntegerType",
    "int64": "LongType",
    "double": "DoubleType",
    "string": "StringType",
    "map_string": "MapType",
}


def arrow_schema(columns: tuple[Column, ...] = COLUMNS) -> Any:
    """The pyarrow schema the sink writes, with the schema version in its metadata."""
    import pyarrow as pa

    fields = [pa.field(c.name, _ARROW_TYPES[c.kind](pa), nullable=c.nullable) for c in columns]
    return pa.schema(fields, metadata={SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode()})


def client_metrics_arrow_schema() -> Any:
    return arrow_schema(CLIENT_METRICS_COLUMNS)
