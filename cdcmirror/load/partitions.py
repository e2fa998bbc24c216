"""Splitting a source table into parallel JDBC reads: one WHERE condition per Spark task.
Pure.

Every row must fall in exactly one read. The first and the last range are open (the last
also takes rows added after the bounds were read, and NULLs where a column allows them),
the others half-open.

- PostgreSQL: ranges of physical blocks (``ctid``, a TID range scan, PostgreSQL 14+), for
  any table, keyed or not. All reads share one exported snapshot, so a row has one place.
- MySQL/MariaDB: ranges of the first key column, between its minimum and maximum when it
  is an integer, else between split points the source sorted (one window over the key).
  A table without a key is read in one piece.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

MIN_ROWS_PER_PARTITION = 10_000


def partition_count(estimated_rows: int, rows_per_partition: int, parallelism: int) -> int:
    """How many reads: one per ``rows_per_partition`` rows, at least one per core when the
    table is big enough to share.

    >>> partition_count(10_000_000, 500_000, 2), partition_count(1_000, 500_000, 8)
    (20, 1)
    >>> partition_count(50_000, 500_000, 4), partition_count(12_000, 2_500, 2)
    (4, 5)
    """
    if estimated_rows <= 0:
        return 1
    by_size = math.ceil(estimated_rows / max(1, rows_per_partition))
    by_cores = min(parallelism, estimated_rows // MIN_ROWS_PER_PARTITION)
    return max(1, by_size, by_cores)


def _ranges(column: str, bounds: Sequence[str], nullable: bool = True) -> list[str]:
    """Conditions cutting ``column`` at ``bounds`` (SQL literals, ascending)."""
    if not bounds:
        return ["1 = 1"]
    first = f"{column} < {bounds[0]}"
    out = [f"({first} OR {column} IS NULL)" if nullable else first]
    out += [f"({column} >= {lo} AND {column} < {hi})" for lo, hi in pairwise(bounds)]
    out.append(f"{column} >= {bounds[-1]}")
    return out


def block_ranges(pages: int, parts: int) -> list[str]:
    """PostgreSQL: ``parts`` ranges of the table's ``pages`` blocks.

    >>> block_ranges(100, 2)
    ["ctid < '(50,0)'::tid", "ctid >= '(50,0)'::tid"]
    >>> block_ranges(0, 4)
    ['1 = 1']
    """
    parts = min(parts, pages)
    if parts <= 1:
        return ["1 = 1"]
    step = math.ceil(pages / parts)
    bounds = [f"'({b},0)'::tid" for b in range(step, pages, step)]
    return _ranges("ctid", bounds, nullable=False)


def integer_ranges(column: str, low: int | None, high: int | None, parts: int) -> list[str]:
    """Ranges of an integer column between its minimum and maximum.

    >>> integer_ranges("`id`", 1, 100, 3)
    ['(`id` < 35 OR `id` IS NULL)', '(`id` >= 35 AND `id` < 69)', '`id` >= 69']
    >>> integer_ranges("`id`", None, None, 3)
    ['1 = 1']
    """
    if low is None or high is None or parts <= 1 or high <= low:
        return ["1 = 1"]
    step = math.ceil((high - low + 1) / parts)
    bounds = [str(b) for b in range(low + step, high + 1, step)]
    return _ranges(column, bounds)


def point_ranges(column: str, points: Sequence[str]) -> list[str]:
    """Ranges between split points (SQL literals the source sorted, duplicates dropped).

    >>> point_ranges("k", ["'b'", "'b'", "'m'"])
    ["(k < 'b' OR k IS NULL)", "(k >= 'b' AND k < 'm')", "k >= 'm'"]
    """
    unique = list(dict.fromkeys(points))
    return _ranges(column, unique)
