"""The Spark run whose loaded classes become the driver JVM's class-data archive
(``jvm/class_archive.py``): the kinds of queries a mirror batch makes, on a few rows, in a
session started with the settings read from standard input (JSON). Run as
``python -m cdcmirror.spark.class_archive_run`` by ``class_archive.build``; the JVM writes
the archive as it exits, which this waits for."""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
from typing import Any

_NS = "cdcmirror_class_archive"


def _queries(spark: Any, checkpoints: str) -> None:
    """A decode of Debezium-like JSON, an Iceberg table's MERGE, UPDATE, DELETE and
    metadata reads, window functions, a local checkpoint, the Kafka source's classes and a
    micro-batch of a stream handed to Python (``foreachBatch``), as the mirror's are."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {_NS}")
    spark.sql(f"DROP TABLE IF EXISTS {_NS}.t")
    spark.sql(
        f"CREATE TABLE {_NS}.t (id BIGINT, name STRING, amount DECIMAL(20,4), at TIMESTAMP, "
        "_cdc_position ARRAY<BIGINT>, _cdc_deleted BOOLEAN) USING iceberg TBLPROPERTIES "
        "('format-version'='2', 'write.delete.mode'='merge-on-read', "
        "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')"
    )
    spark.sql(
        f"INSERT INTO {_NS}.t SELECT id, concat('n', id), CAST(id AS DECIMAL(20,4)), "
        "current_timestamp(), array(1L, id), false FROM range(2000)"
    )
    spark.range(3000).selectExpr(
        "CAST(id AS STRING) AS key",
        "to_json(named_struct('payload', named_struct('op', IF(id % 5 = 0, 'd', 'u'), "
        "'after', named_struct('id', id, 'name', concat('m', id), 'amount', base64(bin(id)), "
        "'at', 1700000000000000 + id), 'source', named_struct('lsn', id, 'ts_ms', id)))) "
        "AS value",
    ).createOrReplaceTempView("_cdc_events")
    spark.sql(
        "SELECT *, row_number() OVER (PARTITION BY id ORDER BY p DESC) AS rn, "
        "lag(name) OVER (PARTITION BY id ORDER BY p) AS before FROM (SELECT "
        "e.payload.after.id AS id, e.payload.after.name AS name, "
        "CAST(conv(hex(unbase64(e.payload.after.amount)), 16, 10) AS DECIMAL(20,4)) AS amount, "
        "timestamp_micros(e.payload.after.at) AS at, array(1L, e.payload.source.lsn) AS p, "
        "e.payload.op AS op FROM (SELECT from_json(value, 'payload STRUCT<op STRING, after "
        "STRUCT<id BIGINT, name STRING, amount STRING, at BIGINT>, source STRUCT<lsn BIGINT, "
        "ts_ms BIGINT>>') AS e FROM _cdc_events))"
    ).localCheckpoint(eager=True).createOrReplaceTempView("_cdc_kept")
    spark.sql(
        f"MERGE INTO {_NS}.t t USING (SELECT * FROM _cdc_kept WHERE rn = 1) s ON t.id = s.id "
        "WHEN MATCHED AND s.op = 'd' THEN DELETE WHEN MATCHED AND s.p > t._cdc_position THEN "
        "UPDATE SET name = s.name, amount = s.amount, at = s.at, _cdc_position = s.p "
        "WHEN NOT MATCHED THEN INSERT (id, name, amount, at, _cdc_position, _cdc_deleted) "
        "VALUES (s.id, s.name, s.amount, s.at, s.p, false)"
    )
    spark.sql(f"UPDATE {_NS}.t SET _cdc_deleted = true WHERE id % 7 = 0")
    spark.sql(f"DELETE FROM {_NS}.t WHERE id % 11 = 0")
    spark.sql(f"SELECT count(*), sum(hash(to_json(struct(*)))) FROM {_NS}.t").collect()
    spark.sql(f"SELECT * FROM {_NS}.t.snapshots").collect()
    spark.sql(f"CALL system.rewrite_data_files(table => '{_NS}.t')").collect()
    # the Kafka source's classes: its relation is made without a broker (a session
    # without the Kafka jars has none to load)
    with contextlib.suppress(Exception):
        kafka = spark.read.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:9")
        kafka.option("subscribe", "none").load().printSchema()

    def each(batch: Any, batch_id: int) -> None:
        batch.selectExpr("count(*)").collect()

    stream = spark.readStream.format("rate").option("rowsPerSecond", 100).load()
    query = (
        stream.writeStream.foreachBatch(each)
        .option("checkpointLocation", checkpoints)
        .trigger(once=True)
        .start()
    )
    query.awaitTermination(120)
    spark.sql(f"DROP TABLE IF EXISTS {_NS}.t PURGE")


def main() -> int:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    conf: dict[str, str] = json.loads(sys.stdin.read())
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory(prefix="cdcmirror-archive-") as checkpoints:
        _queries(spark, checkpoints)
    gateway = SparkContext._gateway
    spark.stop()
    # the JVM writes the archive as it exits: close it and wait for that
    proc = getattr(gateway, "proc", None)
    if gateway is not None:
        gateway.shutdown()
    if proc is not None:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=300)
    return 0


if __name__ == "__main__":
    sys.exit(main())
