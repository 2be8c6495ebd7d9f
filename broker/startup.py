"""Start-up of the `kafka-mock-broker` process: what it need not import before its first answer.

kafka-python's package `__init__` imports its whole client (KafkaAdminClient,
KafkaConsumer, KafkaProducer and through them the network layer, the coordinator, the
metrics and `kafka.protocol.broker_version_data`): about 90 modules, 35-40 ms of a
~200 ms start-up with bytecode cached (measured with scripts/bench_startup.py). The
broker only uses `kafka.protocol`, `kafka.record` and `kafka.errors`, which import
nothing of that client. `defer_kafka_package_init` registers the `kafka` package with
its real spec and `__path__` but without running its `__init__`, so importing
`kafka.protocol...` loads only what it names; the first access to an attribute the
`__init__` would have set (`from kafka import KafkaConsumer`, `kafka.__version__`) runs
the real `__init__` in place, so later code sees the package exactly as usual.

Only the console entry point calls it (`broker.cli.main`, before it imports the
broker): a library user's process (tests with `MockCluster`) imports kafka-python as
usual.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from typing import Any

# Dunder names the import system and introspection probe: answered "missing" without
# running the real __init__ (which sets none of them except these).
_INIT_DUNDERS = frozenset(
    {"__all__", "__version__", "__title__", "__author__", "__license__", "__copyright__"}
)


def defer_kafka_package_init() -> bool:
    """Registers `kafka` without running its `__init__` until an attribute it sets is
    asked for; False (nothing done) when kafka-python is already imported or not found."""
    if "kafka" in sys.modules:
        return False
    spec = importlib.util.find_spec("kafka")
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return False
    package = importlib.util.module_from_spec(spec)  # __spec__, __path__, __file__, __loader__
    loader = spec.loader
    # The one thing the real __init__ does that matters before it runs: a NullHandler on
    # the "kafka" logger (removed again when the real __init__ adds its own).
    placeholder = logging.NullHandler()
    logging.getLogger("kafka").addHandler(placeholder)
    state = {"loaded": False}

    def __getattr__(name: str) -> Any:
        if state["loaded"] or (name.startswith("__") and name not in _INIT_DUNDERS):
            raise AttributeError(f"module 'kafka' has no attribute {name!r}")
        state["loaded"] = True
        logging.getLogger("kafka").removeHandler(placeholder)
        loader.exec_module(package)  # kafka/__init__.py, in this module's namespace
        return getattr(package, name)

    package.__dict__["__getattr__"] = __getattr__  # PEP 562: consulted for missing attributes
    sys.modules["kafka"] = package
    return True
