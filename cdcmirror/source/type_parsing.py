"""Parse the type text a source catalog prints into a :class:`SourceType`. Pure.

PostgreSQL: the text of ``format_type(atttypid, atttypmod)``. MySQL / MariaDB: the
``COLUMN_TYPE`` of ``information_schema.COLUMNS``.
"""

from __future__ import annotations

import re

from cdcmirror.source_model import SourceType


def _split(text: str) -> tuple[str, str, str]:
    """(name, arguments, rest): ``timestamp(3) with time zone`` -> ('timestamp', '3',
    'with time zone'); text without parentheses is all name."""
    if "(" not in text or ")" not in text:
        return text.strip(), "", ""
    name, _, tail = text.partition("(")
    args, _, rest = tail.rpartition(")")
    return name.strip(), args, rest.strip()


# PostgreSQL spells some types in several ways; the mapping knows the canonical name.
_PG_ALIASES = {
    "int2": "smallint",
    "int4": "integer",
    "int": "integer",
    "int8": "bigint",
    "bool": "boolean",
    "float4": "real",
    "float8": "double precision",
    "decimal": "numeric",
    "varchar": "character varying",
    "char": "character",
    "bpchar": "character",
    "varbit": "bit varying",
    "time without time zone": "time",
    "time with time zone": "timetz",
    "timestamp without time zone": "timestamp",
    "timestamp with time zone": "timestamptz",
}


def _ints(args: str) -> list[int]:
    return [int(a) for a in args.split(",") if a.strip().lstrip("-").isdigit()]


def _unqualified(name: str) -> str:
    """``public.citext`` -> ``citext``; ``"char"`` stays as it is."""
    if name.startswith('"'):
        return name
    return name.rsplit(".", 1)[-1].strip('"')


def parse_postgresql_type(text: str) -> SourceType:
    """A PostgreSQL type from ``format_type`` text.

    >>> parse_postgresql_type("numeric(12,3)")
    SourceType(name='numeric', text='numeric(12,3)', length=None, precision=12, scale=3, fsp=None, unsigned=False, values=(), element=None, domain=None)
    >>> parse_postgresql_type("timestamp(3) with time zone").name
    'timestamptz'
    >>> parse_postgresql_type("integer[]").element.name
    'integer'
    """  # noqa: E501
    text = text.strip()
    if text.endswith("[]"):
        element = parse_postgresql_type(text[: text.index("[]")])
        return SourceType(name="array", text=text, element=element)
    name, raw_args, rest = _split(text.lower())
    base = " ".join(f"{name} {rest}".split())
    base = _PG_ALIASES.get(_unqualified(base), _unqualified(base))
    args = _ints(raw_args)
    if base in ("time", "timetz", "timestamp", "timestamptz"):
        return SourceType(name=base, text=text, fsp=args[0] if args else None)
    if base == "numeric":
        if not args:
            return SourceType(name=base, text=text)
        return SourceType(
            name=base, text=text, precision=args[0], scale=args[1] if len(args) > 1 else 0
        )
    if base in ("character", "character varying", "bit", "bit varying"):
        length = args[0] if args else (1 if base in ("character", "bit") else None)
        return SourceType(name=base, text=text, length=length)
    if base == "interval":
        return SourceType(name=base, text=text, fsp=args[0] if args else None)
    return SourceType(name=base, text=text)


def _quoted_values(args: str) -> tuple[str, ...]:
    """``'a','b''c'`` -> ('a', "b'c")."""
    return tuple(v.replace("''", "'") for v in re.findall(r"'((?:[^']|'')*)'", args))


def parse_mysql_type(text: str) -> SourceType:
    """A MySQL / MariaDB type from ``COLUMN_TYPE`` text.

    >>> t = parse_mysql_type("bigint(20) unsigned")
    >>> t.name, t.unsigned
    ('bigint', True)
    >>> parse_mysql_type("enum('sad','ok','happy')").values
    ('sad', 'ok', 'happy')
    >>> parse_mysql_type("datetime(6)").fsp
    6
    """
    raw = text.strip()
    lowered = raw.lower()
    name, raw_args, rest = _split(lowered)
    if not raw_args:  # "float unsigned": the flags follow the name
        name, _, rest = name.partition(" ")
    unsigned = "unsigned" in rest.split()
    if name in ("enum", "set"):
        args_raw = raw[raw.index("(") + 1 : raw.rindex(")")]
        return SourceType(name=name, text=raw, values=_quoted_values(args_raw))
    args = _ints(raw_args)
    aliases = {"integer": "int", "bool": "tinyint", "boolean": "tinyint", "numeric": "decimal"}
    name = aliases.get(name, name)
    if name in ("tinyint", "smallint", "mediumint", "int", "bigint"):
        return SourceType(name=name, text=raw, length=args[0] if args else None, unsigned=unsigned)
    if name in ("decimal", "dec", "fixed"):
        precision = args[0] if args else 10
        return SourceType(
            name="decimal",
            text=raw,
            precision=precision,
            scale=args[1] if len(args) > 1 else 0,
            unsigned=unsigned,
        )
    if name in ("float", "double", "real", "double precision"):
        return SourceType(
            name="double" if name in ("real", "double precision") else name,
            text=raw,
            unsigned=unsigned,
        )
    if name in ("time", "datetime", "timestamp"):
        return SourceType(name=name, text=raw, fsp=args[0] if args else 0)
    if name in ("char", "varchar", "binary", "varbinary", "bit", "year"):
        default = 1 if name in ("char", "binary", "bit") else None
        return SourceType(name=name, text=raw, length=args[0] if args else default)
    return SourceType(name=name, text=raw)
