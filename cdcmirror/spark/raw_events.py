"""Land raw Kafka records in an Iceberg table with Structured Streaming (no decoding yet).

The mirroring applier (decode, dedupe, MERGE) builds on the same Kafka source; this module
is the smallest end-to-end path: Kafka -> Spark -> Iceberg, checkpointed.
"""

from __future__ import annotations

from typing import Any

RAW_COLUMNS = (
    "topic STRING, partition INT, offset BIGINT, kafka_timestamp TIMESTAMP, "
    "key STRING, value STRING"
)


def create_raw_table(spark: Any, table: str) -> None:
    """The landing table: one row per Kafka record (its namespace created if missing)."""
    namespace = table.rsplit(".", 1)[0] if "." in table else None
    if namespace:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {table} ({RAW_COLUMNS}) USING iceberg "
        "TBLPROPERTIES ('format-version'='2')"
    )


def append_raw_events(
    spark: Any, bootstrap_servers: str, topics: list[str], table: str, checkpoint: str
) -> None:
    """Drain what is in the topics now into ``table`` (trigger availableNow) and return."""
    create_raw_table(spark, table)
    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "false")
        .load()
        .selectExpr(
            "topic",
            "partition",
            "offset",
            "timestamp AS kafka_timestamp",
            "CAST(key AS STRING) AS key",
            "CAST(value AS STRING) AS value",
        )
    )
    query = (
        stream.writeStream.format("iceberg")
        .outputMode("append")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .toTable(table)
    )
    try:
        query.awaitTermination()
    finally:
        query.stop()
