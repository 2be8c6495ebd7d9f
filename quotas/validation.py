"""Validation of AlterClientQuotas entries and DescribeClientQuotas filters, with Apache
Kafka's error codes and messages (ClientQuotaControlManager, ClientQuotasImage)."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from protocol.errors import ErrorCode
from quotas.entity import CLIENT_ID, ENTITY_TYPES, IP, USER, QuotaEntity
from quotas.key_types import IP_KEYS, USER_CLIENT_KEYS, whole_number_problem

MATCH_EXACT = 0
MATCH_DEFAULT = 1
MATCH_SPECIFIED = 2


class QuotaError(Exception):
    """A refusal with the Kafka error code and message the client receives."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def is_ip_literal(name: str) -> bool:
    """An IPv4 or IPv6 address; brackets around IPv6 are accepted, as InetAddress does."""
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def validate_entity(entity: QuotaEntity) -> None:
    """Kafka's validateEntity: known types and no empty names, checked in Kafka's order.

    (Types repeated in one wire entry have already collapsed, last wins, as in Kafka.)"""
    if not entity:
        raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")
    for entity_type, name in entity.kafka_items():
        if entity_type not in ENTITY_TYPES:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {entity_type}")
        if name == "":
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Empty {entity_type} not supported")


def allowed_keys(entity: QuotaEntity, is_valid_host: Callable[[str], bool] = is_ip_literal) -> dict[str, str]:
    """Kafka's configKeysForEntityType: the keys (and their types) this entity may carry."""
    if IP in entity:
        if USER in entity or CLIENT_ID in entity:
            # Kafka's message, missing space included (ClientQuotaControlManagerTest asserts it).
            raise QuotaError(
                ErrorCode.INVALID_REQUEST,
                "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
            )
        name = entity[IP]
        if name is not None and not is_valid_host(name):
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"{name} is not a valid IP or resolvable host.")
        return IP_KEYS
    return USER_CLIENT_KEYS


def validate_value(keys: dict[str, str], key: str, value: float) -> None:
    """Kafka's validateQuotaKeyValue, in its order: the key, then a finite value (NaN and
    both infinities refused, whatever the key's type), then positive, then the key type's
    range and whole-number rules."""
    if key not in keys:
        raise QuotaError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}")
    if not math.isfinite(value):
        raise QuotaError(ErrorCode.INVALID_REQUEST, f"Quota {key} must be a finite number")
    if value <= 0.0:
        raise QuotaError(ErrorCode.INVALID_REQUEST, f"Quota {key} must be greater than 0")
    problem = whole_number_problem(key, value)
    if problem is not None:
        raise QuotaError(ErrorCode.INVALID_REQUEST, problem)


@dataclass(frozen=True, slots=True)
class QuotaFilter:
    """A parsed DescribeClientQuotas filter: exact names (None = default) and type-only matches."""

    exact: dict[str, str | None]
    specified: frozenset[str]
    strict: bool

    def matches(self, entity: QuotaEntity) -> bool:
        if self.strict and len(entity) != len(self.exact) + len(self.specified):
            return False
        for entity_type, name in self.exact.items():
            if entity_type not in entity or entity[entity_type] != name:
                return False
        return all(entity_type in entity for entity_type in self.specified)


def parse_filter(components: Iterable[tuple[str, int, str | None]], strict: bool) -> QuotaFilter:
    """Kafka's ClientQuotasImage.describe checks, in its order, with its messages."""
    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for entity_type, match_type, match in components:
        if not entity_type:
            raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
        if entity_type in exact or entity_type in specified:
            raise QuotaError(
                ErrorCode.INVALID_REQUEST,
                f"Entity type {entity_type} cannot appear more than once in the filter.",
            )
        if entity_type not in ENTITY_TYPES:
            raise QuotaError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}")
        if match_type == MATCH_EXACT:
            if match is None:
                raise QuotaError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                )
            exact[entity_type] = match
        elif match_type == MATCH_DEFAULT:
            if match is not None:
                raise QuotaError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                )
            exact[entity_type] = None
        elif match_type == MATCH_SPECIFIED:
            if match is not None:
                raise QuotaError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                )
            specified.add(entity_type)
        else:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Unknown match type {match_type}")
    types = set(exact) | specified
    if IP in types and (USER in types or CLIENT_ID in types):
        raise QuotaError(
            ErrorCode.INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be used with "
            "user or clientId filter component.",
        )
    return QuotaFilter(exact, frozenset(specified), strict)
