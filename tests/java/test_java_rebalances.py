"""Java consumers (kafka-clients, both group protocols) as members come and go and as the
group's coordinator stops and starts under them: every share settles balanced, and every
record produced is consumed."""

from __future__ import annotations

import json
import subprocess
from typing import IO, Any

import pytest

from broker import MockCluster
from tests.java.runner import assert_java_sent


def next_line(stream: IO[str], process: subprocess.Popen[str]) -> dict[str, Any]:
    line = stream.readline()
    if not line:
        process.wait(timeout=30)
        raise AssertionError(
            f"the Java program ended (exit {process.returncode}): {process.stderr.read()[-4000:]}"
        )  # type: ignore[union-attr]
    found: dict[str, Any] = json.loads(line)
    return found


@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_members_come_and_go_and_the_coordinator_stops(java_classpath: str, group_protocol: str) -> None:
    group = f"rebalancing-{group_protocol}"
    with MockCluster(brokers=3, config={"record.requests.max": 100_000}) as cluster:
        cluster.create_topic("shared", partitions=6, replication_factor=3)
        with subprocess.Popen(
            [
                "java",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
                "-cp",
                java_classpath,
                "mockbroker.Rebalances",
                "rebalance",
                cluster.bootstrap_servers,
                "shared",
                group_protocol,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as java:
            assert java.stdin is not None and java.stdout is not None
            try:
                assert next_line(java.stdout, java) == {"phase": "stop-broker"}
                coordinator = cluster.on_loop(lambda: cluster.groups.coordinator_for(group))
                cluster.stop_broker(coordinator)
                java.stdin.write("stopped\n")
                java.stdin.flush()
                assert next_line(java.stdout, java) == {"phase": "start-broker"}
                moved_to = cluster.on_loop(lambda: cluster.groups.coordinator_for(group))
                cluster.start_broker(coordinator)
                java.stdin.write("started\n")
                java.stdin.flush()
                result = next_line(java.stdout, java)
                if group_protocol == "classic":
                    assert_java_sent(cluster, "rebalance-classic")
                assert java.wait(timeout=120) == 0, java.stderr.read()  # type: ignore[union-attr]
            finally:
                if java.poll() is None:
                    java.kill()
    assert moved_to not in (coordinator, -1)  # another broker took the group over
    assert result["one-member"] == [6]
    assert result["two-members"] == [3, 3]
    assert result["three-members"] == [2, 2, 2]
    assert result["second-left"] == [3, 3]
    assert result["broker-stopped"] == [3, 3]
    assert result["broker-back"] == [3, 3]
    assert result["produced"] == result["consumed_distinct"] == 180
    assert result["missing"] == 0
    # Each member commits what it processed before it polls again: unless a commit failed
    # (racing a rebalance or the coordinator's move), no record is read twice.
    if not result["commit_failures"]:
        assert result["read_twice"] == 0
