"""The re-load's write (``spark/load/initial_load.write_loaded``) executed by Spark on an Iceberg
table that has rows already: what ``repair --method reload`` leaves in the table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdcmirror.load.columns import LoadColumn
from cdcmirror.load.plan import TableLoad
from cdcmirror.mirror.high_water import loaded
from cdcmirror.spark.iceberg import recorded_mark, scanned_mark
from cdcmirror.spark.load.initial_load import write_loaded
from support.spark import SparkWorld

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TARGET = "reload_it.items"
LOAD = TableLoad(
    TARGET,
    "db.items",
    "mysql",
    ("id",),
    (LoadColumn("id", "c0", "id AS c0", "c0"), LoadColumn("name", "c1", "name AS c1", "c1")),
)
ROW = "{id}L, {name}, '{op}', array(1L, 1L, {id}L, 0L, 0L, 0L), current_timestamp(), {deleted}"
READ = (
    "SELECT * FROM VALUES {rows} AS s(id, name, _cdc_op, _cdc_position, _cdc_source_ts, "
    "_cdc_deleted, _cdc_load_error)"
)
LOADED = "({id}L, '{name}', 'r', array(0L, 2L, 99L, 0L, -1L, -1L), current_timestamp(), false, {e})"
MARK = loaded([0, 2, 99, 0, -1, -1], 4)  # the source part of LOADED's position (MySQL)


def _table_with_rows(spark: SparkSession) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS reload_it")
    spark.sql(f"DROP TABLE IF EXISTS {TARGET}")
    spark.sql(
        f"CREATE TABLE {TARGET} (id BIGINT, name STRING, dropped STRING, _cdc_op STRING, "
        "_cdc_position ARRAY<BIGINT>, _cdc_source_ts TIMESTAMP, _cdc_deleted BOOLEAN) "
        "USING iceberg TBLPROPERTIES ('format-version'='2')"
    )
    rows = [
        ROW.format(id=1, name="'a'", op="u", deleted="false"),
        ROW.format(id=2, name="'b'", op="c", deleted="false"),
        ROW.format(id=3, name="'c'", op="d", deleted="true"),
    ]
    values = ", ".join(f"({r})" for r in rows)
    spark.sql(
        f"INSERT INTO {TARGET} BY NAME SELECT id, name, 'kept' AS dropped, _cdc_op, "
        f"_cdc_position, _cdc_source_ts, _cdc_deleted FROM VALUES {values} "
        "AS s(id, name, _cdc_op, _cdc_position, _cdc_source_ts, _cdc_deleted)"
    )


def _rows(spark: SparkSession) -> list[tuple[object, ...]]:
    got = spark.sql(
        f"SELECT id, name, dropped, _cdc_op, _cdc_deleted FROM {TARGET} ORDER BY id"
    ).collect()
    return [tuple(r) for r in got]


def _read(spark: SparkSession) -> DataFrame:
    rows = ", ".join(
        [
            LOADED.format(id=1, name="a2", e="NULL"),
            LOADED.format(id=4, name="d", e="NULL"),
            LOADED.format(id=5, name="bad", e="'name: not text'"),
        ]
    )
    return spark.sql(READ.format(rows=rows))


def test_a_soft_reload_keeps_the_rows_only_the_mirror_has_as_deleted(
    spark_world: SparkWorld,
) -> None:
    """Rows read replace the table's; a row the read lacks stays, marked deleted (one
    deleted already stays as it was); a column the read has not (the source dropped it) is
    NULL in the rows read; a row whose value did not convert is counted, not written."""
    spark = spark_world.spark
    _table_with_rows(spark)
    done = write_loaded(spark, _read(spark), LOAD, "{}", "reload-it", keep_deleted=True, mark=MARK)
    assert _rows(spark) == [
        (1, "a2", None, "r", False),
        (2, "b", "kept", "d", True),
        (3, "c", "kept", "d", True),
        (4, "d", None, "r", False),
    ]
    assert (done.rows, done.bad, done.kept_deleted) == (2, 1, 2), done
    assert done.example == "5: name: not text", done
    # the kept rows hold positions of their own (here [1, 1, 1|2|3, 0]): no mark recorded
    assert recorded_mark(spark, TARGET) is None


def test_a_hard_reload_replaces_every_row(spark_world: SparkWorld) -> None:
    spark = spark_world.spark
    _table_with_rows(spark)
    done = write_loaded(spark, _read(spark), LOAD, "{}", "reload-it", mark=MARK)
    assert _rows(spark) == [(1, "a2", None, "r", False), (4, "d", None, "r", False)]
    assert (done.rows, done.bad, done.kept_deleted) == (2, 1, 0), done
    # the commit records the mark a scan of the rows' positions finds: no scan needed
    assert recorded_mark(spark, TARGET) == scanned_mark(spark, TARGET, 4) == [0, 2, 99, 0]
