"""Avro in the Confluent wire format, read as what the JSON converter would have written.

A Kafka value is a magic byte 0, a 4-byte big-endian schema id, then the Avro body written
with that schema (the registry keeps it). Spark's own Avro reader reads the body with the
schema's logical types removed (``plain_schema``) and writes the Debezium envelope as JSON
text the way Kafka Connect's JSON converter without schemas does (bytes as base64, Decimal
as the base64 of its unscaled two's complement, Debezium's logical types as their plain
numbers and strings), so that one decoder (``envelope.py``) in Spark SQL serves every
format; ``spark/avro_frames.py`` runs it. The Avro schema itself is turned into a Connect
field schema, so that schema evolution reads it like the JSON converter's embedded schema.

Pure: the registry's client (``clients/registry.py``) is what a batch is given as its
``WriterSchemas``.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

HEADER = 5  # magic byte 0, then the schema id as 4 big-endian bytes


class WriterSchemas(Protocol):
    """Where a batch finds the writer schemas its Avro records name by id."""

    def schemas(self, ids: list[int]) -> dict[int, str]:
        """The schema text of each id known; an unknown id is left out (its events are dead
        letters)."""
        ...

    def latest_id(self, subject: str) -> int | None:
        """The id of ``subject``'s newest schema; None when there is none."""
        ...


# a string read from an Avro body that is not UTF-8 (Spark's reader does not check them)
NOT_UTF8 = "a string value is not UTF-8 text"


class AvroDecodeError(ValueError):
    """A value that is not Avro in the Confluent wire format, or does not fit its schema."""


def plain_schema(schema: Any) -> Any:
    """The Avro schema without ``logicalType``: values are read as written (a Decimal's bytes,
    a date's int), which is what the JSON converter carries.

    >>> plain_schema({"type": "bytes", "logicalType": "decimal", "scale": 2})
    {'type': 'bytes', 'scale': 2}
    """
    if isinstance(schema, list):
        return [plain_schema(s) for s in schema]
    if isinstance(schema, dict):
        return {k: plain_schema(v) for k, v in schema.items() if k != "logicalType"}
    return schema


# -- the Avro schema as a Kafka Connect field schema (what schema evolution reads) -------

_PRIMITIVES = {
    "long": "int64",
    "int": "int32",
    "string": "string",
    "bytes": "bytes",
    "fixed": "bytes",
    "boolean": "boolean",
    "float": "float",
    "double": "double",
    "enum": "string",
}


def connect_schema(schema: Any) -> dict[str, Any]:
    """The Connect JSON schema of an Avro schema, as the JSON converter would embed it.

    Names and parameters come from the converter's ``connect.name``, ``connect.parameters``
    and ``connect.type`` annotations; a ``["null", T]`` union is an optional T.

    >>> date = {"type": "int", "connect.name": "io.debezium.time.Date"}
    >>> row = {"type": "record", "name": "V", "namespace": "t", "fields": [
    ...     {"name": "id", "type": "long"}, {"name": "d", "type": ["null", date]}]}
    >>> s = connect_schema({"type": "record", "name": "E", "namespace": "t", "fields": [
    ...     {"name": "before", "type": ["null", row]}, {"name": "after", "type": ["null", "V"]}]})
    >>> [(f["field"], f["type"], f.get("name"), f["optional"]) for f in s["fields"][1]["fields"]]
    [('id', 'int64', None, False), ('d', 'int32', 'io.debezium.time.Date', True)]
    """
    return _connect(schema, {}, "")


def _full_name(schema: dict[str, Any], namespace: str) -> tuple[str, str]:
    name = str(schema.get("name", ""))
    ns = str(schema.get("namespace", namespace))
    if "." in name:
        return name, name.rsplit(".", 1)[0]
    return (f"{ns}.{name}" if ns else name), ns


def _connect(schema: Any, named: dict[str, Any], namespace: str) -> dict[str, Any]:
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) != 1:
            raise AvroDecodeError(f"union {schema!r} is not an optional value")
        return {**_connect(branches[0], named, namespace), "optional": "null" in schema}
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return {"type": _PRIMITIVES[schema], "optional": False}
        full = schema if "." in schema else (f"{namespace}.{schema}" if namespace else schema)
        target = named.get(full, named.get(schema))
        if target is None:
            raise AvroDecodeError(f"the Avro schema names an undefined type {schema!r}")
        return _connect(target, named, namespace)
    kind = schema.get("type")
    if isinstance(kind, (dict, list)):
        return _connect(kind, named, namespace)
    out: dict[str, Any]
    if kind == "record":
        full, ns = _full_name(schema, namespace)
        named[full] = named[str(schema["name"])] = schema
        fields = [{"field": f["name"], **_connect(f["type"], named, ns)} for f in schema["fields"]]
        out = {"type": "struct", "fields": fields, "optional": False}
    elif kind == "array":
        out = {"type": "array", "items": _connect(schema["items"], named, namespace)}
        out["optional"] = False
    elif kind == "map":
        out = {"type": "map", "keys": {"type": "string", "optional": False}}
        out["values"] = _connect(schema["values"], named, namespace)
        out["optional"] = False
    elif kind in ("enum", "fixed"):
        full, _ = _full_name(schema, namespace)
        named[full] = named[str(schema["name"])] = schema
        out = {"type": _PRIMITIVES[str(kind)], "optional": False}
    elif kind in _PRIMITIVES:
        out = {"type": _PRIMITIVES[str(kind)], "optional": False}
        connect_type = schema.get("connect.type")
        if connect_type in ("int8", "int16"):
            out["type"] = connect_type
    else:
        raise AvroDecodeError(f"unknown Avro type {kind!r}")
    if schema.get("connect.name"):
        out["name"] = schema["connect.name"]
    elif kind == "record":
        out["name"] = _full_name(schema, namespace)[0]
    if schema.get("connect.parameters"):
        out["parameters"] = dict(schema["connect.parameters"])
    if schema.get("connect.version") is not None:
        out["version"] = schema["connect.version"]
    return out


