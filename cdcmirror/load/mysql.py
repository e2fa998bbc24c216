"""MySQL and MariaDB columns read by the initial load (``load/columns.py``). Pure.

What Debezium writes, and so what the load must produce: integers as numbers (``tinyint(1)``
as a boolean only for 0 and 1: another number does not convert, as in the stream); ``bit(n)``
as little-endian bytes of ``ceil(n/8)``; dates, times and date-times as counts on the
proleptic calendar (``DATEDIFF``, ``TIME_TO_SEC``, ``TIMESTAMPDIFF``: no time zone enters);
``timestamp`` read with the session in UTC; geometries as their WKB (``ST_AsBinary``).
MariaDB's JSON is text as stored. MySQL's own JSON type is refused: Debezium prints it from
the binlog's binary form, which this load has no way to reproduce and this project's tests
(MariaDB only) have not compared.
"""

from __future__ import annotations

from cdcmirror import dialects
from cdcmirror.iceberg_types import spark_type
from cdcmirror.load.columns import (
    LoadColumn,
    bits_from_unsigned,
    unsupported,
)
from cdcmirror.source_model import SourceType
from cdcmirror.typemap import MYSQL_GEOMETRIES, UNKNOWN_CARRIER

_EPOCH = "'1970-01-01 00:00:00'"


def load_column(
    where: str, name: str, alias: str, t: SourceType, iceberg: str, carrier: str
) -> LoadColumn:
    """How the load reads ``name`` (``where`` names it in errors).

    >>> t = SourceType("tinyint", "tinyint(1)", length=1)
    >>> load_column("d.t.c", "c", "c0", t, "boolean", "int16").convert
    'CASE c0 WHEN 0 THEN false WHEN 1 THEN true END'
    """
    c = dialects.of("mysql").quote(name)
    select, convert = _read(where, c, alias, t, iceberg, carrier)
    return LoadColumn(name, alias, f"{select} AS {alias}", convert)


def _read(where: str, c: str, a: str, t: SourceType, iceberg: str, carrier: str) -> tuple[str, str]:
    n = t.name
    if carrier == UNKNOWN_CARRIER and iceberg == "string":
        return f"CAST({c} AS CHAR)", a
    if n == "json":
        raise unsupported(where, t, "Debezium prints MySQL's JSON from its binary form")
    if n == "bit":
        if iceberg == "boolean":
            return f"CAST({c} AS UNSIGNED)", f"CAST({a} AS BOOLEAN)"
        return f"CAST({c} AS UNSIGNED)", bits_from_unsigned(a, int(t.length or 1))
    if n == "time":  # microseconds, -838:59:59 to 838:59:59
        return f"CAST(TIME_TO_SEC({c}) * 1000000 AS SIGNED)", f"CAST({a} AS BIGINT)"
    if iceberg == "boolean":  # tinyint(1)
        return f"CAST({c} AS SIGNED)", f"CASE {a} WHEN 0 THEN false WHEN 1 THEN true END"
    if iceberg in ("int", "long"):
        return f"CAST({c} AS SIGNED)", f"CAST({a} AS {spark_type(iceberg)})"
    if iceberg.startswith("decimal("):
        return f"CAST({c} AS DECIMAL{iceberg[7:]})", f"CAST({a} AS {spark_type(iceberg)})"
    if iceberg in ("float", "double"):
        return c, f"CAST({a} AS {spark_type(iceberg)})"
    if n == "date":
        return f"DATEDIFF({c}, '1970-01-01')", f"date_from_unix_date(CAST({a} AS INT))"
    if n == "datetime":
        micros = f"TIMESTAMPDIFF(MICROSECOND, {_EPOCH}, {c})"
        return micros, f"CAST(timestamp_micros({a}) AS TIMESTAMP_NTZ)"
    if n == "timestamp":
        return f"TIMESTAMPDIFF(MICROSECOND, {_EPOCH}, {c})", f"timestamp_micros({a})"
    if n == "point" or n in MYSQL_GEOMETRIES:
        return f"ST_AsBinary({c})", a
    if iceberg == "binary":
        return c, a
    if iceberg == "string":
        # char: as text, or Spark pads the CHAR(n) it reads with blanks MySQL strips
        if n in ("char", "decimal", "enum", "set", "uuid"):
            return f"CAST({c} AS CHAR)", a
        return c, a
    raise unsupported(where, t, f"no reading for Iceberg type {iceberg}")
