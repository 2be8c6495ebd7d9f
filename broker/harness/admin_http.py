"""HTTP control plane (aiohttp) on 127.0.0.1: the harness API as JSON over HTTP.

Tests in other languages, or in another process, drive faults, throttles, broker
restarts, leader moves and quotas through it, and read the recorded requests, the
conformance report and Prometheus metrics. Handlers run on the cluster's own event loop,
where cluster state lives, so they call the cluster's Python API directly (the async
forms where one exists). Every answer is JSON (but /metrics); bad input is a 400 that
says what is wrong, never a 500.

The routes, their parameters and examples are in each handler's docstring (sections
Path, Query, Body, Answer, Example); docs/reference/http-api.md is generated from them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, NoReturn, Protocol, TypeVar

from broker.extras import raise_missing_extra

try:
    from aiohttp import web
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
    from prometheus_client.metrics_core import Metric as PromMetric
    from prometheus_client.registry import Collector
except ImportError as exc:  # the 'http' extra is not installed: MissingExtra says so in one line
    raise_missing_extra(exc, "http")
    raise

from broker.config.dynamic import ConfigError
from broker.harness.conformance import ConformanceTracker
from broker.harness.faults import FaultInjector
from broker.harness.recording import RequestRecorder, to_json_value
from broker.quota_admin import ANY, QuotaAdmin
from broker.security.acl_admin import AclAdmin, acl_filter_of
from broker.security.acls import AclBinding, Operation, PatternType, Permission, ResourceType
from broker.server import BrokerServer
from broker.state.cluster import ClusterError, Partition
from broker.telemetry.admin import ClientMetricsAdmin
from messages.registry import api_name
from protocol.errors import ErrorCode, error_name
from quotas.entity import CLIENT_ID, ENTITY_TYPES, IP, USER, QuotaEntity
from quotas.sensor import Metric
from quotas.validation import QuotaError

log = logging.getLogger("broker.admin_http")

DEFAULT_NAME = "<default>"  # query value for the default entity (null in JSON bodies)
ANY_NAME = "<any>"  # query value for any name of that entity type (Kafka's MATCH_TYPE_SPECIFIED)
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
SHUTDOWN_TIMEOUT_S = 5.0  # how long stop() waits for in-flight HTTP requests
# Entity type in HTTP (Kafka's names) -> QuotaAdmin.describe keyword.
_DESCRIBE_KEYWORDS = {USER: "user", CLIENT_ID: "client_id", IP: "ip"}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class HttpError(Exception):
    """An answer other than 2xx, with its JSON body."""

    def __init__(self, status: int, error: str, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body: dict[str, Any] = {"error": error, "message": message}
        if code is not None:
            self.body = {"error_code": code, **self.body}


def bad_request(message: str) -> NoReturn:
    raise HttpError(400, "BAD_REQUEST", message)


def not_found(message: str) -> NoReturn:
    raise HttpError(404, "NOT_FOUND", message)


def kafka_error(status: int, code: int, message: str) -> HttpError:
    """Kafka's code and name beside the message, as a client would have seen them."""
    return HttpError(status, error_name(code), message, code)


def _dumps(value: Any) -> str:
    return json.dumps(value, default=to_json_value)


