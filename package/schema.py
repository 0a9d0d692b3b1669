"""The shape of a stage manifest (and of any other JSON record read from outside), checked before any field is used.

A package's manifest is data from outside: its hash only proves that nobody changed it
after packing, not that kernlink wrote it. :func:`validate` checks a decoded manifest
against a schema of types, integer ranges, string sizes and list lengths, and names the
first field that breaks it (``captured.params[0].fields[1] has 4 items, expected 3``).

Objects accept keys the schema does not name (a newer kernlink may add fields; the
generic limits of :func:`package.kpkg.check_limits` still bound them). To add a
field, add one entry to the ``required`` or ``optional`` table of its object below.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1
CONTRACT_LIMIT = 1 << 20  # the embedded contract gets the limit of a contract file


@dataclass(frozen=True)
class Str:
    """A string of at most ``max_bytes`` UTF-8 bytes; ``numbers``: every run of digits fits u64;
    ``pattern``: the whole string matches."""

    max_bytes: int = 4096
    numbers: bool = False
    pattern: str | None = None


@dataclass(frozen=True)
class Int:
    lo: int = 0
    hi: int = U32_MAX


@dataclass(frozen=True)
class Arr:
    item: Schema
    max_items: int = 1 << 16


@dataclass(frozen=True)
class Tup:
    """A list of exactly these items, in order."""

    items: tuple[Schema, ...]


@dataclass(frozen=True)
class Obj:
    required: Mapping[str, Schema] = field(default_factory=dict)
    optional: Mapping[str, Schema] = field(default_factory=dict)


@dataclass(frozen=True)
class Table:
    """An object used as a map: any key (a string of at most ``key`` bytes), one value schema."""

    value: Schema
    key: int = 4096
    max_items: int = 1 << 16


@dataclass(frozen=True)
class AnyValue:
    """Any JSON value (bounded only by the generic limits)."""


@dataclass(frozen=True)
class Maybe:
    """``null``, or a value of ``schema``."""

    schema: Schema


Schema = Str | Int | Arr | Tup | Obj | Table | AnyValue | Maybe

_SYMBOL = Str(4096)
_SIZE = Int(0, U32_MAX)
_PROTOTYPE = Obj(
    required={"kind": Str(16, pattern="func|entry|var"), "params": Arr(Str(64), 4096), "returns": Arr(Str(64), 4096)}
)
_PARAMS = Obj(
    required={"name": _SYMBOL, "size": _SIZE, "align": _SIZE, "fields": Arr(Tup((_SYMBOL, _SIZE, _SIZE)), 4096)}
)

STAGE_MANIFEST = Obj(
    required={
        "format": Str(64),
        "format_version": Int(0, U32_MAX),
        "stage": Str(4096),
        "version": Str(256, numbers=True),
        "target": Str(64),
        "contract": Str(CONTRACT_LIMIT),
        "toolkit": Str(256),
        "captured": Obj(
            required={"defined": Arr(_SYMBOL), "needed": Arr(_SYMBOL), "params": Arr(_PARAMS, 4096)},
            optional={"prototypes": Table(_PROTOTYPE)},
        ),
        "payloads": AnyValue(),  # checked by package.kpkg when the package is read
    },
    optional={
        "compile": Obj(optional={"compiler": Str(64), "source": Str(4096), "options": Arr(Str(4096), 4096)}),
    },
)


def validate(value: Any, schema: Schema, where: str = "manifest") -> str | None:
    """The first way ``value`` breaks ``schema`` (naming the field), or None when it fits."""
    if isinstance(schema, AnyValue):
        return None
    if isinstance(schema, Maybe):
        return None if value is None else validate(value, schema.schema, where)
    if isinstance(schema, Str):
        return _string(value, schema, where)
    if isinstance(schema, Int):
        if type(value) is not int:
            return f"`{where}` is {_kind(value)}, expected an integer"
        if not schema.lo <= value <= schema.hi:
            return f"`{where}` is out of range: expected {schema.lo}..{schema.hi}"
        return None
    if isinstance(schema, (Arr, Tup)):
        return _array(value, schema, where)
    if not isinstance(value, dict):
        return f"`{where}` is {_kind(value)}, expected an object"
    if isinstance(schema, Table):
        if len(value) > schema.max_items:
            return f"`{where}` has {len(value)} entries, at most {schema.max_items} allowed"
        for key, item in value.items():
            if len(key.encode("utf-8")) > schema.key:
                return f"`{where}` has a key longer than {schema.key} bytes"
            if (problem := validate(item, schema.value, f"{where}.{key}")) is not None:
                return problem
        return None
    for key in schema.required:
        if key not in value:
            return f"`{where}.{key}` is missing"
    for key, sub in (*schema.required.items(), *schema.optional.items()):
        if key in value and (problem := validate(value[key], sub, f"{where}.{key}")) is not None:
            return problem
    return None


def _string(value: Any, schema: Str, where: str) -> str | None:
    if not isinstance(value, str):
        return f"`{where}` is {_kind(value)}, expected a string"
    size = len(value.encode("utf-8"))
    if size > schema.max_bytes:
        return f"`{where}` is {size} bytes, over the limit of {schema.max_bytes}"
    if schema.numbers and any(len(run) > 20 or int(run) > U64_MAX for run in re.findall(r"[0-9]+", value)):
        return f"`{where}` holds a number larger than {U64_MAX}"
    if schema.pattern is not None and re.fullmatch(schema.pattern, value) is None:
        return f"`{where}` is not one of `{schema.pattern}`"
    return None


def _array(value: Any, schema: Arr | Tup, where: str) -> str | None:
    if not isinstance(value, list):
        return f"`{where}` is {_kind(value)}, expected a list"
    if isinstance(schema, Tup):
        if len(value) != len(schema.items):
            return f"`{where}` has {len(value)} items, expected {len(schema.items)}"
        pairs = list(zip(value, schema.items, strict=True))
    else:
        if len(value) > schema.max_items:
            return f"`{where}` has {len(value)} items, at most {schema.max_items} allowed"
        pairs = [(item, schema.item) for item in value]
    for index, (item, sub) in enumerate(pairs):
        if (problem := validate(item, sub, f"{where}[{index}]")) is not None:
            return problem
    return None


def _kind(value: Any) -> str:
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)
