"""What a test suite in another language needs from `kafka-mock-broker` as a subprocess:
`--ready-file` (written once every listener and the control plane serve, gone once the
broker stops), free ports with `--port 0 --admin-port 0`, and `POST /v1/shutdown`."""

from __future__ import annotations

import json
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from broker import MockCluster
from tests.support.process import START_TIMEOUT, BrokerProcess, broker_processes, run_broker
from tests.test_cli import api_versions_ok, produce_and_consume


@pytest.fixture
def spawn() -> Iterator[Callable[..., BrokerProcess]]:
    with broker_processes() as start:
        yield start


def wait_ready(broker: BrokerProcess, path: Path, timeout: float = START_TIMEOUT) -> dict[str, Any]:
    """Polls for the ready file as another language's harness would."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert broker.proc.poll() is None, f"exited with {broker.proc.returncode}:\n{broker.stderr}"
        assert time.monotonic() < deadline, f"no ready file within {timeout:g} s:\n{broker.stderr}"
        time.sleep(0.02)
    info: dict[str, Any] = json.loads(path.read_text())
    return info


def http(method: str, url: str) -> tuple[int, Any]:
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def test_ready_file_names_free_ports_that_serve(spawn: Callable[..., BrokerProcess], tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    broker = spawn("--port", "0", "--brokers", "3", "--admin-port", "0", "--ready-file", str(ready))
    info = wait_ready(broker, ready)
    assert info["pid"] == broker.pid
    ports = [b["port"] for b in info["brokers"]]
    assert [b["node_id"] for b in info["brokers"]] == [0, 1, 2]
    assert all(b["host"] == "127.0.0.1" for b in info["brokers"])
    assert len(set(ports)) == 3 and all(port > 0 for port in ports)  # port 0: a free port each
    assert [b["listeners"] for b in info["brokers"]] == [{"PLAINTEXT": f"127.0.0.1:{p}"} for p in ports]
    assert info["bootstrap_servers"] == ",".join(f"127.0.0.1:{port}" for port in ports)
    # Already serving when the file appears: every listener and the control plane.
    assert all(api_versions_ok(port) for port in ports)
    status, cluster = http("GET", info["admin_url"] + "/v1/cluster")
    assert status == 200
    assert [(b["id"], b["port"], b["up"]) for b in cluster["brokers"]] == [
        (i, ports[i], True) for i in range(3)
    ]
    assert produce_and_consume(info["bootstrap_servers"], "ready", 3) == [b"value-0", b"value-1", b"value-2"]
    # Written by a rename: no temporary file is left beside it; readable by anyone.
    assert [p.name for p in tmp_path.iterdir()] == ["ready.json"]
    assert ready.stat().st_mode & 0o777 == 0o644

    broker.proc.send_signal(signal.SIGTERM)
    assert broker.wait(timeout=10) == 0, broker.stderr
    assert not ready.exists()
    assert list(tmp_path.iterdir()) == []


def test_without_admin_port_the_admin_url_is_null(
    spawn: Callable[..., BrokerProcess], tmp_path: Path
) -> None:
    ready = tmp_path / "ready.json"
    ready.write_text('{"stale": true}')  # left by a killed broker: replaced
    broker = spawn("--port", "0", "--ready-file", str(ready))
    [listeners] = broker.wait_listening(1).values()
    info = wait_ready(broker, ready)
    assert info["admin_url"] is None
    assert info["bootstrap_servers"] == f"127.0.0.1:{listeners['PLAINTEXT'][1]}"


def test_post_shutdown_stops_cleanly(spawn: Callable[..., BrokerProcess], tmp_path: Path) -> None:
    ready, report = tmp_path / "ready.json", tmp_path / "conformance.json"
    broker = spawn(
        "--port", "0", "--admin-port", "0", "--ready-file", str(ready), "--conformance-report", str(report)
    )  # fmt: skip
    info = wait_ready(broker, ready)
    produce_and_consume(info["bootstrap_servers"], "before-shutdown", 1)
    assert http("POST", info["admin_url"] + "/v1/shutdown") == (202, {"stopping": True})
    assert broker.wait(timeout=10) == 0, broker.stderr
    assert not ready.exists()
    # A clean stop, as SIGTERM's: the conformance report is written.
    assert [c["software_name"] for c in json.loads(report.read_text())["clients"]] == [
        "confluent-kafka-python"
    ]
    assert "Traceback" not in broker.stderr


def test_post_shutdown_with_a_body_or_query_is_refused(
    spawn: Callable[..., BrokerProcess], tmp_path: Path
) -> None:
    ready = tmp_path / "ready.json"
    broker = spawn("--port", "0", "--admin-port", "0", "--ready-file", str(ready))
    info = wait_ready(broker, ready)
    status, body = http("POST", info["admin_url"] + "/v1/shutdown?now=1")
    assert status == 400 and body["error"] == "BAD_REQUEST"
    assert broker.proc.poll() is None and ready.exists()


def test_an_embedded_cluster_is_not_stopped_over_http() -> None:
    """MockCluster's owner stops it; POST /v1/shutdown is the command line's."""
    with MockCluster(config={"admin.port": 0}) as cluster:
        assert cluster.admin is not None
        status, body = http("POST", f"http://127.0.0.1:{cluster.admin.port}/v1/shutdown")
        assert status == 404 and "MockCluster" in body["message"]
        assert api_versions_ok(int(cluster.bootstrap_servers.rpartition(":")[2]))


@pytest.mark.parametrize(
    ("where", "reason"),
    [("missing/ready.json", "No such file or directory"), (".", "it is a directory")],
    ids=["missing-directory", "a-directory"],
)
def test_unwritable_ready_file_exits_with_one_line(tmp_path: Path, where: str, reason: str) -> None:
    path = tmp_path / where
    result = run_broker("--port", "0", "--ready-file", str(path))
    assert result.returncode == 2
    assert f"cannot write the ready file {path.absolute()}: {reason}" in result.stderr
    assert "listening on" not in result.stderr  # refused before anything was bound
    assert "Traceback" not in result.stderr
