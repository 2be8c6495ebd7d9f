"""DescribeClientQuotas (48) and AlterClientQuotas (49) byte for byte over raw sockets.

Every request and expected response below is written out by hand from Apache Kafka's
JSON schemas (DescribeClientQuotas*.json, AlterClientQuotas*.json) and the protocol guide,
never produced by kafka-python:

- v0 (not flexible): request header v1 (api key, version, correlation id, int16-length
  client id); strings with an int16 length (-1 = null); arrays with an int32 count
  (-1 = null); response header v0 (correlation id).
- v1 (flexible): request header v2 (header v1 + an empty tagged-field section, 0x00);
  compact strings and arrays (unsigned varint length + 1, 0x00 = null); 0x00 after every
  struct and after the body; response header v1 (correlation id + 0x00).
"""

from __future__ import annotations

import math
import socket
import struct
import sys
from collections.abc import Iterator

import pytest

from broker import MockCluster
from quotas.entity import QuotaEntity
from tests.support.wire import recv_exactly

# --------------------------------------------------------------------------- framing


def connect(cluster: MockCluster) -> socket.socket:
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=5)


def exchange(sock: socket.socket, request: bytes) -> bytes:
    """Sends one size-prefixed request, returns the whole size-prefixed response."""
    sock.sendall(request)
    size = recv_exactly(sock, 4)
    return size + recv_exactly(sock, struct.unpack(">i", size)[0])


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@pytest.fixture
def sock(sync_cluster: MockCluster) -> Iterator[socket.socket]:
    with connect(sync_cluster) as conn:
        yield conn


# --------------------------------------------------------------- hand-written vectors

# AlterClientQuotas v0, correlation id 1, client id "raw".
ALTER_V0_REQUEST = bytes.fromhex(
    "00000093"  # size: 147 bytes follow
    "0031 0000 00000001 0003 726177"  # header v1: api 49, v0, corr 1, client id "raw"
    "00000002"  # Entries: 2
    # entry 1: {user=alice}: set producer_byte_rate 1024, remove request_percentage (unset)
    "00000001"  # Entity: 1
    "0004 75736572"  # EntityType "user"
    "0005 616c696365"  # EntityName "alice"
    "00000002"  # Ops: 2
    "0012 70726f64756365725f627974655f72617465"  # Key "producer_byte_rate"
    "4090000000000000"  # Value 1024.0
    "00"  # Remove false
    "0012 726571756573745f70657263656e74616765"  # Key "request_percentage"
    "0000000000000000"  # Value 0.0 (ignored)
    "01"  # Remove true
    # entry 2: {client-id=<default>}: producer_byte_rate 0 -> refused
    "00000001"  # Entity: 1
    "0009 636c69656e742d6964"  # EntityType "client-id"
    "ffff"  # EntityName null (the default)
    "00000001"  # Ops: 1
    "0012 70726f64756365725f627974655f72617465"  # Key "producer_byte_rate"
    "0000000000000000"  # Value 0.0
    "00"  # Remove false
    "00"  # ValidateOnly false
)
ALTER_V0_RESPONSE = bytes.fromhex(
    "00000065"  # size: 101
    "00000001"  # response header v0: corr 1
    "00000000"  # ThrottleTimeMs 0
    "00000002"  # Entries: 2
    "0000"  # ErrorCode 0
    "ffff"  # ErrorMessage null
    "00000001 0004 75736572 0005 616c696365"  # Entity [user=alice]
    "002a"  # ErrorCode 42 INVALID_REQUEST
    "002f"  # ErrorMessage, 47 bytes:
    "51756f74612070726f64756365725f627974655f72617465206d7573742062652067726561746572207468616e2030"
    # "Quota producer_byte_rate must be greater than 0"
    "00000001 0009 636c69656e742d6964 ffff"  # Entity [client-id=null]
)

