"""How each Debezium carrier is read from a JSON event and turned into its Iceberg type. Pure.

A carrier is the field schema of the Debezium event (``int64 io.debezium.time.MicroTime``,
see ``cdcmirror/typemap.py``). A fixed-scale Decimal carrier records its scale
(``bytes org.apache.kafka.connect.data.Decimal(3)``). For every column this module gives:

- ``wire_type``: the Spark type ``from_json`` reads the JSON value as (bytes are base64 text);
- ``convert_sql``: the Spark SQL expression from that value to the Iceberg type, built from
  Spark's own functions. Only decimals wider than Iceberg's 38 digits and PostgreSQL's
  unbounded ``numeric`` (VariableScaleDecimal) need a Python function (``DECIMAL_TEXT_UDF``).
- ``carrier_of_field`` / ``iceberg_of_carrier``: the carrier and Iceberg type of a field
  named in an event's own schema, for columns that appear after bootstrap.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

DECIMAL_NAME = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE = "io.debezium.data.VariableScaleDecimal"
GEOMETRY_PREFIX = "io.debezium.data.geometry."
# Kafka Connect's own logical types: what Debezium sends with time.precision.mode = connect
CONNECT_DATE = "org.apache.kafka.connect.data.Date"  # int32 days
CONNECT_TIME = "org.apache.kafka.connect.data.Time"  # int32 milliseconds of the day
CONNECT_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"  # int64 epoch milliseconds
DECIMAL_TEXT_UDF = "cdcmirror_decimal_text"
MAX_EXPR_DECIMAL_BYTES = 16  # two's complement of any 38-digit unscaled value fits

_DECIMAL_CARRIER = re.compile(r"^bytes org\.apache\.kafka\.connect\.data\.Decimal\((\d+)\)$")
_ICEBERG_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")
_INT_KINDS = ("int8", "int16", "int32", "int64")


class CarrierError(ValueError):
    """A carrier/Iceberg type pair the decoder does not know how to convert."""


@dataclass(frozen=True)
class Carrier:
    kind: str  # Kafka Connect type: int16, string, bytes, struct, array, map, ...
    name: str  # semantic schema name, "" when none
    scale: int | None = None  # fixed-scale Decimal only
    element: Carrier | None = None  # arrays

    @property
    def is_decimal(self) -> bool:
        return self.name == DECIMAL_NAME


def parse_carrier(text: str) -> Carrier:
    """
    >>> parse_carrier("bytes org.apache.kafka.connect.data.Decimal(2)").scale
    2
    >>> parse_carrier("array<int32>").element
    Carrier(kind='int32', name='', scale=None, element=None)
    """
    text = text.strip()
    if text.startswith("array<") and text.endswith(">"):
        return Carrier("array", "", element=parse_carrier(text[6:-1]))
    if text.startswith("map<"):
        return Carrier("map", "")
    match = _DECIMAL_CARRIER.match(text)
    if match:
        return Carrier("bytes", DECIMAL_NAME, int(match[1]))
    kind, _, name = text.partition(" ")
    return Carrier(kind, name)


def wire_type(carrier: Carrier) -> str:
    """The Spark DDL type ``from_json`` reads this carrier's JSON value as."""
    if carrier.kind in _INT_KINDS:
        return "bigint"
    if carrier.kind in ("float32", "float64", "float", "double"):
        return "double"
    if carrier.kind == "boolean":
        return "boolean"
    if carrier.kind in ("string", "bytes"):
        return "string"
    if carrier.kind == "array" and carrier.element is not None:
        return f"array<{wire_type(carrier.element)}>"
    if carrier.kind == "map":
        return "map<string,string>"
    if carrier.name == VARIABLE_SCALE:
        return "struct<scale:int,value:string>"
    if carrier.name.startswith(GEOMETRY_PREFIX):
        return "struct<wkb:string,srid:int>"
    raise CarrierError(f"no JSON reading for carrier {carrier}")


def base64_sql(w: str) -> str:
    """Base64 text -> bytes; NULL (so: a dead letter) when it is not base64. Spark's
    ``unbase64`` would give empty bytes, i.e. a wrong value (0 for a decimal)."""
    return f"try_to_binary({w}, 'base64')"


