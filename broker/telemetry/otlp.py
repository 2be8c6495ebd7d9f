"""Pushed client metrics: decompressed as Kafka's ClientTelemetryUtils does, then read as
the OTLP `MetricsData` protobuf (OpenTelemetry's own generated classes) into flat points.
"""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass
from typing import Any

import lz4.frame
import zstandard
from kafka.codec import snappy_decode

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)  # CompressionType ids
ACCEPTED_COMPRESSION = [ZSTD, LZ4, GZIP, SNAPPY]  # ClientMetricsManager's preference order
_TEMPORALITY = {1: "delta", 2: "cumulative"}


class PayloadTooLarge(Exception):
    """The metrics decompress to more than telemetry.max.bytes."""


def decompress(compression: int, data: bytes, limit: int) -> bytes:
    """The payload as the client wrote it; at most `limit` bytes of it, else
    PayloadTooLarge (a small compressed push must not expand without bound). Any other
    exception means the payload does not decompress."""
    if compression == NONE:
        return data
    if compression == GZIP:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out = inflater.decompress(data, limit + 1)
        if not inflater.eof and len(out) <= limit:
            raise ValueError("truncated gzip stream")
    elif compression == ZSTD:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
            out = reader.read(limit + 1)
    elif compression == LZ4:
        out = lz4.frame.LZ4FrameDecompressor().decompress(data, max_length=limit + 1)
    elif compression == SNAPPY:
        out = snappy_decode(data)  # xerial-framed or a raw block, as Kafka's SnappyInputStream reads
    else:
        raise ValueError(f"unknown compression type {compression}")
    if len(out) > limit:
        raise PayloadTooLarge(f"Decompressed telemetry metrics exceed maximum allowed size: {limit}")
    return out


@dataclass(frozen=True, slots=True)
class MetricPoint:
    """One data point of one metric, with its resource's attributes under its own."""

    name: str
    kind: str  # gauge, sum, histogram, exponential_histogram, summary
    temporality: str | None  # delta or cumulative (sums and histograms)
    start_ns: int | None
    time_ns: int
    value: float
    attributes: dict[str, str]


def metric_points(payload: bytes) -> list[MetricPoint]:
    """The points of a serialized MetricsData (raises on bytes that are not one)."""
    from opentelemetry.proto.metrics.v1 import metrics_pb2

    data = metrics_pb2.MetricsData()
    data.ParseFromString(payload)
    points: list[MetricPoint] = []
    for resource_metrics in data.resource_metrics:
        resource = _attributes(resource_metrics.resource.attributes)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                if kind is None:
                    continue
                body = getattr(metric, kind)
                temporality = _TEMPORALITY.get(getattr(body, "aggregation_temporality", 0))
                for point in body.data_points:
                    points.append(
                        MetricPoint(
                            metric.name,
                            kind,
                            temporality,
                            point.start_time_unix_nano or None,
                            point.time_unix_nano,
                            _value(kind, point),
                            {**resource, **_attributes(point.attributes)},
                        )
                    )
    return points


def _value(kind: str, point: Any) -> float:
    """Gauges and sums: the number; histograms and summaries: their sum."""
    if kind in ("gauge", "sum"):
        return float(point.as_double if point.WhichOneof("value") == "as_double" else point.as_int)
    return float(point.sum)


def _attributes(items: Any) -> dict[str, str]:
    found = {}
    for item in items:
        which = item.value.WhichOneof("value")
        value = getattr(item.value, which) if which is not None else None
        found[item.key] = "" if value is None else str(value)
    return found
