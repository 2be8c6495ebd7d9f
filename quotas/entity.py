"""Client-quota entities: a mapping of entity type (user, client-id, ip) to a name or the default.

A default entity has name None on the wire and here; the string "<default>" is an
ordinary name (only tools print defaults that way).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from quotas.java import hashmap_capacity, hashmap_order

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)  # also the order tools print them in

_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


class QuotaEntity(Mapping[str, str | None]):
    """An immutable, hashable entity such as {user: "alice", client-id: None}."""

    __slots__ = ("_items", "_hash", "_kafka_items")

    def __init__(self, items: Mapping[str, str | None] | Iterable[tuple[str, str | None]] = ()) -> None:
        pairs = dict(items.items() if isinstance(items, Mapping) else items)
        self._items: tuple[tuple[str, str | None], ...] = tuple(
            sorted(pairs.items(), key=lambda kv: _type_order(kv[0]))
        )
        self._hash = hash(self._items)
        self._kafka_items: list[tuple[str, str | None]] | None = None

    def __getitem__(self, key: str) -> str | None:
        for entity_type, name in self._items:
            if entity_type == key:
                return name
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (entity_type for entity_type, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, QuotaEntity):
            return self._items == other._items
        return NotImplemented

    def __repr__(self) -> str:
        return f"QuotaEntity({dict(self._items)!r})"

    def kafka_items(self) -> list[tuple[str, str | None]]:
        """The components in the order Kafka iterates them, which shows in its messages and
        in the entities of its responses: AlterClientQuotasRequest.entries() puts them in a
        `new HashMap<>(components)`, so client-id comes before user, and before ip (the
        ip, client-id order of a 16-bucket table would differ). A type repeated on the
        wire would make that table larger; it is counted once here."""
        found = self._kafka_items
        if found is None:  # the entity never changes: worked out once (DescribeClientQuotas)
            capacity = hashmap_capacity(len(self._items), len(self._items))
            found = self._kafka_items = [
                (entity_type, self[entity_type]) for entity_type in hashmap_order(self, capacity)
            ]
        return list(found)

    def __str__(self) -> str:
        """Kafka's ClientQuotaEntity.toString, used in its error messages."""
        entries = ", ".join(f"{t}={'null' if n is None else n}" for t, n in self.kafka_items())
        return "ClientQuotaEntity(entries={" + entries + "})"

    def display(self) -> str:
        """How kafka-client-quotas prints an entity: {user=alice, client-id=<default>}."""
        return "{" + ", ".join(f"{t}={'<default>' if n is None else n}" for t, n in self._items) + "}"

    def to_json(self) -> dict[str, str | None]:
        return dict(self._items)


def _type_order(entity_type: str) -> tuple[int, str]:
    return (
        (ENTITY_TYPES.index(entity_type), "")
        if entity_type in ENTITY_TYPES
        else (len(ENTITY_TYPES), entity_type)
    )


def sanitize(name: str) -> str:
    """Kafka's Sanitizer.sanitize: URL-encoding of a principal name as used in metric tags
    and quota entity lookups (every byte outside [A-Za-z0-9._-] becomes %XX)."""
    encoded = name.encode()
    if all(b in _SAFE for b in encoded):
        return name
    return "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in encoded)
