"""Request header decoding and response framing over kafka-python's generated codecs.

Header v1 (client_id as a nullable int16 string) is used for non-flexible request
versions and v2 (plus tagged fields) for flexible ones; responses use header v0/v1 the
same way, except ApiVersions, whose response header is always v0 (KIP-511).
"""

from __future__ import annotations

import struct
from typing import Any

from kafka.protocol.api_header import RequestHeader

from messages.registry import request_class

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


def is_flexible(api_key: int, api_version: int) -> bool:
    return bool(request_class(api_key).flexible_version_q(api_version))


def decode_header(frame: memoryview, flexible: bool) -> tuple[Any, int]:
    """The full request header and the offset where the body starts."""
    try:
        header, offset = _DECODERS[flexible](frame, 0)
    except Exception as exc:  # kafka-python raises struct/index/value errors on short input
        raise MalformedRequest(f"undecodable request header: {exc!r}") from exc
    return header, offset


def decode_body(api_key: int, api_version: int, body: memoryview) -> Any:
    try:
        return request_class(api_key).decode(body, version=api_version)
    except Exception as exc:
        raise MalformedRequest(f"undecodable {request_class(api_key).name} v{api_version}: {exc!r}") from exc


_HEADER_V0 = struct.Struct(">ii")  # size, correlation id
_HEADER_V1 = struct.Struct(">iiB")  # size, correlation id, empty tagged fields
API_VERSIONS = 18


def encode_response(response: Any, api_key: int, api_version: int, correlation_id: int) -> tuple[bytes, Any]:
    """(size + response header, body) to write back to back.

    The body comes from kafka-python's compiled encoder; the header is two fixed fields,
    framed here so that a large body (fetch) is never copied again to prepend it.
    ApiVersions responses always use header v0 (KIP-511).
    """
    body = response.encode(version=api_version)
    if api_key != API_VERSIONS and is_flexible(api_key, api_version):
        return _HEADER_V1.pack(len(body) + 5, correlation_id, 0), body
    return _HEADER_V0.pack(len(body) + 4, correlation_id), body
