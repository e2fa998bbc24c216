"""The canonical text of a row, written three times: PostgreSQL SQL, MySQL/MariaDB SQL (each
dialect's text and families in ``dialects/``) and Spark SQL (here), so that the source and
the mirror hash the same row to the same number. Pure.

Each column gets a *family* from its source type; the family fixes the text:

==========  ==============================================================================
family      canonical text
==========  ==============================================================================
int         the integer in decimal
bool        ``true`` / ``false``
decimal     the number with exactly the column's scale (``1.50``; PostgreSQL money too)
number      the number without trailing zeros (PostgreSQL ``numeric`` with no scale)
text        the string as stored (PostgreSQL ``character(n)`` padded to n)
hex         the bytes in lower-case hex
days        days since 1970-01-01
micros      microseconds since 1970-01-01 00:00 UTC (timestamps)
time        microseconds since midnight
timetz      microseconds since midnight UTC
float       the exact value: ``[-]MpE``, ``|x| = M * 2^(E - 52)`` with a 53-bit M
            (``0``, ``NaN``, ``Infinity``, ``-Infinity``)
interval    months, days and microseconds: ``m:d:us``
bits        the bit string without its leading zeros
map         the pair count, then the pairs sorted by key (key U+001C value, U+001D between)
point       the point's WKB (little-endian) in lower-case hex
geometry    MySQL/MariaDB: the WKB of the value in lower-case hex
array       the element count, then each element's text by its own family, U+001D between
==========  ==============================================================================

A NULL is the character U+001E, columns are joined by U+001F, the row hash is the first
32 bits of the MD5 of the UTF-8 text. Every type the mirror maps has a family but PostGIS
geometries (no server of this project's tests has PostGIS): those are left out of the hash
and named in the report as not compared.
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
        return self.value_text(col, self.quote(col.name))

    def value_text(self, col: CanonicalColumn, value: str) -> str:
        c = value
        if col.family == "decimal" and col.scale > 0:
            # CAST(decimal AS STRING) writes small values as 1E-10: build the plain text from
            # the integer part and the fraction (the fraction plus one prints plainly). No
            # abs() or negation of the whole value: Spark 4.0 fails on -(max decimal(38,10)).
            return (
                f"CASE WHEN {c} IS NULL THEN NULL ELSE concat(IF({c} < 0, '-', ''), "
                f"regexp_replace(CAST(IF({c} < 0, ceil({c}), floor({c})) AS STRING), '^-', ''), "
                f"'.', substring(CAST(IF({c} < 0, -({c} % 1), {c} % 1) + 1 AS STRING), 3)) END"
            )
        if col.family == "array" and col.element is not None:
            each = f"coalesce({self.value_text(col.element, 'x__e')}, chr({NULL_MARK}))"
            return (
                f"CASE WHEN {c} IS NULL THEN NULL ELSE concat(size({c}), ':', "
                f"array_join(transform({c}, x__e -> {each}), chr(29))) END"
            )
        special = {
            "hex": f"lower(hex({c}))",
            "point": f"lower(hex({c}))",
            "geometry": f"lower(hex({c}))",
            "days": f"CAST(unix_date({c}) AS STRING)",
            "micros": f"CAST(unix_micros(CAST({c} AS TIMESTAMP)) AS STRING)",
            "float": _spark_float(f"CAST({c} AS DOUBLE)"),
            "timetz": _spark_zoned_time(c),
            "interval": _spark_interval(c),
            "bits": _spark_bits(c),
            "number": (
                f"CASE WHEN {c} LIKE '%.%' THEN regexp_replace(regexp_replace({c}, '0+$', ''), "
                f"'[.]$', '') ELSE {c} END"
            ),
            "map": _spark_map(c),
        }
        return special.get(col.family, f"CAST({c} AS STRING)")

    def chr_sql(self, code: int) -> str:
        return f"chr({code})"

    def hash32(self, text_sql: str) -> str:
        return f"CAST(conv(substring(md5({text_sql}), 1, 8), 16, 10) AS BIGINT)"

    def utf8(self, text_sql: str) -> str:
        return text_sql


def _spark_float(x: str) -> str:
    """Family ``float``: the sign, the 53-bit significand M and the binary exponent e of
    the value, ``|x| = M * 2^(e - 52)``, as ``[-]MpE``; ``0`` (either sign), ``NaN``,
    ``Infinity``, ``-Infinity``. Dividing by a power of two is exact, so each engine gets
    the same integers from its own floating point functions; the exponent from a logarithm
    is corrected by one where it rounded across a power of two."""
    ax = f"abs({x})"
    e0 = f"floor(log2({ax}))"
    ratio = f"({ax} / pow(2, {e0}))"
    e = f"({e0} + CASE WHEN {ratio} >= 2 THEN 1 WHEN {ratio} < 1 THEN -1 ELSE 0 END)"
    m = f"CAST({ax} / pow(2, {e}) * 4503599627370496 AS BIGINT)"
    return (
        f"CASE WHEN {x} IS NULL THEN NULL WHEN isnan({x}) THEN 'NaN' "
        f"WHEN {x} = double('inf') THEN 'Infinity' WHEN {x} = double('-inf') THEN '-Infinity' "
        f"WHEN {x} = 0 THEN '0' ELSE concat(IF({x} < 0, '-', ''), {m}, 'p', {e}) END"
    )


def _spark_zoned_time(c: str) -> str:
    """Family ``timetz``: microseconds since midnight UTC, from Debezium's ``ZonedTime``
    text (``HH:MM:SS[.fraction]Z``, the time in UTC)."""
    seconds = f"CAST(substring({c}, 7, length({c}) - 7) AS DECIMAL(12,6))"
    micros = (
        f"CAST(substring({c}, 1, 2) AS BIGINT) * 3600000000 + "
        f"CAST(substring({c}, 4, 2) AS BIGINT) * 60000000 + CAST({seconds} * 1000000 AS BIGINT)"
    )
    return f"CAST({micros} AS STRING)"


_ISO_INTERVAL = "^P(-?[0-9]+)Y(-?[0-9]+)M(-?[0-9]+)DT(-?[0-9]+)H(-?[0-9]+)M(-?[0-9.]+)S$"


def _spark_interval(c: str) -> str:
    """Family ``interval``: months, days and microseconds, from Debezium's ISO 8601 text of
    its parts (``interval.handling.mode = string``: ``PnYnMnDTnHnMnS``)."""

    def part(i: int, kind: str = "BIGINT") -> str:
        return f"CAST(regexp_extract({c}, '{_ISO_INTERVAL}', {i}) AS {kind})"

    micros = (
        f"({part(4)} * 3600 + {part(5)} * 60) * 1000000 "
        f"+ CAST({part(6, 'DECIMAL(20,6)')} * 1000000 AS BIGINT)"
    )
    return f"concat({part(1)} * 12 + {part(2)}, ':', {part(3)}, ':', CAST({micros} AS BIGINT))"


def _spark_bits(c: str) -> str:
    """Family ``bits``: the bit string without its leading zeros, from Debezium's bytes of
    it (least significant byte first)."""
    big_endian = f"array_join(reverse(regexp_extract_all(hex({c}), '..', 0)), '')"
    digits = (
        f"array_join(transform(split({big_endian}, ''), h -> lpad(conv(h, 16, 2), 4, '0')), '')"
    )
    return f"TRIM(LEADING '0' FROM {digits})"


def _spark_map(c: str) -> str:
    """Family ``map``: the pair count, then the pairs sorted by key (code point order), key
    and value joined by U+001C (a NULL value: the NULL mark), the pairs by U+001D."""
    pairs = (
        f"array_join(transform(array_sort(map_keys({c})), k -> concat(k, chr(28), "
        f"coalesce({c}[k], chr({NULL_MARK})))), chr(29))"
    )
    return f"CASE WHEN {c} IS NULL THEN NULL ELSE concat(size({c}), ':', {pairs}) END"


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
        col = canonical_column(dialect, name, source_type, iceberg)
        if col is None:
            skipped.append(f"{name} ({source_type.text})")
            continue
        hashed.append(col)
    by_name = {c.name: c for c in hashed}
    key_cols = tuple(by_name[k] for k in key if k in by_name)
    if len(key_cols) != len(key):
        key_cols = ()  # a key column without a canonical text: bucket by the whole row
    return RowShape(key=key_cols, columns=tuple(hashed), skipped=tuple(skipped))


def canonical_column(
    dialect: str, name: str, source_type: SourceType, iceberg: str
) -> CanonicalColumn | None:
    """How a column (or an array's elements, ``name`` empty) is written in the canonical row;
    None when it has no canonical text."""
    fam = family(dialect, source_type, iceberg)
    if fam is None:
        return None
    element = None
    if fam == "array":
        if source_type.element is None or not iceberg.startswith("list<"):
            return None
        element = canonical_column(dialect, "", source_type.element, iceberg[5:-1])
        if element is None:
            return None
    scale = int(iceberg.rstrip(")").split(",")[1]) if iceberg.startswith("decimal(") else 0
    return CanonicalColumn(name, fam, source_type.length, scale, element)


def family(dialect: str, source_type: SourceType, iceberg: str) -> str | None:
    """How a column is written in the canonical row; None when it is left out."""
    return dialects.of(dialect).canonical_family(source_type, iceberg)
