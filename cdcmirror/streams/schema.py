"""The Iceberg columns of a stream's table: from a JSON Schema file, or inferred from
sampled events. Pure.

JSON Schema: ``integer`` -> long, ``number`` -> double, ``boolean`` -> boolean, ``string``
-> string (``format: date-time`` -> timestamptz, ``format: date`` -> date), an array of
those -> list of it; a nested object, an array of objects, or a field without a type ->
string (the value's JSON text). ``"type": ["string", "null"]`` counts as string. Every
column is optional: a missing field is NULL.

Inferred: the same types from the JSON values of the sample (an integer and a fraction in
one field make a double; text stays text: a timestamp in text is only a timestamp when a
schema says so). A field that is NULL in every sampled event is text.

The stream's own columns follow the event's: ``_kafka_topic``, ``_kafka_partition``,
``_kafka_offset``, ``_kafka_timestamp`` (the record's timestamp) and ``_ingested_at``
(when the mirror committed it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from cdcmirror.cdc_columns import IcebergColumn, name_problem
from cdcmirror.exceptions import ConfigError

KAFKA_COLUMNS = (
    IcebergColumn("_kafka_topic", "string", doc="Kafka topic of the event"),
    IcebergColumn("_kafka_partition", "int", doc="Kafka partition of the event"),
    IcebergColumn("_kafka_offset", "long", doc="Kafka offset of the event in its partition"),
    IcebergColumn("_kafka_timestamp", "timestamptz", doc="the Kafka record's timestamp"),
    IcebergColumn("_ingested_at", "timestamptz", doc="when the mirror committed the event"),
)
KAFKA_NAMES = tuple(c.name for c in KAFKA_COLUMNS)
_SCALARS = {"integer": "long", "number": "double", "boolean": "boolean", "string": "string"}


def _json_schema_type(node: Mapping[str, Any]) -> str:
    kind = node.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind == "string":
        return {"date-time": "timestamptz", "date": "date"}.get(str(node.get("format")), "string")
    if kind in _SCALARS:
        return _SCALARS[str(kind)]
    if kind == "array":
        items = node.get("items")
        inner = _json_schema_type(items) if isinstance(items, Mapping) else "string"
        return f"list<{inner}>" if not inner.startswith("list<") and inner != "json" else "string"
    return "string"  # an object, or no type: the value's JSON text


def columns_of_json_schema(text: str, where: str) -> list[IcebergColumn]:
    """The columns of a JSON Schema document (an object's properties, in order).

    >>> doc = '{"type": "object", "properties": {"ts": {"type": "string", "format": '
    >>> doc += '"date-time"}, "n": {"type": ["integer", "null"]}, "tags": {"type": "array",'
    >>> doc += ' "items": {"type": "string"}}, "ctx": {"type": "object"}}}'
    >>> [(c.name, c.type) for c in columns_of_json_schema(doc, "s")]
    [('ts', 'timestamptz'), ('n', 'long'), ('tags', 'list<string>'), ('ctx', 'string')]
    """
    doc = _json_object(text, f"{where}: the schema file")
    properties = doc.get("properties")
    if doc.get("type") != "object" or not isinstance(properties, dict) or not properties:
        raise ConfigError(
            f'{where}: the JSON Schema must describe an object: {{"type": "object", '
            '"properties": {...}} with at least one property'
        )
    out = []
    for name, node in properties.items():
        _check_name(name, where)
        kind = _json_schema_type(node) if isinstance(node, dict) else "string"
        out.append(IcebergColumn(name, kind, doc=str(node.get("description") or "") or None))
    return out


def _value_type(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        kinds = {_value_type(v) for v in value} - {None}
        if len(kinds) == 1 and not any(k.startswith("list<") for k in kinds if k):
            (inner,) = kinds
            return f"list<{inner}>" if inner and inner != "json" else "json"
        return "json" if kinds else None
    return "json"  # an object


def merge_types(a: str | None, b: str | None) -> str | None:
    """One type for two values of a field.

    >>> merge_types("long", "double"), merge_types(None, "boolean"), merge_types("long", "string")
    ('double', 'boolean', 'string')
    """
    if a is None or a == b:
        return b
    if b is None:
        return a
    if {a, b} == {"long", "double"}:
        return "double"
    if a.startswith("list<") and b.startswith("list<"):
        inner = merge_types(a[5:-1], b[5:-1])
        return f"list<{inner}>" if inner else "string"
    return "string"


def infer_columns(events: Iterable[Any], where: str) -> list[IcebergColumn]:
    """Columns from sampled events (JSON objects), in the order fields first appear.

    >>> sample = [{"n": 1, "tag": "a"}, {"n": 2.5, "tag": None, "ok": True, "xs": [1]}]
    >>> [(c.name, c.type) for c in infer_columns(sample, "s")]
    [('n', 'double'), ('tag', 'string'), ('ok', 'boolean'), ('xs', 'list<long>')]
    """
    kinds: dict[str, str | None] = {}
    seen = 0
    for event in events:
        if not isinstance(event, dict):
            continue
        seen += 1
        for name, value in event.items():
            kinds[name] = merge_types(kinds.get(name), _value_type(value))
    if not seen:
        raise ConfigError(
            f"{where}: no JSON object in the sampled events to infer a schema from; produce "
            "some first, or give a JSON Schema file"
        )
    out = []
    for name, kind in kinds.items():
        _check_name(name, where)
        out.append(IcebergColumn(name, "string" if kind in (None, "json") else kind))
    return out


def _check_name(name: str, where: str) -> None:
    problem = name_problem(name)
    if name in KAFKA_NAMES or problem:
        raise ConfigError(
            f"{where}: the event field {name!r} "
            f"{problem or 'has the name of a column cdcmirror adds'}; rename it in the events"
        )


# Avro's primitive (and enum, fixed) types as Iceberg types
AVRO_PRIMITIVES = {
    "boolean": "boolean",
    "int": "int",
    "long": "long",
    "float": "float",
    "double": "double",
    "string": "string",
    "enum": "string",
    "bytes": "binary",
    "fixed": "binary",
}


def _avro_type(node: Any) -> str:
    if isinstance(node, list):  # a union: ["null", T] is an optional T
        kinds = [k for k in node if k != "null"]
        return _avro_type(kinds[0]) if len(kinds) == 1 else "string"
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "array":
            inner = _avro_type(node.get("items"))
            return f"list<{inner}>" if inner in AVRO_PRIMITIVES.values() else "string"
        if kind in ("record", "map"):
            return "string"
        return _avro_type(kind)
    return AVRO_PRIMITIVES.get(str(node), "string")


def columns_of_avro(text: str, where: str) -> list[IcebergColumn]:
    """The columns of an Avro record schema (a registry subject's). A logical type is its
    Avro type (``timestamp-millis``: long milliseconds, as written); a nested record or a
    map is its JSON text.

    >>> doc = '{"type": "record", "name": "c", "fields": [{"name": "n", "type": "int"}, '
    >>> doc += '{"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},'
    >>> doc += '{"name": "tag", "type": ["null", "string"]}]}'
    >>> [(c.name, c.type) for c in columns_of_avro(doc, "s")]
    [('n', 'int'), ('at', 'long'), ('tag', 'string')]
    """
    doc = _json_object(text, f"{where}: the registry's schema")
    fields = doc.get("fields")
    if doc.get("type") != "record" or not isinstance(fields, list) or not fields:
        raise ConfigError(f"{where}: the registry's schema is not an Avro record with fields")
    out = []
    for f in fields:
        _check_name(str(f["name"]), where)
        out.append(IcebergColumn(str(f["name"]), _avro_type(f.get("type")), doc=f.get("doc")))
    return out


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{what} is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{what} is not a JSON object")
    return doc
