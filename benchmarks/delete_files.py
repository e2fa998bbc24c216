"""Benchmark: what piled-up delete files cost a MERGE, what compaction gives back, and what
Iceberg's format 3 (deletion vectors) would give (issue 17: "consider Iceberg format v3").

Two tables of 10,000 rows (id, a number, a text), merge-on-read as cdcmirror makes them, one
in format 2 and one in format 3, made by Spark in the embedded catalog (pyiceberg 0.12, which
creates and evolves cdcmirror's tables, cannot write format-3 metadata, so cdcmirror refuses
``iceberg.format_version = 3``). Then M rounds, taking turns between the two tables: a plain
Spark MERGE of 100 random keys (a fifth deleted, the rest updated; UPDATE when matched,
INSERT when not), as a mirror batch of random keys does. Prints each table's MERGE seconds,
median over the first 15 rounds and over the rest, and its data and delete files. Then the
format-2 table is compacted with ``rewrite_data_files`` (as `cdcmirror maintain` runs it)
and 15 more MERGEs are timed on it. No service needed.

    .venv/bin/python benchmarks/delete_files.py [M]   # default 65
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
from cdcmirror.config.catalog import CATALOG_NAME
from cdcmirror.spark.session import build_spark_session
from support.mirror_fixture import make_config

NS = "delete_files"
ROWS = 10_000
EARLY = 15  # rounds counted as "fresh"
MOR = (
    "'write.merge.mode'='merge-on-read', 'write.delete.mode'='merge-on-read', "
    "'write.update.mode'='merge-on-read'"
)


def _make(spark: Any, name: str, version: int) -> str:
    table = f"{NS}.{name}"
    spark.sql(
        f"CREATE TABLE {table} (id bigint, a int, c string) USING iceberg "
        f"TBLPROPERTIES ('format-version'='{version}', {MOR})"
    )
    spark.sql(
        f"INSERT INTO {table} SELECT id, 0, md5(CAST(id AS STRING)) FROM range(1, {ROWS + 1})"
    )
    return table


def _merge(spark: Any, table: str, r: int, rnd: random.Random) -> float:
    """One MERGE of 100 random keys (every fifth deleted); its seconds."""
    keys = rnd.sample(range(1, ROWS + 1), 100)
    rows = [(k, r, k % 5 == 0) for k in keys]
    spark.createDataFrame(rows, "id bigint, a int, d boolean").createOrReplaceTempView("_changes")
    began = time.monotonic()
    spark.sql(
        f"MERGE INTO {table} t USING _changes s ON t.id = s.id "
        "WHEN MATCHED AND s.d THEN DELETE WHEN MATCHED THEN UPDATE SET a = s.a "
        "WHEN NOT MATCHED AND NOT s.d THEN INSERT (id, a) VALUES (s.id, s.a)"
    )
    return time.monotonic() - began


def _files(spark: Any, table: str) -> str:
    counts = dict(
        spark.sql(f"SELECT content, count(*) FROM {table}.files GROUP BY content").collect()
    )
    return f"{counts.get(0, 0)} data files, {counts.get(1, 0)} delete files"


def _line(label: str, seconds: list[float], files: str) -> None:
    then = f" ({files} after them)" if files else ""
    print(f"{label}: median {statistics.median(seconds):.3f} s over {len(seconds)} MERGEs{then}")


def main(rounds: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="delete-files-"))
    config = make_config(work, NS, "mysql", "db.items", "db")
    spark = build_spark_session(load_config(config, environ={}), "delete-files")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {NS}")
    tables = {2: _make(spark, "v2", 2), 3: _make(spark, "v3", 3)}
    seconds: dict[int, list[float]] = {2: [], 3: []}
    rnd = random.Random(20261204)
    for r in range(rounds):
        for version in (2, 3) if r % 2 else (3, 2):  # taking turns: neither always first
            seconds[version].append(_merge(spark, tables[version], r, rnd))
    for version, table in tables.items():
        files = _files(spark, table)
        _line(f"format {version}, rounds 1-{EARLY}", seconds[version][:EARLY], "")
        _line(f"format {version}, rounds {EARLY + 1}-{rounds}", seconds[version][EARLY:], files)
    began = time.monotonic()
    spark.sql(
        f"CALL {CATALOG_NAME}.system.rewrite_data_files(table => '{CATALOG_NAME}.{tables[2]}', "
        "options => map("
        "'min-input-files', '2', 'delete-file-threshold', '1', 'remove-dangling-deletes', 'true'))"
    ).collect()
    print(f"format 2: rewrite_data_files took {time.monotonic() - began:.2f} s")
    after = [_merge(spark, tables[2], rounds + r, rnd) for r in range(EARLY)]
    _line("format 2, after rewrite_data_files", after, _files(spark, tables[2]))
    spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 65)
