"""Soak: a streaming MERGE of small batches into one format-3 table for an hour, watching memory
(issue 69 item 4; apache/iceberg#17241 saw a Spark streaming MERGE on a format-3 table grow
executor memory until it was killed after 70-80 minutes without compaction).

One 10,000-row merge-on-read table in format 3 (deletion vectors), or format 2 with
``--format=2`` to compare, made by Spark in the embedded catalog as ``delete_files.py`` makes
it. A Structured Streaming query (a rate source, a trigger every ``--trigger`` seconds) runs a
MERGE of 100 random keys in each foreachBatch (a fifth deleted, the rest updated or inserted),
as a mirror batch of random keys does. No compaction and no snapshot expiry: the worst case,
as in the report. In local mode the driver is the executor, so one JVM holds both.

Every minute it prints: batches so far, the median MERGE seconds of the minute, the JVM's heap
in use after a full collection (what the JVM retains), its resident set from /proc, and the
table's data and delete files. The last line compares the last ten minutes with the first ten.

    .venv/bin/python benchmarks/v3_soak.py [MINUTES] [--format=3] [--trigger=2]  # default 60
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cdcmirror.config import load_config
from cdcmirror.spark.session import build_spark_session
from support.mirror_fixture import make_config

NS = "v3_soak"
ROWS = 10_000
KEYS_PER_BATCH = 100
MOR = (
    "'write.merge.mode'='merge-on-read', 'write.delete.mode'='merge-on-read', "
    "'write.update.mode'='merge-on-read'"
)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _heap_after_gc_mb(spark: Any) -> float:
    runtime = spark._jvm.java.lang.Runtime.getRuntime()
    runtime.gc()
    return float(runtime.totalMemory() - runtime.freeMemory()) / 2**20


def _files(spark: Any, table: str) -> tuple[int, int]:
    counts = dict(
        spark.sql(f"SELECT content, count(*) FROM {table}.files GROUP BY content").collect()
    )
    return int(counts.get(0, 0)), int(counts.get(1, 0))


def main(minutes: int, version: int, trigger: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="v3-soak-"))
    config = make_config(work, NS, "mysql", "db.items", "db")
    spark = build_spark_session(load_config(config, environ={}), "v3-soak")
    pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    table = f"{NS}.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {NS}")
    spark.sql(
        f"CREATE TABLE {table} (id bigint, a bigint, c string) USING iceberg "
        f"TBLPROPERTIES ('format-version'='{version}', {MOR})"
    )
    spark.sql(
        f"INSERT INTO {table} SELECT id, 0, md5(CAST(id AS STRING)) FROM range(1, {ROWS + 1})"
    )
    rnd = random.Random(20261206)
    seconds: list[float] = []

    def merge(_frame: Any, batch_id: int) -> None:
        keys = rnd.sample(range(1, ROWS + 1), KEYS_PER_BATCH)
        rows = [(k, batch_id, k % 5 == 0) for k in keys]
        changes = _frame.sparkSession.createDataFrame(rows, "id bigint, a bigint, d boolean")
        changes.createOrReplaceTempView("_changes")
        began = time.monotonic()
        _frame.sparkSession.sql(
            f"MERGE INTO {table} t USING _changes s ON t.id = s.id "
            "WHEN MATCHED AND s.d THEN DELETE WHEN MATCHED THEN UPDATE SET a = s.a "
            "WHEN NOT MATCHED AND NOT s.d THEN INSERT (id, a) VALUES (s.id, s.a)"
        )
        seconds.append(time.monotonic() - began)

    query = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 1)
        .load()
        .writeStream.foreachBatch(merge)
        .trigger(processingTime=f"{trigger} seconds")
        .option("checkpointLocation", str(work / "checkpoint"))
        .start()
    )
    print(f"format {version}, trigger {trigger} s, {minutes} minutes, JVM pid {pid}", flush=True)
    print("minute  batches  merge p50 s  heap after GC MB  RSS MB  data files  delete files")
    samples: list[tuple[float, float, float]] = []  # (merge p50, heap, rss) per minute
    counted = 0
    try:
        for minute in range(1, minutes + 1):
            time.sleep(60)
            if query.exception() is not None:
                raise RuntimeError(f"the streaming query failed: {query.exception()}")
            recent = seconds[counted:]
            counted = len(seconds)
            p50 = statistics.median(recent) if recent else float("nan")
            heap = _heap_after_gc_mb(spark)
            rss = _rss_mb(pid)
            data, deletes = _files(spark, table)
            samples.append((p50, heap, rss))
            print(
                f"{minute:6d}  {len(seconds):7d}  {p50:11.3f}  {heap:16.0f}  {rss:6.0f}"
                f"  {data:10d}  {deletes:12d}",
                flush=True,
            )
    finally:
        query.stop()
    ten = min(10, len(samples) // 2)
    if ten:
        first, last = samples[:ten], samples[-ten:]
        for label, i in (("MERGE p50 s", 0), ("heap after GC MB", 1), ("RSS MB", 2)):
            a = statistics.median(s[i] for s in first)
            b = statistics.median(s[i] for s in last)
            print(f"{label}: first {ten} min median {a:.2f}, last {ten} min median {b:.2f}")
    rows = spark.sql(f"SELECT count(*) FROM {table}").collect()[0][0]
    print(f"{len(seconds)} batches; the table holds {rows} rows")
    spark.stop()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    flags = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
    main(int(args[0]) if args else 60, int(flags.get("format", 3)), int(flags.get("trigger", 2)))
