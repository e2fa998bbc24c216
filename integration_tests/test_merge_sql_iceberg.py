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


def test_the_batch_key_range_bounds_the_read_and_changes_no_result(
    spark_world: SparkWorld,
) -> None:
    """Classification and MERGE with the batch's key range (``key_range.py``): the same
    actions and rows as without it, and the bound reaches Iceberg's scan of the table."""
    from cdcmirror.mirror.key_range import bounds_exprs, bounds_of
    from cdcmirror.mirror.merge_sql import classify_sql

    spark = spark_world.spark
    target = "merge_it.items"
    _setup(spark, target)
    for low in (1, 1000, 5000):  # three appends: three files with disjoint key ranges
        spark.sql(
            f"INSERT INTO {target} SELECT id, 'old', 'r', array(0, 0, 0, 0, id), "
            f"current_timestamp(), false FROM range({low}, {low + 100})"
        )
    rows = (
        "(1001, 'changed', 'u', array(1, 1, 50, 0, 0, 7), current_timestamp()), "
        "(1050, NULL, 'd', array(1, 1, 51, 0, 0, 8), current_timestamp()), "
        "(1200, 'new', 'c', array(1, 1, 52, 0, 0, 9), current_timestamp())"
    )
    spark.sql(
        f"SELECT * FROM VALUES {rows} AS s(id, name, _cdc_op, _cdc_position, _cdc_source_ts)"
    ).createOrReplaceTempView("merge_it_batch")
    agg = spark.sql(f"SELECT {', '.join(bounds_exprs(TABLE))} FROM merge_it_batch").first()
    bounds = bounds_of(TABLE, agg.asDict())
    assert bounds == {"id": (1001, 1200)}
    bounded = classify_sql(TABLE, "merge_it_batch", target, None, False, bounds)
    whole = classify_sql(TABLE, "merge_it_batch", target, None, False)

    def actions(sql: str) -> list[tuple[object, ...]]:
        query = f"SELECT id, _action FROM ({sql}) ORDER BY id"
        return [tuple(r) for r in spark.sql(query).collect()]

    assert actions(bounded) == [(1001, "update"), (1050, "delete"), (1200, "insert")]
    assert actions(whole) == actions(bounded)
    plan = spark.sql(f"EXPLAIN {bounded}").first()[0]
    scans = [line for line in plan.splitlines() if "BatchScan" in line and "items" in line]
    assert scans and all("1001" in s and "1200" in s for s in scans), plan  # pushed down
    spark.sql(bounded).createOrReplaceTempView("merge_it_changes")
    spark.sql(merge_sql(TABLE, target, "merge_it_changes", soft=False, bounds=bounds))
    got = {r.id: r.name for r in spark.sql(f"SELECT id, name FROM {target}").collect()}
    assert len(got) == 300 and got[1001] == "changed" and 1050 not in got
    assert got[1200] == "new" and got[1000] == "old" and got[5099] == "old"