# The schema id of a Confluent-framed Kafka value, in Spark SQL (NULL when not framed).
SCHEMA_ID_SQL = (
    f"IF(length(value) >= {HEADER} AND substring(value, 1, 1) = X'00', "
    "CAST(conv(hex(substring(value, 2, 4)), 16, 10) AS BIGINT), NULL)"
)


def name_record(node: dict[str, Any], named: dict[str, Any]) -> None:
    """Adds the record ``node`` to ``named`` under its name and its full name (a schema may
    refer to it by either)."""
    name = str(node.get("name"))
    named[name] = named[name.rsplit(".", 1)[-1]] = node
    if node.get("namespace") and "." not in name:
        named[f"{node['namespace']}.{name}"] = node


def named_type(name: str, named: dict[str, Any]) -> Any:
    """The record ``name`` refers to (by its name or full name), None when not named yet.

    >>> named = {}
    >>> name_record({"type": "record", "name": "P", "namespace": "a.b", "fields": []}, named)
    >>> named_type("a.b.P", named) is named_type("P", named) is named["P"]
    True
    """
    return named.get(name, named.get(name.rsplit(".", 1)[-1]))


def holds_strings(node: Any, named: dict[str, Any]) -> bool:
    """Whether a value of the Avro schema ``node`` can hold a string anywhere: a string, a
    map (its keys are), or a record, array or union member that does (``named``: the
    records named so far; not changed).

    >>> holds_strings("long", {}), holds_strings(["null", "string"], {})
    (False, True)
    >>> holds_strings({"type": "array", "items": {"type": "map", "values": "int"}}, {})
    True
    >>> point = {"type": "record", "name": "P", "fields": [{"name": "x", "type": "int"}]}
    >>> holds_strings(point, {}), holds_strings({"type": "array", "items": "P"}, {"P": point})
    (False, False)
    >>> text = {"type": "record", "name": "T", "namespace": "n", "fields": [
    ...     {"name": "s", "type": "string"}]}
    >>> holds_strings(["null", text, {"type": "array", "items": "n.T"}], {})
    True
    """
    return _holds(node, dict(named))


def _holds(node: Any, named: dict[str, Any]) -> bool:
    if isinstance(node, list):
        return any(_holds(k, named) for k in node)
    if isinstance(node, str):
        target = named_type(node, named)
        return node == "string" or (target is not None and _holds(target, named))
    kind = node.get("type") if isinstance(node, dict) else None
    if kind == "record":
        name_record(node, named)
        return any(_holds(f["type"], named) for f in node.get("fields", []))
    if kind == "array":
        return _holds(node.get("items"), named)
    if kind == "map":
        return True
    return isinstance(kind, (str, list, dict)) and _holds(kind, named)


def record_fields(schema_text: str) -> list[str]:
    """The field names of a record schema (JSON text); empty for anything else.

    >>> record_fields('{"type": "record", "name": "E", "fields": [{"name": "op"}]}')
    ['op']
    >>> record_fields('"long"')
    []
    """
    schema = json.loads(schema_text)
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return []
    return [str(f["name"]) for f in schema.get("fields", []) if isinstance(f, dict)]


def avro_error_sql(
    readable: list[int],
    problems: dict[int, str],
    unread: str = "_cdc_json IS NULL",
    checks: tuple[tuple[str, str], ...] = (),
) -> str:
    """Spark SQL over a framed batch (``value``, ``_cdc_schema_id``, ``_cdc_json``): why a value
    could not be read, NULL when it was (or is a tombstone); ``unread``: the condition of
    a body its schema did not read; ``checks``: (condition, reason) of a value read.

    >>> avro_error_sql([1], {2: "schema id 2 is not a usable Avro schema: x"})[:38]
    'CASE WHEN value IS NULL THEN NULL WHEN'
    """

    def text(reason: str) -> str:
        return "'Avro: " + reason.replace("\\", "\\\\").replace("'", "\\'") + "'"

    cases = ["WHEN value IS NULL THEN NULL"]
    cases.append(
        "WHEN _cdc_schema_id IS NULL THEN "
        + text("not Avro in the Confluent wire format (no magic byte 0 and schema id)")
    )
    for sid, reason in sorted(problems.items()):
        cases.append(f"WHEN _cdc_schema_id = {sid} THEN {text(reason)}")
    known = ", ".join(str(sid) for sid in sorted(readable))
    unknown = f"_cdc_schema_id NOT IN ({known})" if known else "true"
    cases.append(
        f"WHEN {unknown} THEN concat('Avro: schema id ', _cdc_schema_id, "
        "' is not in the schema registry')"
    )
    cases.append(
        f"WHEN {unread} THEN concat('Avro: the Avro body does not match schema id ', "
        "_cdc_schema_id)"
    )
    cases += [f"WHEN {cond} THEN {text(reason)}" for cond, reason in checks]
    return f"CASE {' '.join(cases)} END"
