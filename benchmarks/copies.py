"""Copies of a mirrored table for the plain-Spark bounds of the benchmarks."""

from __future__ import annotations

from typing import Any


def write_properties(spark: Any, target: str) -> str:
    """The write properties and format version of ``target``, as a TBLPROPERTIES list: a
    copy made with them writes as the mirror's table does (merge-on-read, zstd)."""
    return ", ".join(
        f"'{r.key}' = '{r.value}'"
        for r in spark.sql(f"SHOW TBLPROPERTIES {target}").collect()
        if r.key.startswith("write.") or r.key == "format-version"
    )


def copy_like(spark: Any, target: str, copy: str, same_writes: bool = True) -> None:
    """``copy``, made again: the rows of ``target`` as they stand, written as it writes
    (``same_writes`` False: with Spark's defaults, copy-on-write)."""
    spark.sql(f"DROP TABLE IF EXISTS {copy}")
    properties = f"TBLPROPERTIES ({write_properties(spark, target)}) " if same_writes else ""
    spark.sql(f"CREATE TABLE {copy} USING iceberg {properties}AS SELECT * FROM {target}")
