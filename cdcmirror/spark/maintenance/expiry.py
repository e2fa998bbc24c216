"""The mirror job's own bound on a table's snapshots (``maintain/history_cap.py``): the oldest
expired through Iceberg's table API on the driver (no Spark job), their files removed when
no snapshot kept needs them."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from cdcmirror.maintain.history_cap import over_cap
from cdcmirror.spark.iceberg import iceberg_table, retry_on_conflict

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger("cdcmirror.mirror")


def snapshot_count(spark: SparkSession, target: str) -> int:
    """The snapshots ``target``'s metadata holds now."""
    return int(iceberg_table(spark, target).snapshots().size())


def cap_snapshots(spark: SparkSession, targets: list[str], cap: int) -> None:
    """:func:`cap_table` of each of ``targets``. Housekeeping: a table it fails on (dropped,
    unreachable for a moment) is named in a warning and the job goes on; the next check
    tries again."""
    for target in targets:
        try:
            cap_table(spark, target, cap)
        except Exception as exc:  # housekeeping must not stop the mirror
            first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else repr(exc)
            logger.warning(
                "%s: could not expire old snapshots (maintain.max_snapshots = %d), the job "
                "goes on and tries again later; `cdcmirror maintain` expires them too: %s",
                target,
                cap,
                first,
            )


def cap_table(spark: SparkSession, target: str, cap: int) -> int:
    """Expire ``target``'s oldest snapshots down to the newest ``cap`` when it holds too many
    (``history_cap.over_cap``); how many were expired (0: none)."""
    before = snapshot_count(spark, target)
    if not over_cap(before, cap):
        return 0

    def expire() -> int:
        table = iceberg_table(spark, target)  # again on a retry: the conflict's commit is in it
        now_ms = int(time.time() * 1000)
        table.expireSnapshots().retainLast(cap).expireOlderThan(now_ms).commit()
        return before - snapshot_count(spark, target)

    expired = retry_on_conflict(expire, f"{target}: expiring snapshots")
    logger.info(
        "%s: expired %d of %d snapshots (maintain.max_snapshots = %d)", target, expired, before, cap
    )
    return expired
