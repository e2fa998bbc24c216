"""The dead-letter table: events the mirror cannot apply, kept with the reason, keyed by
topic, partition and offset (a re-run batch adds nothing; `replay-dead-letters` reads them
back)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from cdcmirror.exceptions import MirrorError
from cdcmirror.mirror.envelope import q, spark_name
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.toast_chain import unknown_columns_sql, unknown_sql
from cdcmirror.mirror.tombstone_pruning import PRUNED, pruned_reason
from cdcmirror.spark.rows import one_row
from cdcmirror.sql_text import sql_string

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

logger = logging.getLogger("cdcmirror.mirror")

HEADERS_TYPE = "ARRAY<STRUCT<key: STRING, value: BINARY>>"  # Kafka headers, as Spark reads them
DEAD_LETTER_COLUMNS = (
    "topic STRING, partition INT, offset BIGINT, key BINARY, value BINARY, error STRING, "
    "table_name STRING, query_id STRING, batch_id BIGINT, dead_lettered_at TIMESTAMP, "
    f"headers {HEADERS_TYPE}"
)
# what a dead letter keeps of its Kafka record
RECORD_COLUMNS = ("topic", "partition", "offset", "key", "value", "headers")


def unknown_toast_reason(columns: str) -> str:
    """SQL text: the dead-letter reason of an event whose unchanged TOAST value is known
    nowhere (``columns``: SQL text naming the columns)."""
    return (
        f"concat('unchanged TOAST value of column(s) ', {columns}, ' is known neither in "
        "this batch nor in the mirror (the row came through a key change or is not "
        "stored); the row is left out: `cdcmirror reconcile --deep` lists its key and "
        "`cdcmirror repair --keys-from` re-reads it')"
    )


def ensure_dead_letter_table(spark: SparkSession, namespace: str, identifier: str) -> None:
    """The table and its namespace, made if missing (``headers``: added to older ones)."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {q(namespace)}")
    name = spark_name(identifier)
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {name} ({DEAD_LETTER_COLUMNS}) "
        "USING iceberg TBLPROPERTIES ('format-version'='2')"
    )
    if "headers" not in spark.table(name).columns:  # an older cdcmirror's: replays need them
        spark.sql(f"ALTER TABLE {name} ADD COLUMNS (headers {HEADERS_TYPE})")


def decoded_dead(bad: DataFrame, table: MirrorTable, fail: bool, raw: DataFrame) -> DataFrame:
    """Decoded events with ``_cdc_error`` as dead-letter rows, with their Kafka key and value
    from ``raw`` (the table's Kafka records of the batch: the decoded events do not carry
    them, so the cached batch holds each value once); ``fail`` (``dead_letter = "fail"``):
    the first one stops the job instead."""
    if fail:
        first = one_row(bad.orderBy("_cdc_partition", "_cdc_offset"))
        raise MirrorError(
            f"{table.identifier}: event at {table.topic} partition {first._cdc_partition} "
            f"offset {first._cdc_offset} cannot be applied: {first._cdc_error} "
            '(mirror.dead_letter = "fail")'
        )
    errors = bad.selectExpr("_cdc_partition AS _cdc_p", "_cdc_offset AS _cdc_o", "_cdc_error")
    return joined_dead(raw, errors, table.identifier)


def joined_dead(records: DataFrame, errors: DataFrame, identifier: str) -> DataFrame:
    """Dead-letter rows of table ``identifier``: the Kafka ``records`` that ``errors``
    names (columns ``_cdc_p`` partition, ``_cdc_o`` offset, ``_cdc_error``, and ``_cdc_t``
    topic when the records are of several topics), each with its reason."""
    on = (records["partition"] == errors["_cdc_p"]) & (records["offset"] == errors["_cdc_o"])
    if "_cdc_t" in errors.columns:
        on = on & (records["topic"] == errors["_cdc_t"])
    return records.join(errors, on).selectExpr(
        *RECORD_COLUMNS, "_cdc_error AS error", f"{sql_string(identifier)} AS table_name"
    )


def raw_dead(events: DataFrame, error: str, table: MirrorTable) -> DataFrame:
    """Kafka records (not decoded) as dead-letter rows, all with ``error``."""
    from pyspark.sql import functions as F

    return events.select(
        *RECORD_COLUMNS,
        F.lit(error).alias("error"),
        F.lit(table.identifier).alias("table_name"),
    )


def unknown_toast_dead(
    table: MirrorTable, changes: DataFrame, raw: DataFrame, fail: bool
) -> tuple[DataFrame, int]:
    """The events whose unchanged TOAST value the mirror cannot know, as dead letters
    (never written as NULL), and how many; called when the batch has some. ``raw``: the
    table's Kafka records of the batch."""
    bad = changes.where(unknown_sql(table)).selectExpr(
        "_cdc_partition",
        "_cdc_offset",
        f"{unknown_toast_reason(unknown_columns_sql(table))} AS _cdc_error",
    )
    found = int(bad.count())
    logger.error(
        "%s: %d event(s) with unknown unchanged TOAST values dead-lettered",
        table.identifier,
        found,
    )
    return decoded_dead(bad, table, fail, raw), found


def pruned_dead(
    table: MirrorTable, changes: DataFrame, raw: DataFrame, fail: bool, mark: list[int]
) -> DataFrame:
    """The classified changes the tombstones' pruned ``mark`` leaves unknown
    (``tombstone_pruning.PRUNED``), as dead letters; called when the batch has some."""
    bad = changes.where(f"_cdc_action = '{PRUNED}'").selectExpr(
        "_cdc_partition", "_cdc_offset", f"{sql_string(pruned_reason(mark))} AS _cdc_error"
    )
    logger.error(
        "%s: change(s) older than the pruned tombstones (up to %s) of keys neither stored "
        "nor entombed dead-lettered",
        table.identifier,
        mark,
    )
    return decoded_dead(bad, table, fail, raw)


def write_dead_letters(
    spark: SparkSession, identifier: str, frames: list[DataFrame], query_id: str, batch_id: int
) -> None:
    """MERGE the batch's dead letters into the table: one that fails again (a re-run batch,
    `replay-dead-letters`) gets the new reason and the run that found it."""
    from pyspark.sql import functions as F

    union = frames[0]
    for f in frames[1:]:
        union = union.unionByName(f)
    union = (
        union.withColumn("query_id", F.lit(query_id))
        .withColumn("batch_id", F.lit(batch_id).cast("bigint"))
        .withColumn("dead_lettered_at", F.current_timestamp())
    )
    view = f"_cdcm_dead_{abs(batch_id)}"
    union.createOrReplaceTempView(view)
    spark.sql(
        f"MERGE INTO {spark_name(identifier)} t USING {view} s "
        "ON t.topic = s.topic AND t.partition = s.partition AND t.offset = s.offset "
        "WHEN MATCHED THEN UPDATE SET error = s.error, query_id = s.query_id, "
        "batch_id = s.batch_id, dead_lettered_at = s.dead_lettered_at "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    spark.catalog.dropTempView(view)
