"""The canonical text of a row, written three times: PostgreSQL SQL, MySQL/MariaDB SQL (each
dialect's text and families in ``dialects/``) and Spark SQL (here), so that the source and
the mirror hash the same row to the same number. Pure.

Each column gets a *family* from its source type; the family fixes the text:

==========  ==========================================================
family      canonical text
==========  ==========================================================
int         the integer in decimal
bool        ``true`` / ``false``
decimal     the number with exactly the column's scale (``1.50``)
text        the string as stored (PostgreSQL ``character(n)`` padded to n)
hex         the bytes in lower-case hex
days        days since 1970-01-01
micros      microseconds since 1970-01-01 00:00 UTC (timestamps)
time        microseconds since midnight
==========  ==========================================================

A NULL is the character U+001E, columns are joined by U+001F, the row hash is the first
32 bits of the MD5 of the UTF-8 text. Columns without a family (floating point, arrays,
maps, geometry, bit strings, intervals, money, time with time zone) are left out of the
hash and named in the report: their text differs between the engines, and a rounding
rule would hide real differences.
"""

from __future__ import annotations

from dataclasses import dataclass

from cdcmirror import dialects
from cdcmirror.dialects import CanonicalColumn, Dialect
from cdcmirror.source_model import SourceType
from cdcmirror.sql_text import sql_string

NULL_MARK = 30  # U+001E
SEPARATOR = 31  # U+001F

__all__ = [  # CanonicalColumn is the dialects' too
    "NULL_MARK",
    "SEPARATOR",
    "CanonicalColumn",
    "RowShape",
    "family",
    "hash32",
    "joined",
    "quote",
    "row_shape",
    "string_literal",
]


class _Spark:
    """The mirror's side: Spark SQL over the Iceberg column (session time zone UTC)."""

    def quote(self, name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    def string_literal(self, text: str) -> str:
        return sql_string(text)

    def canonical_text(self, col: CanonicalColumn) -> str:
        c = self.quote(col.name)
        if col.family == "decimal" and col.scale > 0:
            # CAST(decimal AS STRING) writes small values as 1E-10: build the plain text from
            # the integer part and the fraction (the fraction plus one prints plainly). No
            # abs() or negation of the whole value: Spark 4.0 fails on -(max decimal(38,10)).
            return (
                f"CASE WHEN {c} IS NULL THEN NULL ELSE concat(IF({c} < 0, '-', ''), "
                f"regexp_replace(CAST(IF({c} < 0, ceil({c}), floor({c})) AS STRING), '^-', ''), "
                f"'.', substring(CAST(IF({c} < 0, -({c} % 1), {c} % 1) + 1 AS STRING), 3)) END"
            )
        return {
            "hex": f"lower(hex({c}))",
            "days": f"CAST(unix_date({c}) AS STRING)",
            "micros": f"CAST(unix_micros(CAST({c} AS TIMESTAMP)) AS STRING)",
        }.get(col.family, f"CAST({c} AS STRING)")

    def chr_sql(self, code: int) -> str:
        return f"chr({code})"

    def hash32(self, text_sql: str) -> str:
        return f"CAST(conv(substring(md5({text_sql}), 1, 8), 16, 10) AS BIGINT)"

    def utf8(self, text_sql: str) -> str:
        return text_sql


_SPARK = _Spark()


def _engine(name: str) -> _Spark | Dialect:
    """``spark`` (the mirror) or a source dialect (``dialects/``: each one's canonical
    text of each family)."""
    return _SPARK if name == "spark" else dialects.of(name)


def quote(engine: str, name: str) -> str:
    """An identifier quoted for the engine (``spark``, ``postgresql`` or ``mysql``)."""
    return _engine(engine).quote(name)


def string_literal(engine: str, text: str) -> str:
    """A string literal holding ``text`` exactly, for the engine."""
    return _engine(engine).string_literal(text)


def joined(engine: str, columns: list[CanonicalColumn]) -> str:
    """The canonical text of the listed columns, as one SQL string expression."""
    e = _engine(engine)
    parts = [f"COALESCE({e.canonical_text(c)}, {e.chr_sql(NULL_MARK)})" for c in columns]
    if len(parts) == 1:
        body = parts[0]
    else:
        body = f"CONCAT_WS({e.chr_sql(SEPARATOR)}, {', '.join(parts)})"
    return e.utf8(body)


def hash32(engine: str, text_sql: str) -> str:
    """The first 32 bits of MD5(text) as a non-negative integer expression."""
    return _engine(engine).hash32(text_sql)


@dataclass(frozen=True)
class RowShape:
    """What the deep comparison hashes of one table."""

    key: tuple[CanonicalColumn, ...]
    columns: tuple[CanonicalColumn, ...]  # every hashed column, key included, table order
    skipped: tuple[str, ...]  # columns left out, as "name (type)"

    def bucket_sql(self, engine: str, buckets: int) -> str:
        """The bucket of a row: from its key, or from the whole row when there is none."""
        basis = self.key or self.columns
        return f"({hash32(engine, joined(engine, list(basis)))} % {buckets})"

    def row_hash_sql(self, engine: str) -> str:
        return hash32(engine, joined(engine, list(self.columns)))

    def key_text_sql(self, engine: str) -> str:
        return joined(engine, list(self.key or self.columns))


def row_shape(
    dialect: str,
    columns: list[tuple[str, SourceType, str]],
    key: tuple[str, ...],
) -> RowShape:
    """The shape of a table from its columns (name, source type, Iceberg type) and key."""
    hashed: list[CanonicalColumn] = []
    skipped: list[str] = []
    for name, source_type, iceberg in columns:
        fam = family(dialect, source_type, iceberg)
        if fam is None:
            skipped.append(f"{name} ({source_type.text})")
            continue
        scale = int(iceberg.rstrip(")").split(",")[1]) if iceberg.startswith("decimal(") else 0
        hashed.append(CanonicalColumn(name, fam, source_type.length, scale))
    by_name = {c.name: c for c in hashed}
    key_cols = tuple(by_name[k] for k in key if k in by_name)
    if len(key_cols) != len(key):
        key_cols = ()  # a key column without a canonical text: bucket by the whole row
    return RowShape(key=key_cols, columns=tuple(hashed), skipped=tuple(skipped))


def family(dialect: str, source_type: SourceType, iceberg: str) -> str | None:
    """How a column is written in the canonical row; None when it is left out."""
    return dialects.of(dialect).canonical_family(source_type, iceberg)
