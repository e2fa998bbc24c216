"""The continuous job's maintenance between batches (``maintain.every_batches``,
``spark/maintenance.between_batches``) on real Iceberg tables: only the tables the job
applied a batch to since it last maintained them are maintained, so a job's idle tables do
not cost a compaction, an expiry and an orphan listing in every batch that maintains (about
0.9 s a table: 100 idle tables held such a batch up 72-87 s)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from cdcmirror.config.settings import Maintain
from cdcmirror.maintain.run import MaintainSettings
from cdcmirror.spark.maintenance.job import JobMaintenance, between_batches
from cdcmirror.table_properties import MERGE_ON_READ
from support.spark import SparkWorld

NS = "job_maint_it"


LOG = logging.getLogger("cdcmirror.mirror")  # the job's logger, which says what it maintained


def _batch(
    caplog: pytest.LogCaptureFixture,
    spark: Any,
    job: JobMaintenance,
    batch: int,
    tables: list[str],
    applied: list[str],
    entombed: tuple[str, ...] = (),
) -> list[str]:
    """The tables the job's housekeeping after ``batch`` (which ``applied`` those and
    appended to the ``entombed`` tombstone tables) maintained."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=LOG.name):
        between_batches(spark, batch, tables, [], job, LOG, applied, entombed)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("maintained ")]
    return [line.split()[1].rstrip(":") for line in lines]


def _files(spark: Any, table: str) -> int:
    return int(spark.sql(f"SELECT count(*) FROM {table}.files WHERE content = 0").first()[0])


def test_only_the_tables_applied_since_their_last_maintenance_are_maintained(
    spark_world: SparkWorld, caplog: pytest.LogCaptureFixture
) -> None:
    spark = spark_world.spark
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {NS}")
    props = ", ".join(f"'{k}'='{v}'" for k, v in {"format-version": "2", **MERGE_ON_READ}.items())
    busy, idle, late = tables = [f"{NS}.busy", f"{NS}.idle", f"{NS}.late"]
    for table in tables:
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql(
            f"CREATE TABLE {table} (id BIGINT, v STRING) USING iceberg TBLPROPERTIES ({props})"
        )
        for i in range(3):  # three small files, which a maintenance compacts into one
            spark.sql(f"INSERT INTO {table} VALUES ({i}L, 'v{i}')")
    job = JobMaintenance(every_batches=2)
    assert _batch(caplog, spark, job, 1, tables, [busy]) == []  # not a batch that maintains
    assert _batch(caplog, spark, job, 2, tables, [busy]) == [busy]
    assert _files(spark, busy) == 1 and _files(spark, idle) == 3  # the idle one left alone
    spark.sql(f"UPDATE {busy} SET v = 'changed' WHERE id = 1")
    assert _batch(caplog, spark, job, 3, tables, [busy, late]) == []
    assert _batch(caplog, spark, job, 4, tables, []) == [busy, late]  # applied in batch 3
    assert _batch(caplog, spark, job, 6, tables, []) == []  # nothing applied since
    assert _files(spark, late) == 1 and _files(spark, idle) == 3
    rows = spark.sql(f"SELECT id, v FROM {busy} ORDER BY id").collect()
    assert [(r.id, r.v) for r in rows] == [(0, "v0"), (1, "changed"), (2, "v2")]


def test_the_tombstone_tables_it_appended_to_are_maintained_and_pruned(
    spark_world: SparkWorld, caplog: pytest.LogCaptureFixture
) -> None:
    """A tombstone table the job appended to since it last maintained it is maintained in
    the next batch that maintains, its tombstones older than the retention pruned first
    (``spark/maintenance/prune.py``); one it did not append to is left alone."""
    spark = spark_world.spark
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {NS}")
    graves = [f"{NS}.items__deleted", f"{NS}.quiet__deleted"]
    for grave in graves:
        spark.sql(f"DROP TABLE IF EXISTS {grave}")
        spark.sql(
            f"CREATE TABLE {grave} (id BIGINT NOT NULL, _cdc_position ARRAY<BIGINT>, "
            "_cdc_source_ts TIMESTAMP) USING iceberg"
        )
        for i, age in ((1, "10 DAYS"), (2, "10 DAYS"), (3, "1 HOURS")):  # a file each
            spark.sql(
                f"INSERT INTO {grave} VALUES ({i}, array(1, 1, {i}, 0, 0, {i}), "
                f"current_timestamp() - INTERVAL {age})"
            )
    settings = MaintainSettings.of(Maintain(tombstone_retention_hours=168), position_length=4)
    job = JobMaintenance(every_batches=2, settings=settings)
    assert _batch(caplog, spark, job, 1, [], [], (graves[0],)) == []
    assert _batch(caplog, spark, job, 2, [], [], ()) == [graves[0]]
    kept = spark.sql(f"SELECT id FROM {graves[0]}").collect()
    assert [r.id for r in kept] == [3] and _files(spark, graves[0]) == 1
    assert _files(spark, graves[1]) == 3  # not appended to: left alone
    assert _batch(caplog, spark, job, 4, [], [], ()) == []  # nothing appended since
