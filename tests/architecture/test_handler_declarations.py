"""Every API is declared in one place, its handler module (broker/handlers/spec.py): the
versions it serves, how it is authorized, when it is enabled and how its error response
is shaped. These tests fail when a handler module lacks one, when a declaration does not
fit the API's schema, or when an API goes unchecked under the authorizer without Kafka
leaving it unchecked too."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from broker import MockCluster
from broker.error_responses import ErrorResponse, has_field
from broker.handlers import HANDLERS, enabled_handlers, handler_modules, pipeline_checks
from broker.handlers.spec import REQUIRED, Enablement, IncompleteHandler, spec_of
from broker.security.authorization import NOT_CHECKED, Authorization, AuthorizationStage
from messages.registry import request_class, response_class, schema_versions
from protocol.api_keys import ApiKey
from protocol.structs import new

HANDLER_MODULES = handler_modules()
# The APIs Kafka serves to any principal (KafkaApis checks no ACL before answering them).
UNCHECKED_IN_KAFKA = {
    ApiKey.API_VERSIONS,
    ApiKey.SASL_HANDSHAKE,
    ApiKey.SASL_AUTHENTICATE,
    ApiKey.GET_TELEMETRY_SUBSCRIPTIONS,
    ApiKey.PUSH_TELEMETRY,
}


def _name(module: ModuleType) -> str:
    return module.__name__.rsplit(".", 1)[1]


@pytest.mark.parametrize("module", HANDLER_MODULES, ids=_name)
def test_each_handler_module_declares_everything(module: ModuleType) -> None:
    missing = [name for name in REQUIRED if not hasattr(module, name)]
    assert not missing, f"{module.__name__} lacks {missing}"
    low, high = module.VERSIONS
    assert isinstance(low, int) and isinstance(high, int) and 0 <= low <= high
    assert isinstance(module.AUTHORIZATION, Authorization)
    assert isinstance(module.ENABLED, Enablement)
    assert isinstance(module.ERROR_RESPONSE, ErrorResponse)
    assert all(isinstance(line, str) and line for line in getattr(module, "NOT_IMPLEMENTED", ()))
    # The module is named after its API (franz-go's kfake: one file per API, found in one step).
    assert _name(module) == ApiKey(module.API_KEY).name.lower()


def test_every_handler_module_is_served_once() -> None:
    keys = [int(module.API_KEY) for module in HANDLER_MODULES]
    assert len(keys) == len(set(keys))
    assert sorted(keys) == sorted(HANDLERS)


@pytest.mark.parametrize("api_key", sorted(HANDLERS), ids=lambda k: ApiKey(k).name)
def test_declared_versions_lie_within_the_schema(api_key: int) -> None:
    """What ApiVersions advertises is declared, and the schema can encode all of it."""
    spec = HANDLERS[api_key]
    low, high = schema_versions(api_key)
    assert low <= spec.min_version <= spec.max_version <= high


@pytest.mark.parametrize("api_key", sorted(HANDLERS), ids=lambda k: ApiKey(k).name)
def test_authorization_is_checked_unless_kafka_checks_nothing(api_key: int) -> None:
    authorization = HANDLERS[api_key].authorization
    if api_key in UNCHECKED_IN_KAFKA:
        assert authorization is NOT_CHECKED
        return
    assert authorization is not NOT_CHECKED, f"{ApiKey(api_key).name} would be served unchecked"
    assert authorization.summary
    # Exactly one of the two places checks it: the pipeline's stage, or the handler.
    assert (authorization.check is not None) != authorization.by_handler


@pytest.mark.parametrize("api_key", sorted(HANDLERS), ids=lambda k: ApiKey(k).name)
def test_error_response_shapes_fit_the_schemas(api_key: int) -> None:
    """The entries an error response mirrors exist in that version's request and response."""
    spec = HANDLERS[api_key]
    for version in range(spec.min_version, spec.max_version + 1):
        level = spec.error_response.level(version)
        if level is None:
            continue
        request: Any = new(request_class(api_key), version)
        response: Any = new(response_class(api_key), version)
        assert any(has_field(request, name) for name in level.request), (api_key, version, level.request)
        assert has_field(response, level.response), (api_key, version, level.response)


def test_a_module_missing_a_declaration_is_refused() -> None:
    incomplete = ModuleType("broker.handlers.imaginary")
    incomplete.API_KEY = ApiKey.HEARTBEAT  # type: ignore[attr-defined]
    incomplete.VERSIONS = (0, 4)  # type: ignore[attr-defined]
    incomplete.handle = lambda ctx, request: None  # type: ignore[attr-defined]
    with pytest.raises(IncompleteHandler, match="AUTHORIZATION, ENABLED, ERROR_RESPONSE"):
        spec_of(incomplete)


def test_a_secured_broker_runs_every_declared_pipeline_check() -> None:
    config = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with MockCluster(brokers=1, config=config) as cluster:
        broker = cluster.brokers[0]
        (stage,) = [i for i in broker.pipeline.interceptors if isinstance(i, AuthorizationStage)]
        served = enabled_handlers(broker.config)
        assert stage.checks == pipeline_checks(served)
        assert set(stage.checks) == {k for k, s in served.items() if s.authorization.check is not None}


def test_enablement_follows_the_config() -> None:
    with MockCluster(brokers=1) as cluster:
        served = enabled_handlers(cluster.brokers[0].config)
        assert ApiKey.CONSUMER_GROUP_HEARTBEAT in served and ApiKey.PUSH_TELEMETRY not in served
        assert cluster.brokers[0].advertised_apis == {
            k: s.advertised for k, s in served.items()
        }
    config = {"group.coordinator.rebalance.protocols": "classic", "telemetry.enabled": "true"}
    with MockCluster(brokers=1, config=config) as cluster:
        served = enabled_handlers(cluster.brokers[0].config)
        assert ApiKey.CONSUMER_GROUP_HEARTBEAT not in served and ApiKey.PUSH_TELEMETRY in served
        assert set(cluster.brokers[0].advertised_apis) == set(served)


def test_fetch_answers_errors_at_the_top_level_from_v13() -> None:
    """FetchRequest.getErrorResponse: partitions answered up to v12, the top-level error
    code alone from v13; faults still select Fetch partitions in every version."""
    shape = HANDLERS[ApiKey.FETCH].error_response
    assert shape.answered_in_error_response(12) is not None
    assert shape.answered_in_error_response(13) is None
    assert shape.level(13) is shape.level(12) is not None
