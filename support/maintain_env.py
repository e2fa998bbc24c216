"""A mirrored table given many small MERGE commits, the way a streaming mirror leaves it:
each commit updates some rows (position delete files) and inserts a few (data files)."""

from __future__ import annotations

from typing import Any

from support import services
from support.bootstrap_env import run_cli
from support.mirror_fixture import make_config

ROWS = 20_000
SOURCE_COLUMNS = "id bigint PRIMARY KEY, name text, qty integer, price numeric(12,2)"


def _rows(first: int, count: int, version: int) -> str:
    """Spark SQL for ``count`` rows from id ``first``, values depending on ``version``."""
    return (
        f"SELECT id, concat('row ', id, ' v', {version}) AS name, "
        f"CAST((id * 7 + {version}) % 1000 AS INT) AS qty, "
        f"CAST((id % 5000) * 0.01 + {version} AS DECIMAL(12,2)) AS price, "
        "'u' AS _cdc_op, array(1L, id, 0L, 0L) AS _cdc_position, "
        "current_timestamp() AS _cdc_source_ts, CAST(NULL AS BOOLEAN) AS _cdc_deleted "
        f"FROM range({first}, {first + count}) AS r(id)"
    )


def bootstrapped_table(work: Any, schema: str) -> tuple[Any, str]:
    """An empty source table and its bootstrapped Iceberg table (no connector)."""
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.items ({SOURCE_COLUMNS})")
        services.publish_schema(conn, schema)
    config = make_config(
        work,
        schema,
        "postgresql",
        f"{schema}.*",
        services.TEST_DATABASE,
        maintain={"snapshot_retention_hours": 0, "retain_last": 1},
    )
    result = run_cli(config, "bootstrap", "--no-connector")
    assert result.exit_code == 0, result.output
    return config, f"{schema}_mirror.items"


def load_then_small_merges(spark: Any, identifier: str, commits: int) -> None:
    """ROWS rows in one commit, then ``commits`` MERGEs of 40 updated and 5 new rows."""
    spark.sql(f"INSERT INTO {identifier} {_rows(1, ROWS, 0)}")
    for i in range(1, commits + 1):
        first = 1 + (i * 97) % (ROWS - 40)
        view = f"_small_merge_{i}"
        spark.sql(
            f"{_rows(first, 40, i)} UNION ALL {_rows(ROWS + i * 5, 5, i)}"
        ).createOrReplaceTempView(view)
        spark.sql(
            f"MERGE INTO {identifier} t USING {view} s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
        spark.catalog.dropTempView(view)


def table_rows(spark: Any, identifier: str) -> list[tuple[Any, ...]]:
    return [
        tuple(r)
        for r in spark.sql(f"SELECT id, name, qty, price FROM {identifier} ORDER BY id").collect()
    ]
