"""The applier's MERGE text (``mirror/merge_sql.py``) executed by Spark on Iceberg tables,
for the cases a single batch cannot produce on its own (concurrent writers)."""

from __future__ import annotations

from cdcmirror.mirror.merge_sql import merge_sql
from cdcmirror.mirror.spec import MirrorColumn, MirrorTable
from integration_tests.conftest import SparkWorld

TABLE = MirrorTable(
    identifier="merge_it.items",
    topic="t",
    flavor="mariadb",
    source="db.items",
    key=("id",),
    mode="upsert",
    columns=(MirrorColumn("id", "long", "int64"), MirrorColumn("name", "string", "string")),
)
CHANGES = (
    "SELECT * FROM VALUES {rows} AS s(id, name, _cdc_op, _cdc_position, _cdc_source_ts, _action)"
)


def _setup(spark: object, target: str) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS merge_it")  # type: ignore[attr-defined]
    spark.sql(f"DROP TABLE IF EXISTS {target}")  # type: ignore[attr-defined]
    spark.sql(  # type: ignore[attr-defined]
        f"CREATE TABLE {target} (id BIGINT, name STRING, _cdc_op STRING, "
        "_cdc_position ARRAY<BIGINT>, _cdc_source_ts TIMESTAMP, _cdc_deleted BOOLEAN) "
        "USING iceberg TBLPROPERTIES ('format-version'='2')"
    )


def test_an_update_whose_row_a_concurrent_writer_deleted_is_not_inserted(
    spark_world: SparkWorld,
) -> None:
    """Classified as `update` (the row was stored), deleted by another writer before this
    MERGE: the row must stay deleted, not come back through the insert branch. A row
    classified `insert` is inserted."""
    spark = spark_world.spark
    target = "merge_it.items"
    _setup(spark, target)
    rows = (
        "(1, 'resurrected', 'u', array(1, 1, 50, 0, 0, 7), current_timestamp(), 'update'), "
        "(2, 'new', 'c', array(1, 1, 60, 0, 0, 8), current_timestamp(), 'insert')"
    )
    spark.sql(CHANGES.format(rows=rows)).createOrReplaceTempView("merge_it_changes")
    spark.sql(merge_sql(TABLE, target, "merge_it_changes", soft=False))
    got = [tuple(r) for r in spark.sql(f"SELECT id, name FROM {target} ORDER BY id").collect()]
    assert got == [(2, "new")]
