"""Benchmark: what reading a history table (``mirror.history``) costs (issue 71).

A history table of N versions (default 10,000,000) of N / V keys (V versions each, default
10) is written by plain Spark the way the mirror lays it out (sorted by the key, the
history columns, a version per key and "moment": each moment changes every key once), beside
the mirrored table of its current versions. Then, on the embedded catalog, each query run
four times (the first not counted, the median of the rest):

- ``as of``: the table as of the middle moment (``_cdc_valid_from_ts <= X AND
  (_cdc_valid_to_ts > X OR _cdc_valid_to_ts IS NULL)``), counted and summed (``hash`` of
  every column): a version of every key;
- ``versions of a key``: every version of one key (``id = k``), ordered by position;
- ``current table``: the mirrored table read the same way (count, sum of hashes): what a
  reader of the current state pays, the bound of the ``as of`` read (which reads V times
  the rows);
- ``current versions``: ``_cdc_is_current`` from the history table.

Prints each query's seconds, the rows it returned, the files of each table, and the ratios
to the current table's read.

    .venv/bin/python benchmarks/history_read.py [N] [V]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cdcmirror.config import load_config
from cdcmirror.spark.session import build_spark_session

T0_US = 1_700_000_000_000_000  # the first moment's commit time
STEP_US = 1_000  # between two changes


def _versions_sql(n: int, v: int) -> str:
    keys = n // v
    p = f"(j * {keys} + id_k)"
    nxt = f"({p} + {keys})"
    return (
        f"SELECT id_k AS id, CAST(id_k % 1000 AS INT) AS a, "
        f"CAST(id_k / 7.0 + j AS DECIMAL(12,2)) AS b, md5(CAST({p} AS STRING)) AS c, "
        f"concat('v', {p}) AS d, "
        f"array(1L, {p}, {p}, 0L, {p}) AS _cdc_valid_from, "
        f"IF(j < {v - 1}, array(1L, {nxt}, {nxt}, 0L, {nxt}), NULL) AS _cdc_valid_to, "
        f"timestamp_micros({T0_US} + {p} * {STEP_US}) AS _cdc_valid_from_ts, "
        f"IF(j < {v - 1}, timestamp_micros({T0_US} + {nxt} * {STEP_US}), NULL) "
        "AS _cdc_valid_to_ts, "
        f"IF(j = 0, 'c', 'u') AS _cdc_op, j = {v - 1} AS _cdc_is_current, "
        "false AS _cdc_deleted "
        f"FROM (SELECT id % {keys} AS id_k, CAST(id DIV {keys} AS BIGINT) AS j "
        f"FROM range({n}))"
    )


def _timed(spark: Any, sql: str) -> tuple[float, int]:
    seconds = []
    rows = 0
    for _ in range(4):
        started = time.monotonic()
        got = spark.sql(sql).collect()
        seconds.append(time.monotonic() - started)
        rows = int(got[0][0]) if got and got[0][0] is not None else 0
    return statistics.median(seconds[1:]), rows


def _files(spark: Any, table: str) -> int:
    return int(spark.sql(f"SELECT count(*) FROM {table}.files").first()[0])


def main(n: int, v: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="cdcmirror-history-read-"))
    config = load_config(environ={}, cwd=work)
    spark = build_spark_session(config, "cdcmirror-history-read")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS bench")
    cols = "id BIGINT, a INT, b DECIMAL(12,2), c STRING, d STRING"
    history = (
        f"{cols}, _cdc_valid_from ARRAY<BIGINT>, _cdc_valid_to ARRAY<BIGINT>, "
        "_cdc_valid_from_ts TIMESTAMP, _cdc_valid_to_ts TIMESTAMP, _cdc_op STRING, "
        "_cdc_is_current BOOLEAN, _cdc_deleted BOOLEAN"
    )
    started = time.monotonic()
    spark.sql(f"CREATE TABLE bench.orders__history ({history}) USING iceberg")
    spark.sql("ALTER TABLE bench.orders__history WRITE ORDERED BY id")
    spark.sql(f"INSERT INTO bench.orders__history {_versions_sql(n, v)}")
    spark.sql(
        "CREATE TABLE bench.orders USING iceberg AS SELECT id, a, b, c, d, "
        "_cdc_valid_from AS _cdc_position, _cdc_op, _cdc_valid_from_ts AS _cdc_source_ts, "
        "false AS _cdc_deleted FROM bench.orders__history WHERE _cdc_is_current ORDER BY id"
    )
    print(f"wrote {n:,} versions of {n // v:,} keys in {time.monotonic() - started:.1f} s")
    print(
        f"files: history {_files(spark, 'bench.orders__history')}, "
        f"current table {_files(spark, 'bench.orders')}",
        flush=True,
    )
    middle_us = T0_US + (n // 2) * STEP_US
    x = f"timestamp_micros({middle_us})"
    row = "hash(id, a, b, c, d)"
    queries = {
        "as of": (
            f"SELECT count(*), sum({row}) FROM bench.orders__history WHERE "
            f"_cdc_valid_from_ts <= {x} AND (_cdc_valid_to_ts > {x} OR _cdc_valid_to_ts IS NULL)"
        ),
        "versions of a key": (
            f"SELECT count(*), max(_cdc_valid_from) FROM bench.orders__history "
            f"WHERE id = {n // v // 2}"
        ),
        "current table": f"SELECT count(*), sum({row}) FROM bench.orders",
        "current versions": (
            f"SELECT count(*), sum({row}) FROM bench.orders__history WHERE _cdc_is_current"
        ),
    }
    results = {name: _timed(spark, sql) for name, sql in queries.items()}
    bound = results["current table"][0]
    print(f"{'query':<20} {'seconds':>8} {'rows':>12} {'÷ current table':>16}")
    for name, (seconds, rows) in results.items():
        print(f"{name:<20} {seconds:8.2f} {rows:12,} {seconds / bound:16.2f}")
    spark.stop()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(int(args[0]) if args else 10_000_000, int(args[1]) if len(args) > 1 else 10)
