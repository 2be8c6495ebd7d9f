"""The user's guide's recipes run as the pages show them: each example in docs/examples/ is
run here through real clients over TCP, and what the page says a user will see is asserted.

Quota recipes run with `quota.window.num=2` (the page says so) so that they finish in
seconds; the Spark recipe starts JVMs and is slow-marked."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.spark.test_spark_standalone import standalone  # noqa: F401  (a module-scoped fixture)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
BIN = Path(sys.executable).parent  # kafka-mock-broker, kafka-client-quotas, ... of this environment
QUOTA = 1_048_576


def example(name: str) -> ModuleType:
    """docs/examples/<name>.py, imported as the page's reader would run it."""
    spec = importlib.util.spec_from_file_location(f"docs_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def free_port(consecutive: int = 1) -> int:
    """A free port on 127.0.0.1 whose next `consecutive - 1` ports are free too (cli.sh
    starts three brokers on KAFKA_PORT..+2)."""
    while True:
        socks = [socket.socket() for _ in range(consecutive)]
        try:
            socks[0].bind(("127.0.0.1", 0))
            port = int(socks[0].getsockname()[1])
            for offset, sock in enumerate(socks[1:], 1):
                sock.bind(("127.0.0.1", port + offset))
            return port
        except (OSError, OverflowError):
            continue  # one of the following ports is taken (or past 65535): try another
        finally:
            for sock in socks:
                sock.close()


def run_script(script: str, *args: str, timeout: float = 120, **env: str) -> str:
    """Runs a docs/examples shell recipe with this environment's tools first on PATH."""
    done = subprocess.run(
        ["bash", str(EXAMPLES / script), *args],
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


# -- getting started -----------------------------------------------------------------


def test_python_api_sync_round_trip_over_three_brokers() -> None:
    result = example("python_api_sync").main()
    assert result["values"] == sorted(b"order-%d" % i for i in range(10))
    assert [b["up"] for b in result["layout"]["brokers"]] == [True, True, True]
    assert sum(result["end_offsets"].values()) == 10
    assert result["groups"][0]["group_id"] == "billing" and result["groups"][0]["type"] == "classic"


def test_python_api_async_on_the_callers_loop() -> None:
    assert asyncio.run(example("python_api_async").main()) == [b"event-%d" % i for i in range(5)]


def test_python_api_admin_calls() -> None:
    seen = example("python_api_admin").main()
    described = sorted(
        ((sorted(entity.items(), key=str), values) for entity, values in seen["described"].items()), key=str
    )
    assert described == [
        ([("client-id", None), ("user", None)], {"request_percentage": 50.0}),
        ([("user", "alice")], {"producer_byte_rate": 1048576.0}),
    ]
    assert seen["alice"] == 1048576.0
    assert seen["refused"] == (42, "Quota producer_byte_rate must be greater than 0")
    assert len(seen["sasl_bootstrap"].split(",")) == 3
    assert (
        seen["auto_create"][0] == "false" and seen["auto_create"][1].name == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    )
    assert seen["faults"] == [1]
    assert seen["up"] == [True, False, True]
    assert seen["leader"] == 2
    assert seen["metrics"] > 0
    assert seen["recorded"] == [] and seen["report"] == {"clients": []}


def test_pytest_plugin_example_project_passes() -> None:
    """The page's project (pytest.ini and test_orders.py) run by pytest as its user would:
    the plugin comes from the installed package's entry point, not from this suite."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"],
        cwd=EXAMPLES / "pytest_plugin",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "7 passed" in done.stdout
    assert "warning" not in done.stdout.lower()  # neither the plugin nor kafka-python's schemas warn


def test_cli_recipe() -> None:
    out = run_script("cli.sh", KAFKA_PORT=str(free_port(3)))
    assert "{user=alice}\nproducer_byte_rate=1048576" in out
    assert "producer_byte_rate=1048576 {user=alice}\n*producer_byte_rate=1024 {user=<default>}\n" in out
    assert "{user=bob}: INVALID_REQUEST: Quota producer_byte_rate must be greater than 0\nexit 1" in out
    assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in out
    # after the restart, from the state dir
    assert out.rstrip().endswith("{user=alice}\nproducer_byte_rate=1048576")


# -- how-to: a producer under a 1 MB/s quota -------------------------------------------


def test_unauthenticated_producer_converges_to_the_quota_after_an_unthrottled_first_window() -> None:
    recipe = example("quota_producer")
    result = recipe.main(window_num=2, total_bytes=6_000_000)
    acked = result["acked"]
    size = len(recipe.MESSAGE)
    assert len(acked) == 6_000_000 // size
    # The first window passes unthrottled: at least (window_num - 1) x quota at once.
    assert sum(size for t in acked if t < 0.5) >= 0.9 * QUOTA
    # Then about the quota each second (payload bytes; the requests' overhead is on top):
    # the median of the whole seconds after the first two ...
    seconds = [mb * 1e6 for mb in recipe.per_second(acked)[2 : int(max(acked))]]
    assert len(seconds) >= 2
    assert 0.7 * QUOTA <= statistics.median(seconds) <= 1.1 * QUOTA, seconds
    # ... and over the whole run, no more than the quota beyond the first window's allowance.
    assert (len(acked) * size - 2 * QUOTA) / max(acked) <= 1.1 * QUOTA
    # The client saw throttle_time_ms, the broker recorded it and measured the quota.
    assert result["throttle_time_max"] > 0
    assert result["throttled"] and all(r["client_id"] == "loader" for r in result["throttled"])
    assert 0.75 * QUOTA <= result["broker_metrics"]["byte-rate"] <= 1.25 * QUOTA
    assert "throttle-time" in result["broker_metrics"]


def test_sasl_producer_is_held_to_its_user_quota_and_sees_the_throttle() -> None:
    recipe = example("quota_producer_sasl")
    result = recipe.main(window_num=2, total_bytes=5_000_000)
    acked = result["acked"]
    size = len(recipe.MESSAGE)
    assert len(acked) == 5_000_000 // size
    # throttle_cb fires per throttled response, and with 0 when a throttle has ended.
    assert max(result["throttle_events"]) > 0
    assert result["throttle_stats"] and result["throttle_stats"][-1]["max"] > 0
    assert 0.75 * QUOTA <= result["broker_metrics"]["byte-rate"] <= 1.25 * QUOTA
    # librdkafka does not wait out the throttle itself; the broker's mute holds it anyway.
    after_first_second = [t for t in acked if t >= 1.0]
    assert len(after_first_second) * size / (max(acked) - 1.0) <= 1.3 * QUOTA


# -- the other how-to guides -------------------------------------------------------------


def test_faults_and_failover() -> None:
    seen = example("faults_and_failover").main()
    assert seen["offset_after_errors"] == 0 and seen["fault_left"] == []
    assert seen["slow_send_s"] >= 0.3
    assert seen["new_leader"] != seen["old_leader"]
    assert seen["offset_after_failover"] == 2
    assert seen["leader_after_restart"] == seen["new_leader"]  # leadership stays moved
    assert seen["offset_after_move"] == 3
    assert seen["after_throttle_s"] >= 0.4  # kafka-python waits the throttle out
    assert seen["throttled"] == [500]


def test_security(tmp_path: Path) -> None:
    run_script("make_certs.sh", str(tmp_path / "certs"))
    seen = example("security").main(str(tmp_path / "certs"))
    assert seen["acls"] == 3
    assert seen["alice"] == {"orders": "written", "payments": "TOPIC_AUTHORIZATION_FAILED"}
    assert seen["bob"] == {"orders": "TOPIC_AUTHORIZATION_FAILED", "payments": "written"}
    assert seen["tls"] == {"orders": "written", "payments": "TOPIC_AUTHORIZATION_FAILED"}
    assert seen["admin"] == {"orders": "written", "payments": "written"}
    assert seen["principals"] == ["User:CN=app,O=Example", "User:admin", "User:alice", "User:bob"]
    assert seen["admin_topics"] == ["orders", "payments"]


def test_http_control_plane_recipe() -> None:
    out = run_script("http_control_plane.sh", KAFKA_PORT=str(free_port()), ADMIN_PORT=str(free_port()))
    lines = [json.loads(line) for line in out.splitlines() if line.startswith(("{", "["))]
    assert lines[0]["brokers"][0]["up"] is True
    assert lines[1] == [{"entity": {"client-id": "app"}, "values": {"producer_byte_rate": 1048576}}]
    assert lines[2]["quotas"]["producer_byte_rate"]["entity"] == {"client-id": "app"}
    assert lines[3] == {"id": 1, "api_key": 0, "count": 1}
    produces = [line for line in lines if isinstance(line, dict) and "api_version" in line]
    assert [p["errors"] for p in produces] == [[6], [0], [0], [0]]  # the fault, its retry, two more
    assert [] in lines  # no fault left
    (client,) = [line for line in lines if isinstance(line, dict) and line.get("software_name")]
    assert client["software_name"] == "kafka-python"
    assert {"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 1} in client["errors"]
    assert 'kafka_server_quota_byte_rate{broker="0",client_id="app",quota_type="Produce",user=""}' in out


def test_recording_and_conformance(tmp_path: Path) -> None:
    recipe = example("recording_and_conformance")
    result = recipe.main(str(tmp_path))
    throttles = {
        client: [p["throttle_time_ms"] for p in result["produces"] if p["client_id"] == client]
        for client in ("kp", "ck")
    }
    assert throttles == {"kp": [300, 300, 300, 0, 0], "ck": [300, 300, 300, 0, 0]}
    assert result["report_file"] == result["report"]
    assert sorted(recipe.summary(result["report"])) == [
        ("confluent-kafka-python", "2.16.1-rdkafka-2.16.0", 3, False),
        ("kafka-python", "3.0.12", 3, True),
    ]
    recorded_apis = {line["api"] for line in result["recorded_lines"]}
    assert {"ApiVersions", "Metadata", "Produce"} <= recorded_apis


def test_client_telemetry() -> None:
    result = example("client_telemetry").main()
    push = result["pushes"][0]
    assert push.client.client_id == "app-1" and push.client.software_name == "confluent-kafka-python"
    assert result["names"] and all(n.startswith("org.apache.kafka.producer.") for n in result["names"])
    assert "org.apache.kafka.producer.produce.throttle.time.avg" in result["names"]
    assert result["subscriptions"] == {
        "apps": {"metrics": "org.apache.kafka.producer.", "interval.ms": "500", "match": "client_id=app-.*"}
    }
    assert any(i["metrics"] == ["org.apache.kafka.producer."] for i in result["instances"])


@pytest.mark.slow
def test_metrics_report_and_what_if_locally(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    example("metrics_and_spark").main(str(tmp_path), total_bytes=3_000_000)
    assert list((tmp_path / "metrics").glob("broker=0/date=*/*.parquet"))
    run_script("metrics_and_spark.sh", str(tmp_path), timeout=600)
    check_report_and_what_if(tmp_path)


@pytest.mark.slow
def test_metrics_report_and_what_if_on_a_standalone_cluster(
    tmp_path: Path,
    standalone: tuple[str, dict[str, str]],  # noqa: F811  (the fixture imported above)
) -> None:
    """The same script with MASTER=spark://...: a standalone master and one worker, started
    as tests/spark/test_spark_standalone.py starts them."""
    master_url, env = standalone
    example("metrics_and_spark").main(str(tmp_path), total_bytes=3_000_000)
    run_script(
        "metrics_and_spark.sh",
        str(tmp_path),
        timeout=900,
        MASTER=master_url,
        **{k: env[k] for k in ("SPARK_LOCAL_IP", "SPARK_CONF_DIR", "PYSPARK_PYTHON")},
    )
    check_report_and_what_if(tmp_path)


def check_report_and_what_if(run: Path) -> None:
    import pyarrow.parquet as pq

    for table in ("quota_windows", "quota_summary", "api_latency", "client_software", "top_offenders"):
        assert (run / "report" / table).is_dir(), table
    assert "loader" in (run / "report" / "index.html").read_text()
    offenders = pq.read_table(run / "report" / "top_offenders").to_pylist()
    assert [row["client_id"] for row in offenders] == ["loader"]  # the only client with a quota
    entities = {
        (row["client_id"], row["quota_type"]): row
        for row in pq.read_table(run / "what-if" / "entities").to_pylist()
    }
    # Under the change, loader gets the default client-id's 2 MiB/s and "reporting" too.
    assert entities[("loader", "produce")]["proposed_limit"] == 2097152
    assert entities[("reporting", "produce")]["proposed_limit"] == 2097152
    # Twice the limit: loader would have been throttled less than it was.
    loader = entities[("loader", "produce")]
    assert (
        loader["observed_throttle_ms"] > 0
        and loader["predicted_throttle_ms"] < loader["observed_throttle_ms"]
    )
    assert "loader" in (run / "what-if" / "index.html").read_text()
