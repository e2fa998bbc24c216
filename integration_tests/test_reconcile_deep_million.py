"""`cdcmirror reconcile --deep` on a table of one million rows finds exactly one changed,
one missing and one extra row, and names their keys.

The source table is filled by PostgreSQL's generate_series and the Iceberg table (created
by `cdcmirror bootstrap`) by Spark from the same formulas, so the two start equal without
pushing a million events through Debezium; the comparison itself is the real one.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cdcmirror.stack.control import Stack
from integration_tests import reconcile_scenarios as rc
from integration_tests import services
from integration_tests.bootstrap_env import run_cli
from integration_tests.conftest import SparkWorld
from integration_tests.mirror_fixture import Mirrored, make_config

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


@pytest.fixture(scope="module")
def million(stack: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    schema = services.unique("deep_pg")
    table = f"{schema}.items"
    columns = ", ".join(f"{n} {t}" for n, (t, _, _) in COLUMNS.items())
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, {columns})")
        values = ", ".join(pg for _, pg, _ in COLUMNS.values())
        conn.execute(f"INSERT INTO {table} SELECT i, {values} FROM generate_series(1, {ROWS}) AS i")
        services.publish_schema(conn, schema)
    config = make_config(
        spark_world.config.base_dir, schema, "postgresql", f"{schema}.*", services.TEST_DATABASE
    )
    result = run_cli(config, "bootstrap", "--no-connector")
    assert result.exit_code == 0, result.output
    identifier = f"{schema}_mirror.items"
    values = ", ".join(f"{sp} AS {n}" for n, (_, _, sp) in COLUMNS.items())
    spark_world.spark.sql(
        f"INSERT INTO {identifier} SELECT id, {values}, 'r' AS _cdc_op, "
        "array(0L, 0L, 0L, 0L) AS _cdc_position, current_timestamp() AS _cdc_source_ts, "
        f"NULL AS _cdc_deleted FROM (SELECT id, id AS i FROM range(1, {ROWS + 1}))"
    )
    try:
        yield Mirrored(schema, None, config, spark_world.spark, None, [])  # type: ignore[arg-type]
    finally:
        services.drop_published_schema(schema)


@pytest.mark.full
def test_deep_finds_one_changed_one_missing_one_extra_in_a_million(million: Mirrored) -> None:
    code, report = rc.reconcile(million, "--deep", "--settle", "0")
    table = rc.only_table(report)
    assert code == 0, table
    assert table["source_rows"] == table["mirror_rows"] == ROWS
    assert table["deep"]["columns_not_compared"] == []

    identifier = million.identifier
    spark = million.spark
    spark.sql(f"UPDATE {identifier} SET qty = qty + 1 WHERE id = 123457")
    spark.sql(f"DELETE FROM {identifier} WHERE id = 765432")
    spark.sql(
        f"INSERT INTO {identifier} SELECT 2000000 AS id, * EXCEPT (id) "
        f"FROM {identifier} WHERE id = 42"
    )
    code, report = rc.reconcile(million, "--deep", "--settle", "0")
    table = rc.only_table(report)
    deep = table["deep"]
    assert code == 1 and table["status"] == "drift" and table["difference"] == 0, table
    assert deep["changed_keys"] == [{"id": "123457"}]
    assert deep["missing_keys"] == [{"id": "765432"}]
    assert deep["extra_keys"] == [{"id": "2000000"}]
    assert len(deep["drifted_buckets"]) == 3
