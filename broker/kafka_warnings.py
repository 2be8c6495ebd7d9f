"""kafka-python's schema loading, without its DeprecationWarnings.

kafka-python 3.0 builds its message classes from Apache Kafka's JSON schemas as its
modules are imported, reading each schema with `importlib.resources.read_text`, which
Python 3.11 and 3.12 deprecate (3.13 undid that): one DeprecationWarning per class, about
260 in a user's pytest run that starts a broker, and errors under `pytest -W error`.
Which module imports `kafka` first (the broker's, or a test module's `from kafka import
KafkaProducer`) is not up to this package, so `install()` (called when `broker` is
imported, and the pytest plugin is a submodule of it) puts a finder in front of the
import system that runs the modules of the `kafka` package with exactly that warning
ignored. Nothing else is filtered, and nothing outside `kafka` is touched; the broker's
own schemas (`messages.bundled_schemas`) are loaded under the same filter by
`messages.registry`.
"""

from __future__ import annotations

import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence
from typing import Any

# The message of both deprecations ("read_text is deprecated. Use files() instead. ...",
# and open_text's, which read_text calls).
SCHEMA_LOADER_WARNING = r".* is deprecated\. Use files\(\) instead"


class _QuietLoader:
    """The module's own loader, executing the module under the filter. Everything else
    (resources, source, file name) is the real loader's."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        result: types.ModuleType | None = self._loader.create_module(spec)
        return result

    def exec_module(self, module: types.ModuleType) -> None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", SCHEMA_LOADER_WARNING, DeprecationWarning)
            self._loader.exec_module(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class QuietKafkaFinder:
    """Finds `kafka` and `kafka.*` as the import system would, with a quiet loader."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "kafka" and not fullname.startswith("kafka."):
            return None
        for finder in sys.meta_path:
            if finder is self or isinstance(finder, QuietKafkaFinder):
                continue
            find_spec = getattr(finder, "find_spec", None)
            if find_spec is None:
                continue
            spec: importlib.machinery.ModuleSpec | None = find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _QuietLoader(spec.loader)  # type: ignore[assignment]
                return spec
        return None

    def invalidate_caches(self) -> None:
        pass


def install() -> None:
    """Puts the finder first in `sys.meta_path` (once; not needed from Python 3.13)."""
    if sys.version_info >= (3, 13):
        return
    if not any(isinstance(finder, QuietKafkaFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, QuietKafkaFinder())
