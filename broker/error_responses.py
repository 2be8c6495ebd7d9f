"""Error responses built from the request they answer, as Kafka's
`AbstractRequest.getErrorResponse` builds them: each topic, partition, group or resource
the request names is answered with the error code, mirrored field by field.

The pipeline answers a request whose handler failed this way (UNKNOWN_SERVER_ERROR, or
the error the failure carries); fault injection answers the entries a rule selects.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol.api_keys import ApiKey

if TYPE_CHECKING:
    from broker.context import RequestContext


@dataclass(frozen=True, slots=True)
class Level:
    """How one array of a request is mirrored into its response: `request` arrays hold
    the entries, `response` is the array answering them, `keys` copies (response field,
    request field) from each entry ("" takes a bare string element), `inner` is the
    partition level beneath a topic level."""

    request: tuple[str, ...]
    response: str
    keys: tuple[tuple[str, str], ...]
    inner: Level | None = None
    topics: bool = False  # entries name topics (so topic and partition filters apply)


def topics(request: str, response: str, inner: Level | None = None, *keys: tuple[str, str]) -> Level:
    """A level of topics: entries keyed by name and topic id unless `keys` says otherwise."""
    return Level((request,), response, keys or (("name", "name"), ("topic_id", "topic_id")), inner, True)


PARTITIONS = Level(("partitions",), "partitions", (("partition_index", "partition_index"),))


def config_resources(response: str) -> Level:
    """The config resources of DescribeConfigs, AlterConfigs and IncrementalAlterConfigs."""
    return Level(
        ("resources",), response, (("resource_type", "resource_type"), ("resource_name", "resource_name"))
    )


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """How an API's error response is shaped, as its handler module declares it
    (`ERROR_RESPONSE`): from each first version on, the level of request entries answered
    one by one, or None for the top-level error code alone (Kafka's
    `AbstractRequest.getErrorResponse`)."""

    by_version: tuple[tuple[int, Level | None], ...]
    # From this version on the error response is the top-level error code alone, although
    # faults may still select entries of the level (FetchRequest.getErrorResponse, v13+).
    top_level_only_from: int | None = None

    def __post_init__(self) -> None:
        firsts = [first for first, _ in self.by_version]
        if not firsts or firsts[0] != 0 or firsts != sorted(set(firsts)):
            raise ValueError(f"by_version must start at version 0 and ascend: {firsts}")

    def answered_in_error_response(self, version: int) -> Level | None:
        """The level an error response answers entry by entry (None: top level alone)."""
        if self.top_level_only_from is not None and version >= self.top_level_only_from:
            return None
        return self.level(version)

    def level(self, version: int) -> Level | None:
        found: Level | None = None
        for first, level in self.by_version:
            if version >= first:
                found = level
        return found


def mirrors(level: Level, top_level_only_from: int | None = None) -> ErrorResponse:
    """Every version answers each entry of `level` with the error (up to
    `top_level_only_from`, where the top-level error code alone answers)."""
    return ErrorResponse(((0, level),), top_level_only_from)


def by_version(*shapes: tuple[int, Level | None]) -> ErrorResponse:
    """(first version, level or None) pairs, in version order."""
    return ErrorResponse(shapes)


TOP_LEVEL = ErrorResponse(((0, None),))

# Each API's declared shape, filled by broker.handlers from its modules' ERROR_RESPONSE
# (this module cannot import them: they import it).
_DECLARED: dict[int, ErrorResponse] = {}


def declare(api_key: int, shape: ErrorResponse) -> None:
    """Records the shape an API's handler module declares (called by broker.handlers)."""
    _DECLARED[api_key] = shape


def level_for(api_key: int, version: int) -> Level | None:
    """The entries an error answers one by one in this API version, if any."""
    shape = _DECLARED.get(api_key)
    return shape.level(version) if shape is not None else None


# An entry selected by a fault: the request entry and, for topic levels with partitions,
# the partition entries selected (None: the whole entry).
Selection = list[tuple[Any, list[Any] | None]]


def copy_message(message: Any, **changes: Any) -> Any:
    values = {
        f.name: getattr(message, f.name)
        for f in type(message).fields.values()
        if f.for_version_q(message.version)
    }
    return type(message)(version=message.version, **{**values, **changes})


def add_errors(response: Any, level: Level, selected: Selection, code: int) -> Any:
    # A fresh list: an unset array field reads as the schema default, one list shared by all.
    array = list(getattr(response, level.response, None) or ())
    setattr(response, level.response, array)
    entry_class = type(response).fields[level.response].data_class
    for entry, partitions in selected:
        answer = _mirror(entry_class, level, entry, code)
        if partitions is not None and level.inner is not None:
            existing = next((a for a in array if _same(a, answer, level)), None)
            inner_class = entry_class.fields[level.inner.response].data_class
            errors = [_mirror(inner_class, level.inner, p, code) for p in partitions]
            if existing is not None:
                setattr(existing, level.inner.response, [*getattr(existing, level.inner.response), *errors])
                continue
            setattr(answer, level.inner.response, errors)
        elif level.inner is not None:
            inner_class = entry_class.fields[level.inner.response].data_class
            partitions_of = getattr(entry, level.inner.request[0], None) or []
            setattr(
                answer,
                level.inner.response,
                [_mirror(inner_class, level.inner, p, code) for p in partitions_of],
            )
        array.append(answer)
    return response


