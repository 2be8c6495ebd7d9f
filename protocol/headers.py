"""Request header decoding and response framing over kafka-python's generated codecs.

Header v1 (client_id as a nullable int16 string) is used for non-flexible request
versions and v2 (plus tagged fields) for flexible ones; responses use header v0/v1 the
same way, except ApiVersions, whose response header is always v0 (KIP-511).
"""

from __future__ import annotations

import struct
import threading
from typing import Any

from kafka.protocol.api_header import RequestHeader
from kafka.protocol.schemas.fields.codecs.encode_buffer import EncodeBuffer

from messages.registry import request_class, response_class
from protocol.api_keys import ApiKey
from protocol.fast_codecs import (
    chunks_size,
    decode_produce_request,
    encode_fetch_response,
    encode_metadata_response,
    encode_produce_response,
    frame_heartbeat_response,
)

_FIXED = struct.Struct(">hhi")
FIXED_HEADER_SIZE = _FIXED.size
_DECODERS = {
    flexible: RequestHeader._struct.compiled_decode_from(
        2 if flexible else 1, compact=False, tagged=flexible, data_class=RequestHeader
    )
    for flexible in (False, True)
}


class MalformedRequest(Exception):
    """A frame that cannot be decoded; Kafka closes the connection."""


def peek_header(frame: memoryview) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) from the first 8 bytes of a request."""
    if len(frame) < FIXED_HEADER_SIZE:
        raise MalformedRequest(f"request of {len(frame)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _FIXED.unpack_from(frame, 0)
    return api_key, api_version, correlation_id


_FLEXIBLE: dict[tuple[int, int], bool] = {}


def is_flexible(api_key: int, api_version: int) -> bool:
    """Whether (API, version) uses the flexible encoding (and header v2/v1); cached."""
    found = _FLEXIBLE.get((api_key, api_version))
    if found is None:
        found = _FLEXIBLE[(api_key, api_version)] = bool(
            request_class(api_key).flexible_version_q(api_version)
        )
    return found


def decode_header(frame: memoryview, flexible: bool) -> tuple[Any, int]:
    """The full request header and the offset where the body starts."""
    try:
        header, offset = _DECODERS[flexible](frame, 0)
    except Exception as exc:  # kafka-python raises struct/index/value errors on short input
        raise MalformedRequest(f"undecodable request header: {exc!r}") from exc
    return header, offset


def decode_body(api_key: int, api_version: int, body: memoryview) -> Any:
    if api_key == ApiKey.PRODUCE:  # the data path's own decoder (fast_codecs.py) when it can
        request = decode_produce_request(body, api_version)
        if request is not None:
            return request
    decoder, plan, name = _BODY_DECODERS.get((api_key, api_version)) or _body_decoder(api_key, api_version)
    try:
        request, end = decoder(body, 0)
    except Exception as exc:
        raise MalformedRequest(f"undecodable {name} v{api_version}: {exc!r}") from exc
    if end > len(body):
        # kafka-python slices a string or bytes field that claims more than is left
        # without complaint; Kafka's readers run out of buffer.
        raise MalformedRequest(f"undecodable {name} v{api_version}: {end - len(body)} bytes short")
    if plan:
        _check_nulls(request, plan, name)
    return request


# (API, version) -> (kafka-python's compiled decoder, the null plan, the struct's name)
_BODY_DECODERS: dict[tuple[int, int], tuple[Any, NullPlan, str]] = {}


def _body_decoder(api_key: int, version: int) -> tuple[Any, NullPlan, str]:
    """kafka-python's compiled decoder of (API, version), which returns the end offset
    as well (ApiMessage.decode drops it), with what decode_body checks after it: one
    lookup per request for all three."""
    cls = request_class(api_key)
    flexible = bool(cls.flexible_version_q(version))
    decoder = cls._struct.compiled_decode_from(
        version, compact=flexible, tagged=flexible, data_class=cls[None]
    )
    found = _BODY_DECODERS[(api_key, version)] = (decoder, _null_plan(api_key, version), cls.name)
    return found


# (field name, nullable, kind, checks for the struct or its elements) for the fields that
# need a look: kafka-python's decoder accepts a null length for any string, bytes or
# array, and for the strings and bytes in an array, where Kafka's generated readers refuse
# them ("non-nullable field ... was serialized as null") and the connection is closed.
# kind: "struct", "structs" (an array of them), "values" (an array of strings or bytes,
# whose elements are never nullable), "value" (a string, bytes or array itself).
NullPlan = list[tuple[str, bool, str, "NullPlan"]]
_NULL_PLANS: dict[tuple[int, int], NullPlan] = {}
_NULLABLE_TYPES = ("string", "bytes", "records")


def _null_plan(api_key: int, version: int) -> NullPlan:
    plan = _NULL_PLANS.get((api_key, version))
    if plan is None:
        plan = _NULL_PLANS[(api_key, version)] = _plan_struct(request_class(api_key)._struct, version)
    return plan


def _plan_struct(struct: Any, version: int) -> NullPlan:
    plan: NullPlan = []
    for field in struct.fields.values():
        if not field.for_version_q(version) or field.tagged_field_q(version):
            continue
        nullable = field.nullable_for_version_q(version)
        if field.is_struct() or field.is_struct_array():
            kind = "structs" if field.is_struct_array() else "struct"
            plan.append((field.name, nullable, kind, _plan_struct(field, version)))
        elif field.is_array() and field.array_of.type_str in _NULLABLE_TYPES:
            plan.append((field.name, nullable, "values", []))
        elif (field.is_array() or field.type_str in _NULLABLE_TYPES) and not nullable:
            plan.append((field.name, False, "value", []))
    return plan


def _check_nulls(value: Any, plan: NullPlan, where: str) -> None:
    for name, nullable, kind, inner in plan:
        field_value = getattr(value, name)
        if field_value is None:
            if not nullable:
                raise MalformedRequest(f"non-nullable field {where}.{name} was serialized as null")
            continue
        if kind == "values":
            if None in field_value:
                raise MalformedRequest(f"non-nullable field {where}.{name} element was serialized as null")
        elif inner:
            for item in field_value if kind == "structs" else (field_value,):
                _check_nulls(item, inner, f"{where}.{name}")


_HEADER_V0 = struct.Struct(">ii")  # size, correlation id
_HEADER_V1 = struct.Struct(">iiB")  # size, correlation id, empty tagged fields


def encode_body(response: Any, api_key: int, api_version: int) -> list[Any]:
    """The response body as chunks to write back to back: Produce and Fetch responses
    from the data path's own encoders (fetched records passed through unjoined), the rest
    from kafka-python's compiled encoder."""
    chunks = _encode_by_hand(response, api_key, api_version)
    return [_encode_framed(response, api_key, api_version, 0, 0)] if chunks is None else chunks