# AlterClientQuotas v1 (flexible), correlation id 2.
ALTER_V1_REQUEST = bytes.fromhex(
    "00000066"  # size: 102
    "0031 0001 00000002 0003 726177 00"  # header v2: api 49, v1, corr 2, "raw", no tags
    "03"  # Entries: 2 (compact: 2 + 1)
    # entry 1: {ip=<default>}: connection_creation_rate 100
    "02"  # Entity: 1
    "03 6970"  # EntityType "ip"
    "00"  # EntityName null
    "00"  # EntityData tags
    "02"  # Ops: 1
    "19 636f6e6e656374696f6e5f6372656174696f6e5f72617465"  # Key "connection_creation_rate"
    "4059000000000000"  # Value 100.0
    "00"  # Remove false
    "00"  # OpData tags
    "00"  # EntryData tags
    # entry 2: {user=bob}: consumer_byte_rate 1.5 -> refused (LONG)
    "02"  # Entity: 1
    "05 75736572"  # EntityType "user"
    "04 626f62"  # EntityName "bob"
    "00"  # EntityData tags
    "02"  # Ops: 1
    "13 636f6e73756d65725f627974655f72617465"  # Key "consumer_byte_rate"
    "3ff8000000000000"  # Value 1.5
    "00"  # Remove false
    "00"  # OpData tags
    "00"  # EntryData tags
    "00"  # ValidateOnly false
    "00"  # request tags
)
ALTER_V1_RESPONSE = bytes.fromhex(
    "00000054"  # size: 84
    "00000002 00"  # response header v1: corr 2, no tags
    "00000000"  # ThrottleTimeMs 0
    "03"  # Entries: 2
    "0000"  # ErrorCode 0
    "00"  # ErrorMessage null
    "02 03 6970 00 00"  # Entity [ip=null], EntityData tags
    "00"  # EntryData tags
    "002a"  # ErrorCode 42
    "31"  # ErrorMessage, 48 bytes:
    "636f6e73756d65725f627974655f726174652063616e6e6f742062652061206672616374696f6e616c2076616c75652e"
    # "consumer_byte_rate cannot be a fractional value."
    "02 05 75736572 04 626f62 00"  # Entity [user=bob]
    "00"  # EntryData tags
    "00"  # response tags
)

# DescribeClientQuotas v0: {user exact "alice"}, not strict; correlation id 3.
DESCRIBE_V0_REQUEST = bytes.fromhex(
    "00000020"  # size: 32
    "0030 0000 00000003 0003 726177"  # header v1: api 48, v0, corr 3, "raw"
    "00000001"  # Components: 1
    "0004 75736572"  # EntityType "user"
    "00"  # MatchType 0 (exact)
    "0005 616c696365"  # Match "alice"
    "00"  # Strict false
)
DESCRIBE_V0_RESPONSE = bytes.fromhex(
    "00000041"  # size: 65
    "00000003"  # corr 3
    "00000000"  # ThrottleTimeMs
    "0000"  # ErrorCode 0
    "0000"  # ErrorMessage "" (Kafka's on success, not null)
    "00000001"  # Entries: 1
    "00000001 0004 75736572 0005 616c696365"  # Entity [user=alice]
    "00000001"  # Values: 1
    "0012 70726f64756365725f627974655f72617465"  # Key "producer_byte_rate"
    "4090000000000000"  # Value 1024.0
)

# DescribeClientQuotas v1: {client-id default}, strict; correlation id 4.
DESCRIBE_V1_REQUEST = bytes.fromhex(
    "0000001e"  # size: 30
    "0030 0001 00000004 0003 726177 00"  # header v2
    "02"  # Components: 1
    "0a 636c69656e742d6964"  # EntityType "client-id"
    "01"  # MatchType 1 (default)
    "00"  # Match null
    "00"  # ComponentData tags
    "01"  # Strict true
    "00"  # request tags
)
DESCRIBE_V1_RESPONSE = bytes.fromhex(
    "00000039"  # size: 57
    "00000004 00"  # response header v1
    "00000000"  # ThrottleTimeMs
    "0000"  # ErrorCode 0
    "01"  # ErrorMessage "" (Kafka's on success, not null)
    "02"  # Entries: 1
    "02 0a 636c69656e742d6964 00 00"  # Entity [client-id=null], EntityData tags
    "02"  # Values: 1
    "13 726571756573745f70657263656e74616765"  # Key "request_percentage"
    "4029000000000000"  # Value 12.5
    "00"  # ValueData tags
    "00"  # EntryData tags
    "00"  # response tags
)

