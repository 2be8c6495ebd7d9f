"""One SparkSession for every Spark test module (a JVM start costs seconds).

Import the fixture into a test module with
`from tests.spark_session import spark_fixture  # noqa: F401`; tests take `spark`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_session: SparkSession | None = None

# Small and quiet: two cores, two shuffle partitions, no UI, no progress bar.
TEST_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "2",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "512m",
}


def get_session() -> SparkSession:
    """The shared session, started on first use. pytest makes one fixture per module that
    imports `spark_fixture`, all session-scoped: they share this session, and the first
    teardown (at the end of the test session) stops it."""
    global _session
    if _session is None:
        pytest.importorskip("pyspark")
        from spark.session import build_session

        _session = build_session("local[2]", app_name="kafka-mock-tests", conf=TEST_CONF, log_level="ERROR")
    return _session


def stop_session() -> None:
    global _session
    if _session is not None:
        _session.stop()
        _session = None


@pytest.fixture(scope="session", name="spark")
def spark_fixture() -> Iterator[SparkSession]:
    yield get_session()
    stop_session()