def _decimal_expr(w: str, precision: int, scale: int) -> str:
    """Base64 big-endian two's complement unscaled bytes -> decimal(p,s), in Spark SQL.

    The bytes (1 to 16: no bytes is no number) are sign-extended to 32 hex digits. A negative
    value is turned into its magnitude (invert the digits, add one) so every partial sum
    stays within the value itself: ``hi * 2^64 + lo`` with both halves unsigned (``conv``),
    exact in 38 digits. Up to 8 bytes are read as one signed 64-bit number instead (a
    signed ``conv``: about half the work); more bytes take the long way.
    """
    b = base64_sql(w)
    neg = f"(substr(hex({b}), 1, 1) >= '8')"
    h = f"lpad(hex({b}), 32, IF({neg}, 'F', '0'))"
    m = f"IF({neg}, translate({h}, '0123456789ABCDEF', 'FEDCBA9876543210'), {h})"
    hi = f"CAST(conv(substr({m}, 1, 16), 16, 10) AS DECIMAL(38,0))"
    lo = f"CAST(conv(substr({m}, 17, 16), 16, 10) AS DECIMAL(38,0))"
    magnitude = f"({hi} * 18446744073709551616BD + {lo} + IF({neg}, 1, 0))"
    text = f"concat(IF({neg}, '-', ''), CAST({magnitude} AS STRING), 'E-{scale}')"
    wide = (
        f"IF(length({b}) NOT BETWEEN 1 AND {MAX_EXPR_DECIMAL_BYTES}, NULL, "
        f"CAST({text} AS DECIMAL({precision},{scale})))"
    )
    # 1 to 8 bytes (every value of up to 18 digits) are a 64-bit two's complement number
    signed = f"conv(lpad(hex({b}), 16, IF({neg}, 'F', '0')), 16, -10)"
    narrow = f"CAST(concat({signed}, 'E-{scale}') AS DECIMAL({precision},{scale}))"
    return f"IF(length({b}) BETWEEN 1 AND 8, {narrow}, {wide})"


GREGORIAN_START_MICROS = -12219292800000000  # 1582-10-15T00:00:00Z
DAY_MICROS = 86400000000


def _proleptic_micros(x: str) -> str:
    """Debezium writes local date-times before 1582-10-15 on the Julian calendar (through
    ``java.sql.Timestamp``); Iceberg and Spark use the proleptic Gregorian one. Read the
    Julian calendar fields back (Julian day number arithmetic) and rebuild the instant."""
    days = f"div({x} - pmod({x}, {DAY_MICROS}), {DAY_MICROS})"
    c = f"({days} + 2440588 + 32082)"
    d = f"div(4 * {c} + 3, 1461)"
    e = f"({c} - div(1461 * {d}, 4))"
    m = f"div(5 * {e} + 2, 153)"
    day = f"({e} - div(153 * {m} + 2, 5) + 1)"
    month = f"({m} + 3 - 12 * div({m}, 10))"
    year = f"({d} - 4800 + div({m}, 10))"
    rebuilt = (
        f"unix_date(make_date(CAST({year} AS INT), CAST({month} AS INT), CAST({day} AS INT))) "
        f"* {DAY_MICROS} + pmod({x}, {DAY_MICROS})"
    )
    return f"IF({x} >= {GREGORIAN_START_MICROS}, {x}, {rebuilt})"


FLOAT_PAST = "3.4028235677973366E38"
"""2^128 - 2^103, half a float's step past the largest float: the least double that the cast
to float makes infinite. The JSON converter writes ``Float.MAX_VALUE`` as its shortest text,
3.4028235E38, which read as a double lies past the largest float and is still that float."""


