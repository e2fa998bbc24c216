"""Tombstones pruned by age on Spark (the rule: ``mirror/tombstone_pruning.py``): the
pruned mark raised first, then the tombstones at or below it removed. ``cdcmirror maintain``
runs it on each tombstone table before compacting it."""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import TYPE_CHECKING

from cdcmirror.mirror.high_water import scanned
from cdcmirror.mirror.positions import later_mark
from cdcmirror.mirror.tombstone_pruning import PRUNED_BELOW, covered_sql, prunable_sql, prune_sql
from cdcmirror.spark.iceberg import iceberg_table, retry_on_conflict
from cdcmirror.spark.rows import first_value
from cdcmirror.spark.tombstones import pruned_of
from cdcmirror.sql_text import sql_string

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)


def prune_tombstones(spark: SparkSession, tombstones: str, older_than: datetime, n: int) -> int:
    """Remove the tombstones of ``tombstones`` (a Spark name) whose source commit is before
    ``older_than`` (UTC, naive), with every other at or below the newest source position
    (``n`` elements) among them, after raising the table's pruned mark to it; how many were
    removed. A crash between the two leaves the mark raised and the tombstones there: the
    classification then finds them as before."""
    cutoff = older_than.strftime("%Y-%m-%d %H:%M:%S")
    found = scanned(first_value(spark.sql(prunable_sql(tombstones, cutoff, n))))
    if not found:  # none that old ([]), or a position with an element missing (None)
        return 0
    stored = pruned_of(iceberg_table(spark, tombstones))
    mark = later_mark(stored or [], found, n)
    if mark != stored:
        text = sql_string(json.dumps(mark))
        spark.sql(f"ALTER TABLE {tombstones} SET TBLPROPERTIES ('{PRUNED_BELOW}' = {text})")
    covered = covered_sql("_cdc_position", mark, n)
    removed = int(first_value(spark.sql(f"SELECT count(*) FROM {tombstones} WHERE {covered}")))
    retry_on_conflict(lambda: spark.sql(prune_sql(tombstones, mark, n)), f"{tombstones}: prune")
    logger.info("%s: %d tombstone(s) up to source position %s pruned", tombstones, removed, mark)
    return removed