# DescribeClientQuotas v0 with an empty entity type: top-level 42, Entries null.
DESCRIBE_V0_ERROR_REQUEST = bytes.fromhex(
    "00000017"  # size: 23
    "0030 0000 00000005 0003 726177"
    "00000001"  # Components: 1
    "0000"  # EntityType ""
    "02"  # MatchType 2 (specified)
    "ffff"  # Match null
    "00"  # Strict false
)
DESCRIBE_V0_ERROR_RESPONSE = bytes.fromhex(
    "0000002a"  # size: 42
    "00000005"
    "00000000"  # ThrottleTimeMs
    "002a"  # ErrorCode 42
    "001a 496e76616c696420656d70747920656e7469747920747970652e"  # "Invalid empty entity type."
    "ffffffff"  # Entries null
)

# DescribeClientQuotas v1 with an unknown entity type: top-level 35, Entries null.
DESCRIBE_V1_ERROR_REQUEST = bytes.fromhex(
    "0000001b"  # size: 27
    "0030 0001 00000006 0003 726177 00"
    "02"  # Components: 1
    "06 67726f7570"  # EntityType "group"
    "00"  # MatchType 0
    "02 78"  # Match "x"
    "00"  # ComponentData tags
    "00"  # Strict false
    "00"  # request tags
)
DESCRIBE_V1_ERROR_RESPONSE = bytes.fromhex(
    "0000002b"  # size: 43
    "00000006 00"
    "00000000"
    "0023"  # ErrorCode 35 UNSUPPORTED_VERSION
    "1e 556e737570706f7274656420656e746974792074797065 2067726f7570"  # "Unsupported entity type group"
    "00"  # Entries null
    "00"  # response tags
)

# DescribeClientQuotas v1 matching nothing: ErrorCode 0 and an EMPTY (not null) array.
DESCRIBE_V1_EMPTY_REQUEST = bytes.fromhex(
    "0000001b"  # size: 27
    "0030 0001 00000007 0003 726177 00"
    "02"  # Components: 1
    "05 75736572"  # EntityType "user"
    "00"  # MatchType 0
    "03 6e6f"  # Match "no"
    "00"  # ComponentData tags
    "00"  # Strict false
    "00"
)
DESCRIBE_V1_EMPTY_RESPONSE = bytes.fromhex(
    "0000000e"  # size: 14
    "00000007 00"
    "00000000"
    "0000"  # ErrorCode 0
    "01"  # ErrorMessage ""
    "01"  # Entries: empty array
    "00"
)


def test_vectors_are_self_consistent() -> None:
    """The hand-written size prefixes agree with the bytes written after them."""
    vectors = [
        ALTER_V0_REQUEST,
        ALTER_V0_RESPONSE,
        ALTER_V1_REQUEST,
        ALTER_V1_RESPONSE,
        DESCRIBE_V0_REQUEST,
        DESCRIBE_V0_RESPONSE,
        DESCRIBE_V1_REQUEST,
        DESCRIBE_V1_RESPONSE,
        DESCRIBE_V0_ERROR_REQUEST,
        DESCRIBE_V0_ERROR_RESPONSE,
        DESCRIBE_V1_ERROR_REQUEST,
        DESCRIBE_V1_ERROR_RESPONSE,
        DESCRIBE_V1_EMPTY_REQUEST,
        DESCRIBE_V1_EMPTY_RESPONSE,
    ]
    for vector in vectors:
        assert struct.unpack(">i", vector[:4])[0] == len(vector) - 4, vector.hex()


