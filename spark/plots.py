"""The report's PNG plots (matplotlib's Agg renderer, no pyplot state), drawn from small
lists of values the driver collected from the aggregated tables."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import matplotlib

matplotlib.use("Agg")

from matplotlib.axes import Axes  # noqa: E402
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter, date2num  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

DPI = 100


@dataclass
class Series:
    """One entity's values per window: start -> value, and the quota limit per window."""

    label: str
    values: dict[dt.datetime, float] = field(default_factory=dict)
    limits: dict[dt.datetime, float] = field(default_factory=dict)
    unit: str = ""


def filled(values: Mapping[dt.datetime, float], window_ms: int) -> tuple[list[dt.datetime], list[float]]:
    """Points for a post-step line of per-window values: a window without a row (no
    request) drops to zero until the next row, and the last window keeps its value to
    its end."""
    if not values:
        return [], []
    step = dt.timedelta(milliseconds=window_ms)
    times = sorted(values)
    xs: list[dt.datetime] = []
    ys: list[float] = []
    for this, after in zip(times, [*times[1:], None], strict=True):
        xs.append(this)
        ys.append(values[this])
        if after is None:
            xs.append(this + step)
            ys.append(values[this])
        elif after > this + step:
            xs.append(this + step)
            ys.append(0.0)
    return xs, ys


def _placeholder(path: str, title: str, message: str) -> None:
    fig = Figure(figsize=(8, 2.5))
    ax = fig.subplots()
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=12, color="gray", transform=ax.transAxes)
    fig.savefig(path, dpi=DPI)


def _time_axis(ax: Axes) -> None:
    locator = AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
    ax.tick_params(axis="x", labelsize=8)


def _grid(count: int) -> tuple[int, int]:
    cols = 1 if count == 1 else 2
    return (count + cols - 1) // cols, cols