def _mirror(entry_class: Any, level: Level, entry: Any, code: int) -> Any:
    """The response entry answering `entry` with `code` (other fields at their defaults,
    offsets and watermarks at -1 as Kafka's error responses have them)."""
    answer = entry_class(version=None)
    for response_field, request_field in level.keys:
        if response_field not in entry_class.fields:
            continue
        if isinstance(entry, str):  # a bare name: it fills the first key
            value: Any = entry if response_field == level.keys[0][0] else None
        else:
            value = getattr(entry, request_field, None) if request_field else entry
        if isinstance(value, list) and entry_class.fields[response_field].is_struct_array():
            target = entry_class.fields[response_field].data_class
            value = [target(version=None, **_plain(item, target)) for item in value]
        setattr(answer, response_field, value)
    fields = entry_class.fields
    for name in ("error_code", "partition_error_code"):
        if name in fields:
            setattr(answer, name, code)
    for name in _UNKNOWN_AS_MINUS_ONE:
        if name in fields:
            setattr(answer, name, -1)
    return answer


# Offsets, watermarks and coordinators an error entry does not know, as Kafka sends them.
_UNKNOWN_AS_MINUS_ONE = (
    "base_offset",
    "log_append_time_ms",
    "log_start_offset",
    "high_watermark",
    "last_stable_offset",
    "offset",
    "committed_offset",
    "low_watermark",
    "node_id",
    "port",
)


def _plain(item: Any, target: Any) -> dict[str, Any]:
    return {name: getattr(item, name) for name in target.fields if name in type(item).fields}


def _same(answer: Any, other: Any, level: Level) -> bool:
    return all(
        getattr(answer, field, None) == getattr(other, field, None)
        for field, _ in level.keys
        if getattr(other, field, None) is not None
    )


def has_field(message: Any, name: str) -> bool:
    """Whether `message`'s version carries the field `name`."""
    found = type(message).fields.get(name) if message is not None else None
    return found is not None and found.for_version_q(message.version)


def entries_of(level: Level, request: Any) -> list[Any]:
    return [e for name in level.request for e in getattr(request, name, None) or ()]


def error_response(ctx: RequestContext, code: int) -> Any | None:
    """The response answering every entry of `ctx.request` with `code`, and the top-level
    error code where the response has one. None where Kafka sends nothing: an acks=0
    produce, or an API whose response has no error code at all (Kafka closes the
    connection then)."""
    request = ctx.request
    if ctx.api_key == ApiKey.PRODUCE and request.acks == 0:
        return None
    response = ctx.response()
    top_level = has_field(response, "error_code")
    if top_level:
        response.error_code = code
    shape = _DECLARED.get(ctx.api_key)
    level = shape.answered_in_error_response(ctx.api_version) if shape is not None else None
    if level is None:
        return response if top_level else None
    return add_errors(response, level, [(entry, None) for entry in entries_of(level, request)], code)


def answer_with_errors(
    ctx: RequestContext, request: Any, handler: Any, level: Level, selected: Selection, code: int
) -> Any:
    """The handler's answer to `request` without the selected entries, with those
    answered `code` (a coroutine when the handler waits)."""
    rest = without_entries(ctx, level, request, selected)
    result = handler(ctx, rest) if rest is not None else ctx.response()
    if inspect.iscoroutine(result):
        return errors_after(ctx, result, level, selected, code)
    return with_errors(ctx, result, level, selected, code)


async def errors_after(
    ctx: RequestContext, pending: Any, level: Level, selected: Selection, code: int
) -> Any:
    return with_errors(ctx, await pending, level, selected, code)


def with_errors(ctx: RequestContext, response: Any, level: Level, selected: Selection, code: int) -> Any:
    """The handler's response with the selected entries' errors added. None stays None:
    an acks=0 produce is not answered, its selected entries are just not appended."""
    if response is None or (ctx.api_key == ApiKey.PRODUCE and ctx.request.acks == 0):
        return None
    ctx.encoded = None  # a body the handler encoded lacks these entries
    ctx.error_code = None  # the metrics row and the report count them from the response
    return add_errors(response, level, selected, code)


def without_entries(ctx: RequestContext, level: Level, request: Any, selected: Selection) -> Any:
    """A copy of `request` without the selected entries; None when nothing is left for
    the handler (Metadata is always handled: its brokers are wanted)."""
    whole = {id(entry) for entry, partitions in selected if partitions is None}
    some = {
        id(entry): {id(p) for p in partitions} for entry, partitions in selected if partitions is not None
    }
    changes: dict[str, Any] = {}
    left = 0
    for name in level.request:
        entries = getattr(request, name, None)
        if entries is None:
            continue
        kept = []
        for entry in entries:
            if id(entry) in whole:
                continue
            if id(entry) in some and level.inner is not None:
                inner_name = level.inner.request[0]
                partitions = [p for p in getattr(entry, inner_name) if id(p) not in some[id(entry)]]
                if not partitions:
                    continue
                entry = copy_message(entry, **{inner_name: partitions})
            kept.append(entry)
        changes[name] = kept
        left += len(kept)
    if ctx.api_key == ApiKey.METADATA:
        return copy_message(request, **changes)
    return copy_message(request, **changes) if left else None
