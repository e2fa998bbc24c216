"""Spark SQL text: quoted names and string literals. Pure."""

from __future__ import annotations


def q(name: str) -> str:
    """A quoted Spark SQL identifier.

    >>> q("a`b")
    '`a``b`'
    """
    return "`" + name.replace("`", "``") + "`"


def spark_name(identifier: str) -> str:
    """``namespace.table`` quoted for Spark SQL."""
    return ".".join(q(p) for p in identifier.split("."))


def sql_string(text: str) -> str:
    """A Spark SQL string literal.

    >>> sql_string("it's")
    "'it\\\\'s'"
    """
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
