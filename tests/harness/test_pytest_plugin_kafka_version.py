"""The pytest plugin presents its clusters as an older Kafka release: the `kafka_cluster`
marker's `kafka_version` and the `--kafka-version` option (broker/releases.py)."""

from __future__ import annotations

import pytest

TESTS = """
import pytest
from kafka import KafkaAdminClient


def advertised(cluster):
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10_000)
    try:
        # what admin.api_versions() maps to ApiKey members, which fails on a key kafka-python
        # does not know (93, as Kafka 4.4 advertises it)
        versions = admin._manager.broker_version_data.api_versions
        return {int(key): tuple(pair) for key, pair in versions.items()}
    finally:
        admin.close()


@pytest.mark.kafka_cluster(kafka_version="3.9")
def test_marker(kafka_cluster):
    assert advertised(kafka_cluster)[18] == (0, 4)  # ApiVersions: 3.9's maximum
    assert advertised(kafka_cluster)[74] == (0, 0)  # ListConfigResources: 3.9 has v0 only


def test_option_or_default(kafka_cluster, pytestconfig):
    expected = {None: (0, 6), "4.0": (0, 5)}[pytestconfig.getoption("kafka_mock_version")]
    assert advertised(kafka_cluster)[28] == expected  # TxnOffsetCommit


def test_session_cluster(kafka_cluster_session, pytestconfig):
    expected = {None: (0, 3), "4.0": (0, 2)}[pytestconfig.getoption("kafka_mock_version")]
    assert advertised(kafka_cluster_session)[42] == expected  # DeleteGroups


@pytest.mark.kafka_cluster(kafka_version="2.8")
def test_marker_unknown_version(kafka_cluster):
    pass
"""


def test_the_marker_and_the_option_choose_the_release(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_versions=TESTS)
    for option in ([], ["--kafka-version", "4.0"]):
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *option, timeout=120)
        result.stdout.fnmatch_lines(
            ["*test_marker_unknown_version: unknown Kafka version '2.8': this broker can present itself as*"]
        )
        result.assert_outcomes(passed=3, errors=1)


def test_an_unknown_option_version_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--kafka-version", "5.0", timeout=120)
    result.stderr.fnmatch_lines(["*--kafka-version: unknown Kafka version '5.0'*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
