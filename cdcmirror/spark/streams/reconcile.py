"""A stream table against the events Kafka holds (``streams/reconcile.py``), read by
Spark: the Kafka records of the compared ranges, the table's rows and the dead letters in
them, joined on (topic, partition, offset)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from cdcmirror.spark.kafka import read_ranges
from cdcmirror.sql_text import spark_name, sql_string
from cdcmirror.streams.reconcile import PartitionCheck, kafka_ranges, ranges_sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_COORDS = ("topic", "partition", "offset")


def compare_stream(
    spark: SparkSession,
    kafka_options: Mapping[str, str],
    identifier: str,
    dead_letter_table: str,
    partitions: list[PartitionCheck],
    limit: int,
) -> None:
    """Fill in ``partitions`` (their ranges set): counts and up to ``limit`` offsets each of
    missing, duplicated and extra events."""
    ranges = kafka_ranges(partitions)
    if ranges is None:
        return
    kafka = (
        read_ranges(spark, kafka_options, ranges).where("value IS NOT NULL").select(*_COORDS)
    ).persist()
    rows = (
        spark.table(spark_name(identifier))
        .selectExpr(
            "_kafka_topic AS topic", "_kafka_partition AS partition", "_kafka_offset AS offset"
        )
        .where(ranges_sql(partitions, "topic", "partition", "offset"))
    ).persist()
    if not spark.catalog.tableExists(dead_letter_table):  # no mirror run made it yet
        dead = kafka.limit(0)
    else:
        dead = (
            spark.table(dead_letter_table)
            .where(f"table_name = {sql_string(identifier)}")
            .select(*_COORDS)
            .where(ranges_sql(partitions, "topic", "partition", "offset"))
            .distinct()
        )
    try:
        by_part = {(p.topic, p.partition): p for p in partitions}
        for name, frame in (("events", kafka), ("rows", rows), ("dead", dead)):
            for r in frame.groupBy("topic", "partition").count().collect():
                setattr(by_part[(r.topic, int(r.partition))], name, int(r["count"]))
        missing = kafka.join(rows, list(_COORDS), "left_anti").join(
            dead, list(_COORDS), "left_anti"
        )
        duplicated = rows.groupBy(*_COORDS).count().where("count > 1").select(*_COORDS)
        extra = rows.join(kafka, list(_COORDS), "left_anti")
        for name, frame in (("missing", missing), ("duplicated", duplicated), ("extra", extra)):
            _listed(frame, by_part, name, limit)
    finally:
        kafka.unpersist()
        rows.unpersist()


def _listed(
    frame: DataFrame, by_part: dict[tuple[str, int], PartitionCheck], name: str, limit: int
) -> None:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = Window.partitionBy("topic", "partition").orderBy("offset")
    firsts = frame.withColumn("_cdc_n", F.row_number().over(order)).where(f"_cdc_n <= {limit}")
    for r in firsts.orderBy("topic", "partition", "offset").collect():
        getattr(by_part[(r.topic, int(r.partition))], name).append(int(r.offset))
