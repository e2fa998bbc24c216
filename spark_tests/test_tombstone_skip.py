"""An empty tombstone table is not joined by the classification (``spark/cdc/table.py``,
``tombstones.entombed``): on real Iceberg tables, the classification without it equals
the one that joins it while it is empty, and once it holds a tombstone it is joined again
(without it, an older change of a deleted key would be inserted)."""

from __future__ import annotations

from typing import Any

from cdcmirror.mirror.merge_sql import classify_sql
from cdcmirror.spark.tombstones import TombstoneTables, entombed
from support.iceberg_tables import ITEMS, items_target
from support.spark import SparkWorld

BATCH = (  # deduplicated events: 1 and 2 stored older, 3 never stored
    "SELECT * FROM VALUES "
    "(1L, 'b1', 'u', array(1L, 1L, 50L, 0L, 0L, 1L), current_timestamp()), "
    "(2L, NULL, 'd', array(1L, 1L, 50L, 0L, 0L, 2L), current_timestamp()), "
    "(3L, 'b3', 'c', array(1L, 1L, 20L, 0L, 0L, 3L), current_timestamp()) "
    "AS s(id, name, _cdc_op, _cdc_position, _cdc_source_ts)"
)


def holds_rows(spark: Any, tombstones: str) -> bool:
    """Whether the classification joins the tombstones (their snapshot, pinned)."""
    return entombed(spark, tombstones).stored is not None


def _actions(spark: Any, tombstones: str | None) -> list[tuple[Any, ...]]:
    sql = classify_sql(ITEMS, "tomb_it_batch", "merge_it.tomb_items", tombstones, soft=False)
    rows = spark.sql(sql).select("id", "_cdc_action", "_cdc_stored_position").collect()
    return sorted((r[0], r[1], None if r[2] is None else list(r[2])) for r in rows)


def test_an_empty_tombstone_table_is_not_joined(spark_world: SparkWorld) -> None:
    spark = spark_world.spark
    items_target(spark, "merge_it.tomb_items")
    spark.sql(
        "INSERT INTO merge_it.tomb_items SELECT id, 'old', 'r', array(0L, 0L, 0L, 0L, 0L, id), "
        "current_timestamp(), false FROM range(1, 3)"
    )
    spark.sql(BATCH).createOrReplaceTempView("tomb_it_batch")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS tomb_it")
    spark.sql("DROP TABLE IF EXISTS tomb_it.items__deleted")
    tombstones = TombstoneTables("tomb_it").ensure(spark, ITEMS)
    assert not holds_rows(spark, tombstones)  # made, no snapshot yet
    without = _actions(spark, None)
    assert without == _actions(spark, tombstones)
    assert [(r[0], r[1]) for r in without] == [(1, "update"), (2, "delete"), (3, "insert")]
    # key 3 deleted at a position after the batch's insert of it: the insert is stale
    spark.sql(
        f"INSERT INTO {tombstones} VALUES (3L, array(1L, 1L, 30L, 0L, 0L, 3L), current_timestamp())"
    )
    assert holds_rows(spark, tombstones)
    joined = _actions(spark, tombstones)
    assert joined[2] == (3, "stale", [1, 1, 30, 0, 0, 3])
    assert joined[:2] == without[:2]
    spark.sql(f"DELETE FROM {tombstones} WHERE true")  # its snapshot counts no rows
    assert not holds_rows(spark, tombstones)
    spark.sql(
        f"INSERT INTO {tombstones} VALUES "
        "(3L, array(1L, 1L, 30L, 0L, 0L, 3L), current_timestamp()), "
        "(4L, array(1L, 1L, 30L, 0L, 0L, 4L), current_timestamp())"
    )
    spark.sql(f"DELETE FROM {tombstones} WHERE id = 4")  # a position delete: still counted
    assert holds_rows(spark, tombstones)
    assert _actions(spark, tombstones) == joined