def plot_throughput(path: str, title: str, series: Sequence[Series], window_ms: int) -> None:
    """One panel per entity: its rate per window (steps) and its quota limit (dashed)."""
    if not series:
        _placeholder(path, title, "no requests of this quota type")
        return
    rows, cols = _grid(len(series))
    fig = Figure(figsize=(6.5 * cols, 2.8 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, entity in zip(axes.flat, series, strict=False):
        times, values = filled(entity.values, window_ms)
        ax.step(
            date2num(times),
            values,
            where="post",
            color="tab:blue",
            label="rate",
            marker="." if len(times) < 60 else None,
        )
        if entity.limits:
            lt = sorted(entity.limits)
            lv = [entity.limits[t] for t in lt]
            # The limit holds between rows: the line spans gaps, and ends with the last window.
            lt.append(max(lt[-1], times[-1]) if times else lt[-1] + dt.timedelta(milliseconds=window_ms))
            lv.append(lv[-1])
            ax.step(date2num(lt), lv, where="post", color="tab:red", linestyle="--", label="quota")
        ax.set_title(entity.label, fontsize=10)
        ax.set_ylabel(entity.unit)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize=8)
        _time_axis(ax)
    for ax in list(axes.flat)[len(series) :]:
        ax.set_axis_off()
    fig.suptitle(title)
    fig.savefig(path, dpi=DPI)


def plot_throttle(path: str, title: str, series: Sequence[Series], window_ms: int) -> None:
    """Throttle time (ms) per window, one line per entity."""
    if not series:
        _placeholder(path, title, "no request was throttled")
        return
    fig = Figure(figsize=(10, 4), layout="constrained")
    ax = fig.subplots()
    for entity in series:
        times, values = filled(entity.values, window_ms)
        ax.step(
            date2num(times), values, where="post", label=entity.label, marker="." if len(times) < 60 else None
        )
    ax.set_title(title)
    ax.set_ylabel("throttle time (ms per window)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    _time_axis(ax)
    fig.savefig(path, dpi=DPI)


def plot_latency(path: str, title: str, apis: Sequence[Mapping[str, Any]]) -> None:
    """Grouped bars per API version: p50, p95, p99 and max of total_us, in ms, log scale.
    `apis`: mappings with label, p50_us, p95_us, p99_us, max_us."""
    if not apis:
        _placeholder(path, title, "no requests")
        return
    fig = Figure(figsize=(max(6.0, 0.9 * len(apis) + 2), 4.5), layout="constrained")
    ax = fig.subplots()
    keys = ("p50_us", "p95_us", "p99_us", "max_us")
    width = 0.8 / len(keys)
    for i, key in enumerate(keys):
        xs = [j + (i - (len(keys) - 1) / 2) * width for j in range(len(apis))]
        ys = [max(float(api[key] or 0) / 1000.0, 1e-3) for api in apis]
        ax.bar(xs, ys, width=width, label=key.removesuffix("_us"))
    ax.set_xticks(range(len(apis)), [str(api["label"]) for api in apis], rotation=30, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("received to response written (ms)")
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=DPI)


@dataclass
class ClientSeries:
    """One client instance: what it pushed and what the broker recorded, per window (ms)."""

    label: str
    client_latency: dict[dt.datetime, float] = field(default_factory=dict)
    broker_latency: dict[dt.datetime, float] = field(default_factory=dict)
    client_throttle: dict[dt.datetime, float] = field(default_factory=dict)
    broker_throttle: dict[dt.datetime, float] = field(default_factory=dict)


def plot_client_telemetry(path: str, title: str, clients: Sequence[ClientSeries]) -> None:
    """One panel per client: request latency as the client reported it (KIP-714) and as
    the broker measured it (solid), throttle time both ways (dashed), on one time axis."""
    if not clients:
        _placeholder(path, title, "no client pushed request latency or throttle metrics")
        return
    rows, cols = _grid(len(clients))
    fig = Figure(figsize=(6.5 * cols, 2.8 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    lines = (
        ("client_latency", "latency (client)", "tab:blue", "-"),
        ("broker_latency", "latency (broker)", "tab:orange", "-"),
        ("client_throttle", "throttle (client)", "tab:blue", "--"),
        ("broker_throttle", "throttle (broker)", "tab:orange", "--"),
    )
    for ax, client in zip(axes.flat, clients, strict=False):
        for attribute, label, color, style in lines:
            values: dict[dt.datetime, float] = getattr(client, attribute)
            if values:
                times = sorted(values)
                ax.plot(
                    date2num(times),
                    [values[t] for t in times],
                    color=color,
                    linestyle=style,
                    marker=".",
                    label=label,
                )
        ax.set_title(client.label, fontsize=10)
        ax.set_ylabel("ms")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize=8)
        _time_axis(ax)
    for ax in list(axes.flat)[len(clients) :]:
        ax.set_axis_off()
    fig.suptitle(title)
    fig.savefig(path, dpi=DPI)


@dataclass
class WhatIfSeries:
    """One entity under a what-if: its rate and throttle time per window as recorded and
    as predicted under the proposal, and the proposal's limit (None: unlimited), which
    each of the `brokers` its requests went to enforces on its own (Kafka's quotas are per
    broker), so its rates, summed over them, are drawn against limit x brokers."""

    label: str
    unit: str
    limit: float | None
    brokers: int = 1
    observed: dict[dt.datetime, float] = field(default_factory=dict)
    predicted: dict[dt.datetime, float] = field(default_factory=dict)
    observed_throttle: dict[dt.datetime, float] = field(default_factory=dict)
    predicted_throttle: dict[dt.datetime, float] = field(default_factory=dict)


def plot_what_if(path: str, title: str, entity: WhatIfSeries, window_ms: int) -> None:
    """Two panels on one time axis: throughput recorded and predicted against the
    proposed limit, then throttle time per window recorded and predicted."""
    fig = Figure(figsize=(9, 4.8), layout="constrained")
    rate_ax, throttle_ax = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    ends: list[dt.datetime] = []
    for values, label, color in (
        (entity.observed, "recorded", "tab:gray"),
        (entity.predicted, "predicted", "tab:blue"),
    ):
        times, ys = filled(values, window_ms)
        if times:
            rate_ax.step(date2num(times), ys, where="post", color=color, label=label)
            ends += [times[0], times[-1]]
    if entity.limit is not None and ends:
        brokers = max(1, entity.brokers)
        rate_ax.hlines(
            entity.limit * brokers, date2num(min(ends)), date2num(max(ends)), colors="tab:red",
            linestyles="--", label="proposed limit" + (f" x {brokers} brokers" if brokers > 1 else ""),
        )  # fmt: skip
    rate_ax.set_ylabel(entity.unit)
    rate_ax.set_ylim(bottom=0)
    rate_ax.grid(True, alpha=0.3)
    rate_ax.legend(loc="upper right", fontsize=8)
    rate_ax.set_title(entity.label, fontsize=10)
    for values, label, color in (
        (entity.observed_throttle, "recorded", "tab:gray"),
        (entity.predicted_throttle, "predicted", "tab:blue"),
    ):
        times, ys = filled(values, window_ms)
        if times:
            throttle_ax.step(date2num(times), ys, where="post", color=color, label=label)
    throttle_ax.set_ylabel("throttle ms / window")
    throttle_ax.set_ylim(bottom=0)
    throttle_ax.grid(True, alpha=0.3)
    throttle_ax.legend(loc="upper right", fontsize=8)
    _time_axis(throttle_ax)
    fig.suptitle(title)
    fig.savefig(path, dpi=DPI)