def test_alter_v0_bytes(sync_cluster: MockCluster, sock: socket.socket) -> None:
    assert exchange(sock, ALTER_V0_REQUEST).hex() == ALTER_V0_RESPONSE.hex()
    assert sync_cluster.quotas.describe() == {
        _entity(("user", "alice")): {"producer_byte_rate": 1024.0},
    }


def test_alter_v1_bytes(sync_cluster: MockCluster, sock: socket.socket) -> None:
    assert exchange(sock, ALTER_V1_REQUEST).hex() == ALTER_V1_RESPONSE.hex()
    assert sync_cluster.quotas.describe() == {
        _entity(("ip", None)): {"connection_creation_rate": 100.0},
    }


def _describe_setup(cluster: MockCluster) -> None:
    cluster.quotas.alter({"user": "alice"}, set={"producer_byte_rate": 1024})
    cluster.quotas.alter({"client-id": None}, set={"request_percentage": 12.5})
    cluster.quotas.alter({"client-id": None, "user": None}, set={"request_percentage": 3})


def test_describe_v0_bytes(sync_cluster: MockCluster, sock: socket.socket) -> None:
    _describe_setup(sync_cluster)
    assert exchange(sock, DESCRIBE_V0_REQUEST).hex() == DESCRIBE_V0_RESPONSE.hex()


def test_describe_v1_bytes(sync_cluster: MockCluster, sock: socket.socket) -> None:
    _describe_setup(sync_cluster)
    assert exchange(sock, DESCRIBE_V1_REQUEST).hex() == DESCRIBE_V1_RESPONSE.hex()


def test_describe_errors_and_empty_bytes(sync_cluster: MockCluster, sock: socket.socket) -> None:
    _describe_setup(sync_cluster)
    assert exchange(sock, DESCRIBE_V0_ERROR_REQUEST).hex() == DESCRIBE_V0_ERROR_RESPONSE.hex()
    assert exchange(sock, DESCRIBE_V1_ERROR_REQUEST).hex() == DESCRIBE_V1_ERROR_RESPONSE.hex()
    assert exchange(sock, DESCRIBE_V1_EMPTY_REQUEST).hex() == DESCRIBE_V1_EMPTY_RESPONSE.hex()


def test_alter_v1_then_describe_v0_same_connection(sync_cluster: MockCluster, sock: socket.socket) -> None:
    """A flexible and a non-flexible request on one connection, each framed its own way."""
    assert exchange(sock, ALTER_V0_REQUEST).hex() == ALTER_V0_RESPONSE.hex()
    assert exchange(sock, DESCRIBE_V0_REQUEST).hex() == DESCRIBE_V0_RESPONSE.hex()
    assert exchange(sock, ALTER_V1_REQUEST).hex() == ALTER_V1_RESPONSE.hex()


def _entity(*pairs: tuple[str, str | None]) -> QuotaEntity:
    return QuotaEntity(dict(pairs))


# ------------------------------------------------- float64 round trips, bit for bit

# Hand encoders (struct only) for the generated cases: one single-type entity, one op.


def _compact(text: str | None) -> bytes:
    if text is None:
        return b"\x00"
    raw = text.encode()
    assert len(raw) + 1 < 0x80  # one-byte varint suffices here
    return bytes([len(raw) + 1]) + raw


def alter_v1(correlation_id: int, user: str, key: str, value_bits: bytes) -> bytes:
    header = struct.pack(">hhih", 49, 1, correlation_id, 3) + b"raw" + b"\x00"
    body = (
        b"\x02"  # Entries: 1
        + b"\x02"  # Entity: 1
        + _compact("user")
        + _compact(user)
        + b"\x00"
        + b"\x02"  # Ops: 1
        + _compact(key)
        + value_bits
        + b"\x00"  # Remove false
        + b"\x00"  # OpData tags
        + b"\x00"  # EntryData tags
        + b"\x00"  # ValidateOnly false
        + b"\x00"
    )
    return framed(header + body)


