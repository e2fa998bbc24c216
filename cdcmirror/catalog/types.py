"""Iceberg type strings (``long``, ``decimal(20,0)``, ``list<int>``) <-> pyiceberg types."""

from __future__ import annotations

import itertools
import re
from typing import Any

from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

_PRIMITIVES: dict[str, Any] = {
    "boolean": BooleanType,
    "int": IntegerType,
    "long": LongType,
    "float": FloatType,
    "double": DoubleType,
    "date": DateType,
    "time": TimeType,
    "timestamp": TimestampType,
    "timestamptz": TimestamptzType,
    "string": StringType,
    "uuid": UUIDType,
    "binary": BinaryType,
}


def _split_top(args: str) -> list[str]:
    depth, parts, current = 0, [], ""
    for ch in args:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p.strip() for p in parts]


def to_iceberg(spec: str, ids: Any = None) -> IcebergType:
    """A pyiceberg type for a type string; nested fields take ids from ``ids``."""
    ids = ids if ids is not None else itertools.count(1000)
    spec = spec.strip()
    if spec in _PRIMITIVES:
        primitive: IcebergType = _PRIMITIVES[spec]()
        return primitive
    if m := re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", spec):
        return DecimalType(int(m[1]), int(m[2]))
    if m := re.fullmatch(r"fixed\[?\(?(\d+)\)?\]?", spec):
        return FixedType(int(m[1]))
    if spec.startswith("list<") and spec.endswith(">"):
        return ListType(next(ids), to_iceberg(spec[5:-1], ids), element_required=False)
    if spec.startswith("map<") and spec.endswith(">"):
        key, value = _split_top(spec[4:-1])
        return MapType(
            next(ids),
            to_iceberg(key, ids),
            next(ids),
            to_iceberg(value, ids),
            value_required=False,
        )
    raise ValueError(f"not an Iceberg type cdcmirror writes: {spec!r}")


def to_spec(t: IcebergType) -> str:
    """The type string of a pyiceberg type, in the form the type mapping writes."""
    if isinstance(t, ListType):
        return f"list<{to_spec(t.element_type)}>"
    if isinstance(t, MapType):
        return f"map<{to_spec(t.key_type)},{to_spec(t.value_type)}>"
    if isinstance(t, DecimalType):
        return f"decimal({t.precision},{t.scale})"
    for name, cls in _PRIMITIVES.items():
        if isinstance(t, cls):
            return name
    return str(t)
