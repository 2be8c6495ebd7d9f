"""Optional features and the extras that install them.

The base install (`pip install kafka-mock-broker`) is the broker and the pytest plugin.
A feature that needs more says which extra to install, in one line, when it is asked
for: `MissingExtra` from the Python API, that line and exit status 2 from the CLI.
Checks look for the modules without importing them, so they cost nothing when the
extra is installed (the feature imports what it uses itself).
"""

from __future__ import annotations

import importlib.util

DISTRIBUTION = "kafka-mock-broker"

# What each extra brings, by the modules it installs (pyproject.toml's
# [project.optional-dependencies] says the same with distribution names and ranges).
# The 'spark' extra is spark/cli.py's to check: spark imports nothing of the broker.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "metrics": ("pyarrow",),
    "http": ("aiohttp", "prometheus_client"),
    "telemetry": ("opentelemetry.proto", "google.protobuf"),
}
# The feature each extra is for, as the one line names it.
FEATURES: dict[str, str] = {
    "metrics": "the Parquet metrics sink (metrics.dir)",
    "http": "the HTTP control plane (admin.port)",
    "telemetry": "client telemetry (telemetry.enabled, KIP-714)",
}


class MissingExtra(ImportError):
    """A feature was asked for whose optional dependencies are not installed.

    `str(exc)` is the one line to show a user, e.g. "the HTTP control plane needs the
    'http' extra: pip install 'kafka-mock-broker[http]'"."""

    def __init__(self, feature: str, extra: str, module: str | None = None) -> None:
        self.feature = feature
        self.extra = extra
        self.module = module  # the first module found missing
        super().__init__(
            f"{feature} needs the {extra!r} extra: pip install '{DISTRIBUTION}[{extra}]'", name=module
        )


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package is missing, or a broken __spec__
        return False


def require(extra: str) -> None:
    """Raises MissingExtra unless every module of `extra` can be imported."""
    for module in EXTRA_MODULES[extra]:
        if not _installed(module):
            raise MissingExtra(FEATURES[extra], extra, module)


def raise_missing_extra(exc: ImportError, extra: str) -> None:
    """Raises MissingExtra in place of `exc` (an ImportError of a feature's own imports)
    when a module of `extra` is what is missing; returns for any other ImportError (a
    broken install), which the caller re-raises as it is."""
    name = exc.name or ""
    if any(name == m or name.startswith(m + ".") or m.startswith(name + ".") for m in EXTRA_MODULES[extra]):
        raise MissingExtra(FEATURES[extra], extra, name) from None
