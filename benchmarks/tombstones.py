"""Benchmark: what a tombstone table that kept every delete costs a classified batch, and
what pruning it by age (``cdcmirror maintain``, ``spark/maintenance/prune.py``) costs and
gives back.

A mirrored table of R live rows whose keys are interleaved with D keys deleted 30 days ago
(their tombstones, appended in batches of 10,000 as the job appends them), in two copies:
both maintained as `cdcmirror maintain` does, one with pruning off
(``tombstone_retention_hours = 0``: compaction only), one with the default retention (168
hours: pruned, then compacted). Then a batch of B
updates of random live keys is classified against each (``merge_sql.classify_sql``, the
SQL a replayed or re-snapshotted batch runs, its actions counted), taking turns, 2M rounds;
medians of the second half. No service needed.

    .venv/bin/python benchmarks/tombstones.py [R=200000] [D=1000000] [B=10000] [M=5]
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from cdcmirror.config import load_config
from cdcmirror.config.settings import Maintain
from cdcmirror.maintain.run import MaintainSettings
from cdcmirror.mirror.merge_sql import classify_sql
from cdcmirror.mirror.positions import source_length
from cdcmirror.spark.maintenance.maintain import maintain_table
from cdcmirror.spark.session import build_spark_session
from cdcmirror.spark.tombstones import entombed
from support.iceberg_tables import ITEMS
from support.mirror_fixture import make_config

NS = "bench_tombstones"
CHUNK = 10_000  # tombstones per append, as the job's batches append them


def _tables(spark: Any, rows: int, deleted: int) -> tuple[str, list[str]]:
    """The target (every (D/R + 1)-th key deleted) and two copies of its tombstones."""
    every = deleted // rows + 1
    target = f"{NS}.items"
    spark.sql(
        f"CREATE TABLE {target} (id BIGINT, name STRING, _cdc_op STRING, "
        "_cdc_position ARRAY<BIGINT>, _cdc_source_ts TIMESTAMP, _cdc_deleted BOOLEAN) "
        "USING iceberg TBLPROPERTIES ('format-version'='2')"
    )
    spark.sql(
        f"INSERT INTO {target} SELECT id * {every}, md5(CAST(id AS STRING)), 'c', "
        "array(1L, 1L, 5000000L + id, 0L, 0L, id), current_timestamp(), false "
        f"FROM range(1, {rows + 1})"
    )
    copies = []
    for name in ("kept", "pruned"):
        table = f"{NS}.items_{name}__deleted"
        spark.sql(
            f"CREATE TABLE {table} (id BIGINT NOT NULL, _cdc_position ARRAY<BIGINT>, "
            "_cdc_source_ts TIMESTAMP) USING iceberg TBLPROPERTIES ('format-version'='2', "
            "'write.merge.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
            "'write.delete.mode'='merge-on-read')"
        )
        for start in range(0, deleted, CHUNK):  # keys between the live ones
            spark.sql(
                f"INSERT INTO {table} SELECT (id DIV {every - 1}) * {every} + 1 + "
                f"id % {every - 1}, array(1L, 1L, id, 0L, 0L, id), "
                f"current_timestamp() - INTERVAL 30 DAYS FROM range({start}, "
                f"{min(deleted, start + CHUNK)})"
            )
        copies.append(table)
    return target, copies


def _classify(spark: Any, target: str, tombstones: str, keys: list[int]) -> float:
    rows = ", ".join(f"({k}, 'b', 'u', array(1L, 1L, 9000000L, 0L, 0L, {k}))" for k in keys)
    spark.sql(
        f"SELECT *, current_timestamp() AS _cdc_source_ts FROM VALUES {rows} "
        "AS s(id, name, _cdc_op, _cdc_position)"
    ).createOrReplaceTempView("bench_batch")
    began = time.monotonic()
    known = entombed(spark, tombstones)
    sql = classify_sql(ITEMS, "bench_batch", target, known.stored, False, None, False,
                       known.pruned_below)  # fmt: skip
    counts = dict(spark.sql(f"SELECT _cdc_action, count(*) FROM ({sql}) GROUP BY 1").collect())
    seconds = time.monotonic() - began
    assert counts == {"update": len(keys)}, counts
    return seconds


def _files(spark: Any, table: str) -> str:
    rows, files = spark.sql(f"SELECT sum(record_count), count(*) FROM {table}.files").first()
    return f"{rows or 0} rows in {files} files"


def main(rows: int, deleted: int, size: int, rounds: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="tombstones-"))
    config = make_config(work, NS, "mysql", "db.items", "db")
    spark = build_spark_session(load_config(config, environ={}), "tombstones")
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {NS}")
    began = time.monotonic()
    target, (kept, pruned) = _tables(spark, rows, deleted)
    print(f"made in {time.monotonic() - began:.1f} s: {_files(spark, kept)} each", flush=True)
    n = source_length(ITEMS.dialect)
    for table, hours in ((kept, 0.0), (pruned, 168.0)):  # as `cdcmirror maintain` runs
        settings = replace(
            MaintainSettings.of(Maintain(), position_length=n), tombstone_retention_hours=hours
        )
        began = time.monotonic()
        done = maintain_table(spark, table, settings, lambda _: None, tombstones=True)
        print(
            f"maintain of {table} (tombstone_retention_hours = {hours:g}): "
            f"{time.monotonic() - began:.2f} s, {done.tombstones_pruned} tombstones pruned, "
            f"{done.before.data_files} -> {done.after.data_files} data files",
            flush=True,
        )
    every = deleted // rows + 1
    rnd = random.Random(20261204)
    seconds: dict[str, list[float]] = {kept: [], pruned: []}
    for r in range(2 * rounds):
        keys = [every * k for k in rnd.sample(range(1, rows + 1), size)]
        for table in (kept, pruned) if r % 2 else (pruned, kept):
            seconds[table].append(_classify(spark, target, table, keys))
            print(f"round {r} {table}: {seconds[table][-1]:.2f} s", flush=True)
    for table, label in ((kept, "every tombstone kept"), (pruned, "pruned")):
        warm = seconds[table][rounds:]
        print(
            f"{label} ({_files(spark, table)}): classification of {size} updates into {rows} "
            f"rows, median {statistics.median(warm):.2f} s over rounds {rounds + 1}-{2 * rounds}"
        )
    spark.stop()


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    defaults = [200_000, 1_000_000, 10_000, 5]
    main(*(args + defaults[len(args) :]))
