"""Benchmark: a small batch's cost against its table's snapshot count (issue 17).

A job at a 1 s trigger commits up to 3,600 snapshots an hour into each busy table, and each
one stays in the table's metadata JSON with its summary until it is expired (`maintain`,
24 h by default). The job loads the table from the catalog several times a batch and every
commit writes that file again. This measures what the history costs: one mirrored table of
R rows (merge-on-read, as the mirror makes it), then levels of N snapshots, grown by commits
of no files carrying a real batch's summary properties (one Iceberg transaction per level,
so that growing is quick), and at each level:

- the size of the table's metadata JSON;
- the median of 10 loads of the table (``Spark3Util.loadIcebergTable``, as the job's
  ``spark/iceberg.py`` does up to five times a direct batch);
- the median of M direct MERGEs of 100 changes (``direct_merge_sql``, the mirror's SQL,
  its commit carrying the batch's properties as the job's does).

    .venv/bin/python benchmarks/snapshot_history.py [LEVELS=10,900,1800,3600] [M=8] [R=10000]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.merge_variants import NS as VARIANTS
from benchmarks.merge_variants import copy_table
from cdcmirror.config import load_config
from cdcmirror.mirror.direct_merge import direct_merge_sql
from cdcmirror.mirror.high_water import HIGH_WATER
from cdcmirror.mirror.merge_sql import dedupe_sql
from cdcmirror.mirror.resume import BATCH_ID, END_OFFSETS, QUERY_ID, START_OFFSETS
from cdcmirror.spark.iceberg import iceberg_table, with_commit_props
from cdcmirror.spark.session import build_spark_session
from support.iceberg_tables import ITEMS  # id, name; upsert
from support.mirror_fixture import make_config

NS = "bench_history"  # its views' prefix
TARGET = f"{VARIANTS}.t_history"  # merge_variants.copy_table(spark, "history", rows)


def _load(spark: Any) -> Any:
    return iceberg_table(spark, TARGET)


def _props(batch: int) -> dict[str, str]:
    """A batch's summary properties, as the job writes them (one topic of one partition)."""
    offsets = json.dumps({"cdcmirror.inventory.items": {"0": 1000 * batch}})
    return {
        QUERY_ID: str(uuid.UUID(int=7)),
        BATCH_ID: str(batch),
        START_OFFSETS: offsets,
        END_OFFSETS: offsets,
        HIGH_WATER: json.dumps([1, 1, 100 + batch, 0, 0, 5000]),
    }


def _merge(spark: Any, batch: int, rows: int) -> float:
    """One direct MERGE of 100 updates, newer than every row; its seconds."""
    first = 1 + (batch * 100) % (rows - 100)
    spark.range(0, 100).selectExpr(
        f"{first} + id AS id",
        f"concat('batch {batch} ', id) AS name",
        "'u' AS _cdc_op",
        f"array(1L, 1L, {100 + batch}L, 0L, 0L, id) AS _cdc_position",
        "current_timestamp() AS _cdc_source_ts",
        "0 AS _cdc_partition",
        "id AS _cdc_offset",
    ).createOrReplaceTempView(NS + "_events")
    spark.sql(dedupe_sql(ITEMS, NS + "_events")).createOrReplaceTempView(NS + "_deduped")
    sql = direct_merge_sql(ITEMS, TARGET, NS + "_deduped", soft=False)
    began = time.monotonic()
    with_commit_props(spark, _props(batch), lambda: spark.sql(sql))
    return time.monotonic() - began


def _grow(spark: Any, count: int, summary: dict[str, str]) -> None:
    """``count`` more snapshots of no files, each with ``summary``'s properties, in one
    transaction."""
    txn = _load(spark).newTransaction()
    for _ in range(count):
        append = txn.newFastAppend()
        for key, value in summary.items():
            append.set(key, value)
        append.commit()
    txn.commitTransaction()


def _metadata_bytes(spark: Any) -> int:
    location = str(_load(spark).operations().current().metadataFileLocation())
    return os.path.getsize(location.removeprefix("file:"))


def _timed_loads(spark: Any) -> float:
    seconds = []
    for _ in range(10):
        began = time.monotonic()
        _load(spark).currentSnapshot()
        seconds.append(time.monotonic() - began)
    return statistics.median(seconds)


def main(levels: list[int], merges: int, rows: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="snapshot-history-"))
    config = make_config(work, NS, "mysql", "db.items", "db")
    spark = build_spark_session(load_config(config, environ={}), "snapshot-history")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {VARIANTS}")
    copy_table(spark, "history", rows)
    batch = 0
    for _ in range(5):  # the JVM warms up; the last MERGE's summary is the one repeated
        batch += 1
        _merge(spark, batch, rows)
    java_summary = _load(spark).currentSnapshot().summary()
    summary = {str(k): str(java_summary.get(k)) for k in java_summary.keySet().toArray()}
    print(f"a batch's snapshot summary: {len(json.dumps(summary))} bytes of JSON", flush=True)
    # the properties the job sets; Iceberg computes the rest of a summary at each commit
    summary = {k: v for k, v in summary.items() if k.startswith(("cdcmirror.", "spark."))}
    results = []
    for level in levels:
        have = int(spark.sql(f"SELECT count(*) FROM {TARGET}.snapshots").head()[0])
        if level > have:
            began = time.monotonic()
            _grow(spark, level - have, summary)
            print(f"grown to {level} snapshots in {time.monotonic() - began:.0f} s", flush=True)
        seconds = []
        for _ in range(merges):
            batch += 1
            seconds.append(_merge(spark, batch, rows))
        load, size = _timed_loads(spark), _metadata_bytes(spark)
        merge = statistics.median(seconds[1:] or seconds)
        results.append((level, size, load, merge))
        print(
            f"{level} snapshots: metadata {size / 1e6:.2f} MB, load {load * 1000:.0f} ms, "
            f"MERGE {merge:.2f} s",
            flush=True,
        )
    spark.stop()
    base = results[0]
    print("\n| snapshots | metadata JSON | one table load | direct MERGE of 100 | vs first |")
    print("| --- | --- | --- | --- | --- |")
    for level, size, load, merge in results:
        print(
            f"| {level:,} | {size / 1e6:.2f} MB | {load * 1000:.0f} ms | {merge:.2f} s "
            f"| {merge / base[3]:.2f}x |"
        )


if __name__ == "__main__":
    args = sys.argv[1:]
    main(
        [int(x) for x in args[0].split(",")] if args else [10, 900, 1800, 3600],
        int(args[1]) if len(args) > 1 else 8,
        int(args[2]) if len(args) > 2 else 10_000,
    )
