"""Which Avro envelopes a CDC table's decode reads straight from their records. Pure.

Spark's Avro reader (``from_avro``, the schema's logical types removed) gives each field a
Spark type: ``int`` an INT, ``long`` a BIGINT, ``float`` a FLOAT, ``double`` a DOUBLE,
``string`` and ``enum`` a STRING, ``bytes`` and ``fixed`` a BINARY, an array an ARRAY,
``["null", T]`` a T that may be NULL. The decode (``envelope.py``) reads the envelope in
the wire types of the JSON converter's text (``carriers.wire_type``). When each field the
decode reads is of a type that gives the same wire value, the envelope is built from the
record's fields as they are (:meth:`AvroEnvelope.sql`), and no JSON text is written and parsed
again (a large part of the decode):

- ``int`` or ``long`` into a ``bigint`` (``int`` only into an ``int``);
- ``double`` into a ``double``; ``float`` into a ``double`` only for a column stored as an
  Iceberg ``float``, whose cast back to float gives the value as written (the JSON text
  would carry its shortest decimal, which as a double is another number);
- ``boolean``; ``string`` and ``enum`` into a ``string``;
- ``bytes`` and ``fixed`` into a ``string``: their base64 text without line breaks, as the
  JSON converter's text carries them (Spark's ``base64`` breaks lines every 76 characters
  unless ``spark.sql.chunkBase64String.enabled`` is false);
- an array of such items into an array of their wire type; a map of strings into a
  ``map<string,string>``; a record into a struct of such fields (VariableScaleDecimal,
  a geometry).

Any other field (a union of several types, a map of other values, a type that is not the
column's) makes the schema go through the JSON text (``spark/avro_frames.py``), whose parse
finds a value that does not fit and names it: no value is read differently either way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cdcmirror.mirror.avro import name_record, named_type
from cdcmirror.mirror.carriers import parse_carrier, wire_type
from cdcmirror.mirror.envelope import UNREADABLE, envelope_ddl, source_ddl
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.sql_text import q, sql_string

ENVELOPE = "_cdc_env"
"""The column of a CDC table's Avro records that holds the envelope built from the record
(``spark/avro_frames.py``; NULL for the ids that go through the JSON text)."""

_TRANSACTION = [("id", "string", ""), ("data_collection_order", "bigint", "")]
_NUMBERS = {"int": ("int", "bigint"), "long": ("bigint",), "double": ("double",)}
_TEXT = ("string", "enum")
_BYTES = ("bytes", "fixed")
# the base64 text of Spark's ``base64`` without the line breaks it may put in
_NO_BREAKS = "translate(base64({}), concat(char(13), char(10)), '')"


def _named(node: Any, named: dict[str, Any]) -> None:
    """Every record, enum and fixed type of the schema ``node`` into ``named``."""
    if isinstance(node, list):
        for n in node:
            _named(n, named)
    elif isinstance(node, dict):
        kind = node.get("type")
        if kind in ("record", "enum", "fixed") and "name" in node:
            name_record(node, named)
        for f in node.get("fields", []) if kind == "record" else []:
            if isinstance(f, dict):
                _named(f.get("type"), named)
        inner = {"array": "items", "map": "values"}.get(str(kind))
        _named(node.get(inner) if inner else kind, named)


def _kind(node: Any, named: dict[str, Any]) -> Any:
    """``node`` without its ``["null", T]`` union and named references: a primitive's name,
    or the record/array/enum/fixed/map node; None for a union of several types."""
    if isinstance(node, list):
        kinds = [k for k in node if k != "null"]
        return _kind(kinds[0], named) if len(kinds) == 1 else None
    if isinstance(node, str):  # a primitive, or the name of a type defined before
        target = named_type(node, named)
        return node if target is None else _kind(target, named)
    if isinstance(node, dict):
        kind = node.get("type")
        if kind in ("record", "array", "map", "enum", "fixed"):
            return node
        return _kind(kind, named)
    return None


def _value_sql(
    node: Any, wire: str, iceberg: str, ref: str, named: dict[str, Any], depth: int = 0
) -> str | None:
    """SQL of the wire value (type ``wire``, stored as ``iceberg``) from the field ``ref`` of
    Avro type ``node`` (``depth``: arrays around it); None when that type does not give the
    same value (module doc)."""
    kind = _kind(node, named)
    name = kind.get("type") if isinstance(kind, dict) else kind
    if name in _NUMBERS and wire in _NUMBERS[name]:
        return ref if wire in ("int", name) else f"CAST({ref} AS BIGINT)"
    if name == "float" and wire == "double" and iceberg == "float":
        return f"CAST({ref} AS DOUBLE)"
    if name == "boolean" and wire == "boolean":
        return ref
    if name in _TEXT and wire == "string":
        return ref
    if name in _BYTES and wire == "string":
        return _NO_BREAKS.format(ref)
    if name == "record" and wire.startswith("struct<"):  # e.g. VariableScaleDecimal
        wanted = [(n, t, "") for n, t in (f.split(":", 1) for f in wire[7:-1].split(","))]
        return _struct_sql(kind, wanted, ref, named)
    if name == "map" and wire == "map<string,string>" and isinstance(kind, dict):
        values = _kind(kind.get("values"), named)
        return (
            ref
            if values in _TEXT or (isinstance(values, dict) and values["type"] in _TEXT)
            else None
        )
    if name == "array" and wire.startswith("array<") and isinstance(kind, dict):
        inner_iceberg = iceberg[5:-1] if iceberg.startswith("list<") else ""
        x = f"_cdc_x{depth}"  # a lambda variable no enclosing one uses
        item = _value_sql(kind.get("items"), wire[6:-1], inner_iceberg, x, named, depth + 1)
        return None if item is None else f"transform({ref}, {x} -> {item})"
    return None


def _fields(node: Any, named: dict[str, Any]) -> dict[str, Any] | None:
    """A record's fields by name; None for what is no record, or whose names differ only in
    case (Spark resolves a field's name regardless of case)."""
    kind = _kind(node, named)
    if not isinstance(kind, dict) or kind.get("type") != "record":
        return None
    fields = {str(f["name"]): f.get("type") for f in kind.get("fields", []) if isinstance(f, dict)}
    return fields if len({n.lower() for n in fields}) == len(fields) else None


def _struct_sql(
    node: Any, wanted: list[tuple[str, str, str]], ref: str, named: dict[str, Any]
) -> str | None:
    """The struct of the ``wanted`` fields (name, wire type, Iceberg type) from the record
    ``ref`` of Avro type ``node`` (a field it lacks is NULL, as the JSON parse reads it), NULL
    when the record is; None when one does not give the same value."""
    fields = _fields(node, named)
    if fields is None:
        return None
    parts = []
    for name, wire, iceberg in wanted:
        value = "NULL"
        if name in fields:
            found = _value_sql(fields[name], wire, iceberg, f"{ref}.{q(name)}", named)
            if found is None:
                return None
            value = found
        parts.append(f"{sql_string(name)}, {value}")
    return f"IF({ref} IS NULL, NULL, named_struct({', '.join(parts)}))"


@dataclass(frozen=True)
class AvroEnvelope:
    """The decode's envelope of ``table`` (``envelope.envelope_ddl``, no embedded schema)."""

    table: MirrorTable
    transactions: bool = False  # with the transaction block (the consistent tag)

    @property
    def ddl(self) -> str:
        """Its Spark type."""
        return f"STRUCT<{envelope_ddl(self.table, False, self.transactions)}>"

    def sql(self, plain: str, record: str) -> str | None:
        """The envelope as SQL over the column ``record``, read with the Avro schema
        ``plain`` (JSON text, logical types removed); None when a field the decode reads
        does not give the JSON text's value (module doc)."""
        schema = json.loads(plain)
        named: dict[str, Any] = {}
        _named(schema, named)
        top = _fields(schema, named)
        if top is None:
            return None
        columns = [
            (c.name, wire_type(parse_carrier(c.carrier)), c.iceberg) for c in self.table.columns
        ]
        source = [(n, t.lower(), "") for n, t in (f.split(" ", 1) for f in _split(self.table))]
        scalars = [("op", "string", ""), ("ts_ms", "bigint", "")]
        structs = [("before", columns), ("after", columns), ("source", source)]
        if self.transactions:
            structs.append(("transaction", _TRANSACTION))
        parts = []
        for name, wanted in structs:
            built = (
                _struct_sql(top[name], wanted, f"{record}.{name}", named) if name in top else "NULL"
            )
            if built is None:
                return None
            parts.append(f"'{name}', {built}")
        for name, wire, _ in scalars:
            value = "NULL"
            if name in top:
                found = _value_sql(top[name], wire, "", f"{record}.{name}", named)
                if found is None:
                    return None
                value = found
            parts.append(f"'{name}', {value}")
        parts.append(f"'{UNREADABLE}', CAST(NULL AS STRING)")
        return f"CAST(named_struct({', '.join(parts)}) AS {self.ddl})"


def _split(table: MirrorTable) -> list[str]:
    return [f.strip() for f in source_ddl(table).split(",")]
