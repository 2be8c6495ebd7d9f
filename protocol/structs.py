"""Building kafka-python message objects cheaply.

`DataContainer.__init__` walks every field of a struct and asks each whether it exists
in the version, for every object built; a produce response builds one per partition.
`new` builds the same object (the same slots set to the same values, so it encodes,
compares and prints the same: tests/protocol/test_structs.py) with a constructor written
once per (class, version).
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from typing import Any

from kafka.protocol.api_message import ApiMessage

_UNSET = object()
# (class, version) -> a function of the in-version fields (keywords) building the object
_MAKERS: dict[tuple[type, int], Callable[..., Any]] = {}


def _maker(cls: type, version: int) -> Callable[..., Any]:
    """Writes the constructor of one (class, version) as Python source, as dataclasses
    does: every slot set by one assignment, the arguments parsed by the interpreter."""
    struct = cls._struct  # type: ignore[attr-defined]
    if not struct.min_version <= version <= struct.max_version:
        raise ValueError(f"Invalid version: {version} (min={struct.min_version}, max={struct.max_version})")
    fields = [field for field in struct._fields if field.for_version_q(version)]
    names = [field.name for field in fields]
    if any(keyword.iskeyword(name) or not name.isidentifier() for name in names):
        return lambda **values: cls(version=version, **values)
    scope: dict[str, Any] = {"_cls": cls, "_new": object.__new__, "_UNSET": _UNSET}
    params, body = [], ["obj = _new(_cls)", "tags = None"]
    for index, field in enumerate(fields):
        scope[f"_d{index}"] = field.default
        if field._tag is None:
            params.append(f"{field.name}=_d{index}")
            body.append(f"obj.{field.name} = {field.name}")
        else:  # a tagged field is named in `tags` when it was given
            params.append(f"{field.name}=_UNSET")
            body += [
                f"if {field.name} is _UNSET: obj.{field.name} = _d{index}",
                f"else: obj.{field.name} = {field.name}; tags = (tags or set()) | {{{field.name!r}}}",
            ]
    body += [f"obj._version = {version}", "obj.unknown_tags = None", "obj.tags = tags"]
    if issubclass(cls, ApiMessage):
        body.append("obj._header = obj._min_version = obj._max_version = None")
    body.append("return obj")
    signature = f"*, {', '.join(params)}" if params else ""  # a struct may have no fields
    source = f"def make({signature}):\n" + "\n".join(f"    {line}" for line in body)
    exec(source, scope)  # noqa: S102 - names are checked identifiers, values go through scope
    maker: Callable[..., Any] = scope["make"]
    _MAKERS[(cls, version)] = maker
    return maker


def new(cls: type, version: int, /, **fields: Any) -> Any:
    """`cls(version=version, **fields)`, without the per-object schema walk."""
    make = _MAKERS.get((cls, version)) or _maker(cls, version)
    try:
        return make(**fields)
    except TypeError:  # a field outside the version, or an unknown one: as the constructor does
        return cls(version=version, **fields)


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


def maker(cls: type, *names: str, version: int | None = None) -> Callable[..., Any]:
    """A function of the values of `names` (positional, in that order) building what
    `cls(version=version, **dict(zip(names, values)))` builds: the given fields set (in
    the version or not, as the constructor sets them), the version's other fields set to
    their defaults (none without a version: they read as their schema defaults), the
    tagged ones given named in `tags`. A handler writes one per kind of entry it builds
    many of: DataContainer.__init__ walks every field of the schema per object, and
    `new` falls back to it for a field outside the version. tests/protocol/
    test_structs_maker.py compares both."""
    struct = cls._struct  # type: ignore[attr-defined]
    fields = {field.name: field for field in struct._fields}
    unknown = [name for name in names if name not in fields]
    if unknown:
        raise ValueError(f"Unrecognized fields for type {struct.name}: {unknown}")
    if version is not None and not struct.min_version <= version <= struct.max_version:
        raise ValueError(f"Invalid version: {version} (min={struct.min_version}, max={struct.max_version})")
    if any(keyword.iskeyword(name) or not name.isidentifier() for name in names) or issubclass(cls, ApiMessage):
        return lambda *values: cls(version=version, **dict(zip(names, values, strict=True)))
    tagged = {name for name in names if fields[name]._tag is not None}
    scope: dict[str, Any] = {"_cls": cls, "_new": object.__new__}
    body = ["obj = _new(_cls)", f"obj._version = {version!r}", "obj.unknown_tags = None"]
    body.append(f"obj.tags = {tagged!r}" if tagged else "obj.tags = None")
    for index, field in enumerate(struct._fields):
        if field.name in names:
            body.append(f"obj.{field.name} = {field.name}")
        elif version is not None and field.for_version_q(version):
            scope[f"_d{index}"] = field.default
            body.append(f"obj.{field.name} = _d{index}")
    body.append("return obj")
    source = f"def make({', '.join(names)}):\n" + "\n".join(f"    {line}" for line in body)
    exec(source, scope)  # noqa: S102 - names are checked identifiers of the schema
    made: Callable[..., Any] = scope["make"]
    return made
