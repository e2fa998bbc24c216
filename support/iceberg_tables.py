"""Iceberg tables the local Spark tests write into: the ``id, name`` table the MERGE SQL is
run on (``ITEMS``), its tombstones, the direct MERGE's target, and a mirrored table made
the way bootstrap makes one."""

from __future__ import annotations

from typing import Any

from cdcmirror.cdc_columns import CDC_COLUMNS
from cdcmirror.iceberg_types import spark_type
from cdcmirror.mirror.envelope import q
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.table_properties import MERGE_ON_READ
from support.tables import NAME, make_table

ITEMS = make_table(
    NAME, identifier="merge_it.items", flavor="mariadb", source="db.items", topic="t"
)


def items_target(spark: object, target: str) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS merge_it")  # type: ignore[attr-defined]
    spark.sql(f"DROP TABLE IF EXISTS {target}")  # type: ignore[attr-defined]
    spark.sql(  # type: ignore[attr-defined]
        f"CREATE TABLE {target} (id BIGINT, name STRING, _cdc_op STRING, "
        "_cdc_position ARRAY<BIGINT>, _cdc_source_ts TIMESTAMP, _cdc_deleted BOOLEAN) "
        "USING iceberg TBLPROPERTIES ('format-version'='2')"
    )


def tombstones_table(spark: Any, name: str) -> None:
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT, _cdc_position ARRAY<BIGINT>, "
        "_cdc_source_ts TIMESTAMP) USING iceberg"
    )


DIRECT_ROW = (
    "(id BIGINT, name STRING, _cdc_op STRING, _cdc_position ARRAY<BIGINT>, "
    "_cdc_source_ts TIMESTAMP, _cdc_deleted BOOLEAN)"
)


def direct_target(spark: Any, target: str) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS direct_it")
    spark.sql(f"DROP TABLE IF EXISTS {target}")
    props = ", ".join(f"'{k}'='{v}'" for k, v in {"format-version": "2", **MERGE_ON_READ}.items())
    spark.sql(f"CREATE TABLE {target} {DIRECT_ROW} USING iceberg TBLPROPERTIES ({props})")


def create_mirrored(spark: Any, table: MirrorTable) -> None:
    columns = [(c.name, c.iceberg) for c in table.columns] + [(c.name, c.type) for c in CDC_COLUMNS]
    ddl = ", ".join(f"{q(name)} {spark_type(kind)}" for name, kind in columns)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {table.identifier.rsplit('.', 1)[0]}")
    spark.sql(f"DROP TABLE IF EXISTS {table.identifier}")
    spark.sql(
        f"CREATE TABLE {table.identifier} ({ddl}) USING iceberg TBLPROPERTIES "
        "('format-version'='2', 'write.merge.mode'='merge-on-read', "
        "'write.update.mode'='merge-on-read', 'write.delete.mode'='merge-on-read')"
    )


def create_history(spark: Any, table: MirrorTable, identifier: str) -> MirrorTable:
    """``table``'s history table, made the way bootstrap makes one; ``table`` naming it."""
    from dataclasses import replace

    from cdcmirror.mirror.history import HISTORY_COLUMNS

    columns = [(c.name, c.iceberg) for c in table.columns]
    columns += [(c.name, c.type) for c in HISTORY_COLUMNS]
    ddl = ", ".join(f"{q(name)} {spark_type(kind)}" for name, kind in columns)
    spark.sql(f"DROP TABLE IF EXISTS {identifier}")
    props = ", ".join(f"'{k}'='{v}'" for k, v in {"format-version": "2", **MERGE_ON_READ}.items())
    spark.sql(f"CREATE TABLE {identifier} ({ddl}) USING iceberg TBLPROPERTIES ({props})")
    return replace(table, history=identifier)