def _json(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(value, status=status, headers=headers, dumps=_dumps)


@web.middleware
async def _json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure as JSON: ours, Kafka's refusals, aiohttp's 404/405/413, and a logged
    500 for bugs (without the traceback, which goes to the log)."""
    try:
        return await handler(request)
    except HttpError as exc:
        return _json(exc.body, exc.status)
    except QuotaError as exc:
        error = kafka_error(400, exc.code, exc.message)
        return _json(error.body, error.status)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        headers = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        reason = (exc.reason or "error").upper().replace(" ", "_")
        return _json(
            {"error": reason, "message": f"{request.method} {request.path}: {exc.reason}"},
            exc.status,
            headers,
        )
    except Exception as exc:
        log.exception("admin HTTP %s %s failed", request.method, request.path)
        return _json({"error": "INTERNAL_ERROR", "message": f"{type(exc).__name__}: {exc}"}, 500)


# -- request parsing -------------------------------------------------------------


def _reject_constant(name: str) -> NoReturn:
    bad_request(f"{name} is not a JSON number")


async def _body(request: web.Request, allowed: Iterable[str]) -> dict[str, Any]:
    """The JSON object body; unknown fields are refused so that a typo is not a silently
    ignored option."""
    try:
        text = (await request.read()).decode("utf-8")
    except UnicodeDecodeError:
        bad_request("the body is not UTF-8")
    if not text.strip():
        bad_request("a JSON object body is required")
    try:
        body = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        bad_request(f"malformed JSON: {exc}")
    except RecursionError:
        bad_request("malformed JSON: nested too deeply")
    if not isinstance(body, dict):
        bad_request(f"the body must be a JSON object, not {_json_type(body)}")
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        bad_request(f"unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(allowed))}")
    return body


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _int(body: dict[str, Any], name: str) -> int:
    value = body.get(name)
    if value is None:
        bad_request(f"{name} is required (an integer)")
    return _checked_int(name, value)


def _opt_int(body: dict[str, Any], name: str, default: int | None = None) -> int | None:
    value = body.get(name, default)
    return None if value is None else _checked_int(name, value)


def _checked_int(name: str, value: Any) -> int:
    """Every integer of a body is an int32 on the wire (ids, codes, ms): larger ones
    could only fail later, in a response's encoding."""
    if isinstance(value, bool) or not isinstance(value, int):
        bad_request(f"{name} must be an integer, not {_json_type(value)}")
    if not INT32_MIN <= value <= INT32_MAX:
        bad_request(f"{name} {value} does not fit in an int32")
    return value


def _str(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str):
        bad_request(f"{name} is required (a string)" if value is None else f"{name} must be a string")
    return value


def _opt_str(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        bad_request(f"{name} must be a string or null, not {_json_type(value)}")
    return value


def _bool(body: dict[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if not isinstance(value, bool):
        bad_request(f"{name} must be true or false, not {_json_type(value)}")
    return value


def _query(request: web.Request, allowed: Iterable[str]) -> dict[str, str]:
    query = request.rel_url.query
    unknown = sorted(set(query) - set(allowed))
    if unknown:
        bad_request(f"unknown query parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(allowed))}")
    for name in query:
        if len(query.getall(name)) > 1:
            bad_request(f"query parameter {name} given more than once")
    return dict(query)


def _query_int(query: dict[str, str], name: str) -> int | None:
    value = query.get(name)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        bad_request(f"{name} must be an integer, not {value!r}")


def _query_bool(query: dict[str, str], name: str) -> bool:
    value = query.get(name, "false").lower()
    if value not in ("true", "false", "1", "0"):
        bad_request(f"{name} must be true or false, not {value!r}")
    return value in ("true", "1")


def _path_int(request: web.Request, name: str, what: str) -> int:
    value = request.match_info[name]
    try:
        return int(value)
    except ValueError:
        not_found(f"Unknown {what} {value}")


# -- the server ------------------------------------------------------------------

T = TypeVar("T")


class ControlledCluster(Protocol):
    """What the control plane drives: MockCluster's harness API."""

    @property
    def brokers(self) -> list[BrokerServer]: ...
    @property
    def quotas(self) -> QuotaAdmin: ...
    @property
    def faults(self) -> FaultInjector: ...
    @property
    def requests(self) -> RequestRecorder: ...
    @property
    def conformance(self) -> ConformanceTracker: ...
    def broker(self, node_id: int) -> BrokerServer: ...
    @property
    def acls(self) -> AclAdmin: ...
    @property
    def client_metrics(self) -> ClientMetricsAdmin: ...
    def describe(self) -> dict[str, Any]: ...
    def list_transactions(self) -> list[dict[str, Any]]: ...
    def list_groups(self) -> list[dict[str, Any]]: ...
    def describe_group(self, group_id: str) -> dict[str, Any] | None: ...
    async def stop_broker_async(self, node_id: int) -> None: ...
    async def start_broker_async(self, node_id: int) -> None: ...
    def move_leader(self, topic: str, partition: int, node_id: int) -> Partition: ...
    def metrics(self) -> list[Metric]: ...
    def on_loop(self, fn: Callable[[], T]) -> T: ...


class AdminServer:
    """The control plane of one MockCluster (one per cluster, with its own metrics
    registry so that clusters in one process do not collide)."""

    def __init__(self, cluster: ControlledCluster) -> None:
        self.cluster = cluster
        self.app = web.Application(middlewares=[_json_errors])
        self._runner: web.AppRunner | None = None
        self.port = 0
        # What POST /v1/shutdown calls: set by `kafka-mock-broker` (its stop event); a
        # cluster embedded in a Python process is stopped by its owner, so None there.
        self.on_shutdown: Callable[[], None] | None = None
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(ClusterCollector(cluster))
        self._routes()

    def _routes(self) -> None:
        router = self.app.router
        router.add_get("/v1/cluster", self.get_cluster)
        router.add_get("/v1/quotas", self.get_quotas)
        router.add_post("/v1/quotas", self.post_quotas)
        router.add_get("/v1/quotas/resolve", self.get_resolve)
        router.add_get("/v1/faults", self.get_faults)
        router.add_post("/v1/faults", self.post_fault)
        router.add_delete("/v1/faults", self.delete_faults)
        router.add_delete("/v1/faults/{fault_id}", self.delete_fault)
        router.add_post("/v1/throttle", self.post_throttle)
        router.add_post("/v1/brokers/{broker_id}/stop", self.stop_broker)
        router.add_post("/v1/brokers/{broker_id}/start", self.start_broker)
        router.add_post("/v1/leaders", self.post_leader)
        router.add_get("/v1/requests", self.get_requests)
        router.add_delete("/v1/requests", self.delete_requests)
        router.add_get("/v1/conformance", self.get_conformance)
        router.add_get("/v1/acls", self.get_acls)
        router.add_post("/v1/acls", self.post_acl)
        router.add_delete("/v1/acls", self.delete_acls)
        router.add_get("/v1/transactions", self.get_transactions)
        router.add_get("/v1/transactions/{transactional_id}", self.get_transaction)
        router.add_get("/v1/groups", self.get_groups)
        router.add_get("/v1/groups/{group_id}", self.get_group)
        router.add_get("/v1/client-metrics", self.get_client_metrics)
        router.add_put("/v1/client-metrics/{name}", self.put_client_metrics)
        router.add_delete("/v1/client-metrics/{name}", self.delete_client_metrics)
        router.add_get("/metrics", self.get_metrics)
        router.add_post("/v1/shutdown", self.post_shutdown)

    async def start(self, host: str, port: int) -> None:
        self._runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT_S)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, reuse_address=True)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- cluster -----------------------------------------------------------------
    async def get_cluster(self, request: web.Request) -> web.Response:
        """The cluster id, the brokers (id, host, port, up) and the topics with their
        partitions' leaders, leader epochs and replicas.

        Example:
            GET /v1/cluster
        """
        _query(request, ())
        return _json(self.cluster.describe())

    async def stop_broker(self, request: web.Request) -> web.Response:
        """Takes a broker down as a crash would: its listeners close, its connections drop,
        Metadata stops listing it and its partitions elect new leaders. Answers the
        broker's entry (`"up": false`).

        Path:
            broker_id: the broker's node id

        Example:
            POST /v1/brokers/0/stop
        """
        broker = self._broker(request)
        await self.cluster.stop_broker_async(broker.node_id)
        return _json(self._broker_entry(broker.node_id))

    async def start_broker(self, request: web.Request) -> web.Response:
        """Starts a stopped broker again on its ports. Answers the broker's entry.

        Path:
            broker_id: the broker's node id

        Example:
            POST /v1/brokers/0/start
        """
        broker = self._broker(request)
        await self.cluster.start_broker_async(broker.node_id)
        return _json(self._broker_entry(broker.node_id))

    async def post_shutdown(self, request: web.Request) -> web.Response:
        """Stops `kafka-mock-broker` as SIGTERM does: answers 202, then finishes in-flight
        requests, writes its metrics, recording and conformance report, removes its
        `--ready-file` and exits with status 0. For harnesses that cannot send SIGTERM (they
        did not start the process, or their process API only kills). A cluster started
        from Python (MockCluster) is stopped by its owner: 404 there.

        Answer:
            `{"stopping": true}` with status 202

        Example:
            POST /v1/shutdown
        """
        _query(request, ())
        if self.on_shutdown is None:
            not_found("this cluster runs inside a Python process (MockCluster): its owner stops it")
        # After this answer is sent: the stop closes this server, waiting for it.
        asyncio.get_running_loop().call_soon(self.on_shutdown)
        return _json({"stopping": True}, 202)

    def _broker(self, request: web.Request) -> BrokerServer:
        node_id = _path_int(request, "broker_id", "broker")
        try:
            return self.cluster.broker(node_id)
        except ClusterError as exc:
            raise kafka_error(404, exc.code, exc.message) from None

    def _broker_entry(self, node_id: int) -> dict[str, Any]:
        return next(b for b in self.cluster.describe()["brokers"] if b["id"] == node_id)

    async def post_leader(self, request: web.Request) -> web.Response:
        """Makes a broker the partition's leader; the leader epoch goes up and clients
        that produce to the old leader get NOT_LEADER_OR_FOLLOWER.

        Body:
            topic: the topic (required)
            partition: the partition (required)
            broker: node id of the new leader (required)

        Answer:
            `{"topic", "partition", "leader", "leader_epoch", "replicas"}`; 404 for an unknown topic,
            partition or broker

        Example:
            POST /v1/leaders {"topic": "orders", "partition": 0, "broker": 0}
        """
        body = await _body(request, ("topic", "partition", "broker"))
        topic, partition, node_id = _str(body, "topic"), _int(body, "partition"), _int(body, "broker")
        try:
            self.cluster.broker(node_id)  # unknown: 404 with code 42, as /v1/brokers/{id} answers
            moved = self.cluster.move_leader(topic, partition, node_id)
        except ClusterError as exc:
            unknown = exc.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION or exc.message.startswith(
                "Unknown broker"
            )
            raise kafka_error(404 if unknown else 400, exc.code, exc.message) from None
        return _json(
            {
                "topic": topic,
                "partition": partition,
                "leader": moved.leader,
                "leader_epoch": moved.leader_epoch,
                "replicas": list(moved.replicas),
            }
        )

    # -- quotas ------------------------------------------------------------------
    async def get_quotas(self, request: web.Request) -> web.Response:
        """The quota entities with their values, as DescribeClientQuotas gives them. With no
        query every entity is listed; each given entity type filters by name.

        Query:
            user: a user name, `<default>` for the default user entity, `<any>` for any name
            client-id: a client id, `<default>` or `<any>`, as for user
            ip: an address, `<default>` or `<any>`, as for user
            strict: true: only entities with exactly the given types (default false)

        Answer:
            `[{"entity": {"user": "alice", "client-id": null}, "values": {"producer_byte_rate": 1048576.0}}, ...]`
            (null in an entity is the default entity)

        Example:
            GET /v1/quotas?user=alice&client-id=%3Cdefault%3E&strict=true
        """
        query = _query(request, (*_DESCRIBE_KEYWORDS, "strict"))
        components: dict[str, object] = {}
        for entity_type, keyword in _DESCRIBE_KEYWORDS.items():
            if entity_type in query:
                components[keyword] = _match(query[entity_type])
        strict = _query_bool(query, "strict")
        found = self.cluster.quotas.describe(strict, **components)
        return _json([_entity_values(entity, values) for entity, values in _sorted_entities(found)])

    async def post_quotas(self, request: web.Request) -> web.Response:
        """Alters one entity's quotas, with AlterClientQuotas' validation and error codes.

        Body:
            entity: object of entity type (`user`, `client-id`, `ip`) to a name, or null for the default entity (required)
            set: object of quota key (`producer_byte_rate`, `consumer_byte_rate`, `request_percentage`, `controller_mutation_rate`, `connection_creation_rate`) to a number
            remove: array of quota keys to remove
            validate_only: true: check, change nothing (default false)

        Answer:
            the entity and its values now, and `validate_only`; a refusal is a 400 with Kafka's error code

        Example:
            POST /v1/quotas {"entity": {"user": "alice", "client-id": null}, "set": {"producer_byte_rate": 1048576}}
        """
        body = await _body(request, ("entity", "set", "remove", "validate_only"))
        entity = _entity(body.get("entity"))
        changes = _set(body.get("set"))
        remove = _remove(body.get("remove"))
        validate_only = _bool(body, "validate_only")
        await self.cluster.quotas.alter_async(entity, changes, remove, validate_only)
        # Valid, so the components are known types: the entity's values now.
        exact = {_DESCRIBE_KEYWORDS[t]: name for t, name in entity.items()}
        values = self.cluster.quotas.describe(True, **exact).get(QuotaEntity(entity), {})
        return _json({**_entity_values(QuotaEntity(entity), values), "validate_only": validate_only})

    async def get_resolve(self, request: web.Request) -> web.Response:
        """The quota in force for a user and client id, per quota key: its value, the
        entity it comes from and the entries it overrides (Kafka's precedence).

        Query:
            user: the user name (default `ANONYMOUS`, what an unauthenticated client is)
            client-id: the client id (default empty)

        Example:
            GET /v1/quotas/resolve?user=alice&client-id=app
        """
        query = _query(request, (USER, CLIENT_ID))
        user = query.get(USER, "ANONYMOUS")
        client_id = query.get(CLIENT_ID, "")
        resolved = self.cluster.quotas.resolve(user, client_id)
        return _json(
            {
                "user": user,
                "client_id": client_id,
                "quotas": {
                    key: {
                        "value": r.value,
                        "entity": r.entity.to_json(),
                        "overridden": [{"value": v, "entity": e.to_json()} for v, e in r.overridden],
                    }
                    for key, r in sorted(resolved.items())
                },
            }
        )

    # -- faults ------------------------------------------------------------------
    async def get_faults(self, request: web.Request) -> web.Response:
        """The fault and forced-throttle rules still active, each with its id, filters and
        how often it `fired`; spent rules are gone.

        Example:
            GET /v1/faults
        """
        _query(request, ())
        return _json([fault.to_dict() for fault in self.cluster.faults.list()])

    async def post_fault(self, request: web.Request) -> web.Response:
        """Adds a fault rule (201 and the rule): requests it matches get an error code,
        a delay or a disconnect.

        Body:
            api_key: the API the rule matches (required)
            error_code: Kafka error code to answer with (0: none)
            count: how many matching requests it acts on (null: until deleted)
            topic: only entries of this topic (per-entry errors)
            partition: only this partition
            client_id: only requests with this client id
            latency_ms: delay the response this long
            disconnect: true: close the connection instead of answering
            broker: only requests to this broker

        Example:
            POST /v1/faults {"api_key": 0, "error_code": 6, "count": 2}
            POST /v1/faults {"api_key": 3, "latency_ms": 500, "client_id": "slow-app"}
        """
        body = await _body(
            request,
            (
                "api_key",
                "error_code",
                "count",
                "topic",
                "partition",
                "client_id",
                "latency_ms",
                "disconnect",
                "broker",
            ),
        )
        api_key = _int(body, "api_key")
        try:
            fault = self.cluster.faults.add(
                api_key,
                error_code=_opt_int(body, "error_code", 0) or 0,
                count=_opt_int(body, "count"),
                topic=_opt_str(body, "topic"),
                partition=_opt_int(body, "partition"),
                client_id=_opt_str(body, "client_id"),
                latency_ms=_opt_int(body, "latency_ms", 0) or 0,
                disconnect=_bool(body, "disconnect"),
                broker=_opt_int(body, "broker"),
            )
        except ValueError as exc:
            bad_request(str(exc))
        return _json(fault.to_dict(), 201)

    async def post_throttle(self, request: web.Request) -> web.Response:
        """Adds a forced-throttle rule (201 and the rule): the client's next responses
        carry this throttle time and its connection is muted for it. Without `api_key` it applies
        to the client's very next response that has a throttle time (usually ApiVersions or
        Metadata at connect).

        Body:
            client_id: the client id to throttle (required)
            throttle_ms: the throttle time (required)
            count: how many responses (default 1)
            api_key: only responses of this API

        Example:
            POST /v1/throttle {"client_id": "app", "throttle_ms": 700, "count": 1, "api_key": 0}
        """
        body = await _body(request, ("client_id", "throttle_ms", "count", "api_key"))
        client_id, throttle_ms = _str(body, "client_id"), _int(body, "throttle_ms")
        try:
            fault = self.cluster.faults.throttle(
                client_id, throttle_ms, _opt_int(body, "count", 1), _opt_int(body, "api_key")
            )
        except ValueError as exc:
            bad_request(str(exc))
        return _json(fault.to_dict(), 201)

    async def delete_faults(self, request: web.Request) -> web.Response:
        """Removes every fault and throttle rule.

        Answer:
            `{"deleted": <how many>}`

        Example:
            DELETE /v1/faults
        """
        _query(request, ())
        count = len(self.cluster.faults.list())
        self.cluster.faults.clear()
        return _json({"deleted": count})

    async def delete_fault(self, request: web.Request) -> web.Response:
        """Removes one rule; 404 when it is unknown or already spent.

        Path:
            fault_id: the rule's id, as POST /v1/faults answered it

        Example:
            DELETE /v1/faults/1
        """
        fault_id = _path_int(request, "fault_id", "fault")
        if not self.cluster.faults.remove(fault_id):
            not_found(f"Unknown fault {fault_id} (or it has run out of matches)")
        return _json({"deleted": fault_id})

    # -- recording, conformance, metrics -----------------------------------------
    async def get_requests(self, request: web.Request) -> web.Response:
        """The recorded requests and their responses (the recording ring,
        `record.requests.max`), newest last, bytes as base64.

        Query:
            api_key: only this API
            limit: only the newest N

        Example:
            GET /v1/requests?api_key=0&limit=10
        """
        query = _query(request, ("api_key", "limit"))
        limit = _query_int(query, "limit")
        if limit is not None and limit < 0:
            bad_request("limit must not be negative")
        return _json(self.cluster.requests.list(api_key=_query_int(query, "api_key"), limit=limit))

    async def delete_requests(self, request: web.Request) -> web.Response:
        """Forgets the recorded requests.

        Example:
            DELETE /v1/requests
        """
        _query(request, ())
        self.cluster.requests.clear()
        return _json({"deleted": True})

    async def get_conformance(self, request: web.Request) -> web.Response:
        """The conformance report: per client software (name and version), the APIs
        and versions it sent, the errors it got, and whether it honoured throttle times.

        Example:
            GET /v1/conformance
        """
        _query(request, ())
        return _json(self.cluster.conformance.report())

    async def get_acls(self, request: web.Request) -> web.Response:
        """The ACL bindings matching a filter (every field optional; none: every ACL).

        Query:
            principal: e.g. `User:alice`
            operation: READ, WRITE, DESCRIBE, ... or ANY
            resource_type: TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER or ANY
            name: the resource name
            pattern: LITERAL, PREFIXED, ANY or MATCH
            permission: ALLOW, DENY or ANY
            host: the host (`*`: any)

        Answer:
            `{"acls": [{"resource_type", "name", "pattern", "principal", "host", "operation", "permission"}, ...]}`

        Example:
            GET /v1/acls?principal=User:alice
        """
        query = _query(request, _ACL_FILTER_FIELDS)
        try:
            acl_filter = acl_filter_of(query)
        except KeyError as exc:
            bad_request(f"unknown value {exc}")
        found = self.cluster.acls.acls.matching(acl_filter)  # on the loop: read directly
        return _json({"acls": [_acl_json(b) for b in found]})

    async def post_acl(self, request: web.Request) -> web.Response:
        """Creates one ACL binding (201 and the binding), as CreateAcls does.

        Body:
            principal: e.g. `User:alice` (required)
            operation: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE or ALL (required)
            resource_type: TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN or USER (required)
            name: the resource name (required; `kafka-cluster` for the cluster)
            pattern: LITERAL (default) or PREFIXED
            permission: ALLOW (default) or DENY
            host: default `*`

        Example:
            POST /v1/acls {"principal": "User:alice", "operation": "READ", "resource_type": "TOPIC", "name": "orders"}
        """
        body = await _body(
            request, ("principal", "operation", "resource_type", "name", "pattern", "permission", "host")
        )
        binding = {
            "principal": _str(body, "principal"),
            "operation": _str(body, "operation"),
            "resource_type": _str(body, "resource_type"),
            "name": _str(body, "name"),
            "pattern": _opt_str(body, "pattern") or "LITERAL",
            "permission": _opt_str(body, "permission") or "ALLOW",
            "host": _opt_str(body, "host") or "*",
        }
        try:
            acl = AclBinding(
                ResourceType[binding["resource_type"]],
                binding["name"],
                PatternType[binding["pattern"]],
                binding["principal"],
                binding["host"],
                Operation[binding["operation"]],
                Permission[binding["permission"]],
            )
        except KeyError as exc:
            bad_request(f"unknown value {exc}")
        (refusal,) = await self.cluster.acls.create_async([acl])
        if refusal is not None:
            raise HttpError(400, "INVALID_REQUEST", refusal, ErrorCode.INVALID_REQUEST)
        return _json(_acl_json(acl), status=201)

    async def delete_acls(self, request: web.Request) -> web.Response:
        """Deletes the ACL bindings matching a filter, as DeleteAcls does; at least one field
        must be given.

        Query:
            principal: as for GET /v1/acls
            operation: as for GET /v1/acls
            resource_type: as for GET /v1/acls
            name: as for GET /v1/acls
            pattern: as for GET /v1/acls
            permission: as for GET /v1/acls
            host: as for GET /v1/acls

        Answer:
            `{"deleted": [<binding>, ...]}`

        Example:
            DELETE /v1/acls?principal=User:alice
        """
        query = _query(request, _ACL_FILTER_FIELDS)
        if not query:
            bad_request(f"name at least one of {', '.join(_ACL_FILTER_FIELDS)} (every ACL would go)")
        try:
            acl_filter = acl_filter_of(query)
        except KeyError as exc:
            bad_request(f"unknown value {exc}")
        (gone,) = await self.cluster.acls.delete_async([acl_filter])
        return _json({"deleted": [_acl_json(b) for b in gone]})

    async def get_client_metrics(self, request: web.Request) -> web.Response:
        """The KIP-714 client metrics subscriptions and the client instances the brokers
        know.

        Example:
            GET /v1/client-metrics
        """
        _query(request, ())
        admin = self.cluster.client_metrics
        return _json({"subscriptions": admin.subscriptions(), "instances": admin.instances()})

    async def put_client_metrics(self, request: web.Request) -> web.Response:
        """Creates or replaces a KIP-714 client metrics subscription, checked as
        AlterConfigs checks a CLIENT_METRICS resource.

        Path:
            name: the subscription's name

        Body:
            metrics: array of metric name prefixes (`*`: all)
            interval_ms: the push interval
            match: object of client attribute (`client_id`, `client_software_name`, ...) to a regular expression that must match the whole value

        Example:
            PUT /v1/client-metrics/apps {"metrics": ["org.apache.kafka.producer."], "interval_ms": 1000, "match": {"client_id": "app-.*"}}
        """
        body = await _body(request, ("metrics", "interval_ms", "match"))
        metrics = body.get("metrics", [])
        if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
            bad_request(f"metrics must be a list of strings, not {_json_type(metrics)}")
        match = body.get("match", {})
        if not isinstance(match, dict) or not all(isinstance(v, str) for v in match.values()):
            bad_request("match must be an object of strings (attribute: regex)")
        name = request.match_info["name"]
        try:
            await self.cluster.client_metrics.set_async(name, metrics, _opt_int(body, "interval_ms"), match)
        except ConfigError as exc:
            raise kafka_error(400, exc.code, exc.message or "") from None
        return _json({"name": name, "configs": self.cluster.client_metrics.subscriptions()[name]})

    async def delete_client_metrics(self, request: web.Request) -> web.Response:
        """Deletes a client metrics subscription (404 if unknown).

        Path:
            name: the subscription's name

        Example:
            DELETE /v1/client-metrics/apps
        """
        _query(request, ())
        name = request.match_info["name"]
        if name not in self.cluster.client_metrics.subscriptions():
            not_found(f"no client metrics subscription {name!r}")
        await self.cluster.client_metrics.delete_async(name)
        return _json({"deleted": name})

    async def get_transactions(self, request: web.Request) -> web.Response:
        """The transactional ids the coordinator knows: producer id and epoch, state,
        partitions in the transaction.

        Query:
            state: only this state (e.g. `Ongoing`, `CompleteCommit`)

        Example:
            GET /v1/transactions?state=Ongoing
        """
        query = _query(request, ("state",))
        listed = self.cluster.list_transactions()
        if "state" in query:
            listed = [txn for txn in listed if txn["state"] == query["state"]]
        return _json({"transactions": listed})

    async def get_transaction(self, request: web.Request) -> web.Response:
        """One transactional id (404 if unknown).

        Path:
            transactional_id: the transactional id

        Example:
            GET /v1/transactions/my-app-1
        """
        _query(request, ())
        wanted = request.match_info["transactional_id"]
        for txn in self.cluster.list_transactions():
            if txn["transactional_id"] == wanted:
                return _json(txn)
        not_found(f"no transactional id {wanted!r}")

    async def get_groups(self, request: web.Request) -> web.Response:
        """The groups: id, type (classic or consumer), protocol type, state.

        Query:
            type: only this type (classic or consumer)
            state: only this state (e.g. Stable, Empty)

        Example:
            GET /v1/groups?type=consumer
        """
        query = _query(request, ("type", "state"))
        listed = [
            group
            for group in self.cluster.list_groups()
            if all(group[key].lower() == query[key].lower() for key in query)
        ]
        return _json({"groups": listed})

    async def get_group(self, request: web.Request) -> web.Response:
        """One group (404 if unknown): epochs, assignor, the members and their assignments.

        Path:
            group_id: the group id

        Example:
            GET /v1/groups/my-group
        """
        _query(request, ())
        wanted = request.match_info["group_id"]
        described = self.cluster.describe_group(wanted)
        if described is None:
            not_found(f"no group {wanted!r}")
        return _json(described)

    async def get_metrics(self, request: web.Request) -> web.Response:
        """The cluster's metrics in Prometheus's text format (not JSON); see the
        Prometheus metrics reference for every family.

        Example:
            GET /metrics
        """
        # Not JSON: Prometheus's text format, whatever the query (scrapers add their own).
        return web.Response(
            body=generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )


# -- ACL bodies --------------------------------------------------------------------
_ACL_FILTER_FIELDS = ("principal", "operation", "resource_type", "name", "pattern", "permission", "host")


def _acl_json(binding: AclBinding) -> dict[str, str]:
    return {
        "resource_type": binding.resource_type.name,
        "name": binding.resource_name,
        "pattern": binding.pattern_type.name,
        "principal": binding.principal,
        "host": binding.host,
        "operation": binding.operation.name,
        "permission": binding.permission.name,
    }


# -- quota bodies ------------------------------------------------------------------


def _match(value: str) -> object:
    """A query value as a describe() match: a name, None (default) or ANY."""
    if value == DEFAULT_NAME:
        return None
    return ANY if value == ANY_NAME else value


def _entity(value: Any) -> dict[str, str | None]:
    if not isinstance(value, dict):
        bad_request(f'entity must be an object such as {{"user": "alice"}}, not {_json_type(value)}')
    for entity_type, name in value.items():
        if name is not None and not isinstance(name, str):
            bad_request(
                f"entity {entity_type}: a name (string) or null (the default), not {_json_type(name)}"
            )
    return value


def _set(value: Any) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        bad_request(f"set must be an object of quota keys to numbers, not {_json_type(value)}")
    for key, number in value.items():
        if isinstance(number, bool) or not isinstance(number, int | float):
            bad_request(f"set {key}: the value must be a number, not {_json_type(number)}")
        if not math.isfinite(number):
            bad_request(f"set {key}: the value must be finite")
    return {key: float(number) for key, number in value.items()}


def _remove(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(key, str) for key in value):
        bad_request("remove must be an array of quota keys")
    return value


def _entity_values(entity: QuotaEntity, values: dict[str, float]) -> dict[str, Any]:
    return {"entity": entity.to_json(), "values": dict(sorted(values.items()))}


def _sorted_entities(
    found: dict[QuotaEntity, dict[str, float]],
) -> list[tuple[QuotaEntity, dict[str, float]]]:
    """A stable order, as kafka-configs lists them: user entities first, then by names
    (defaults first)."""
    return sorted(
        found.items(),
        key=lambda item: [(ENTITY_TYPES.index(t), n is not None, n or "") for t, n in item[0].items()],
    )


# -- Prometheus ----------------------------------------------------------------------

QUOTA_GROUPS = ("Produce", "Fetch", "Request", "ControllerMutation")
REQUEST_METRICS = "RequestMetrics"  # exported from throttle_stats instead, with the counts
# The labels of a quota sensor's families are its metric tags, which the quota callback
# chooses: `user` and `client_id` with Kafka's default callback.
QUOTA_TAGS = ("user", "client_id")
# Every family /metrics exposes: (name, type, labels, help). The collector takes its help
# texts from here and docs/reference/prometheus-metrics.md is generated from it, so a
# family the collector exposes but this table lacks fails tests/docs/test_reference.py.
# Counters are exposed with Prometheus's `_total` suffix.
METRIC_FAMILIES: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    (
        "kafka_server_quota_byte_rate",
        "gauge",
        ("quota_type", *QUOTA_TAGS, "broker"),
        "Bytes per second measured for the quota entity (Kafka's byte-rate); quota_type Produce or Fetch.",
    ),
    (
        "kafka_server_quota_throttle_time",
        "gauge",
        ("quota_type", *QUOTA_TAGS, "broker"),
        "Average throttle time in ms given to the quota entity (Kafka's throttle-time).",
    ),
    (
        "kafka_server_quota_request_time",
        "gauge",
        ("quota_type", *QUOTA_TAGS, "broker"),
        "Request handling time as a percentage of one thread (Kafka's request-time); quota_type Request.",
    ),
    (
        "kafka_server_quota_mutation_rate",
        "gauge",
        ("quota_type", *QUOTA_TAGS, "broker"),
        "Controller mutations (partitions) per second (Kafka's mutation-rate); quota_type ControllerMutation.",
    ),
    (
        "kafka_server_quota_tokens",
        "gauge",
        ("quota_type", *QUOTA_TAGS, "broker"),
        "Tokens left in the controller mutation bucket (Kafka's tokens); quota_type ControllerMutation.",
    ),
    (
        "kafka_server_quota_queue_size",
        "gauge",
        ("quota_type", "broker"),
        "Connections currently throttled (muted) by this quota type (Kafka's queue-size).",
    ),
    (
        "kafka_server_quota_exempt_request_time",
        "gauge",
        ("quota_type", "broker"),
        "Request time of quota-exempt requests, percent of a thread; quota_type Request.",
    ),
    (
        "kafka_server_socket_server_metrics_connection_accept_rate",
        "gauge",
        ("ip", "broker"),
        "Connections accepted per second from the ip.",
    ),
    (
        "kafka_server_socket_server_metrics_ip_connection_accept_throttle_time",
        "gauge",
        ("listener", "broker"),
        "Average throttle time of connections throttled by ip rate.",
    ),
    (
        "kafka_server_socket_server_metrics_connection_count",
        "gauge",
        ("broker",),
        "Open client connections.",
    ),
    ("kafka_mock_metrics_sink_rows_added", "gauge", (), "Request metrics rows handed to the Parquet sink."),
    ("kafka_mock_metrics_sink_rows_written", "gauge", (), "Request metrics rows written to Parquet files."),
    ("kafka_mock_metrics_sink_files_written", "gauge", (), "Parquet files the sink has written."),
    ("kafka_mock_metrics_sink_bytes_written", "gauge", (), "Bytes of Parquet files the sink has written."),
    ("kafka_mock_metrics_sink_lag_rows", "gauge", (), "Rows buffered and not yet written."),
    ("kafka_mock_metrics_sink_write_errors", "gauge", (), "Parquet writes that failed."),
    ("kafka_mock_broker_up", "gauge", ("broker",), "1 while the broker listens, 0 once stopped."),
    (
        "kafka_network_requests",
        "counter",
        ("request", "broker"),
        "Responses sent (or requests answered with none) per API.",
    ),
    (
        "kafka_network_request_throttle_time_ms",
        "counter",
        ("request", "broker"),
        "Throttle time given per API, in ms.",
    ),
    (
        "kafka_network_request_throttle_time_ms_mean",
        "gauge",
        ("request", "broker"),
        "Mean throttle time per request, in ms.",
    ),
    (
        "kafka_network_request_throttle_time_ms_max",
        "gauge",
        ("request", "broker"),
        "Largest throttle time given, in ms.",
    ),
)
_HELP = {name: help_text for name, _, _, help_text in METRIC_FAMILIES}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_INVALID = re.compile(r"[^a-zA-Z0-9_]")
_RESERVED_LABELS = ("broker", "quota_type")


def _snake(name: str) -> str:
    """ThrottleTimeMs and byte-rate as throttle_time_ms and byte_rate."""
    return _INVALID.sub("_", _CAMEL.sub("_", name)).lower()


def _label(tag: str) -> str:
    label = _snake(tag)
    if not label or label[0].isdigit() or label.startswith("__") or label in _RESERVED_LABELS:
        label = "tag_" + label
    return label


def metric_family_name(metric: Metric) -> str:
    """Kafka's MBean naming flattened as the JMX exporter's rules do: kafka.server
    type=Produce's byte-rate is kafka_server_quota_byte_rate{quota_type="Produce"}."""
    if metric.group in QUOTA_GROUPS:
        return f"kafka_server_quota_{_snake(metric.name)}"
    if metric.group == "metrics-sink":
        return f"kafka_mock_metrics_sink_{_snake(metric.name)}"
    return f"kafka_server_{_snake(metric.group)}_{_snake(metric.name)}"


class ClusterCollector(Collector):
    """Prometheus's view of `cluster.metrics()` and each broker's request counters,
    read at scrape time on the cluster's loop (gauges: Kafka's rates and averages are
    already windowed)."""

    def __init__(self, cluster: ControlledCluster) -> None:
        self.cluster = cluster

    def collect(self) -> Iterator[PromMetric]:
        # One consistent snapshot, taken where the counters are written.
        return iter(self.cluster.on_loop(lambda: list(self._collect())))

    def _collect(self) -> Iterator[PromMetric]:
        families: dict[str, PromMetric] = {}
        for metric in self.cluster.metrics():
            if metric.group == REQUEST_METRICS:
                continue
            name = metric_family_name(metric)
            family = families.get(name)
            if family is None:
                help_text = _HELP.get(name, f"Kafka metric {metric.name} of group {metric.group}.")
                family = families[name] = PromMetric(name, help_text, "gauge")
            labels = {_label(tag): value for tag, value in metric.tags.items()}
            if metric.group in QUOTA_GROUPS:
                labels["quota_type"] = metric.group
            if metric.broker is not None:
                labels["broker"] = str(metric.broker)
            family.add_sample(name, labels, metric.value)
        yield from families.values()
        yield from self._request_metrics(self.cluster.brokers)

    def _request_metrics(self, brokers: list[BrokerServer]) -> Iterator[PromMetric]:
        labels = ["request", "broker"]
        up = GaugeMetricFamily("kafka_mock_broker_up", _HELP["kafka_mock_broker_up"], labels=["broker"])
        requests = CounterMetricFamily(
            "kafka_network_requests", _HELP["kafka_network_requests"], labels=labels
        )
        throttle = CounterMetricFamily(
            "kafka_network_request_throttle_time_ms",
            _HELP["kafka_network_request_throttle_time_ms"],
            labels=labels,
        )
        mean = GaugeMetricFamily(
            "kafka_network_request_throttle_time_ms_mean",
            _HELP["kafka_network_request_throttle_time_ms_mean"],
            labels=labels,
        )
        most = GaugeMetricFamily(
            "kafka_network_request_throttle_time_ms_max",
            _HELP["kafka_network_request_throttle_time_ms_max"],
            labels=labels,
        )
        for broker in brokers:
            node = str(broker.node_id)
            up.add_metric([node], 1.0 if broker.running else 0.0)
            for api_key, (count, total, largest) in sorted(broker.throttle_stats.by_api.items()):
                values = [api_name(api_key), node]
                requests.add_metric(values, count)
                throttle.add_metric(values, total)
                mean.add_metric(values, total / count if count else 0.0)
                most.add_metric(values, largest)
        yield from (up, requests, throttle, mean, most)