def convert_sql(w: str, carrier: Carrier, iceberg: str, julian: str = "false") -> str:
    """Spark SQL turning the wire value ``w`` of ``carrier`` into the Iceberg type.

    ``julian`` is a SQL condition under which date-times before 1582-10-15 arrive on the
    Julian calendar: Debezium's PostgreSQL snapshot reads them through JDBC's
    ``java.sql.Timestamp``, while streamed changes carry proleptic Gregorian values.
    """
    k, n = carrier.kind, carrier.name
    if iceberg.startswith("list<") and carrier.kind == "array" and carrier.element:
        inner = convert_sql("x", carrier.element, iceberg[5:-1], julian)
        return f"transform({w}, x -> {inner})"
    if iceberg.startswith("map<") and k == "map":
        return w
    by_rule = _number_sql(w, carrier, iceberg) or _text_sql(w, carrier, iceberg)
    if by_rule:
        return by_rule
    match = _ICEBERG_DECIMAL.match(iceberg)
    if match and carrier.is_decimal:
        return _decimal_expr(w, int(match[1]), int(match[2]))
    if iceberg == "date" and n in ("io.debezium.time.Date", CONNECT_DATE):
        return f"date_from_unix_date(try_cast({w} AS INT))"
    if iceberg == "timestamp":
        micros = {
            "io.debezium.time.Timestamp": f"try_multiply({w}, 1000)",
            CONNECT_TIMESTAMP: f"try_multiply({w}, 1000)",
            "io.debezium.time.MicroTimestamp": w,
            "io.debezium.time.NanoTimestamp": f"div({w}, 1000)",
        }.get(n)
        if micros is not None:
            fixed = f"IF({julian}, {_proleptic_micros(micros)}, {micros})"
            return f"CAST(timestamp_micros({fixed}) AS TIMESTAMP_NTZ)"
    if iceberg == "timestamptz" and n == "io.debezium.time.ZonedTimestamp":
        micros = f"unix_micros(CAST({w} AS TIMESTAMP))"
        return f"timestamp_micros(IF({julian}, {_proleptic_micros(micros)}, {micros}))"
    if iceberg == "binary":
        if n.startswith(GEOMETRY_PREFIX):
            return base64_sql(f"{w}.wkb")
        if k == "bytes":
            return base64_sql(w)
    raise CarrierError(f"cannot convert carrier {_text(carrier)} to Iceberg {iceberg}")


def _number_sql(w: str, carrier: Carrier, iceberg: str) -> str | None:
    """Integers, floating point and booleans; None when no rule of theirs applies."""
    k, n = carrier.kind, carrier.name
    if iceberg in ("int", "long"):
        target = "INT" if iceberg == "int" else "BIGINT"
        # out of range: NULL (so a dead letter), never a wrapped number (ANSI mode is off)
        if n in ("io.debezium.time.Time", CONNECT_TIME):  # milliseconds
            return f"try_cast(try_multiply({w}, 1000) AS {target})"
        if n == "io.debezium.time.NanoTime":
            return f"try_cast(div({w}, 1000) AS {target})"
        if k in _INT_KINDS:  # out of range: NULL, so a dead letter, never a wrapped number
            return f"try_cast({w} AS {target})"
    if iceberg in ("float", "double") and k in ("float32", "float64", "float", "double"):
        if iceberg == "float":  # a finite double past float's range is no float value
            past = f"(NOT isnan({w}) AND abs({w}) >= {FLOAT_PAST} AND abs({w}) < double('inf'))"
            return f"IF({past}, NULL, CAST({w} AS FLOAT))"
        return f"CAST({w} AS DOUBLE)"
    if iceberg == "boolean":
        if k == "boolean":
            return w
        if k in _INT_KINDS:  # MySQL tinyint(1); another number does not convert (dead letter)
            return f"CASE {w} WHEN 0 THEN false WHEN 1 THEN true END"
    return None


def _text_sql(w: str, carrier: Carrier, iceberg: str) -> str | None:
    """An Iceberg string: decimals as exact text, unknown types' bytes, strings as they are."""
    k, n = carrier.kind, carrier.name
    if iceberg == "string":
        if carrier.is_decimal:
            return f"{DECIMAL_TEXT_UDF}({w}, {carrier.scale or 0})"
        if n == VARIABLE_SCALE:
            return f"{DECIMAL_TEXT_UDF}({w}.value, {w}.scale)"
        if k == "bytes":  # include.unknown.datatypes: the value's text as bytes
            return f"CAST({base64_sql(w)} AS STRING)"
        if k == "string":
            return w
    return None


