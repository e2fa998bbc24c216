"""The canonical text of a row, written three times: PostgreSQL SQL, MySQL/MariaDB SQL and
Spark SQL, so that the source and the mirror hash the same row to the same number. Pure.

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

from cdcmirror.source_model import SourceType

NULL_MARK = 30  # U+001E
SEPARATOR = 31  # U+001F

_PG_TEXT = frozenset(
    {
        "character varying",
        "text",
        "citext",
        "name",
        "enum",
        "json",
        "jsonb",
        "uuid",
        "xml",
        "inet",
        "cidr",
        "macaddr",
        "macaddr8",
        "ltree",
    }
)
_PG_FAMILIES = {
    "smallint": "int",
    "integer": "int",
    "bigint": "int",
    "oid": "int",
    "boolean": "bool",
    "bytea": "hex",
    "date": "days",
    "time": "time",
    "timestamp": "micros",
    "timestamptz": "micros",
}
_MYSQL_TEXT = frozenset(
    {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set", "json", "uuid"}
)
_MYSQL_FAMILIES = {
    "smallint": "int",
    "mediumint": "int",
    "int": "int",
    "bigint": "int",
    "year": "int",
    "decimal": "decimal",
    "binary": "hex",
    "varbinary": "hex",
    "tinyblob": "hex",
    "blob": "hex",
    "mediumblob": "hex",
    "longblob": "hex",
    "date": "days",
    "datetime": "micros",
    "timestamp": "micros",
    "time": "time",
}


def family(dialect: str, source_type: SourceType, iceberg: str) -> str | None:
    """How a column is written in the canonical row; None when it is left out."""
    n = source_type.name
    if dialect == "postgresql":
        if n in _PG_TEXT:
            return "text"
        if n in ("character", "bpchar"):
            return "bpchar" if source_type.length else "text"
        if n == "numeric":
            return "decimal" if iceberg.startswith("decimal") else "text"
        return _PG_FAMILIES.get(n)
    if n == "tinyint":
        return "bool" if iceberg == "boolean" else "int"
    if n in _MYSQL_TEXT:
        return "text"
    return _MYSQL_FAMILIES.get(n)


@dataclass(frozen=True)
class CanonicalColumn:
    name: str
    family: str
    length: int | None = None  # character(n)
    scale: int = 0  # decimal(p,s)


def quote(dialect: str, name: str) -> str:
    """An identifier quoted for the engine (``spark``, ``postgresql`` or ``mysql``)."""
    if dialect == "postgresql":
        return '"' + name.replace('"', '""') + '"'
    return "`" + name.replace("`", "``") + "`"


def postgresql_text(col: CanonicalColumn) -> str:
    c = quote("postgresql", col.name)
    micros = f"CAST(CAST(EXTRACT(EPOCH FROM {c}) * 1000000 AS bigint) AS text)"
    return {
        "int": f"CAST({c} AS text)",
        "bool": f"CAST({c} AS text)",
        "decimal": f"CAST({c} AS text)",
        "text": f"CAST({c} AS text)",
        "bpchar": f"rpad(CAST({c} AS text), {col.length or 1})",
        "hex": f"encode({c}, 'hex')",
        "days": f"CAST({c} - DATE '1970-01-01' AS text)",
        "micros": micros,
        "time": micros,
    }[col.family]


def mysql_text(col: CanonicalColumn) -> str:
    """MySQL/MariaDB; the session must run with ``time_zone = '+00:00'``."""
    c = quote("mysql", col.name)
    return {
        "int": f"CAST({c} AS CHAR)",
        "bool": f"CASE WHEN {c} IS NULL THEN NULL WHEN {c} <> 0 THEN 'true' ELSE 'false' END",
        "decimal": f"CAST({c} AS CHAR)",
        "text": f"CAST({c} AS CHAR)",
        "bpchar": f"CAST({c} AS CHAR)",
        "hex": f"LOWER(HEX({c}))",
        "days": f"CAST(DATEDIFF({c}, '1970-01-01') AS CHAR)",
        "micros": f"CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {c}) AS CHAR)",
        "time": f"CAST(CAST(ROUND(TIME_TO_SEC({c}) * 1000000) AS SIGNED) AS CHAR)",
    }[col.family]


def spark_text(col: CanonicalColumn) -> str:
    """Spark SQL over the Iceberg column (session time zone UTC)."""
    c = quote("spark", col.name)
    if col.family == "decimal" and col.scale > 0:
        # CAST(decimal AS STRING) writes small values as 1E-10: build the plain text from
        # the integer part and the fraction (the fraction plus one prints plainly). No abs()
        # or negation of the whole value: Spark 4.0 fails on -(max decimal(38,10)).
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


_TEXT = {"postgresql": postgresql_text, "mysql": mysql_text, "spark": spark_text}


def _chr(engine: str, code: int) -> str:
    return f"CHAR({code})" if engine == "mysql" else f"chr({code})"


def joined(engine: str, columns: list[CanonicalColumn]) -> str:
    """The canonical text of the listed columns, as one SQL string expression."""
    text = _TEXT[engine]
    parts = [f"COALESCE({text(c)}, {_chr(engine, NULL_MARK)})" for c in columns]
    if len(parts) == 1:
        body = parts[0]
    else:
        body = f"CONCAT_WS({_chr(engine, SEPARATOR)}, {', '.join(parts)})"
    if engine == "mysql":
        body = f"CONVERT({body} USING utf8mb4)"
    return body


def hash32(engine: str, text_sql: str) -> str:
    """The first 32 bits of MD5(text) as a non-negative integer expression."""
    if engine == "postgresql":
        return f"('x' || lpad(substr(md5({text_sql}), 1, 8), 16, '0'))::bit(64)::bigint"
    if engine == "mysql":
        return f"CAST(CONV(SUBSTRING(MD5({text_sql}), 1, 8), 16, 10) AS UNSIGNED)"
    return f"CAST(conv(substring(md5({text_sql}), 1, 8), 16, 10) AS BIGINT)"


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
