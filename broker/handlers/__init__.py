"""One module per API; this package's table of them is what the broker serves.

Every module here with an `API_KEY` is a handler and declares what
broker/handlers/spec.py lists (versions, authorization, enablement, error response);
the others (`common`, `acl_common`, ...) are helpers they share. Adding an API means
adding its module: the table, ApiVersions, the authorization stage, error responses and
the API reference all read the declarations.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from types import ModuleType

from broker.error_responses import declare
from broker.handlers.spec import ConfigView, HandlerSpec, IncompleteHandler, spec_of
from broker.security.authorization import Check


def handler_modules() -> list[ModuleType]:
    """The modules of this package that serve an API (those with an `API_KEY`)."""
    modules = (importlib.import_module(f"{__name__}.{info.name}") for info in pkgutil.iter_modules(__path__))
    return [module for module in modules if hasattr(module, "API_KEY")]


def _table() -> dict[int, HandlerSpec]:
    table: dict[int, HandlerSpec] = {}
    for spec in sorted(map(spec_of, handler_modules()), key=lambda spec: spec.api_key):
        if spec.api_key in table:
            raise IncompleteHandler(f"two handler modules serve API key {spec.api_key} ({spec.name})")
        table[spec.api_key] = spec
        declare(spec.api_key, spec.error_response)
    return table


HANDLERS: dict[int, HandlerSpec] = _table()


def enabled_handlers(config: ConfigView) -> dict[int, HandlerSpec]:
    """The handlers a broker with this config serves and advertises."""
    return {key: spec for key, spec in HANDLERS.items() if spec.enabled.applies(config)}


def pipeline_checks(handlers: Mapping[int, HandlerSpec]) -> dict[int, Check]:
    """The authorization checks the pipeline's stage runs, per API key."""
    return {key: spec.authorization.check for key, spec in handlers.items() if spec.authorization.check}
