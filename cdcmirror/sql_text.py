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
