"""How one source column is read by the initial load and written as the value the
streaming path writes for it. Pure.

Each column is read over JDBC as the result of a source-side expression (``select``, named
``alias``) of a plain type the JDBC driver and Spark agree on (integers as BIGINT, times
as microseconds, exotic types as their text), then turned into its Iceberg type by a Spark
SQL expression over that alias (``convert``). The value must be the one the Debezium event
of the same row decodes to (``mirror/carriers.py``): ``integration_tests/test_initial_load.py``
compares both, column by column, over every type of ``docs/reference/type-mapping.md``. A column
whose value the load cannot produce exactly is refused (``NotLoadableError``) before anything is
read, naming the column; such tables take ``initial_load = "debezium"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cdcmirror.exceptions import NotLoadableError
from cdcmirror.source_model import SourceType
from cdcmirror.sql_text import q, sql_string


@dataclass(frozen=True)
class LoadColumn:
    name: str  # the mirrored column
    alias: str  # its name in the JDBC query
    select: str  # source SQL, read as ``alias``
    convert: str  # Spark SQL over ``alias``: the value in its Iceberg type


def little_endian_hex(hex_text: str) -> str:
    """Spark SQL: the bytes of big-endian hex text in reverse order, as hex text.

    >>> little_endian_hex("h")
    "array_join(reverse(regexp_extract_all(h, '(..)', 1)), '')"
    """
    return f"array_join(reverse(regexp_extract_all({hex_text}, '(..)', 1)), '')"


def bits_from_text(bits: str) -> str:
    """Spark SQL: a bit string (``'10100101'``, most significant bit first) as Debezium's
    ``io.debezium.data.Bits`` bytes of PostgreSQL: little-endian, no high zero bytes (the
    length follows the highest set bit, as ``java.util.BitSet.toByteArray`` does)."""
    trimmed = f"ltrim('0', {bits})"
    padded = f"lpad({trimmed}, CAST(ceil(length({trimmed}) / 8) * 8 AS INT), '0')"
    groups = f"regexp_extract_all({padded}, '([01]{{8}})', 1)"
    hexed = f"transform(reverse({groups}), g -> lpad(conv(g, 2, 16), 2, '0'))"
    return f"unhex(array_join({hexed}, ''))"


def bits_from_unsigned(value: str, length: int) -> str:
    """Spark SQL: an unsigned integer (``BIT(length)`` of MySQL read as a number) as
    Debezium's ``Bits`` bytes of MySQL: little-endian, always ``ceil(length / 8)`` bytes."""
    size = (length + 7) // 8
    hex_text = f"lpad(conv(CAST({value} AS STRING), 10, 16), {2 * size}, '0')"
    return f"unhex({little_endian_hex(hex_text)})"


def wkb_point(hex_xy: str) -> str:
    """Spark SQL: Debezium's WKB of a 2D point (byte order mark 1, type 1, x, y, all
    little-endian) from the big-endian IEEE hex of x then y (32 hex digits)."""
    x = little_endian_hex(f"substr({hex_xy}, 1, 16)")
    y = little_endian_hex(f"substr({hex_xy}, 17, 16)")
    return f"unhex(concat('0101000000', {x}, {y}))"


def error_sql(columns: Sequence[LoadColumn]) -> str:
    """Spark SQL over the read and converted columns (``alias`` and ``name``): the columns
    whose source value did not convert (NULL from a non-NULL value), NULL when all did."""
    checks = ", ".join(
        f"IF({c.alias} IS NOT NULL AND {q(c.name)} IS NULL, {sql_string(c.name)}, NULL)"
        for c in columns
    )
    return f"NULLIF(concat_ws(', ', {checks}), '')" if columns else "CAST(NULL AS STRING)"


def unsupported(where: str, source_type: SourceType, why: str) -> NotLoadableError:
    return NotLoadableError(
        f'{where}: type {source_type.text} cannot be loaded with initial_load = "spark" '
        f'({why}); set [bootstrap] initial_load = "debezium", or leave the table out'
    )
