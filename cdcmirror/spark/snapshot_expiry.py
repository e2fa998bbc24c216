"""The mirror job's own bound on a table's snapshots (``mirror/history_cap.py``): the oldest
expired through Iceberg's table API on the driver (no Spark job), their files removed when
no snapshot kept needs them."""

from __future__ import annotations

import logging
import time
from typing import Any

from cdcmirror.catalog_properties import CATALOG_NAME
from cdcmirror.mirror.history_cap import over_cap
from cdcmirror.spark.conflicts import retry_on_conflict
from cdcmirror.spark.java_classes import java_class

logger = logging.getLogger("cdcmirror.mirror")


def _table(spark: Any, target: str) -> Any:
    spark_util = java_class(spark, "org.apache.iceberg.spark.Spark3Util")
    return spark_util.loadIcebergTable(spark._jsparkSession, f"{CATALOG_NAME}.{target}")


def snapshot_count(spark: Any, target: str) -> int:
    """The snapshots ``target``'s metadata holds now."""
    return int(_table(spark, target).snapshots().size())


def cap_snapshots(spark: Any, targets: list[str], cap: int) -> None:
    """:func:`cap_table` of each of ``targets``."""
    for target in targets:
        cap_table(spark, target, cap)


def cap_table(spark: Any, target: str, cap: int) -> int:
    """Expire ``target``'s oldest snapshots down to the newest ``cap`` when it holds too many
    (``history_cap.over_cap``); how many were expired (0: none)."""
    before = snapshot_count(spark, target)
    if not over_cap(before, cap):
        return 0

    def expire() -> int:
        table = _table(spark, target)  # again on a retry: the conflict's commit is in it
        now_ms = int(time.time() * 1000)
        table.expireSnapshots().retainLast(cap).expireOlderThan(now_ms).commit()
        return before - snapshot_count(spark, target)

    expired = retry_on_conflict(expire, f"{target}: expiring snapshots")
    logger.info(
        "%s: expired %d of %d snapshots (maintain.max_snapshots = %d)", target, expired, before, cap
    )
    return expired
