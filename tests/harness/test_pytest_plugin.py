"""The pytest plugin, run as a user's project runs it: a temporary project whose tests use
the fixtures through real clients, in a pytest subprocess that loads the plugin through its
`pytest11` entry point (no -p). Two subprocess runs in all; each costs about a second."""

from __future__ import annotations

import json

import pytest

PYTEST_INI = """
[pytest]
kafka_cluster_brokers = 2
kafka_cluster_config =
    num.partitions = 4
    group.initial.rebalance.delay.ms=0
asyncio_default_fixture_loop_scope = function
filterwarnings =
    ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning
"""

# Records every cluster a test saw, and after the session (session fixtures are torn down by
# then) writes which of them still run: every server must have stopped.
CONFTEST = """
import json
import pathlib
import threading

import pytest

SEEN = []


@pytest.fixture
def remember():
    return SEEN.append


def pytest_sessionfinish(session):
    report = {
        "clusters": len(SEEN),
        "running_brokers": sum(b.running for cluster in SEEN for b in cluster.brokers),
        "threads": [t.name for t in threading.enumerate() if t.name == "mock-kafka-cluster"],
    }
    pathlib.Path("after_session.json").write_text(json.dumps(report))
"""

# Runs in file order: the pairs A/B below depend on it.
TEST_FIXTURES = '''
import asyncio
import threading
import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic


def consume_one(bootstrap, topic):
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                return records[0].value
        raise AssertionError(f"nothing consumed from {topic}")
    finally:
        consumer.close()


def partitions_of(bootstrap, topic):
    """Produces to `topic` (auto-creating it) and returns its partition count."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=10000)
    producer.send(topic, b"x").get(timeout=10)
    count = len(producer.partitions_for(topic))
    producer.close()
    return count


def test_no_cluster_without_fixture():
    assert [t for t in threading.enumerate() if t.name == "mock-kafka-cluster"] == []


def test_default_cluster_produce_consume(kafka_cluster, remember):
    remember(kafka_cluster)
    assert len(kafka_cluster.brokers) == 1
    host, port = kafka_cluster.bootstrap_servers.split(":")
    assert host == "127.0.0.1" and int(port) > 0
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers, max_block_ms=10000)
    producer.send("greetings", b"hello").get(timeout=10)
    producer.close()
    assert consume_one(kafka_cluster.bootstrap_servers, "greetings") == b"hello"


@pytest.mark.kafka_cluster(brokers=3, config={"num.partitions": "6"})
def test_marker_brokers_and_config(kafka_cluster, remember):
    remember(kafka_cluster)
    servers = kafka_cluster.bootstrap_servers.split(",")
    assert len(servers) == 3 and all(s.startswith("127.0.0.1:") for s in servers)
    admin = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers)
    assert sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"]) == [0, 1, 2]
    assert partitions_of(kafka_cluster.bootstrap_servers, "auto-created") == 6
    (topic,) = admin.describe_topics(["auto-created"])
    assert len(topic["partitions"]) == 6
    admin.close()


@pytest.mark.kafka_cluster(brokers=2)
class TestClassMarker:
    def test_class_marker_applies(self, kafka_cluster):
        assert len(kafka_cluster.bootstrap_servers.split(",")) == 2

    @pytest.mark.kafka_cluster(brokers=3)
    def test_closest_marker_wins(self, kafka_cluster):
        assert len(kafka_cluster.bootstrap_servers.split(",")) == 3


FRESH = []


def test_fresh_cluster_a(kafka_cluster, remember):
    remember(kafka_cluster)
    kafka_cluster.create_topic("only-in-a")
    FRESH.append(kafka_cluster)


def test_fresh_cluster_b(kafka_cluster):
    (first,) = FRESH
    assert kafka_cluster is not first
    assert not any(b.running for b in first.brokers), "test A's cluster outlived test A"
    admin = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers)
    assert "only-in-a" not in admin.list_topics()
    admin.close()


SESSION = []


def test_session_cluster_a(kafka_cluster_session, remember):
    remember(kafka_cluster_session)
    SESSION.append((kafka_cluster_session, kafka_cluster_session.bootstrap_servers))
    assert len(kafka_cluster_session.bootstrap_servers.split(",")) == 2  # kafka_cluster_brokers
    admin = KafkaAdminClient(bootstrap_servers=kafka_cluster_session.bootstrap_servers)
    admin.create_topics([NewTopic("persists", 3, 1)])
    admin.close()


def test_session_cluster_b(kafka_cluster_session, kafka_cluster):
    cluster, bootstrap = SESSION[0]
    assert kafka_cluster_session is cluster and kafka_cluster_session.bootstrap_servers == bootstrap
    assert kafka_cluster is not kafka_cluster_session
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    assert "persists" in admin.list_topics()
    admin.close()
    assert partitions_of(bootstrap, "session-auto") == 4  # kafka_cluster_config
    assert kafka_cluster_session.config.get_int("group.initial.rebalance.delay.ms") == 0


def describe(cluster, topic):
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        (found,) = admin.describe_topics([topic])
        return found
    finally:
        admin.close()


def test_fault_added(kafka_cluster_session):
    kafka_cluster_session.faults.add(api_key=3, error_code=7, count=None)  # Metadata: REQUEST_TIMED_OUT
    assert len(kafka_cluster_session.faults.list()) == 1
    assert describe(kafka_cluster_session, "persists")["error_code"] == 7


def test_fault_gone(kafka_cluster_session):
    assert kafka_cluster_session.faults.list() == []
    found = describe(kafka_cluster_session, "persists")
    assert found["error_code"] == 0 and len(found["partitions"]) == 3


@pytest.mark.xfail(strict=True, reason="faults are cleared after a failing test too")
def test_fault_added_then_test_fails(kafka_cluster_session):
    kafka_cluster_session.faults.add(api_key=3, error_code=7, count=None)
    raise AssertionError("fails on purpose")


def test_fault_gone_after_failure(kafka_cluster_session):
    assert kafka_cluster_session.faults.list() == []
    assert describe(kafka_cluster_session, "persists")["error_code"] == 0


@pytest.mark.asyncio
async def test_aiokafka(kafka_cluster):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers)
    await producer.start()
    try:
        await producer.send_and_wait("async-greetings", b"hello")
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        "async-greetings", bootstrap_servers=kafka_cluster.bootstrap_servers, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        message = await asyncio.wait_for(consumer.getone(), 20)
    finally:
        await consumer.stop()
    assert message.value == b"hello"


@pytest.mark.kafka_cluster(broker=3)
def test_marker_typo(kafka_cluster):
    pass


@pytest.mark.kafka_cluster(3)
def test_marker_positional(kafka_cluster):
    pass


@pytest.mark.kafka_cluster(brokers="3", config={"num.partitions": "2"})
def test_marker_brokers_not_int(kafka_cluster):
    pass


@pytest.mark.kafka_cluster(config=["num.partitions=2"])
def test_marker_config_not_dict(kafka_cluster):
    pass
'''

