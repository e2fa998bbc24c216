"""Which Avro schemas a stream reads straight into its columns. Pure.

Spark's Avro reader (``from_avro``) gives each field a Spark type: ``int`` an INT, ``long`` a
BIGINT, ``string`` and ``enum`` a STRING, ``bytes`` and ``fixed`` a BINARY, an array an
ARRAY of its items' type, ``["null", T]`` a T that may be NULL. When every field of a
schema is such a type and it is its column's type (or one the column widens to without
loss: an ``int`` into a ``long``, a ``float`` into a ``double``), the event is the record's
fields as they are, and no JSON text is made and parsed again (``spark/avro_frames.py``).
Any other schema goes through the JSON text, whose parse finds a value that does not fit
its column: a nested record or a map (its column holds its JSON text), a union of several
types, a field whose column has another type (a ``long`` that a newer version writes
into an ``int`` column). Either way, a string that is not UTF-8 is the event's decode
error (``spark/avro_frames.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from cdcmirror.cdc_columns import IcebergColumn
from cdcmirror.exceptions import ConfigError
from cdcmirror.streams.schema import AVRO_PRIMITIVES, columns_of_avro

_PRIMITIVE = AVRO_PRIMITIVES


def direct_type(node: Any) -> str | None:
    """The Iceberg type Spark's Avro reader gives ``node`` when a column of that type takes
    it as it is; None for what goes through JSON text.

    >>> direct_type(["null", "long"]), direct_type({"type": "array", "items": "string"})
    ('long', 'list<string>')
    >>> direct_type({"type": "map", "values": "long"}), direct_type(["int", "string"])
    (None, None)
    """
    if isinstance(node, list):
        kinds = [k for k in node if k != "null"]
        return direct_type(kinds[0]) if len(kinds) == 1 else None
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "array":
            inner = direct_type(node.get("items"))
            return f"list<{inner}>" if inner in _PRIMITIVE.values() else None
        if kind in ("enum", "fixed"):
            return _PRIMITIVE[str(kind)]
        return direct_type(kind) if isinstance(kind, str) and kind in _PRIMITIVE else None
    return _PRIMITIVE.get(str(node))


# a number a column of a wider type holds exactly (Avro's promotions that lose nothing)
WIDER = {("int", "long"), ("int", "double"), ("float", "double")}


def fits(written: str | None, column: str | None) -> bool:
    """A field read as ``written`` goes into a ``column`` of that type as it is, or widened
    without loss.

    >>> fits("int", "long"), fits("list<float>", "list<double>"), fits("long", "int")
    (True, True, False)
    """
    if written is None or column is None:
        return False
    if written.startswith("list<") and column.startswith("list<"):
        return fits(written[5:-1], column[5:-1])
    return written == column or (written, column) in WIDER


def direct_fields(plain_schema: str, columns: Sequence[IcebergColumn]) -> list[str] | None:
    """The fields of a record schema (JSON text, logical types removed) when each is read as
    its column's type or one it widens to without loss (``fits``), else None.

    >>> s = '{"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]}'
    >>> direct_fields(s, [IcebergColumn("a", "long"), IcebergColumn("b", "string")])
    ['a']
    >>> direct_fields(s, [IcebergColumn("a", "int")]) is None
    True
    """
    schema = json.loads(plain_schema)
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return None
    kinds = {c.name: c.type for c in columns}
    fields = [f for f in schema.get("fields", []) if isinstance(f, dict)]
    if not fields or any(
        not fits(direct_type(f.get("type")), kinds.get(str(f["name"]))) for f in fields
    ):
        return None
    return [str(f["name"]) for f in fields]


def added_columns(
    columns: Sequence[IcebergColumn], schemas: dict[int, str], where: str
) -> list[IcebergColumn]:
    """The fields of a batch's ``schemas`` (id -> the registry's text) that ``columns`` lack,
    as new columns (a schema that is no record is its events' decode error, not a column).

    >>> s = '{"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]}'
    >>> [c.name for c in added_columns([IcebergColumn("b", "int")], {1: s, 2: '"long"'}, "t")]
    ['a']
    """
    known = {c.name for c in columns}
    added: dict[str, IcebergColumn] = {}
    for _, text in sorted(schemas.items()):
        try:
            found = columns_of_avro(text, where)
        except ConfigError:
            continue
        added.update({c.name: c for c in found if c.name not in known | set(added)})
    return list(added.values())
