"""The SparkSession the report and the tests use: lean, so a local session starts fast."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

# Results are in UTC whatever the machine's zone: windows align to UTC epoch seconds.
BASE_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "1g",
    # Aggregated tables are small: few shuffle partitions, and AQE coalesces them further.
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.parquet.compression.codec": "snappy",
}


def build_session(
    master: str = "local[*]",
    app_name: str = "kafka-mock-report",
    conf: Mapping[str, str] | None = None,
    log_level: str = "WARN",
) -> SparkSession:
    """A session on `master` with BASE_CONF, overridden by `conf`. Reuses an active session
    (getOrCreate), in which case only runtime SQL settings of `conf` take effect."""
    builder = SparkSession.builder.master(master).appName(app_name)
    # Python workers (the what-if's replay) run this interpreter, whose environment has
    # this project, unless PYSPARK_PYTHON says otherwise (Spark's default: `python3` on
    # PATH). PySpark reads only the variable, when the context starts.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for key, value in {**BASE_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    return spark