def alter_v1_response(correlation_id: int, user: str, error: int = 0, message: str | None = None) -> bytes:
    body = (
        struct.pack(">iBi", correlation_id, 0, 0)
        + b"\x02"
        + struct.pack(">h", error)
        + _compact(message)
        + b"\x02"
        + _compact("user")
        + _compact(user)
        + b"\x00"
        + b"\x00"
        + b"\x00"
    )
    return framed(body)


def describe_v1_exact_user(correlation_id: int, user: str) -> bytes:
    header = struct.pack(">hhih", 48, 1, correlation_id, 3) + b"raw" + b"\x00"
    body = b"\x02" + _compact("user") + b"\x00" + _compact(user) + b"\x00" + b"\x01" + b"\x00"  # strict
    return framed(header + body)


def describe_v1_one_value(correlation_id: int, user: str, key: str, value_bits: bytes) -> bytes:
    body = (
        struct.pack(">iBih", correlation_id, 0, 0, 0)
        + b"\x01"  # ErrorMessage "" (Kafka's on success)
        + b"\x02"  # Entries: 1
        + b"\x02"
        + _compact("user")
        + _compact(user)
        + b"\x00"
        + b"\x02"  # Values: 1
        + _compact(key)
        + value_bits
        + b"\x00"
        + b"\x00"
        + b"\x00"
    )
    return framed(body)


ROUND_TRIPS = [
    pytest.param("producer_byte_rate", 1.0, id="long-1.0"),
    pytest.param("producer_byte_rate", float(2**53), id="long-2**53"),
    pytest.param("producer_byte_rate", float(2**63), id="long-2**63-equals-Long.MAX-as-double"),
    pytest.param("request_percentage", 1024.5, id="double-1024.5"),
    pytest.param("request_percentage", 0.1 + 0.2, id="double-0.1+0.2"),
    pytest.param("controller_mutation_rate", 5e-324, id="double-min-subnormal"),
    pytest.param("request_percentage", sys.float_info.max, id="double-max-finite"),
]


@pytest.mark.parametrize(("key", "value"), ROUND_TRIPS)
def test_float64_round_trip_bit_exact(sock: socket.socket, key: str, value: float) -> None:
    bits = struct.pack(">d", value)
    user = "f-" + bits.hex()
    assert exchange(sock, alter_v1(11, user, key, bits)).hex() == alter_v1_response(11, user).hex()
    response = exchange(sock, describe_v1_exact_user(12, user))
    assert response.hex() == describe_v1_one_value(12, user, key, bits).hex()
    # The 8 value bytes sit just before the three trailing tag bytes.
    assert response[-11:-3] == bits


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        pytest.param(
            "request_percentage", -math.inf, "Quota request_percentage must be a finite number", id="-inf"
        ),
        pytest.param(
            "request_percentage", math.inf, "Quota request_percentage must be a finite number", id="+inf"
        ),
        pytest.param(
            "request_percentage", math.nan, "Quota request_percentage must be a finite number", id="nan"
        ),
        pytest.param(
            "request_percentage",
            bytes.fromhex("7ff8000000000123"),
            "Quota request_percentage must be a finite number",
            id="nan-with-payload",
        ),
        pytest.param(
            "request_percentage", -0.0, "Quota request_percentage must be greater than 0", id="-0.0"
        ),
        pytest.param(
            "producer_byte_rate",
            math.inf,
            "Quota producer_byte_rate must be a finite number",
            id="+inf-for-a-LONG",
        ),
        pytest.param(
            "producer_byte_rate",
            float(2**64),
            "Proposed value for producer_byte_rate is too large for a LONG.",
            id="2**64-for-a-LONG",
        ),
    ],
)
def test_refused_values_over_the_wire(
    sync_cluster: MockCluster, sock: socket.socket, key: str, value: float | bytes, message: str
) -> None:
    bits = value if isinstance(value, bytes) else struct.pack(">d", value)
    expected = alter_v1_response(21, "refused", 42, message)
    assert exchange(sock, alter_v1(21, "refused", key, bits)).hex() == expected.hex()
    assert sync_cluster.quotas.describe() == {}


