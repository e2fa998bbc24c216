"""Where a small direct batch's MERGE spends its time (``mirror/direct_merge.py``): the
mirror's own SQL for one batch of B changes (B/2 keys, each changed twice, all updates) into
a mirrored table of R rows, in variants that each leave one thing out, against a plain
Spark MERGE of the same deduplicated rows. Each variant has its own copy of the table; the
rounds take turns so that the machine's drift is shared.

    .venv/bin/python benchmarks/merge_variants.py [ROUNDS=8] [ROWS=10000] [B=200] [--mixed]

``--mixed``: each batch is 60 % updates, 20 % deletes of stored keys and 20 % inserts of new
keys, one event per key, as ``mixed_batch.py``'s mixed round is at scale; only ``direct``,
``deduped first`` and ``plain`` (which then also deletes) are run.

Variants:
- ``direct``: ``direct_merge_sql`` over ``dedupe_sql`` of the cached events, as
  ``spark/cdc/direct.py`` runs it (dedupe, guard and insert branch in one query);
- ``deduped first``: the same MERGE from the deduplicated rows cached beforehand (the
  dedupe's own job is timed apart and added);
- ``no guard``: the direct MERGE without the position guard;
- ``no insert branch``: the direct MERGE without its NOT MATCHED branch;
- ``plain``: ``MERGE ... UPDATE SET * / INSERT *`` of the deduplicated rows.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cdcmirror.config import load_config
from cdcmirror.mirror.direct_merge import direct_merge_sql
from cdcmirror.mirror.merge_sql import dedupe_sql, merge_sql
from cdcmirror.spark.session import build_spark_session
from cdcmirror.table_properties import MERGE_ON_READ
from support.iceberg_tables import (
    DIRECT_ROW,
    ITEMS,  # id, name; upsert
)
from support.mirror_fixture import make_config

NS = "bench_variants"


def copy_table(spark: Any, name: str, rows: int) -> str:
    """A mirrored table of ``rows`` rows (merge-on-read), ``bench_variants.t_<name>``."""
    target = f"{NS}.t_{name.replace(' ', '_')}"
    spark.sql(f"DROP TABLE IF EXISTS {target}")
    props = ", ".join(f"'{k}'='{v}'" for k, v in {"format-version": "2", **MERGE_ON_READ}.items())
    spark.sql(f"CREATE TABLE {target} {DIRECT_ROW} USING iceberg TBLPROPERTIES ({props})")
    spark.range(1, rows + 1).selectExpr(
        "id",
        "repeat('x', 100) AS name",
        "'r' AS _cdc_op",
        "array(0L, 1L, 1L, 0L, 0L, id) AS _cdc_position",
        "current_timestamp() AS _cdc_source_ts",
        "false AS _cdc_deleted",
    ).writeTo(target).append()
    return target


def _events(spark: Any, r: int, rows: int, size: int, mixed: bool = False) -> None:
    """Round ``r``'s batch: ``size`` updates on ``size // 2`` keys, newer than every row;
    ``mixed``: 60 % updates and 20 % deletes of stored keys, 20 % creates of new ones."""
    first = 1 + (r * size * 7) % (rows - size)
    key, op = f"{first} + id % {size // 2}", "'u'"
    if mixed:
        first = 1 + (r * 37_003) % (rows - size)  # rounds of any size change other keys
        stored, updates, created = size * 4 // 5, size * 3 // 5, rows + r * size
        key = f"IF(id < {stored}, {first} + id, {created} + id)"
        op = f"CASE WHEN id < {updates} THEN 'u' WHEN id < {stored} THEN 'd' ELSE 'c' END"
    events = spark.range(0, size).selectExpr(
        f"{key} AS id",
        f"concat('round {r} ', id) AS name",
        f"{op} AS _cdc_op",
        f"array(1L, 1L, {100 + r}L, 0L, 0L, id) AS _cdc_position",
        "current_timestamp() AS _cdc_source_ts",
        "0 AS _cdc_partition",
        "id AS _cdc_offset",
    )
    events.cache().count()
    events.createOrReplaceTempView(f"{NS}_events")


def _variants(spark: Any, mixed: bool = False) -> dict[str, Callable[[str], float]]:
    deduped = f"({dedupe_sql(ITEMS, NS + '_events')})"
    plain_set = "name = s.name, _cdc_op = s._cdc_op, _cdc_position = s._cdc_position"
    deletes = "WHEN MATCHED AND s._cdc_op = 'd' THEN DELETE " if mixed else ""
    upserts = " AND s._cdc_op <> 'd'" if mixed else ""

    def timed(sql: str) -> float:
        began = time.monotonic()
        spark.sql(sql)
        return time.monotonic() - began

    def first(target: str) -> float:
        began = time.monotonic()
        spark.sql(dedupe_sql(ITEMS, NS + "_events")).cache().createOrReplaceTempView(NS + "_d")
        spark.table(NS + "_d").count()
        took = time.monotonic() - began
        return took + timed(direct_merge_sql(ITEMS, target, NS + "_d", soft=False))

    variants: dict[str, Callable[[str], float]] = {
        "direct": lambda t: timed(direct_merge_sql(ITEMS, t, deduped, soft=False)),
        "deduped first": first,
        "no guard": lambda t: timed(
            merge_sql(ITEMS, t, deduped, False, placeholders=False, guarded=False, classified=False)
        ),
        "no insert branch": lambda t: timed(
            merge_sql(ITEMS, t, deduped, False, inserts=False, placeholders=False, classified=False)
        ),
        "plain": lambda t: timed(
            f"MERGE INTO {t} t USING {deduped} s ON t.id = s.id {deletes}"
            f"WHEN MATCHED THEN UPDATE SET {plain_set} WHEN NOT MATCHED{upserts} THEN INSERT "
            "(id, name, _cdc_op, _cdc_position, _cdc_source_ts, _cdc_deleted) VALUES "
            "(s.id, s.name, s._cdc_op, s._cdc_position, s._cdc_source_ts, false)"
        ),
    }
    kept = ("direct", "deduped first", "plain") if mixed else tuple(variants)
    return {name: run for name, run in variants.items() if name in kept}


def main(rounds: int, rows: int, size: int, mixed: bool = False) -> None:
    work = Path(tempfile.mkdtemp(prefix="merge-variants-"))
    config = make_config(work, NS, "mysql", "db.items", "db")
    spark = build_spark_session(load_config(config, environ={}), "merge-variants")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {NS}")
    variants = _variants(spark, mixed)
    targets = {name: copy_table(spark, name, rows) for name in variants}
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    for r in range(rounds):
        _events(spark, r, rows, size, mixed)
        for name, run in variants.items():
            seconds[name].append(run(targets[name]))
        print(f"round {r}: " + ", ".join(f"{n} {s[-1]:.2f}s" for n, s in seconds.items()))
    plain = statistics.median(seconds["plain"][2:])
    what = f"{size} mixed changes" if mixed else f"{size} changes on {size // 2} keys"
    print(f"\n{what} into {rows} rows, median of rounds 3-{rounds}:")
    for name, values in seconds.items():
        warm = statistics.median(values[2:])
        print(f"  {name:18s} {warm:5.2f} s   {warm / plain:4.2f}x plain")
    spark.stop()


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:] if not a.startswith("--")]
    main(*(args + [8, 10_000, 200][len(args) :]), mixed="--mixed" in sys.argv)
