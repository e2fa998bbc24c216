"""Benchmark: does a batch cost follow the batch or the table? One batch of C updates
(default 10,000) into mirrored tables of growing size, keys uniformly random, skewed to
recent rows (90 % on the newest 1 % of keys, as OLTP tables behave) or all on the newest
1 %, beside a plain Spark ``MERGE … UPDATE SET *`` of the same C rows into the same table,
in the same run.

For each size M and key spread: a PostgreSQL table holds the C rows that will change; it is
bootstrapped and mirrored (Debezium's snapshot); then plain Spark appends the other M - C
rows to the Iceberg table in key order (the way an OLTP table grows), the C rows are updated
at the source and the mirror applies that one batch. Needs the provisioned PostgreSQL and
the stack (`make provision stack-up`). Before the batch measured, one of a single update
takes the table's high-water mark once (the plain append records none).

    .venv/bin/python benchmarks/table_size.py [SIZES] [C]   # default 100000,1000000 10000
"""

from __future__ import annotations

import json
import logging
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.mirror_batch import COLUMNS, BatchLines, wait_for_events
from cdcmirror.commands.bootstrap import bootstrap
from cdcmirror.commands.mirror import mirror
from cdcmirror.config import Config, load_config
from cdcmirror.spark.session import build_spark_session
from support import services

ROW = (
    "{i}, {i} % 1000, {i} / 7.0, md5({i}::text), 'v' || {i}, now(), now()::timestamp, "
    "current_date, {i} % 2 = 0, {i} * 1.5"
)
SYNTHETIC = [  # the same values as ROW, made by Spark for the rows the source does not hold
    "id",
    "CAST(id % 1000 AS INT) AS a",
    "CAST(id / 7.0 AS DECIMAL(12,2)) AS b",
    "md5(CAST(id AS STRING)) AS c",
    "concat('v', id) AS d",
    "current_timestamp() AS e",
    "CAST(current_timestamp() AS TIMESTAMP_NTZ) AS f",
    "current_date() AS g",
    "id % 2 = 0 AS h",
    "id * 1.5 AS k",
    "'r' AS _cdc_op",
    "array(0L, 0L, 0L, 0L, id) AS _cdc_position",
    "current_timestamp() AS _cdc_source_ts",
    "false AS _cdc_deleted",
]


SPREADS = ("uniform", "recent", "newest")