def _text(carrier: Carrier) -> str:
    if carrier.kind == "array" and carrier.element:
        return f"array<{_text(carrier.element)}>"
    base = f"{carrier.kind} {carrier.name}".strip()
    return f"{base}({carrier.scale})" if carrier.scale is not None else base


def carrier_of_field(field: dict[str, Any]) -> str:
    """The carrier text of a Kafka Connect JSON field schema (an event's embedded schema)."""
    kind = str(field.get("type"))
    if kind == "array":
        return f"array<{carrier_of_field(field.get('items') or {})}>"
    if kind == "map":
        return "map<string,string>"
    name = field.get("name") or ""
    if name == DECIMAL_NAME:
        scale = (field.get("parameters") or {}).get("scale", "0")
        return f"bytes {DECIMAL_NAME}({int(scale)})"
    return f"{kind} {name}".strip()


def iceberg_of_field(field: dict[str, Any]) -> str | None:
    """The Iceberg type for a new column known only from the event schema; None if unknown.

    Decimal precision comes from ``connect.decimal.precision`` (Debezium sets it).
    """
    carrier = parse_carrier(carrier_of_field(field))
    return _iceberg_of(carrier, field)


_BY_NAME = {
    "io.debezium.time.Date": "date",
    "io.debezium.time.Time": "long",
    "io.debezium.time.MicroTime": "long",
    "io.debezium.time.NanoTime": "long",
    "io.debezium.time.Timestamp": "timestamp",
    "io.debezium.time.MicroTimestamp": "timestamp",
    "io.debezium.time.NanoTimestamp": "timestamp",
    "io.debezium.time.ZonedTimestamp": "timestamptz",
    "io.debezium.time.Year": "int",
    CONNECT_DATE: "date",
    CONNECT_TIME: "long",
    CONNECT_TIMESTAMP: "timestamp",
    "io.debezium.data.Bits": "binary",
    VARIABLE_SCALE: "string",
}
_BY_KIND = {
    "int8": "int",
    "int16": "int",
    "int32": "int",
    "int64": "long",
    "float": "float",
    "float32": "float",
    "double": "double",
    "float64": "double",
    "boolean": "boolean",
    "string": "string",
    "bytes": "binary",
}


def _iceberg_of(carrier: Carrier, field: dict[str, Any]) -> str | None:
    if carrier.kind == "array":
        items = field.get("items") or {}
        inner = _iceberg_of(parse_carrier(carrier_of_field(items)), items)
        return f"list<{inner}>" if inner else None
    if carrier.kind == "map":
        return "map<string,string>"
    if carrier.is_decimal:
        params = field.get("parameters") or {}
        precision = int(params.get("connect.decimal.precision", 0) or 0)
        scale = carrier.scale or 0
        if 0 < precision <= 38:
            return f"decimal({precision},{scale})"
        return "string"
    if carrier.name in _BY_NAME:
        return _BY_NAME[carrier.name]
    if carrier.name.startswith(GEOMETRY_PREFIX):
        return "binary"
    return _BY_KIND.get(carrier.kind)


def decimal_text(value: str | None, scale: int | None) -> str | None:
    """Exact decimal text of base64 unscaled two's complement bytes (the Python fallback).

    >>> decimal_text(base64.b64encode((-12345).to_bytes(2, "big", signed=True)).decode(), 3)
    '-12.345'
    >>> decimal_text("QUJD=====", 0) is None  # Python's decoder takes the extra padding
    True
    """
    if value is None or scale is None:
        return None
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None  # not base64: the event is dead-lettered, never read as 0
    if not raw or base64.b64encode(raw).decode() != value:
        return None  # empty, or not the one base64 text of its bytes (e.g. extra padding)
    unscaled = int.from_bytes(raw, "big", signed=True)
    digits = str(abs(unscaled))
    if scale > 0:
        digits = digits.rjust(scale + 1, "0")
        digits = f"{digits[:-scale]}.{digits[-scale:]}"
    elif scale < 0:
        digits += "0" * -scale
    return f"-{digits}" if unscaled < 0 else digits
