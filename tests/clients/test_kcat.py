"""kcat (Debian's kcat 1.7, over the distribution's librdkafka) against the broker:
metadata listing, keyed produce with compression, consume to the end, and a consumer
group's committed offsets. scripts/test installs kcat where apt can (CI does)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from broker import MockCluster
from tests.conftest import FAST
from tests.workload import check_consumed, message

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
COUNT = 2_000


def kcat(*args: str, stdin: str | None = None) -> str:
    if KCAT is None:
        pytest.fail("kcat is not installed (scripts/test installs it with apt-get install kcat)")
    done = subprocess.run([KCAT, *args], input=stdin, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, config={**FAST, "num.partitions": "3"}) as running:
        yield running


def test_kcat_lists_brokers_and_topics(cluster: MockCluster) -> None:
    cluster.create_topic("listed", partitions=4, replication_factor=2)
    listing = json.loads(kcat("-b", cluster.bootstrap_servers, "-L", "-J"))
    assert sorted(b["id"] for b in listing["brokers"]) == [b.node_id for b in cluster.brokers]
    [topic] = [t for t in listing["topics"] if t["topic"] == "listed"]
    assert len(topic["partitions"]) == 4
    assert all(len(p["replicas"]) == 2 for p in topic["partitions"])


def test_kcat_produces_keyed_compressed_and_consumes_them_back(cluster: MockCluster) -> None:
    lines = "".join(b":".join(message(i)).decode() + "\n" for i in range(COUNT))
    kcat("-b", cluster.bootstrap_servers, "-P", "-t", "kc", "-K", ":", "-z", "lz4", stdin=lines)
    out = kcat(
        "-b", cluster.bootstrap_servers, "-C", "-t", "kc", "-o", "beginning", "-e", "-J", "-q"
    )  # fmt: skip
    consumed: dict[int, list[tuple[bytes, bytes]]] = {}
    for line in out.splitlines():
        record = json.loads(line)
        consumed.setdefault(record["partition"], []).append(
            (record["key"].encode(), record["payload"].encode())
        )
    check_consumed(consumed, count=COUNT)
    assert len(consumed) == 3  # keys spread over the auto-created topic's partitions


def test_kcat_consumer_group_commits_its_offsets(cluster: MockCluster) -> None:
    cluster.create_topic("grouped", partitions=2)
    kcat("-b", cluster.bootstrap_servers, "-P", "-t", "grouped", stdin="".join(f"m{i}\n" for i in range(10)))
    out = kcat(
        "-b", cluster.bootstrap_servers, "-G", "kcat-group", "-X", "auto.offset.reset=earliest",
        "-X", "enable.auto.commit=true", "-X", "auto.commit.interval.ms=100", "-e", "-q", "grouped",
    )  # fmt: skip
    assert sorted(out.split()) == sorted(f"m{i}" for i in range(10))
    committed = cluster.on_loop(lambda: dict(cluster.groups.offsets["kcat-group"]))
    assert sum(offset.offset for offset in committed.values()) == 10
