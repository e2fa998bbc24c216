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
from support import reconcile_scenarios as rc
from support import services
from support.bootstrap_env import run_cli
from support.million_env import COLUMNS, ROWS, million_source
from support.mirror_fixture import Mirrored
from support.spark import SparkWorld


@pytest.fixture(scope="module")
def million(stack: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    schema, config = million_source("deep_pg", spark_world.config.base_dir)
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
