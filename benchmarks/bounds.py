"""The bounds ``mixed_batch.py`` measures beside each round: plain Spark reading and parsing
the round's Kafka records, a plain MERGE of its deduplicated effect, and pyiceberg's
``upsert`` of it (the module doc of ``mixed_batch.py`` says how each is measured)."""

from __future__ import annotations

import time
from typing import Any

from cdcmirror.catalog import load_catalog
from cdcmirror.config import Config
from cdcmirror.spark.session import build_spark_session


def read_and_parse(config: Config, fmt: str, topic: str, start: int, end: int) -> float:
    """Seconds of plain Spark reading ``topic``'s records ``start``..``end`` and parsing
    them with one ``from_json`` of the envelope (``fmt``: json, json-schemaless; avro:
    ``from_avro`` of each body), the faster of two runs."""
    from pyspark.sql import functions as F

    from cdcmirror.commands.job_tables import load_tables
    from cdcmirror.config.kafka_security import spark_kafka_options
    from cdcmirror.mirror.envelope import envelope_ddl
    from cdcmirror.spark.kafka import read_ranges

    spark: Any = build_spark_session(config)
    table = load_tables(config, load_catalog(config))[0]
    seconds = []
    for _ in range(2):
        records = read_ranges(
            spark,
            spark_kafka_options(config.kafka),
            {topic: {0: (start, end)}},
            config.mirror.events_per_task,
        )
        if fmt == "avro":
            parsed = avro_parsed(config, records)
        else:
            with_schemas = fmt == "json"
            envelope = F.from_json(
                F.expr("CAST(value AS STRING)"), envelope_ddl(table, with_schemas)
            )
            top = "e.payload" if with_schemas else "e"
            parsed = records.select(envelope.alias("e")).select(
                f"{top}.after.*", f"{top}.op", f"{top}.source.*"
            )
        started = time.monotonic()
        parsed.write.format("noop").mode("overwrite").save()
        seconds.append(time.monotonic() - started)
    return min(seconds)


def avro_parsed(config: Config, records: Any) -> Any:
    """The records' Avro bodies read by Spark's ``from_avro``, each with its schema id's
    schema from the registry (the ids found with a job of their own, not timed)."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    from cdcmirror.clients.registry import SchemaRegistry
    from cdcmirror.mirror.avro import HEADER, SCHEMA_ID_SQL

    framed = records.withColumn("sid", F.expr(SCHEMA_ID_SQL))
    ids = [int(r.sid) for r in framed.select("sid").distinct().collect() if r.sid is not None]
    registry = SchemaRegistry(config.kafka.schema_registry_url, auth=config.kafka.registry_auth)
    body = F.expr(f"substring(value, {HEADER + 1})")
    columns = [
        F.when(F.col("sid") == sid, from_avro(body, text)).alias(f"e{sid}")
        for sid, text in registry.schemas(ids).items()
    ]
    return framed.select(*columns)


def effect(spark: Any, target: str, before: str) -> tuple[Any, Any]:
    """The round's deduplicated effect: the rows it wrote (as they stand now) and the keys
    it deleted, from the table and its copy made before the round; both cached."""
    now, was = spark.table(target).alias("n"), spark.table(before).alias("w")
    joined = now.join(was, now.id == was.id, "full_outer")
    rows = (
        joined.where("w.id IS NULL OR n._cdc_position <> w._cdc_position")
        .where("n.id IS NOT NULL")
        .select("n.*")
        .selectExpr("*", "false AS _del")
    )
    deleted = joined.where("n.id IS NULL").selectExpr("w.id AS id")
    return rows.localCheckpoint(eager=True), deleted.localCheckpoint(eager=True)


def plain_merge(spark: Any, copy: str, rows: Any, deleted: Any) -> float:
    """Seconds of one plain Spark MERGE of the rows and the deleted keys into ``copy``."""
    columns = [c for c in rows.columns if c != "_del"]
    keys_only = [
        c.name if c.name == "id" else f"CAST(NULL AS {c.dataType.simpleString()}) AS {c.name}"
        for c in rows.schema
    ]
    deletes = deleted.selectExpr(
        *[c.replace("CAST(NULL AS boolean) AS _del", "true AS _del") for c in keys_only]
    )
    source = rows.unionByName(deletes)
    source.localCheckpoint(eager=True).createOrReplaceTempView("_plain_source")
    sets = ", ".join(f"{c} = s.{c}" for c in columns)
    started = time.monotonic()
    spark.sql(
        f"MERGE INTO {copy} t USING _plain_source s ON t.id = s.id "
        "WHEN MATCHED AND s._del THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET {sets} "
        f"WHEN NOT MATCHED AND NOT s._del THEN INSERT ({', '.join(columns)}) "
        f"VALUES ({', '.join('s.' + c for c in columns)})"
    )
    return time.monotonic() - started


def pyiceberg_upsert(config: Config, copy: str, rows: Any, deleted: Any) -> float:
    """Seconds of pyiceberg's ``upsert`` of the rows and ``delete`` of the keys."""
    from pyiceberg.expressions import In

    table = load_catalog(config).load_table(copy)
    arrow = rows.drop("_del").toArrow().cast(table.schema().as_arrow())
    keys = [r.id for r in deleted.collect()]
    started = time.monotonic()
    if arrow.num_rows:
        table.upsert(arrow, join_cols=["id"])
    if keys:
        table.delete(In("id", keys))  # type: ignore[call-arg, arg-type]
    return time.monotonic() - started
