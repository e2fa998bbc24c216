"""PostgreSQL columns read by the initial load (``load/columns.py``). Pure.

What Debezium writes, and so what the load must produce (its PostgreSQL value converter):
text-like types as PostgreSQL prints them; ``char(n)`` blank-padded; times and timestamps as
microseconds on the proleptic Gregorian calendar (``EXTRACT(EPOCH ...)``); ``timetz`` as
ISO-8601 in UTC (``11:45:00Z``, fraction without trailing zeros); ``interval`` as
``P<y>Y<m>M<d>DT<h>H<m>M<s>S`` with every part written, seconds without trailing zeros
(``io.debezium.time.Interval``); ``bit(n)`` as little-endian bytes without high zero bytes;
``point`` as little-endian WKB; ``hstore`` as a map. Session: ``TimeZone`` UTC, so range
types over ``timestamptz`` print in UTC.
"""

from __future__ import annotations

from cdcmirror import dialects
from cdcmirror.iceberg_types import spark_type
from cdcmirror.load.columns import (
    LoadColumn,
    bits_from_text,
    unsupported,
    wkb_point,
)
from cdcmirror.source_model import SourceType
from cdcmirror.typemap import UNKNOWN_CARRIER

# element types whose JSON text (``array_to_json``) Spark's ``from_json`` reads exactly
_JSON_ELEMENTS = {
    "smallint",
    "integer",
    "bigint",
    "boolean",
    "numeric",
    "text",
    "character varying",
    "citext",
    "name",
    "uuid",
    "enum",
    "inet",
    "cidr",
    "macaddr",
    "macaddr8",
}


def _micros(c: str) -> str:
    return f"(EXTRACT(EPOCH FROM {c}) * 1000000)::bigint"


def interval_sql(c: str) -> str:
    """PostgreSQL: Debezium's text of an interval (``Interval.toIsoString`` of the parts
    PGInterval reads from the interval's text: months split into years and months, days,
    hours past 24 kept, seconds with their fraction).

    >>> interval_sql("c")[:40]
    "'P' || EXTRACT(YEAR FROM c)::bigint || '"
    """
    parts = [
        f"'P' || EXTRACT(YEAR FROM {c})::bigint",
        f"'Y' || EXTRACT(MONTH FROM {c})::bigint",
        f"'M' || EXTRACT(DAY FROM {c})::bigint",
        f"'DT' || EXTRACT(HOUR FROM {c})::bigint",
        f"'H' || EXTRACT(MINUTE FROM {c})::bigint",
        f"'M' || trim_scale(EXTRACT(SECOND FROM {c}))::text || 'S'",
    ]
    return " || ".join(parts)


def load_column(
    where: str, name: str, alias: str, t: SourceType, iceberg: str, carrier: str
) -> LoadColumn:
    """How the load reads ``name`` (``where`` names it in errors).

    >>> t = SourceType("timestamptz", "timestamp with time zone")
    >>> load_column("s.t.c", "c", "c0", t, "timestamptz", "").convert
    'timestamp_micros(c0)'
    """
    c = dialects.of("postgresql").quote(name)
    select, convert = _read(where, c, alias, t, iceberg, carrier)
    return LoadColumn(name, alias, f"{select} AS {alias}", convert)


def _read(where: str, c: str, a: str, t: SourceType, iceberg: str, carrier: str) -> tuple[str, str]:
    n = t.name
    if carrier == UNKNOWN_CARRIER and iceberg == "string":  # unknown_types: its text
        return f"{c}::text", a
    if n == "array":
        return _array(where, c, a, t, iceberg)
    if n == "time":  # microseconds since midnight (an Iceberg long)
        return _micros(c), a
    if iceberg in ("int", "long"):
        return f"{c}::bigint", f"CAST({a} AS {spark_type(iceberg)})"
    if iceberg == "boolean":
        return (f"({c} = B'1')" if n == "bit" else c), a
    if iceberg in ("float", "double"):
        return c, f"CAST({a} AS {spark_type(iceberg)})"
    if iceberg.startswith("decimal("):
        return f"{c}::numeric{iceberg[7:]}", f"CAST({a} AS {spark_type(iceberg)})"
    if iceberg.startswith("map<"):  # hstore, through its cast to json
        return f"{c}::json::text", f"from_json({a}, 'map<string,string>')"
    if iceberg == "date":
        return f"({c} - DATE '1970-01-01')", f"date_from_unix_date(CAST({a} AS INT))"
    if iceberg == "timestamp":
        return _micros(c), f"CAST(timestamp_micros({a}) AS TIMESTAMP_NTZ)"
    if iceberg == "timestamptz":
        return _micros(c), f"timestamp_micros({a})"
    if iceberg == "binary":
        return _binary(where, c, a, t)
    if iceberg == "string":
        return _text(c, t), a
    raise unsupported(where, t, f"no reading for Iceberg type {iceberg}")


def _text(c: str, t: SourceType) -> str:
    if t.name == "character" and t.length:  # blank-padded, as stored and as Debezium has it
        return f"rpad({c}::text, {int(t.length)})"
    if t.name == "numeric":  # VariableScaleDecimal: Debezium strips trailing zeros
        return f"trim_scale({c})::text" if t.precision is None else f"{c}::text"
    if t.name == "inet":  # its output, as streamed (inet::text adds the mask: /32)
        return f"CASE WHEN {c} IS NULL THEN NULL ELSE format('%s', {c}) END"
    if t.name == "timetz":
        return f"(({c} AT TIME ZONE 'UTC')::time)::text || 'Z'"
    if t.name == "interval":
        return interval_sql(c)
    return f"{c}::text"


def _binary(where: str, c: str, a: str, t: SourceType) -> tuple[str, str]:
    if t.name == "bytea":
        return c, a
    if t.name in ("bit", "bit varying"):
        return f"{c}::text", bits_from_text(a)
    if t.name == "point":
        hexed = f"encode(float8send({c}[0]), 'hex') || encode(float8send({c}[1]), 'hex')"
        return hexed, wkb_point(a)
    raise unsupported(where, t, "its WKB is not checked against Debezium's here")


def _array(where: str, c: str, a: str, t: SourceType, iceberg: str) -> tuple[str, str]:
    element = t.element
    if element is None or element.name not in _JSON_ELEMENTS or element.name == "character":
        raise unsupported(where, t, "only arrays of numbers, booleans and text are loaded")
    return f"array_to_json({c})::text", f"from_json({a}, '{spark_type(iceberg)}')"