TEST_MODULE_MARKER = """
import pytest

pytestmark = pytest.mark.kafka_cluster(brokers=2, config={"auto.create.topics.enable": False})


def test_module_marker_applies(kafka_cluster):
    assert len(kafka_cluster.brokers) == 2
    assert kafka_cluster.config.get_bool("auto.create.topics.enable") is False
"""


def test_fixtures_in_a_project(pytester: pytest.Pytester) -> None:
    pytester.makeini(PYTEST_INI)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_fixtures=TEST_FIXTURES, test_module_marker=TEST_MODULE_MARKER)
    result = pytester.runpytest_subprocess("--strict-markers", "-p", "no:cacheprovider", timeout=120)
    result.stdout.fnmatch_lines(["plugins:*kafka-mock-broker*"])  # loaded through its entry point
    result.stdout.fnmatch_lines(
        [
            "*test_marker_typo*",
            "*@pytest.mark.kafka_cluster applied to test_fixtures.py::test_marker_typo: "
            "unknown argument(s) broker; it takes brokers=<int>, config=<dict> and kafka_version=<str>",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*test_marker_positional: takes keyword arguments only (brokers=<int>, config=<dict>), got positional (3,)"
        ]
    )
    result.stdout.fnmatch_lines(["*test_marker_brokers_not_int: brokers must be an int >= 1, got '3'"])
    result.stdout.fnmatch_lines(
        ["*test_marker_config_not_dict: config must be a dict of Kafka config keys, got list"]
    )
    result.assert_outcomes(passed=14, xfailed=1, errors=4)
    after = json.loads((pytester.path / "after_session.json").read_text())
    assert after == {"clusters": 4, "running_brokers": 0, "threads": []}


def test_bad_ini_config(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        """
        [pytest]
        kafka_cluster_config =
            num.partitions=2
            auto.create.topics.enable
        """
    )
    pytester.makepyfile(
        """
        def test_uses_session_cluster(kafka_cluster_session):
            pass

        def test_uses_it_too(kafka_cluster_session):
            pass

        def test_per_test_cluster_unaffected(kafka_cluster):
            assert len(kafka_cluster.brokers) == 1
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    result.stdout.fnmatch_lines(
        ["*ini option kafka_cluster_config: expected key=value lines, got 'auto.create.topics.enable'"]
    )
    result.assert_outcomes(passed=1, errors=2)
