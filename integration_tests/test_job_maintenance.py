"""The continuous job's maintenance between batches (``maintain.every_batches``,
``spark/maintenance.maintain_between_batches``) on real Iceberg tables: a table nothing was
committed to since the job last maintained it is passed over, so a job's idle tables do not
cost a compaction, an expiry and an orphan listing each time."""

from __future__ import annotations

from typing import Any

from cdcmirror.spark.maintenance import maintain_between_batches
from cdcmirror.table_properties import MERGE_ON_READ
from integration_tests.conftest import SparkWorld

NS = "job_maint_it"


class _Lines:
    """A logger that keeps its info lines."""

    def __init__(self) -> None:
        self.info_lines: list[str] = []

    def info(self, message: str, *args: Any) -> None:
        self.info_lines.append(message % args)

    def debug(self, message: str, *args: Any) -> None:
        pass


def _maintained(spark: Any, tables: list[str], seen: dict[str, int | None]) -> list[str]:
    """The tables one round of the job's maintenance maintained."""
    log = _Lines()
    maintain_between_batches(spark, tables, None, log, seen)
    return [line.split()[1].rstrip(":") for line in log.info_lines]


def test_tables_without_a_commit_since_their_last_maintenance_are_passed_over(
    spark_world: SparkWorld,
) -> None:
    spark = spark_world.spark
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {NS}")
    props = ", ".join(f"'{k}'='{v}'" for k, v in {"format-version": "2", **MERGE_ON_READ}.items())
    tables = [f"{NS}.busy", f"{NS}.idle", f"{NS}.empty"]
    for table in tables:
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql(
            f"CREATE TABLE {table} (id BIGINT, v STRING) USING iceberg TBLPROPERTIES ({props})"
        )
    for table in tables[:2]:
        for i in range(3):  # three small files, which the first maintenance compacts
            spark.sql(f"INSERT INTO {table} VALUES ({i}L, 'v{i}')")
    seen: dict[str, int | None] = {}
    assert _maintained(spark, tables, seen) == tables  # the first time: every table
    assert _maintained(spark, tables, seen) == []  # nothing committed since
    spark.sql(f"UPDATE {NS}.busy SET v = 'changed' WHERE id = 1")
    spark.sql(f"INSERT INTO {NS}.empty VALUES (9L, 'first')")
    assert _maintained(spark, tables, seen) == [f"{NS}.busy", f"{NS}.empty"]
    assert _maintained(spark, tables, seen) == []
    # what the maintenance did to the busy table is still read right
    rows = spark.sql(f"SELECT id, v FROM {NS}.busy ORDER BY id").collect()
    assert [(r.id, r.v) for r in rows] == [(0, "v0"), (1, "changed"), (2, "v2")]
    files = spark.sql(f"SELECT count(*) FROM {NS}.idle.files WHERE content = 0").first()[0]
    assert files == 1  # the idle table was compacted once, the first time
    # without ``seen`` (`cdcmirror maintain` itself) every table is maintained
    log = _Lines()
    maintain_between_batches(spark, tables, None, log)
    assert len(log.info_lines) == 3
