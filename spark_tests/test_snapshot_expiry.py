"""The mirror job's bound on a table's snapshots (``maintain/history_cap.py``,
``spark/maintenance/expiry.py``) on a real Iceberg table: the oldest expired down to the cap
once past it and its slack, the rows, the high-water mark and the resume offsets the newest
commits record all kept."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from cdcmirror.mirror.high_water import summary
from cdcmirror.mirror.resume import BATCH_ID, QUERY_ID, START_OFFSETS, recorded_starts
from cdcmirror.spark.iceberg import recorded_mark, with_commit_props
from cdcmirror.spark.maintenance.expiry import cap_snapshots, cap_table, snapshot_count
from support.iceberg_tables import direct_target
from support.spark import SparkWorld

DIRECT_ROW = "({i}L, 'v{i}', 'c', array(1L, 3L, {i}L, 0L, 0L, {i}L), current_timestamp(), false)"


def _commit(spark: Any, target: str, i: int) -> None:
    """One row in one commit, recorded as batch ``i`` of a job (mark and offsets)."""
    props = {QUERY_ID: "q", BATCH_ID: str(i), **summary([1, 3, i, 0])}
    props[START_OFFSETS] = json.dumps({"topic.items:0": 10 * i})
    sql = f"INSERT INTO {target} VALUES {DIRECT_ROW.format(i=i)}"
    with_commit_props(spark, props, lambda: spark.sql(sql))


def _summaries(spark: Any, target: str) -> list[dict[str, str]]:
    rows = spark.sql(f"SELECT summary FROM {target}.snapshots ORDER BY committed_at DESC").collect()
    return [dict(r.summary) for r in rows]


def test_a_table_past_its_cap_keeps_its_newest_snapshots_and_its_rows(
    spark_world: SparkWorld,
) -> None:
    spark = spark_world.spark
    target = "direct_it.capped"
    direct_target(spark, target)
    for i in range(1, 12):
        _commit(spark, target, i)
    # 11 snapshots: within a cap of 10 and its slack of one, left alone
    assert cap_table(spark, target, 10) == 0
    assert snapshot_count(spark, target) == 11
    for i in range(12, 31):
        _commit(spark, target, i)
    kept = [s[BATCH_ID] for s in _summaries(spark, target)][:10]
    assert cap_table(spark, target, 10) == 20
    assert snapshot_count(spark, target) == 10
    assert [s[BATCH_ID] for s in _summaries(spark, target)] == kept, "the newest ten are kept"
    rows = spark.sql(f"SELECT id, name FROM {target} ORDER BY id").collect()
    assert [(r.id, r.name) for r in rows] == [(i, f"v{i}") for i in range(1, 31)]
    assert recorded_mark(spark, target) == [1, 3, 30, 0]
    assert recorded_starts(_summaries(spark, target)) == {"topic.items": {0: 300}}
    # no cap: nothing expired, however many
    cap_snapshots(spark, [target], 0)
    assert snapshot_count(spark, target) == 10


def test_a_table_that_cannot_be_capped_is_named_and_the_others_still_are(
    spark_world: SparkWorld, caplog: pytest.LogCaptureFixture
) -> None:
    spark = spark_world.spark
    target = "direct_it.capped_after_a_missing_one"
    direct_target(spark, target)
    for i in range(1, 6):
        _commit(spark, target, i)
    with caplog.at_level(logging.WARNING, logger="cdcmirror.mirror"):
        cap_snapshots(spark, ["direct_it.no_such_table", target], 2)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(m.startswith("direct_it.no_such_table: could not expire") for m in warned), warned
    assert snapshot_count(spark, target) == 2
