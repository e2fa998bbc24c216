from __future__ import annotations

from pathlib import Path

from cdcmirror.config import load_config
from cdcmirror.config.catalog import pyiceberg_properties, spark_catalog_conf


def test_embedded_default_is_the_same_catalog_on_both_sides(tmp_path: Path) -> None:
    config = load_config(environ={}, cwd=tmp_path)
    py = pyiceberg_properties(config)
    assert py["type"] == "sql"
    assert py["uri"] == f"sqlite:///{tmp_path}/.cdcmirror/catalog.db"
    spark = spark_catalog_conf(config)
    assert spark["spark.sql.catalog.cdcmirror.type"] == "jdbc"
    prefix = "spark.sql.catalog.cdcmirror"
    assert spark[f"{prefix}.uri"] == f"jdbc:sqlite:{tmp_path}/.cdcmirror/catalog.db"
    assert spark[f"{prefix}.warehouse"] == f"file:{tmp_path}/.cdcmirror/warehouse"
    assert spark["spark.sql.catalog.cdcmirror.jdbc.schema-version"] == "V1"
    assert spark["spark.sql.catalog.cdcmirror.cache-enabled"] == "false"


def test_rest_catalog_passes_through(tmp_path: Path) -> None:
    config = load_config(
        environ={
            "CDCMIRROR_ICEBERG__CATALOG__TYPE": "rest",
            "CDCMIRROR_ICEBERG__CATALOG__URI": "http://rest:8181",
            "CDCMIRROR_ICEBERG__CATALOG__WAREHOUSE": "s3://bucket/wh",
        },
        cwd=tmp_path,
    )
    spark = spark_catalog_conf(config)
    assert spark["spark.sql.catalog.cdcmirror.type"] == "rest"
    assert spark["spark.sql.catalog.cdcmirror.uri"] == "http://rest:8181"
    assert spark["spark.sql.catalog.cdcmirror.warehouse"] == "s3://bucket/wh"


def test_sql_catalog_on_postgresql_becomes_jdbc(tmp_path: Path) -> None:
    config = load_config(
        environ={
            "CDCMIRROR_ICEBERG__CATALOG__TYPE": "sql",
            "CDCMIRROR_ICEBERG__CATALOG__URI": "postgresql+psycopg://u:p@db:5432/cat",
        },
        cwd=tmp_path,
    )
    spark = spark_catalog_conf(config)
    assert spark["spark.sql.catalog.cdcmirror.uri"] == "jdbc:postgresql://db:5432/cat"
    assert spark["spark.sql.catalog.cdcmirror.jdbc.user"] == "u"
