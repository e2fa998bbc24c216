"""Iceberg type text (``decimal(10,2)``, ``map<string,string>``): its normal form and the
type promotions Iceberg allows (schema evolution widens a column only along these). Pure."""

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
