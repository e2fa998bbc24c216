"""``spark/cdc/decode.keep`` with the batch aggregate (``mirror/batch_aggregate.py``) on a
real Spark session: the aggregate observed by the job that keeps the rows equals the same
aggregate run as a query of its own, and the kept rows are freed when let go."""

from __future__ import annotations

from typing import Any

from cdcmirror.mirror.batch_aggregate import BatchAggregate, aggregate_exprs
from cdcmirror.spark.cdc.decode import keep, let_go
from support.iceberg_tables import ITEMS  # a MariaDB table keyed by id
from support.spark import SparkWorld

EVENTS = (
    "SELECT * FROM VALUES {rows} AS s(id, name, _cdc_op, _cdc_position, _cdc_source_ts, _cdc_error)"
)


def _events(spark: Any, rows: list[str]) -> Any:
    return spark.sql(EVENTS.format(rows=", ".join(rows)))


def _persistent(spark: Any) -> int:
    return int(spark.sparkContext._jsc.sc().getPersistentRDDs().size())


def test_the_observed_aggregate_is_the_aggregate_and_the_rows_are_kept(
    spark_world: SparkWorld,
) -> None:
    spark = spark_world.spark
    ts = "timestamp_micros({}L)"
    events = _events(
        spark,
        [
            f"(7L, 'a', 'c', array(1L, 10L, 0L, 0L), {ts.format(1_000)}, NULL)",
            f"(3L, 'b', 'u', array(1L, 20L, 0L, 0L), {ts.format(3_000)}, NULL)",
            f"(NULL, NULL, 't', array(1L, 30L, 5L, 0L), {ts.format(4_000)}, NULL)",
            f"(NULL, NULL, 't', array(1L, 25L, 0L, 0L), {ts.format(2_000)}, NULL)",
            f"(99L, 'x', 'c', array(1L, 40L, 0L, 0L), {ts.format(9_000)}, 'bad value')",
            f"(12L, 'c', 'd', array(1L, 50L, 0L, 0L), {ts.format(5_000)}, NULL)",
        ],
    ).repartition(3)
    exprs = aggregate_exprs(ITEMS)
    expected = BatchAggregate.of(events.selectExpr(*exprs).first().asDict())
    before = _persistent(spark)
    kept, values = keep(events, exprs)
    got = BatchAggregate.of(values)
    assert got == expected
    assert got.truncated_at == [1, 30, 5, 0] and got.truncated_ts == 4_000
    assert (got.events, got.bad, got.truncates, got.applied) == (6, 1, 2, 3)
    assert (got.bounds["_cdc_lo_id"], got.bounds["_cdc_hi_id"]) == (3, 99)
    assert sorted(map(str, kept.collect())) == sorted(map(str, events.collect()))
    assert _persistent(spark) == before + 1
    let_go(kept)
    assert _persistent(spark) == before


def test_an_empty_batch_aggregates_to_zero_counts(spark_world: SparkWorld) -> None:
    spark = spark_world.spark
    events = _events(
        spark, ["(1L, 'a', 'c', array(1L, 1L, 0L, 0L), timestamp_micros(1L), NULL)"]
    ).where("id < 0")
    kept, values = keep(events, aggregate_exprs(ITEMS))
    got = BatchAggregate.of(values)
    assert got.events == 0 and got.truncated_at is None and got.newest_us is None
    assert kept.count() == 0
    let_go(kept)
