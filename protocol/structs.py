"""Building kafka-python message objects cheaply.

`DataContainer.__init__` walks every field of a struct and asks each whether it exists
in the version, for every object built; a produce response builds one per partition.
`new` builds the same object (the same slots set to the same values, so it encodes,
compares and prints the same: tests/protocol/test_structs.py) from a plan computed once
per (class, version).
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.api_message import ApiMessage

# (class, version) -> (in-version fields with their defaults, tagged field names)
_Plan = tuple[tuple[tuple[str, Any], ...], frozenset[str]]
_PLANS: dict[tuple[type, int], _Plan] = {}


def _plan(cls: type, version: int) -> _Plan:
    struct = cls._struct  # type: ignore[attr-defined]
    if not struct.min_version <= version <= struct.max_version:
        raise ValueError(f"Invalid version: {version} (min={struct.min_version}, max={struct.max_version})")
    plan = (
        tuple((field.name, field.default) for field in struct._fields if field.for_version_q(version)),
        frozenset(field.name for field in struct._fields if field._tag is not None),
    )
    _PLANS[(cls, version)] = plan
    return plan


def new(cls: type, version: int, /, **fields: Any) -> Any:
    """`cls(version=version, **fields)`, without the per-object schema walk."""
    plan = _PLANS.get((cls, version)) or _plan(cls, version)
    defaults, tagged = plan
    obj: Any = object.__new__(cls)
    matched = 0
    for name, default in defaults:
        if name in fields:
            setattr(obj, name, fields[name])
            matched += 1
        else:
            setattr(obj, name, default)
    if matched != len(fields):  # a field outside the version, or an unknown one
        return cls(version=version, **fields)
    obj._version = version
    obj.unknown_tags = None
    obj.tags = tagged.intersection(fields) if tagged and not tagged.isdisjoint(fields) else None
    if isinstance(obj, ApiMessage):
        obj._header = obj._min_version = obj._max_version = None
    return obj


_SLOTS: dict[type, tuple[Any, ...]] = {}


def copy_struct(obj: Any) -> Any:
    """A shallow copy of a kafka-python message object, unset slots left unset (what
    copy.copy gives, at a fraction of its cost)."""
    cls = type(obj)
    slots = _SLOTS.get(cls)
    if slots is None:
        slots = _SLOTS[cls] = tuple(
            klass.__dict__[name]
            for klass in cls.__mro__
            for name in getattr(klass, "__slots__", ())
            if name != "__weakref__"
        )
    copied = object.__new__(cls)
    for slot in slots:
        try:
            slot.__set__(copied, slot.__get__(obj, cls))
        except AttributeError:  # not set: left unset
            pass
    return copied