def _encode_by_hand(response: Any, api_key: int, api_version: int) -> list[Any] | None:
    """The body's chunks from the data path's own encoders (Fetch, Produce, Metadata),
    or None where kafka-python's encoder is to do it (another API, an uncommon case)."""
    if api_key == ApiKey.FETCH:
        return encode_fetch_response(response, api_version)
    if api_key == ApiKey.PRODUCE:
        return encode_produce_response(response, api_version)
    if api_key == ApiKey.METADATA:
        chunks = encode_metadata_response(response, api_version)
        if chunks is not None and response._version != api_version:
            response.API_VERSION = api_version  # as encode(version=...) sets it
        return chunks
    return None


def encode_response(
    response: Any, api_key: int, api_version: int, correlation_id: int, body: list[Any] | None = None
) -> list[Any]:
    """Size + response header, then the body's chunks (encoded here unless `body` is
    given: a fetch measured against its quota), to write back to back; nothing is
    joined, so a large body (fetch) is never copied to prepend the header. A response
    kafka-python encodes is one chunk: its header written in front of its body in the
    same buffer. ApiVersions responses always use header v0 (KIP-511)."""
    header = 9 if api_key != ApiKey.API_VERSIONS and is_flexible(api_key, api_version) else 8
    if body is None:
        if api_key == ApiKey.HEARTBEAT:
            framed = frame_heartbeat_response(response, api_version, correlation_id)
            if framed is not None:
                if response._version != api_version:
                    response.API_VERSION = api_version  # as encode(version=...) sets it
                return [framed]
        else:
            body = _encode_by_hand(response, api_key, api_version)
        if body is None:
            return [_encode_framed(response, api_key, api_version, correlation_id, header)]
    size = chunks_size(body)
    if header == 9:
        return [_HEADER_V1.pack(size + 5, correlation_id, 0), *body]
    return [_HEADER_V0.pack(size + 4, correlation_id), *body]


# (API, version) -> kafka-python's compiled encoder of the response body
_BODY_ENCODERS: dict[tuple[int, int], Any] = {}
_BUFFERS = threading.local()  # one encode buffer per thread (a process may run many clusters)


def _encode_framed(response: Any, api_key: int, api_version: int, correlation_id: int, header: int) -> Any:
    """The response encoded by kafka-python's compiled encoder, as `response.encode()`
    does (the same encoder, the same bytes: tests/protocol/test_response_framing.py),
    behind `header` bytes of size prefix and response header (0: none) written in the
    same buffer: one copy out, no pool context manager, no list of chunks to frame."""
    encode = _BODY_ENCODERS.get((api_key, api_version))
    if encode is None:
        cls = response_class(api_key)
        flexible = bool(cls.flexible_version_q(api_version))
        encode = _BODY_ENCODERS[(api_key, api_version)] = cls._struct.compiled_encode_into(
            api_version, compact=flexible, tagged=flexible
        )
    if response._version != api_version:
        response.API_VERSION = api_version  # as encode(version=...) sets it
    try:
        out = _BUFFERS.out
    except AttributeError:
        out = _BUFFERS.out = EncodeBuffer(4096)
    out.pos = header
    encode(response, out)
    end = out.pos
    buf = out.buf
    if header == 9:
        _HEADER_V1.pack_into(buf, 0, end - 4, correlation_id, 0)
    elif header == 8:
        _HEADER_V0.pack_into(buf, 0, end - 4, correlation_id)
    return buf[:end]
