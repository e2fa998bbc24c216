"""A PostgreSQL table of a million rows made by ``generate_series`` (and the same rows made by
Spark), for the tests at the scale where the applier takes its big-table paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support import services
from support.mirror_fixture import make_config

ROWS = 1_000_000
# column -> (PostgreSQL type, PostgreSQL value of i, Spark value of i)
COLUMNS = {
    "name": ("text", "'customer ' || i || ' ÆØÅ'", "concat('customer ', i, ' ÆØÅ')"),
    "qty": ("integer", "(i % 1000)::int", "CAST(i % 1000 AS INT)"),
    "price": ("numeric(12,2)", "(i % 100000) * 0.01", "CAST((i % 100000) * 0.01 AS DECIMAL(12,2))"),
    "born": (
        "date",
        "DATE '1950-01-01' + (i % 20000)::int",
        "date_add(DATE'1950-01-01', CAST(i % 20000 AS INT))",
    ),
    "seen_at": (
        "timestamp(6)",
        "TIMESTAMP '2020-01-01' + (i * interval '1 second')",
        "timestampadd(SECOND, i, TIMESTAMP_NTZ'2020-01-01 00:00:00')",
    ),
    "flag": ("boolean", "i % 3 = 0", "i % 3 = 0"),
    "data": ("bytea", "decode(md5(i::text), 'hex')", "unhex(md5(CAST(i AS STRING)))"),
}


def fill_source(conn: Any, schema: str, rows: int = ROWS) -> str:
    """``<schema>.items`` made and filled with ``rows`` rows (ids 1..rows); its name."""
    table = f"{schema}.items"
    columns = ", ".join(f"{n} {t}" for n, (t, _, _) in COLUMNS.items())
    conn.execute(f"CREATE SCHEMA {schema}")
    conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, {columns})")
    values = ", ".join(pg for _, pg, _ in COLUMNS.values())
    conn.execute(f"INSERT INTO {table} SELECT i, {values} FROM generate_series(1, {rows}) AS i")
    return table


def million_source(prefix: str, base_dir: Path, **extra: Any) -> tuple[str, Path]:
    """A new schema with its million-row ``items`` table, published to Debezium, and the
    config that mirrors it (``extra``: more of its sections); the schema and the config."""
    schema = services.unique(prefix)
    with services.pg_connect() as conn:
        fill_source(conn, schema)
        services.publish_schema(conn, schema)
    config = make_config(
        base_dir, schema, "postgresql", f"{schema}.*", services.TEST_DATABASE, **extra
    )
    return schema, config
