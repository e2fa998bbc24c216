"""Spark built by cdcmirror and pyiceberg share one catalog. (Kafka -> Iceberg with an
exactly-once effect is the mirror's, tested in test_mirror_*.py.)"""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from cdcmirror.catalog import load_catalog
from support.spark import SparkWorld


def test_pyiceberg_and_spark_share_the_embedded_catalog(spark_world: SparkWorld) -> None:
    spark, config = spark_world.spark, spark_world.config
    catalog = load_catalog(config)
    catalog.create_namespace_if_not_exists("interop")

    # pyiceberg creates and writes; Spark appends; pyiceberg reads both
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "name", StringType(), required=False),
    )
    made_by_py = catalog.create_table("interop.from_pyiceberg", schema)
    made_by_py.append(pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]}))
    spark.sql("INSERT INTO interop.from_pyiceberg VALUES (3, 'c')")
    assert sorted(
        catalog.load_table("interop.from_pyiceberg").scan().to_arrow().to_pylist(),
        key=lambda r: r["id"],
    ) == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}]

    # Spark creates and writes; pyiceberg appends; Spark reads both
    spark.sql("CREATE TABLE interop.from_spark (id BIGINT, name STRING) USING iceberg")
    spark.sql("INSERT INTO interop.from_spark VALUES (10, 'x')")
    made_by_spark = catalog.load_table("interop.from_spark")
    made_by_spark.append(pa.table({"id": pa.array([11], pa.int64()), "name": ["y"]}))
    rows = spark.sql("SELECT id, name FROM interop.from_spark ORDER BY id").collect()
    got = [tuple(r) for r in rows]
    assert got == [(10, "x"), (11, "y")]