def keys(size: int, changes: int, spread: str, rnd: random.Random) -> list[int]:
    if spread == "uniform":
        return rnd.sample(range(1, size + 1), changes)
    if spread == "newest":  # every change on the newest 1 % (at least C) of the keys
        return rnd.sample(range(size - max(changes, size // 100) + 1, size + 1), changes)
    recent = max(changes, size // 100)
    hot = rnd.sample(range(size - recent + 1, size + 1), changes * 9 // 10)
    chosen = set(hot)
    while len(chosen) < changes:
        chosen.add(rnd.randint(1, size))
    return sorted(chosen)


def run(size: int, changes: int, spread: str, work: Path) -> dict[str, float]:
    schema = services.unique("bsize")
    ids = keys(size, changes, spread, random.Random(size))
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.items ({COLUMNS})")
        row = ROW.format(i="i").replace("%", "%%")
        conn.execute(f"INSERT INTO {schema}.items SELECT {row} FROM unnest(%s::bigint[]) i", [ids])
        services.publish_schema(conn, schema)
    env = {
        **services.schema_source_env(schema),
        "CDCMIRROR_MIRROR__CHECKPOINT_LOCATION": f".cdcmirror/checkpoints/{schema}",
    }
    os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
    topic = f"{schema}.{schema}.items"
    handler = BatchLines()
    log = logging.getLogger("cdcmirror.mirror")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        config = load_config(environ=env, cwd=work)
        bootstrap(config)
        wait_for_events(topic, changes)
        mirror(config, available_now=True)
        identifier = f"{schema}.items"
        grow(config, identifier, ids, size)
        # The plain append that grew the table records no high-water mark: the table's next
        # batch reads it from the stored positions once (``spark/cdc/direct.batch_mark``),
        # as after an initial load. A batch of one update does that here, so the batch
        # measured is one of a table whose mark its own commits record.
        with services.pg_connect() as conn:
            conn.execute(f"UPDATE {schema}.items SET a = a + 1 WHERE id = %s", (ids[0],))
        wait_for_events(topic, changes + 1)
        mirror(config, available_now=True)
        handler.lines.clear()
        with services.pg_connect() as conn:
            conn.execute(f"UPDATE {schema}.items SET a = a + 1, c = md5(c)")
        wait_for_events(topic, 2 * changes + 2)
        handler.lines.clear()
        mirror(config, available_now=True)
        batch = handler.seconds()
        tables = [
            json.loads(line.split("mirror batch ", 1)[1])
            for line in handler.lines
            if line.startswith("mirror batch ")
        ]
        merge = sum(t["phase_seconds"].get("merge", 0.0) for t in tables)
        classify = sum(t["phase_seconds"].get("dedupe_classify", 0.0) for t in tables)
        plain = plain_merge(config, identifier, ids)
    finally:
        log.removeHandler(handler)
        services.drop_published_schema(schema, f"cdcmirror-{schema}")
    return {"batch": batch, "merge": merge, "classify": classify, "plain": plain}


def grow(config: Config, identifier: str, ids: list[int], size: int) -> None:
    """Append the rows the source does not hold, in key order, with plain Spark."""
    spark = build_spark_session(config)
    taken = spark.createDataFrame([(i,) for i in ids], "id BIGINT")
    rows = spark.range(1, size + 1).join(taken, "id", "left_anti").selectExpr(*SYNTHETIC)
    target = spark.table(identifier)
    casts = [f"CAST({f.name} AS {f.dataType.simpleString()}) AS {f.name}" for f in target.schema]
    started = time.monotonic()
    rows.selectExpr(*casts).orderBy("id").writeTo(identifier).append()
    print(f"  grew {identifier} to {size:,} rows in {time.monotonic() - started:.1f}s")


def plain_merge(config: Config, identifier: str, ids: list[int]) -> float:
    """Seconds of a plain Spark MERGE of the same rows (read back, cached) into the table."""
    spark: Any = build_spark_session(config)
    wanted = spark.createDataFrame([(i,) for i in ids], "id BIGINT")
    source = spark.table(identifier).join(wanted, "id").localCheckpoint(eager=True)
    source.createOrReplaceTempView("bench_plain_source")
    started = time.monotonic()
    spark.sql(
        f"MERGE INTO {identifier} t USING bench_plain_source s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    return time.monotonic() - started


def main(sizes: list[int], changes: int) -> None:
    results: dict[tuple[int, str], dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as work:
        for size in sizes:
            for spread in SPREADS:
                results[size, spread] = run(size, changes, spread, Path(work))
                r = results[size, spread]
                print(f"{size:,} rows, {spread}: {r}")
    print(f"\none batch of {changes:,} updates into a table of N rows")
    print(
        "| rows | keys | cdcmirror batch s | its dedupe + classify s | its MERGE s "
        "| plain MERGE s | ratio |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for (size, spread), r in results.items():
        print(
            f"| {size:,} | {spread} | {r['batch']:.2f} | {r['classify']:.2f} | "
            f"{r['merge']:.2f} | {r['plain']:.2f} | {r['plain'] / r['batch']:.2f}x |"
        )
    for spread in SPREADS:
        own = [results[s, spread]["batch"] for s in sizes]
        print(f"{spread}: largest/smallest table batch time {own[-1] / own[0]:.2f}x")


if __name__ == "__main__":
    with services.forgetting_made():
        main(
            [int(x) for x in sys.argv[1].split(",")] if len(sys.argv) > 1 else [100_000, 1_000_000],
            int(sys.argv[2]) if len(sys.argv) > 2 else 10_000,
        )
