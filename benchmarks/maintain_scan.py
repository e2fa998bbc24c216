"""Benchmark: a full scan of a mirrored table before and after `cdcmirror maintain`.

Bootstraps one PostgreSQL table (no connector), loads 20,000 rows, then gives it N small
MERGE commits (default 200; 40 updated and 5 new rows each, as a streaming mirror does),
times a full scan (count, sums and a max over every row, 3 runs, best of), runs
`cdcmirror maintain`, and times the scan again. Prints file counts and sizes and the
speed-up, both measured in this one run. Needs the provisioned PostgreSQL
(`make provision`).

    .venv/bin/python benchmarks/maintain_scan.py [N]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from cdcmirror.commands.maintain import maintain
from cdcmirror.config import load_config
from cdcmirror.maintain.report import result_text
from cdcmirror.spark.session import build_spark_session
from support import maintain_env as me
from support import services

SCAN = "SELECT count(*), sum(qty), sum(price), max(name) FROM {t}"


def best_scan(spark: object, identifier: str, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        spark.sql(SCAN.format(t=identifier)).collect()  # type: ignore[attr-defined]
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    commits = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
    work = Path(tempfile.mkdtemp(prefix="cdcmirror-bench-maintain-"))
    schema = services.unique("bench_maint")
    config_path, identifier = me.bootstrapped_table(work, schema)
    config = load_config(config_path)
    spark = build_spark_session(config, "cdcmirror-bench-maintain")
    try:
        started = time.perf_counter()
        me.load_then_small_merges(spark, identifier, commits)
        print(f"{commits} small MERGE commits in {time.perf_counter() - started:.0f} s")
        rows = me.table_rows(spark, identifier)
        before = best_scan(spark, identifier)
        started = time.perf_counter()
        results = maintain(config, ["items"], progress=lambda m: None)
        took = time.perf_counter() - started
        after = best_scan(spark, identifier)
        assert me.table_rows(spark, identifier) == rows, "maintain changed the rows"
        print(result_text(results))
        print(f"maintain took {took:.1f} s")
        print(
            f"full scan before: {before:.2f} s, after: {after:.2f} s ({before / after:.1f}x faster)"
        )
    finally:
        services.drop_published_schema(schema)


if __name__ == "__main__":
    with services.forgetting_made():
        main()
