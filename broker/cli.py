"""`kafka-mock-broker`: serve a mock cluster until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from broker.config.broker_config import load_properties
from broker.extras import MissingExtra
from broker.releases import MODELLED, RELEASES, UnknownRelease, release
from broker.startup import defer_kafka_package_init

if TYPE_CHECKING:
    from broker.mock_cluster import MockCluster

log = logging.getLogger("broker")


def build_parser() -> argparse.ArgumentParser:
    """The command line of `kafka-mock-broker` (also rendered into the CLI reference)."""
    parser = argparse.ArgumentParser(
        prog="kafka-mock-broker", description="Kafka wire-protocol mock broker with client quotas."
    )
    parser.add_argument(
        "--config", metavar="FILE", help="server.properties-style file with Kafka broker configs"
    )
    parser.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="set a config (repeatable)"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", metavar="HOST", help="listener host when `listeners` is not set"
    )
    parser.add_argument(
        "--port", type=int, default=9092, metavar="PORT", help="listener port when `listeners` is not set"
    )
    parser.add_argument(
        "--brokers", type=int, default=1, metavar="N", help="brokers in the cluster (broker i on port+i)"
    )
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="keep quota configs, SCRAM credentials and dynamic configs in SQLite here (state.dir)",
    )
    parser.add_argument(
        "--metrics-dir", metavar="DIR", help="write one Parquet row per request under DIR (metrics.dir)"
    )
    parser.add_argument(
        "--admin-port",
        type=int,
        metavar="PORT",
        help="HTTP control plane on 127.0.0.1:PORT, 0 for a free port (admin.port)",
    )
    parser.add_argument(
        "--ready-file",
        metavar="FILE",
        help="once every listener and the admin API are up, write FILE (JSON: bootstrap_servers,"
        " brokers, admin_url, pid) by an atomic rename; removed on shutdown",
    )
    parser.add_argument("--record", metavar="FILE", help="append every request and response as JSON lines")
    parser.add_argument(
        "--conformance-report", metavar="FILE", help="write the client conformance report here on shutdown"
    )
    parser.add_argument(
        "--kafka-version",
        type=_kafka_version,
        default=MODELLED,
        metavar="X.Y",
        help=f"the Kafka release to present as: its API versions and a new cluster's features"
        f" ({', '.join(sorted(RELEASES))}; default {MODELLED}, the release the broker models)",
    )
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"], help="log verbosity"
    )
    return parser


def _kafka_version(value: str) -> str:
    try:
        return release(value).name
    except UnknownRelease as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def build_config(args: argparse.Namespace) -> dict[str, str]:
    config = load_properties(args.config) if args.config else {}
    if args.state_dir:
        config["state.dir"] = args.state_dir
    if args.metrics_dir:
        config["metrics.dir"] = args.metrics_dir
    if args.admin_port is not None:
        config["admin.port"] = str(args.admin_port)
    if args.record:
        config["record.file"] = args.record
    if args.conformance_report:
        config["conformance.report.file"] = args.conformance_report
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--override expects key=value, got {item!r}")
        config[key.strip()] = value.strip()
    return config


_early_signals: list[int] = []  # SIGINT/SIGTERM received before the loop handles them


def _remember_signal(signum: int, _frame: FrameType | None) -> None:
    _early_signals.append(signum)


class ReadyFileError(Exception):
    """The --ready-file cannot be written (the message says where and why)."""


def ready_info(cluster: MockCluster) -> dict[str, Any]:
    """What the ready file says: where clients and the control plane connect."""
    brokers = []
    for broker in cluster.brokers:
        first = broker.advertised_endpoint(broker.listeners[0].listener)
        listeners = {}
        for endpoint in broker.listeners:
            advertised = broker.advertised_endpoint(endpoint.listener)
            listeners[endpoint.listener] = f"{advertised.host}:{advertised.port}"
        brokers.append(
            {"node_id": broker.node_id, "host": first.host, "port": first.port, "listeners": listeners}
        )
    return {
        "bootstrap_servers": cluster.bootstrap_servers,
        "brokers": brokers,
        "admin_url": None if cluster.admin is None else f"http://127.0.0.1:{cluster.admin.port}",
        "pid": os.getpid(),
    }


def _write_atomically(path: Path, text: str) -> None:
    """A reader sees no file or the whole of it: a temporary file beside it, renamed."""
    try:
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise ReadyFileError(f"cannot write the ready file {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would hide it from a harness run as another user
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise ReadyFileError(f"cannot write the ready file {path}: {exc.strerror or exc}") from None


def check_ready_file(path: Path) -> None:
    """Fails before start-up if the ready file could not be written; removes a stale one
    (left by a broker that was killed), so that it appears only once this broker serves."""
    try:
        if path.is_dir():
            raise ReadyFileError(f"cannot write the ready file {path}: it is a directory")
        path.unlink(missing_ok=True)
        fd, probe = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)  # the directory takes new files (the rename needs no more)
    except OSError as exc:
        raise ReadyFileError(f"cannot write the ready file {path}: {exc.strerror or exc}") from None


async def serve(cluster: MockCluster, ready_file: Path | None = None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):  # before the start line: a signal right after it must count
        loop.add_signal_handler(sig, stop.set)
    if _early_signals:  # asked to stop while starting up: start, then stop at once, as for a later signal
        stop.set()
    await cluster.start()
    if cluster.admin is not None:
        cluster.admin.on_shutdown = stop.set  # POST /v1/shutdown
    log.info(
        "%s",
        "; ".join(
            f"broker {broker.node_id} listening on "
            + ", ".join(str(broker.advertised_endpoint(e.listener)) for e in broker.listeners)
            for broker in cluster.brokers
        ),
    )
    if cluster.admin is not None:
        log.info("admin API on http://127.0.0.1:%d", cluster.admin.port)
    try:
        if ready_file is not None:
            _write_atomically(ready_file, json.dumps(ready_info(cluster)) + "\n")
            log.info("ready file %s written", ready_file)
        await stop.wait()
    finally:
        if ready_file is not None:  # gone as soon as the broker stops serving
            ready_file.unlink(missing_ok=True)
        log.info("shutting down: finishing in-flight requests")
        started = time.monotonic()
        await cluster.stop()
        log.info("stopped in %.0f ms", (time.monotonic() - started) * 1000)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # SIGTERM or SIGINT while the broker is imported and its state dir opened is kept and
    # acted on once serving (exit 0 after a clean stop), not the default sudden death.
    _early_signals.clear()
    previous = {sig: signal.signal(sig, _remember_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    log.debug("starting")
    try:
        return _run(args)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(args: argparse.Namespace) -> int:
    # The broker is imported here, after kafka-python's package __init__ (its whole client,
    # which the broker does not use) has been deferred: see broker/startup.py.
    defer_kafka_package_init()
    from broker.mock_cluster import MockCluster, new_event_loop

    ready_file = Path(args.ready_file).absolute() if args.ready_file else None
    try:
        if ready_file is not None:
            check_ready_file(ready_file)
        cluster = MockCluster(
            brokers=args.brokers,
            config=build_config(args),
            host=args.host,
            port=args.port,
            kafka_version=args.kafka_version,
        )
    except (ValueError, MissingExtra, ReadyFileError) as exc:  # MissingExtra: the one line naming the extra
        log.error("%s", exc)
        return 2
    loop = new_event_loop()
    try:
        loop.run_until_complete(serve(cluster, ready_file))
    except (MissingExtra, ReadyFileError) as exc:
        log.error("%s", exc)
        return 2
    except OSError as exc:
        log.error("cannot start: %s", exc)
        return 1
    finally:
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
