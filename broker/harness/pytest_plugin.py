"""pytest plugin (entry point `pytest11`): mock Kafka cluster fixtures.

- `kafka_cluster`: a fresh thread-backed `MockCluster` per test, shaped by
  `@pytest.mark.kafka_cluster(brokers=3, config={"num.partitions": "6"}, kafka_version="3.9")`
  on the test, its class or its module (`pytestmark`); the closest marker wins.
- `kafka_cluster_session`: one cluster for the whole session, shaped by the ini options
  `kafka_cluster_brokers` and `kafka_cluster_config` (`key=value` lines). Faults injected
  into it are cleared and stopped brokers started again after every test, so they never
  leak into the next one.
- `--kafka-version X.Y` (command line) presents both as that Kafka release (its API
  versions and a new cluster's features: broker/releases.py) unless a marker's
  `kafka_version` says otherwise.

Servers bind free ports on 127.0.0.1 and stop when their fixture ends. This module is
loaded by every pytest run in an environment where the broker is installed, so it imports
the broker itself only inside the fixtures.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from broker.mock_cluster import MockCluster

MARKER = "kafka_cluster"
MARKER_KWARGS = ("brokers", "config", "kafka_version")
OPTION_VERSION = "--kafka-version"
INI_BROKERS = "kafka_cluster_brokers"
INI_CONFIG = "kafka_cluster_config"

# The running session cluster, so the teardown hook can reach it without a fixture.
_SESSION_CLUSTER = pytest.StashKey["MockCluster"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        OPTION_VERSION,
        dest="kafka_mock_version",
        default=None,
        metavar="X.Y",
        help="the Kafka release the kafka_cluster fixtures present (3.9, 4.0, 4.4; default 4.4, "
        "the one the broker models)",
    )
    parser.addini(
        INI_BROKERS, "number of brokers of the kafka_cluster_session cluster", type="int", default=1
    )
    parser.addini(
        INI_CONFIG,
        "Kafka config of the kafka_cluster_session cluster, one key=value per line",
        type="linelist",
        default=[],
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(brokers=1, config=None, kafka_version=None): number of brokers, Kafka config "
        '(a dict of server.properties keys) and Kafka release ("3.9", "4.0") of the cluster '
        "the kafka_cluster fixture starts for this test",
    )
    version = config.getoption("kafka_mock_version", None)
    if version is not None:
        from broker.releases import UnknownRelease, release

        try:
            release(version)
        except UnknownRelease as exc:
            raise pytest.UsageError(f"{OPTION_VERSION}: {exc}") from exc


def _option_version(config: pytest.Config) -> str | None:
    version: str | None = config.getoption("kafka_mock_version", None)
    return version


def _marker_settings(node: pytest.Item) -> tuple[int, dict[str, Any], str | None]:
    """brokers, config and Kafka release from the closest `kafka_cluster` marker (the
    release from --kafka-version when it names none); mistakes fail the test, not silently
    fall back to a default cluster."""
    marker = node.get_closest_marker(MARKER)
    if marker is None:
        return 1, {}, _option_version(node.config)
    where = f"@pytest.mark.{MARKER} applied to {node.nodeid}"
    if marker.args:
        pytest.fail(
            f"{where}: takes keyword arguments only (brokers=<int>, config=<dict>), "
            f"got positional {marker.args!r}",
            pytrace=False,
        )
    unknown = sorted(set(marker.kwargs) - set(MARKER_KWARGS))
    if unknown:
        pytest.fail(
            f"{where}: unknown argument(s) {', '.join(unknown)}; it takes brokers=<int>, config=<dict>"
            " and kafka_version=<str>",
            pytrace=False,
        )
    brokers = marker.kwargs.get("brokers", 1)
    if not isinstance(brokers, int) or isinstance(brokers, bool) or brokers < 1:
        pytest.fail(f"{where}: brokers must be an int >= 1, got {brokers!r}", pytrace=False)
    config = marker.kwargs.get("config")
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        pytest.fail(
            f"{where}: config must be a dict of Kafka config keys, got {type(config).__name__}",
            pytrace=False,
        )
    version = marker.kwargs.get("kafka_version", _option_version(node.config))
    if version is not None:
        from broker.releases import UnknownRelease, release

        try:
            release(version if isinstance(version, str) else repr(version))
        except UnknownRelease as exc:
            pytest.fail(f"{where}: {exc}", pytrace=False)
    return brokers, dict(config), version


def _ini_settings(config: pytest.Config) -> tuple[int, dict[str, str]]:
    """brokers and config from the ini options; mistakes fail every test that uses the cluster."""
    try:
        brokers = config.getini(INI_BROKERS)
    except (TypeError, ValueError) as exc:
        pytest.fail(f"ini option {INI_BROKERS}: {exc}", pytrace=False)
    if not isinstance(brokers, int) or isinstance(brokers, bool) or brokers < 1:
        pytest.fail(f"ini option {INI_BROKERS} must be an int >= 1, got {brokers!r}", pytrace=False)
    settings: dict[str, str] = {}
    for line in config.getini(INI_CONFIG):
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            pytest.fail(f"ini option {INI_CONFIG}: expected key=value lines, got {line!r}", pytrace=False)
        settings[key.strip()] = value.strip()
    return brokers, settings


@pytest.fixture
def kafka_cluster(request: pytest.FixtureRequest) -> Iterator[MockCluster]:
    """A running cluster of its own for this test (see the `kafka_cluster` marker), so no
    topic, offset or quota of one test is seen by another; stopped when the test ends."""
    from broker.mock_cluster import MockCluster

    brokers, config, version = _marker_settings(request.node)
    with MockCluster(brokers=brokers, config=config, kafka_version=version) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kafka_cluster_session(pytestconfig: pytest.Config) -> Iterator[MockCluster]:
    """One running cluster shared by the whole session (ini options `kafka_cluster_brokers`,
    `kafka_cluster_config`), for suites where a cluster per test costs too much. Topics and
    offsets persist between tests; injected faults do not."""
    from broker.mock_cluster import MockCluster

    brokers, config = _ini_settings(pytestconfig)
    with MockCluster(brokers=brokers, config=config, kafka_version=_option_version(pytestconfig)) as cluster:
        pytestconfig.stash[_SESSION_CLUSTER] = cluster
        try:
            yield cluster
        finally:
            del pytestconfig.stash[_SESSION_CLUSTER]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """Clears the session cluster's faults after every test while it runs, before the test's
    own fixtures are torn down, so their cleanup and the next test see a healthy cluster.
    Tests that did not use the cluster cannot have added any (short of getfixturevalue,
    which this also covers), and no cluster is started for them. A failure to clear is
    reported after the teardown, which must run whatever happens here."""
    cluster = item.config.stash.get(_SESSION_CLUSTER, None)
    failure: Exception | None = None
    if cluster is not None:
        try:
            cluster.faults.clear()
            for broker in cluster.brokers:  # a broker a test stopped is back for the next
                if not broker.running:
                    cluster.start_broker(broker.node_id)
        except Exception as exc:
            failure = exc
    yield
    if failure is not None:
        raise failure
