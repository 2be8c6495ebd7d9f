"""Which configured quota applies to a (user, client-id), as Apache Kafka resolves it.

`QuotaIndex` holds, per quota key, the configured user/client-id entities and answers
the two questions of Kafka's DefaultQuotaCallback in constant time, whatever the number
of entities: which metric tags a request is measured under (who shares one sensor), and
which limit applies to those tags. The 8 levels, most specific first:

    1 (user, client-id)  2 (user, default client-id)  3 (user)
    4 (default user, client-id)  5 (default user, default client-id)  6 (default user)
    7 (client-id)  8 (default client-id)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from quotas.entity import CLIENT_ID, IP, USER, QuotaEntity, sanitize


class _Part:
    """Marks an entity part that is absent or the default (never a real name)."""

    def __init__(self, label: str) -> None:
        self.label = label

    def __repr__(self) -> str:
        return self.label


ABSENT = _Part("ABSENT")
DEFAULT = _Part("DEFAULT")
Part = str | _Part
Slot = tuple[Part, Part]  # (user part, client-id part)

# Kafka's QuotaTypes bits: which entity families have ever been configured for a key.
CLIENT_ID_FAMILY = 1
USER_FAMILY = 2
USER_CLIENT_ID_FAMILY = 4


def slot_of(entity: QuotaEntity) -> Slot | None:
    """The (user, client-id) slot of a user/client-id entity; None for ip entities."""
    if IP in entity:
        return None

    def part(entity_type: str) -> Part:
        if entity_type not in entity:
            return ABSENT
        name = entity[entity_type]
        if name is None:
            return DEFAULT
        return sanitize(name) if entity_type == USER else name

    return part(USER), part(CLIENT_ID)


def _family(slot: Slot) -> int:
    user, client = slot
    if user is not ABSENT and client is not ABSENT:
        return USER_CLIENT_ID_FAMILY
    return USER_FAMILY if user is not ABSENT else CLIENT_ID_FAMILY


def precedence(user: str, client_id: str) -> list[Slot]:
    """The 8 slots for a sanitized user and a client id, most specific first."""
    return [
        (user, client_id),
        (user, DEFAULT),
        (user, ABSENT),
        (DEFAULT, client_id),
        (DEFAULT, DEFAULT),
        (DEFAULT, ABSENT),
        (ABSENT, client_id),
        (ABSENT, DEFAULT),
    ]


@dataclass(slots=True)
class _KeyIndex:
    values: dict[Slot, float] = field(default_factory=dict)
    entities: dict[Slot, QuotaEntity] = field(default_factory=dict)
    families: Counter[int] = field(default_factory=Counter)

    @property
    def enabled(self) -> int:
        return sum(family for family, count in self.families.items() if count > 0)


class QuotaIndex:
    """Per quota key: configured slots and values, kept current by the store."""

    def __init__(self) -> None:
        self._keys: dict[str, _KeyIndex] = {}
        self.ip_values: dict[str, dict[str | None, float]] = {}

    def set(self, entity: QuotaEntity, key: str, value: float | None) -> None:
        slot = slot_of(entity)
        if slot is None:
            ip_values = self.ip_values.setdefault(key, {})
            if value is None:
                ip_values.pop(entity[IP], None)
            else:
                ip_values[entity[IP]] = value
            return
        index = self._keys.setdefault(key, _KeyIndex())
        if value is None:
            if index.values.pop(slot, None) is not None:
                del index.entities[slot]
                index.families[_family(slot)] -= 1
            return
        if slot not in index.values:
            index.families[_family(slot)] += 1
        index.values[slot] = value
        index.entities[slot] = entity

    # -- Kafka's DefaultQuotaCallback ----------------------------------------
    def metric_tags(self, key: str, user: str, client_id: str) -> tuple[str, str]:
        """(user tag, client-id tag) a request is measured under; `user` is the
        principal name (sanitized here), `client_id` the request's client id."""
        user = sanitize(user)
        index = self._keys.get(key)
        enabled = index.enabled if index is not None else 0
        if enabled in (0, CLIENT_ID_FAMILY):
            return "", client_id
        if enabled == USER_FAMILY:
            return user, ""
        if enabled == USER_CLIENT_ID_FAMILY:
            return user, client_id
        assert index is not None
        for level, slot in enumerate(precedence(user, client_id)[:6], start=1):
            if slot in index.values:
                return (user, "") if level in (3, 6) else (user, client_id)
        return "", client_id

    def limit(self, key: str, user_tag: str, client_tag: str) -> float | None:
        """The bound for a sensor with these tags (None: unlimited)."""
        found = self.limit_entity(key, user_tag, client_tag)
        return None if found is None else found[0]

    def limit_entity(self, key: str, user_tag: str, client_tag: str) -> tuple[float, QuotaEntity] | None:
        index = self._keys.get(key)
        if index is None:
            return None
        for slot in _limit_slots(user_tag, client_tag):
            value = index.values.get(slot)
            if value is not None:
                return value, index.entities[slot]
        return None

    def candidates(self, key: str, user: str, client_id: str) -> list[tuple[float, QuotaEntity]]:
        """Every configured entity on the precedence list of (user, client-id), most
        specific first: what a resolve shows as overridden beneath the winner."""
        index = self._keys.get(key)
        if index is None:
            return []
        return [
            (index.values[slot], index.entities[slot])
            for slot in precedence(sanitize(user), client_id)
            if slot in index.values
        ]

    def has_key(self, key: str) -> bool:
        index = self._keys.get(key)
        return index is not None and bool(index.values)

    def keys(self) -> list[str]:
        return [key for key, index in self._keys.items() if index.values]

    def ip_limit(self, key: str, ip: str) -> float | None:
        values = self.ip_values.get(key, {})
        return values.get(ip, values.get(None))


def _limit_slots(user: str, client_id: str) -> list[Slot]:
    if user and client_id:
        return [(user, client_id), (user, DEFAULT), (DEFAULT, client_id), (DEFAULT, DEFAULT)]
    if user:
        return [(user, ABSENT), (DEFAULT, ABSENT)]
    if client_id:
        return [(ABSENT, client_id), (ABSENT, DEFAULT)]
    return []


@dataclass(frozen=True, slots=True)
class Resolved:
    """The quota in force for one key, where it comes from, and what it overrides."""

    key: str
    value: float
    entity: QuotaEntity
    overridden: tuple[tuple[float, QuotaEntity], ...]


def resolve(index: QuotaIndex, user: str, client_id: str) -> list[Resolved]:
    """What the broker enforces for a connection of `user` with `client_id`, per key.

    The same two steps the broker takes per request (metric tags, then the limit for
    those tags), so a resolve never disagrees with enforcement."""
    resolved = []
    for key in sorted(index.keys()):
        user_tag, client_tag = index.metric_tags(key, user, client_id)
        found = index.limit_entity(key, user_tag, client_tag)
        if found is None:
            continue
        value, entity = found
        candidates = index.candidates(key, user, client_id)
        position = next(i for i, (_, candidate) in enumerate(candidates) if candidate == entity)
        resolved.append(Resolved(key, value, entity, tuple(candidates[position + 1 :])))
    return resolved
