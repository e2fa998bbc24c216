"""Benchmark: a plain event stream's decode and write of one batch
(``spark/streams/apply.py``) beside a plain ``from_json`` → Iceberg append of the same rows,
on one local Spark, without Kafka.

N small JSON events (as ``stream_append.py`` produces them) are built as Kafka-shaped rows
(topic, partition, offset, timestamp, value) and cached, as the mirror caches a batch. Then,
each into a new Iceberg table, timed over three rounds (the first pays the JVM's warm-up;
the figures are the median of rounds 2 and 3):

- plain: ``from_json`` of the value with the stream's columns, appended with the Kafka
  coordinates;
- cdcmirror, a stream with a schema: the stream's decode (UTF-8 and object checks, the
  per-field fit check, the exactly-once filter) and its write with the counts (good, bad,
  held, newest/median/oldest Kafka time);
- cdcmirror, an inferred stream: the same after its pass for fields the table lacks.

    .venv/bin/python benchmarks/stream_decode.py [N]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cdcmirror.cdc_columns import IcebergColumn
from cdcmirror.config import load_config
from cdcmirror.iceberg_types import spark_type
from cdcmirror.mirror.stats import TableStats
from cdcmirror.spark.session import build_spark_session
from cdcmirror.spark.streams.apply import StreamBatch, StreamTable
from cdcmirror.streams.schema import KAFKA_COLUMNS
from cdcmirror.streams.spec import StreamSpec

COLUMNS = (
    IcebergColumn("user", "long"),
    IcebergColumn("page", "string"),
    IcebergColumn("ms", "double"),
    IcebergColumn("ts", "string"),
    IcebergColumn("n", "long"),
)
SCHEMA = "user BIGINT, page STRING, ms DOUBLE, ts STRING, n BIGINT"


def kafka_rows(spark: Any, n: int) -> Any:
    """N events as the Kafka source gives them, cached (as the applier caches its batch)."""
    value = (
        "to_json(named_struct('user', id * 7919 % 100000, 'page', "
        "concat('/product/', CAST(id % 5000 AS STRING)), 'ms', (id % 100000) / 100.0, "
        "'ts', '2026-11-26T10:00:00Z', 'n', id))"
    )
    rows = spark.range(n).selectExpr(
        "'bench.events' AS topic",
        "CAST(id % 2 AS INT) AS partition",
        "id DIV 2 AS offset",
        "timestamp_micros(1795000000000000 + id) AS timestamp",
        "CAST(id % 64 AS STRING) AS key",
        f"CAST({value} AS BINARY) AS value",
        "CAST(NULL AS ARRAY<STRUCT<key: STRING, value: BINARY>>) AS headers",
    )
    rows = rows.repartition(2).persist()
    rows.count()
    return rows


def new_table(spark: Any, name: str) -> str:
    """An empty table of the stream's columns and the Kafka ones, as bootstrap makes it."""
    columns = ", ".join(f"`{c.name}` {spark_type(c.type)}" for c in (*COLUMNS, *KAFKA_COLUMNS))
    spark.sql("CREATE NAMESPACE IF NOT EXISTS bench")
    spark.sql(f"CREATE TABLE bench.{name} ({columns}) USING iceberg")
    return f"bench.{name}"


def plain(spark: Any, rows: Any, name: str) -> float:
    from pyspark.sql import functions as F

    target = new_table(spark, name)
    started = time.monotonic()
    rows.select(
        F.from_json(F.col("value").cast("string"), SCHEMA).alias("e"),
        "topic",
        "partition",
        "offset",
        "timestamp",
    ).selectExpr(
        "e.*",
        "topic AS _kafka_topic",
        "partition AS _kafka_partition",
        "offset AS _kafka_offset",
        "timestamp AS _kafka_timestamp",
        "current_timestamp() AS _ingested_at",
    ).writeTo(target).append()
    return time.monotonic() - started


def cdcmirror(spark: Any, rows: Any, schema: str, name: str, ends: dict[int, int]) -> float:
    """The stream's batch as the applier hands it over (``ends``: the last offset per
    partition), through ``StreamBatch.apply``."""
    spec = StreamSpec(0, name, "json", schema, topic="bench.events")
    table = StreamTable(spec, new_table(spark, name), COLUMNS)
    batch = StreamBatch(spark, table, lambda t, _: t)
    stats = TableStats(table.identifier, events=0)
    parts = {"bench.events": (dict.fromkeys(ends, 0), ends)}
    started = time.monotonic()
    batch.apply(rows, "bench", 1, parts, stats)
    seconds = time.monotonic() - started
    assert stats.inserts == rows.count() and not stats.dead_lettered, stats
    return seconds


def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = load_config(environ={}, cwd=Path(tmp))
        spark = build_spark_session(config, "bench-stream-decode")
        rows = kafka_rows(spark, n)
        ends = {int(r[0]): int(r[1]) for r in rows.groupBy("partition").max("offset").collect()}
        runs: dict[str, list[float]] = {"plain": [], "schema": [], "infer": []}
        for r in (1, 2, 3):
            runs["plain"].append(plain(spark, rows, f"plain{r}"))
            runs["schema"].append(cdcmirror(spark, rows, "events.json", f"schema{r}", ends))
            runs["infer"].append(cdcmirror(spark, rows, "infer", f"infer{r}", ends))
            print(", ".join(f"{k} {v[-1]:.2f} s" for k, v in runs.items()), f"(round {r})")
        med = {k: statistics.median(v[1:]) for k, v in runs.items()}
        print(f"\n{n:,} JSON events, rounds 2-3, median seconds")
        print("| decode and write | seconds | plain / this |")
        print("| --- | --- | --- |")
        for k, label in (
            ("plain", "plain `from_json` → Iceberg append"),
            ("schema", "cdcmirror, a stream with a schema"),
            ("infer", "cdcmirror, an inferred stream"),
        ):
            print(f"| {label} | {med[k]:.2f} | {med['plain'] / med[k]:.2f}x |")
        spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
