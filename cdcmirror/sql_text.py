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


def as_of(name: str, snapshot: int | None) -> str:
    """Table ``name`` as its snapshot ``snapshot`` holds it (None: as it stands).

    >>> as_of("`ns`.`t`", 42), as_of("`ns`.`t`", None)
    ('`ns`.`t` VERSION AS OF 42', '`ns`.`t`')
    """
    return name if snapshot is None else f"{name} VERSION AS OF {int(snapshot)}"


MEDIAN_ACCURACY = 100
"""The sketch of a batch's median commit or Kafka time (a lag figure, never a value that is
written): 1 % of rank. Spark's default (10,000) is a larger sketch per task, merged in the
aggregate of the kept decode, for a precision no lag figure needs."""


def median_sql(expr: str) -> str:
    """The approximate median of ``expr`` over a batch (``MEDIAN_ACCURACY``).

    >>> median_sql("ts")
    'percentile_approx(ts, 0.5, 100)'
    """
    return f"percentile_approx({expr}, 0.5, {MEDIAN_ACCURACY})"
