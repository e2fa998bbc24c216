"""The floor under cdcmirror's time to equality: plain Spark, in a fresh process, doing the
least that turns a Debezium topic read from its first offset into the table it describes.

One Spark batch job on the session cdcmirror builds (the same jars, catalog, JVM settings and
class-data archive), nothing of cdcmirror's applier: the topic read in tasks of 25,000 records
(as the mirror splits a partition), each value parsed with ``from_json`` in the one schema
``benchmarks/mirror_batch.py``'s table has, the newest event per key kept by offset (one
partition: offset order is commit order), deletes dropped, Connect's carriers converted, and
the rows written as a new Iceberg table in one commit (``createOrReplace``). It trusts what
the mirror must check (one row schema, no replay, no position guard, no TRUNCATE, no dead
letter), so it bounds the mirror's time from below. ``flink_peer.py`` runs it beside the two
systems; the config comes from the environment, as the mirror's does.

    python spark_plain_job.py TOPIC TABLE [--again]

``--again`` runs the same job once more in the warm JVM (into ``TABLE_again``) and prints
both jobs' seconds: how much a fresh JVM's first job costs plain Spark.
"""

from __future__ import annotations

import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from cdcmirror.config import load_config
from cdcmirror.spark.session import build_spark_session

# the value's payload as Debezium's JSON converter writes the benchmark's table
PAYLOAD = (
    "payload STRUCT<op: STRING, before: STRUCT<id: BIGINT>, after: STRUCT<id: BIGINT, a: INT, "
    "b: STRING, c: STRING, d: STRING, e: STRING, f: BIGINT, g: INT, h: BOOLEAN, k: DOUBLE>>"
)
# Connect's carriers as the table's types; the benchmark's decimals are never negative, so
# the unscaled bytes read as an unsigned number
ROW = (
    "id",
    "a",
    "CAST(CAST(conv(hex(unbase64(b)), 16, 10) AS DECIMAL(38, 0)) / 100 AS DECIMAL(12, 2)) AS b",
    "c",
    "d",
    "CAST(e AS TIMESTAMP) AS e",
    "CAST(timestamp_micros(f) AS TIMESTAMP_NTZ) AS f",
    "date_from_unix_date(g) AS g",
    "h",
    "k",
)


def main(topic: str, table: str, again: bool) -> None:
    config = load_config()
    spark = build_spark_session(config, "plain-spark")
    first = write(spark, config.kafka.bootstrap_servers, topic, table)
    if again:  # the same job in the now warm JVM: what a fresh JVM's first job costs
        warm = write(spark, config.kafka.bootstrap_servers, topic, f"{table}_again")
        print(f"the job {first:.2f}s in a fresh JVM, {warm:.2f}s again: {first / warm:.2f}x")
    spark.stop()


def write(spark: SparkSession, servers: str, topic: str, table: str) -> float:
    """The topic's table written as ``table``; the seconds it took."""
    started = time.monotonic()
    events = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .option("maxRecordsPerPartition", "25000")
        .load()
        .where("value IS NOT NULL")
        .selectExpr("offset", f"from_json(CAST(value AS STRING), '{PAYLOAD}').payload AS p")
        .selectExpr("coalesce(p.after.id, p.before.id) AS id", "offset", "p")
    )
    rows = (
        events.groupBy("id")
        .agg(F.max_by("p", "offset").alias("p"))
        .where("p.op <> 'd'")
        .selectExpr("p.after.*")
        .selectExpr(*ROW)
    )
    rows.writeTo(table).using("iceberg").createOrReplace()
    return time.monotonic() - started


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], "--again" in sys.argv[3:])
