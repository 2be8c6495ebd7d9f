"""The base install's surface imports none of the extras' packages, even where they are
installed (as here): `import broker`, `MockCluster`, the pytest plugin and a default
cluster running. Each extra's package is imported only by the feature that needs it.
"""

from __future__ import annotations

import json
import subprocess
import sys

# Top-level names of what the metrics, http, telemetry and spark extras install.
OPTIONAL = (
    "pyarrow",
    "aiohttp",
    "prometheus_client",
    "opentelemetry",
    "google.protobuf",
    "pyspark",
    "matplotlib",
)

CODE = """
import json, sys
import broker
from broker.mock_cluster import MockCluster
import broker.harness.pytest_plugin
after_import = sorted(m for m in sys.modules if m.startswith({prefixes!r}))
with MockCluster() as cluster:
    cluster.create_topic("t")
after_start = sorted(m for m in sys.modules if m.startswith({prefixes!r}))
print(json.dumps([after_import, after_start]))
"""


def test_importing_the_broker_imports_no_extra() -> None:
    prefixes = tuple(p for name in OPTIONAL for p in (name, name + "."))
    result = subprocess.run(
        [sys.executable, "-c", CODE.format(prefixes=prefixes)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    after_import, after_start = json.loads(result.stdout)
    assert after_import == [], "imported by `import broker`, MockCluster or the pytest plugin"
    assert after_start == [], "imported by a default MockCluster"