# ------------------------------------------ null where the schema does not allow one

# Kafka's generated readers throw on a null in a non-nullable string or array ("non-nullable
# field X was serialized as null"); RequestContext.parseRequest turns that into an
# InvalidRequestException and the SocketServer closes the connection: no response.


def _v0(api_key: int, body: bytes) -> bytes:
    return framed(struct.pack(">hhih", api_key, 0, 9, 3) + b"raw" + body)


def _v1(api_key: int, body: bytes) -> bytes:
    return framed(struct.pack(">hhih", api_key, 1, 9, 3) + b"raw" + b"\x00" + body)


_PBR_OP_V0 = bytes.fromhex("00000001 0012") + b"producer_byte_rate" + bytes.fromhex("4014000000000000 00")

NON_NULLABLE_NULLS = [
    pytest.param(
        _v0(49, bytes.fromhex("00000001 00000001 ffff 0001 61") + _PBR_OP_V0 + b"\x00"),
        id="alter-v0-null-entity-type",
    ),
    pytest.param(
        _v0(
            49,
            bytes.fromhex("00000001 00000001 0004 75736572 0001 61 00000001 ffff 4014000000000000 00 00"),
        ),
        id="alter-v0-null-key",
    ),
    pytest.param(_v0(49, bytes.fromhex("ffffffff 00")), id="alter-v0-null-entries"),
    pytest.param(
        _v0(49, bytes.fromhex("00000001 ffffffff") + _PBR_OP_V0 + b"\x00"),
        id="alter-v0-null-entity-array",
    ),
    pytest.param(
        _v1(
            49,
            bytes.fromhex("02 02 00 02 61 00 02 13")
            + b"producer_byte_rate"
            + bytes.fromhex("4014000000000000 00 00 00 00 00"),
        ),
        id="alter-v1-null-entity-type",
    ),
    pytest.param(_v0(48, bytes.fromhex("00000001 ffff 02 ffff 00")), id="describe-v0-null-entity-type"),
    pytest.param(_v0(48, bytes.fromhex("ffffffff 00")), id="describe-v0-null-components"),
    pytest.param(_v1(48, bytes.fromhex("00 00 00")), id="describe-v1-null-components"),
]


@pytest.mark.parametrize("request_bytes", NON_NULLABLE_NULLS)
def test_null_in_non_nullable_field_closes_the_connection(
    sync_cluster: MockCluster, request_bytes: bytes
) -> None:
    with connect(sync_cluster) as bystander, connect(sync_cluster) as conn:
        conn.sendall(request_bytes)
        conn.settimeout(5)
        try:
            answer = conn.recv(4096)
        except ConnectionResetError:
            answer = b""
        assert answer == b"", f"answered instead of closing: {answer.hex()}"
        # Other connections are unaffected, and nothing was stored.
        assert exchange(bystander, DESCRIBE_V1_EMPTY_REQUEST).hex() == DESCRIBE_V1_EMPTY_RESPONSE.hex()
    assert sync_cluster.quotas.describe() == {}


def test_quotas_are_cluster_wide(sync_cluster3: MockCluster) -> None:
    """Altered through broker 0, described through brokers 1 and 2 (one shared store)."""
    addresses = [address.rsplit(":", 1) for address in sync_cluster3.bootstrap_servers.split(",")]
    assert len(addresses) == 3
    with socket.create_connection((addresses[0][0], int(addresses[0][1])), timeout=5) as first:
        assert exchange(first, ALTER_V0_REQUEST).hex() == ALTER_V0_RESPONSE.hex()
    for host, port in addresses[1:]:
        with socket.create_connection((host, int(port)), timeout=5) as other:
            assert exchange(other, DESCRIBE_V0_REQUEST).hex() == DESCRIBE_V0_RESPONSE.hex()
