"""Avro in the Confluent wire format, turned into what the JSON converter would have written.

A Kafka value is a magic byte 0, a 4-byte big-endian schema id, then the Avro body written
with that schema (the registry keeps it). The decoder reads the body with fastavro and writes
the Debezium envelope as JSON text exactly as Kafka Connect's JSON converter without schemas
does (bytes as base64, Decimal as the base64 of its unscaled two's complement, Debezium's
logical types as their plain numbers and strings), so that one decoder (``envelope.py``) in
Spark SQL serves every format. The Avro schema itself is turned into a Connect field schema,
so that schema evolution reads it like the JSON converter's embedded schema.

Pure: the registry lookups are in ``registry.py``.
"""

from __future__ import annotations

import base64
import io
import json
import struct
from typing import Any

MAGIC = 0
HEADER = 5


class AvroDecodeError(ValueError):
    """A value that is not Avro in the Confluent wire format, or does not fit its schema."""


def schema_id(value: bytes | None) -> int | None:
    """The schema id of a Confluent-framed value; None for a tombstone or another format.

    >>> schema_id(bytes([0, 0, 0, 1, 2]) + b"body")
    258
    >>> schema_id(b'{"op": "c"}') is None
    True
    """
    if value is None or len(value) < HEADER or value[0] != MAGIC:
        return None
    return int(struct.unpack(">I", value[1:HEADER])[0])


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


def _json_ready(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_ready(v) for v in value]
    return value


class Decoder:
    """Decodes framed values against parsed schemas (schema id -> Avro schema JSON)."""

    def __init__(self, schemas: dict[int, str]) -> None:
        from fastavro import parse_schema

        self._parsed: dict[int, Any] = {}
        self._problems: dict[int, str] = {}
        for sid, text in schemas.items():
            try:
                self._parsed[sid] = parse_schema(plain_schema(json.loads(text)))
            except Exception as exc:  # a bad schema dead-letters its events
                self._problems[sid] = f"schema id {sid} is not a usable Avro schema: {exc}"

    def decode(self, value: bytes) -> str:
        """The envelope as JSON text (the JSON converter's shape, without schema)."""
        from fastavro import schemaless_reader

        sid = schema_id(value)
        if sid is None:
            raise AvroDecodeError(
                "not Avro in the Confluent wire format (no magic byte 0 and schema id)"
            )
        if sid in self._problems:
            raise AvroDecodeError(self._problems[sid])
        parsed = self._parsed.get(sid)
        if parsed is None:
            raise AvroDecodeError(f"schema id {sid} is not in the schema registry")
        body = io.BytesIO(value[HEADER:])
        try:
            record = schemaless_reader(body, parsed, None)
        except Exception as exc:  # fastavro raises many kinds
            raise AvroDecodeError(
                f"the Avro body does not match schema id {sid}: {type(exc).__name__}: {exc}"
            ) from exc
        if body.tell() != len(value) - HEADER:
            raise AvroDecodeError(
                f"the Avro body is longer than schema id {sid} reads "
                f"({len(value) - HEADER - body.tell()} bytes left over)"
            )
        return json.dumps(_json_ready(record), separators=(",", ":"))


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


def decode_function(schemas: dict[int, str]) -> Any:
    """A function value -> (JSON text, error) for a Spark UDF; the schemas travel with it and
    are parsed once per Python worker."""
    state: dict[str, Decoder] = {}

    def decode(value: bytes | bytearray | None) -> tuple[str | None, str | None]:
        if value is None:
            return None, None
        decoder = state.get("decoder")
        if decoder is None:
            decoder = state["decoder"] = Decoder(schemas)
        try:
            return decoder.decode(bytes(value)), None
        except AvroDecodeError as exc:
            return None, f"Avro: {exc}"

    return decode


# The schema id of a Confluent-framed Kafka value, in Spark SQL (NULL when not framed).
SCHEMA_ID_SQL = (
    "IF(length(value) >= 5 AND substring(value, 1, 1) = X'00', "
    "CAST(conv(hex(substring(value, 2, 4)), 16, 10) AS BIGINT), NULL)"
)
