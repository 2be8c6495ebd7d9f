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

from broker.error_responses import declare
from broker.handlers.spec import ConfigView, HandlerSpec, spec_of
from broker.security.authorization import Check


def _handler_modules() -> list[object]:
    modules = (importlib.import_module(f"{__name__}.{info.name}") for info in pkgutil.iter_modules(__path__))
    return [module for module in modules if hasattr(module, "API_KEY")]


HANDLERS: dict[int, HandlerSpec] = dict(
    sorted((spec.api_key, spec) for spec in map(spec_of, _handler_modules()))  # type: ignore[arg-type]
)
for _spec in HANDLERS.values():
    declare(_spec.api_key, _spec.error_response)


def enabled_handlers(config: ConfigView) -> dict[int, HandlerSpec]:
    """The handlers a broker with this config serves and advertises."""
    return {key: spec for key, spec in HANDLERS.items() if spec.enabled.applies(config)}


def pipeline_checks(handlers: Mapping[int, HandlerSpec]) -> dict[int, Check]:
    """The authorization checks the pipeline's stage runs, per API key."""
    return {key: spec.authorization.check for key, spec in handlers.items() if spec.authorization.check}
