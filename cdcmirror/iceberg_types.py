"""Iceberg type text (``decimal(10,2)``, ``map<string,string>``): its normal form, the
type promotions Iceberg allows (schema evolution widens a column only along these), and
Spark's DDL for it. Pure."""

from __future__ import annotations

import re

_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")


def is_widening(old: str, new: str) -> bool:
    """Iceberg's allowed type promotions.

    >>> is_widening("int", "long"), is_widening("decimal(10,2)", "decimal(12,2)")
    (True, True)
    >>> is_widening("long", "int"), is_widening("decimal(10,2)", "decimal(12,3)")
    (False, False)
    """
    if (old, new) in (("int", "long"), ("float", "double")):
        return True
    a, b = _DECIMAL.match(old), _DECIMAL.match(new)
    return bool(a and b and a[2] == b[2] and int(b[1]) > int(a[1]))


def normalize_type(text: str) -> str:
    """Iceberg type text without spaces after commas: ``decimal(10, 2)`` -> ``decimal(10,2)``.

    >>> normalize_type("map<string, string>")
    'map<string,string>'
    """
    return re.sub(r",\s+", ",", text.strip())


_SPARK_TYPES = {
    "int": "INT",
    "long": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "boolean": "BOOLEAN",
    "string": "STRING",
    "binary": "BINARY",
    "date": "DATE",
    "timestamp": "TIMESTAMP_NTZ",
    "timestamptz": "TIMESTAMP",
}


def spark_type(iceberg: str) -> str:
    """Spark's DDL type of an Iceberg type.

    >>> [spark_type(t) for t in ("long", "timestamptz", "timestamp", "decimal(10, 2)")]
    ['BIGINT', 'TIMESTAMP', 'TIMESTAMP_NTZ', 'DECIMAL(10,2)']
    >>> spark_type("list<decimal(8,2)>"), spark_type("map<string,string>")
    ('ARRAY<DECIMAL(8,2)>', 'MAP<STRING,STRING>')
    """
    text = normalize_type(iceberg)
    if text.startswith("decimal("):
        return text.upper()
    if text.startswith("list<") and text.endswith(">"):
        return f"ARRAY<{spark_type(text[5:-1])}>"
    if text.startswith("map<") and text.endswith(">"):
        key, _, value = text[4:-1].partition(",")
        return f"MAP<{spark_type(key)},{spark_type(value)}>"
    return _SPARK_TYPES[text]
