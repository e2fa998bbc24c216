"""Benchmark: the initial load of a PostgreSQL table of N rows three ways, in one process.

1. plain Spark: ``spark.read.jdbc`` of the table (native types, the same number of parallel
   reads, split on the key) appended to a new Iceberg table: the bound on this machine;
2. cdcmirror's Spark load: `cdcmirror bootstrap --initial-load spark` (slot with exported
   snapshot, block-range reads, every column converted to the stream's value, one commit);
3. cdcmirror's re-load of the loaded table (`cdcmirror repair --method reload`: the same
   reads, and the table's rows replaced in one commit);
4. the Debezium snapshot path: `cdcmirror bootstrap --initial-load debezium`, then
   `cdcmirror mirror --available-now` until the table holds the N rows (only for N up to
   ``--debezium-max``: at ~10k rows/s it takes long).

Plain and Spark load run twice, alternating (the first pays the JVM's and the database's
warm-up); the ratios use the second round. The table has the 10 mixed columns of
``mirror_batch.py``. Needs `make provision stack-up`.

    .venv/bin/python benchmarks/initial_load.py [N,...] [--debezium-max M]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mirror_batch import COLUMNS, FILL, wait_for_events  # a sibling script

from cdcmirror.commands.bootstrap import bootstrap
from cdcmirror.commands.mirror import mirror
from cdcmirror.config import Config, load_config
from cdcmirror.spark.session import build_spark_session
from support import services

ROWS_PER_PARTITION = 500_000


def make_source(n: int) -> str:
    schema = services.unique("bench_load")
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.items ({COLUMNS})")
        conn.execute(f"INSERT INTO {schema}.items {FILL.format(n=n)}")
        conn.execute(f"VACUUM ANALYZE {schema}.items")
        services.publish_schema(conn, schema)
    return schema


def config_for(schema: str, name: str, mode: str, work: Path) -> Config:
    env = {
        **services.schema_source_env(schema),
        "CDCMIRROR_SOURCE__NAME": name,
        "CDCMIRROR_ICEBERG__NAMESPACE": name,
        "CDCMIRROR_BOOTSTRAP__INITIAL_LOAD": mode,
        "CDCMIRROR_BOOTSTRAP__ROWS_PER_PARTITION": str(ROWS_PER_PARTITION),
        "CDCMIRROR_MIRROR__CHECKPOINT_LOCATION": f".cdcmirror/checkpoints/{name}",
        "CDCMIRROR_MIRROR__MAX_EVENTS_PER_BATCH": "1000000",
    }
    return load_config(environ=env, cwd=work)


def plain(spark: Any, schema: str, n: int, round_: int) -> float:
    """Seconds of a plain JDBC read appended to a new Iceberg table."""
    target = f"{schema}_plain{round_}.items"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {schema}_plain{round_}")
    parts = max(spark.sparkContext.defaultParallelism, -(-n // ROWS_PER_PARTITION))
    # JDBC reads varchar(40) as a VARCHAR(40) type whose write check Spark 4.0's optimizer
    # breaks (PLAN_VALIDATION_FAILED_RULE_IN_BATCH, SimplifyCasts): read it as a string
    spark.conf.set("spark.sql.legacy.charVarcharAsString", "true")
    started = time.monotonic()
    frame = spark.read.jdbc(
        f"jdbc:postgresql://127.0.0.1:5432/{services.TEST_DATABASE}",
        f"{schema}.items",
        column="id",
        lowerBound=1,
        upperBound=n + 1,
        numPartitions=parts,
        properties={
            "driver": "org.postgresql.Driver",
            "user": "cdc",
            "password": services.CDC_PASSWORD,
            "fetchsize": "10000",
        },
    )
    frame.writeTo(target).using("iceberg").create()
    seconds = time.monotonic() - started
    assert spark.table(target).count() == n
    return seconds


def spark_load(schema: str, n: int, round_: int, work: Path) -> tuple[float, float]:
    """(seconds of the table's load, seconds of the whole bootstrap)."""
    name = f"{schema}_l{round_}"
    started = time.monotonic()
    result = bootstrap(config_for(schema, name, "spark", work), initial_load="spark")
    total = time.monotonic() - started
    assert result.load is not None and result.load.tables[0].rows == n, result.load
    return result.load.tables[0].seconds, total


def reload(schema: str, n: int, work: Path) -> tuple[float, float]:
    """(seconds of the table's re-load, seconds of the whole repair) of round 2's table."""
    from cdcmirror.commands.reload import reload_table

    started = time.monotonic()
    report = reload_table(
        config_for(schema, f"{schema}_l2", "spark", work), "items", lambda p: None, print
    )
    total = time.monotonic() - started
    assert report.tables[0].rows == n, report
    return report.tables[0].seconds, total


def debezium_path(schema: str, n: int, work: Path) -> float:
    """Seconds from bootstrap to the mirror holding the N rows."""
    name = f"{schema}_d"
    config = config_for(schema, name, "debezium", work)
    started = time.monotonic()
    bootstrap(config, initial_load="debezium")
    wait_for_events(f"{name}.{schema}.items", n, timeout=7200)
    mirror(config, available_now=True)
    return time.monotonic() - started


def main(sizes: list[int], debezium_max: int) -> None:
    os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        spark = build_spark_session(config_for("x", "x", "spark", work), "bench-initial-load")
        for n in sizes:
            schema = make_source(n)
            try:
                rounds = []
                for r in (1, 2):
                    p = plain(spark, schema, n, r)
                    load, total = spark_load(schema, n, r, work)
                    rounds.append((p, load, total))
                    print(
                        f"{n:,} rows, round {r}: plain JDBC -> Iceberg {p:.1f} s "
                        f"({n / p:,.0f} rows/s); cdcmirror Spark load {load:.1f} s "
                        f"({n / load:,.0f} rows/s, bootstrap in all {total:.1f} s)",
                        flush=True,
                    )
                p, load, total = rounds[1]
                again, repair_total = reload(schema, n, work)
                line = (
                    f"{n:,} rows: Spark load / plain append = {p / load:.2f}x; re-load "
                    f"{again:.1f} s (repair in all {repair_total:.1f} s) / plain append = "
                    f"{p / again:.2f}x"
                )
                if n <= debezium_max:
                    d = debezium_path(schema, n, work)
                    line += (
                        f"; Debezium snapshot path {d:.1f} s ({n / d:,.0f} rows/s): "
                        f"Spark load (bootstrap in all) is {d / total:.1f}x faster"
                    )
                print(line, flush=True)
            finally:
                for suffix in ("_l1", "_l2", "_d"):
                    services.connect_client().delete(f"cdcmirror-{schema}{suffix}")
                    services.drop_slot(f"cdcmirror_{schema}{suffix}")
                services.drop_published_schema(schema)


if __name__ == "__main__":
    args = sys.argv[1:]
    debezium_max = 1_000_000
    if "--debezium-max" in args:
        i = args.index("--debezium-max")
        debezium_max = int(args[i + 1])
        del args[i : i + 2]
    sizes = [int(x) for x in args[0].split(",")] if args else [1_000_000]
    with services.forgetting_made():
        main(sizes, debezium_max)
