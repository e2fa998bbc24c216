"""Benchmark: the floor under a freshness batch: plain Spark MERGEs of five (``TABLES``) busy
tables, with nothing of the mirror around them (the bound beside ``freshness.py``'s batches).

Five (``TABLES``) Iceberg tables of 1,000 rows (``id, seq, note``, as ``freshness.py``'s),
written as the mirror writes its tables (merge-on-read, zstd: ``table_properties``). Each
round makes one batch's changes of each table (N each: 70 % updates, 15 % inserts, 15 %
deletes of stored rows, as ``freshness.py``'s writer makes them) as rows in memory, then
MERGEs them into the tables concurrently, ``mirror.parallelism`` (4) at a time, as the
mirror applies its tables; the round's wall time is timed, the changes' making is not.
Nothing compacts the tables, as in ``freshness.py`` without ``EVERY_BATCHES``.

Prints the median and p95 round over the rounds after the first ten (a fresh JVM warms up
over about ten) and the p50 delay that such batches allow under the issue's rule of thumb:
a row waits about half a trigger for its batch (or half a batch, when batches run back to
back), then the batch. Needs only Spark (the embedded catalog in a temporary directory).

    .venv/bin/python benchmarks/merge_floor.py [N] [ROUNDS] [TABLES]   # default 150 40 5

``TABLES``: the busy tables of each round (issue 72's goal 4: 100 busy tables of 100 changes
each, ``merge_floor.py 100 8 100``: the floor under such a batch on this machine, the
decode and everything else of the mirror's left out); the warm rounds are those after the
first ten, or after the first half when there are fewer than twenty.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from cdcmirror.config import load_config
from cdcmirror.spark.session import build_spark_session
from cdcmirror.table_properties import MERGE_ON_READ, WRITE_DEFAULTS

TABLES = 5
ROWS = 1000
WARM = 10
PARALLELISM = 4  # mirror.parallelism's default


def main(changes: int, rounds: int, tables: int = TABLES) -> None:
    work = Path(tempfile.mkdtemp(prefix="merge-floor-"))
    spark: Any = build_spark_session(load_config(environ={}, cwd=work), "merge-floor")
    try:
        live = [_table(spark, t) for t in range(tables)]
        rnd = random.Random(20261205)
        seconds = []
        for r in range(rounds):
            frames = [_changes(spark, t, r, changes, live[t], rnd, tables) for t in range(tables)]
            began = time.monotonic()
            with ThreadPoolExecutor(max_workers=PARALLELISM) as pool:
                list(pool.map(lambda t: _merge(spark, t), range(tables)))
            seconds.append(time.monotonic() - began)
            for frame in frames:
                frame.unpersist()
            print(f"round {r}: {seconds[-1]:.2f}s", flush=True)
    finally:
        spark.stop()
    warm = seconds[min(WARM, rounds // 2) :] or seconds
    p50 = statistics.median(warm)
    p95 = sorted(warm)[min(len(warm) - 1, int(0.95 * len(warm)))]
    print(f"\nplain MERGEs of {tables} tables x {changes} changes, {PARALLELISM} at a time")
    print("| rounds | round s p50 | round s p95 | p50 delay floor, trigger 1 s | 10 s |")
    print("| --- | --- | --- | --- | --- |")
    floor_1 = max(1.0, p50) / 2 + p50  # back to back when the round outlasts the trigger
    floor_10 = max(10.0, p50) / 2 + p50
    print(f"| {len(warm)} | {p50:.2f} | {p95:.2f} | {floor_1:.1f} | {floor_10:.1f} |")


def _table(spark: Any, t: int) -> list[int]:
    """Table ``t`` made with ``ROWS`` rows, written as the mirror's are; its keys."""
    properties = ", ".join(f"'{k}' = '{v}'" for k, v in {**MERGE_ON_READ, **WRITE_DEFAULTS}.items())
    name = f"floor.t{t}"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS floor")
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(
        f"CREATE TABLE {name} (id bigint, seq bigint, note string) USING iceberg "
        f"TBLPROPERTIES ('format-version' = '2', {properties})"
    )
    spark.range(1, ROWS + 1).selectExpr("id", "id AS seq", "'row' AS note").writeTo(name).append()
    return list(range(1, ROWS + 1))


def _changes(
    spark: Any, t: int, r: int, n: int, live: list[int], rnd: random.Random, tables: int
) -> Any:
    """Round ``r``'s ``n`` changes of table ``t`` (``live``: its keys, kept up to date) as the
    view ``_floor_<t>`` (id, seq, note, d: deleted), cached; the cached frame."""
    deletes, inserts = n * 15 // 100, n * 15 // 100
    picked = rnd.sample(live, n - inserts)
    gone = set(picked[:deletes])
    first = 10 * ROWS + (r * tables + t) * n
    added = list(range(first, first + inserts))
    live[:] = [k for k in live if k not in gone] + added
    rows = [(k, r, "u", k in gone) for k in picked] + [(k, r, "new", False) for k in added]
    frame = spark.createDataFrame(rows, "id bigint, seq bigint, note string, d boolean")
    frame.cache().count()
    frame.createOrReplaceTempView(f"_floor_{t}")
    return frame


def _merge(spark: Any, t: int) -> None:
    spark.sql(
        f"MERGE INTO floor.t{t} t USING _floor_{t} s ON t.id = s.id "
        "WHEN MATCHED AND s.d THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET seq = s.seq, note = s.note "
        "WHEN NOT MATCHED AND NOT s.d THEN INSERT (id, seq, note) VALUES (s.id, s.seq, s.note)"
    )


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*(args + [150, 40][len(args) :]))
