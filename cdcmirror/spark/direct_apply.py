"""A keyed table's batch MERGEd without a classification (``mirror/direct_merge.py``): the
table's high-water mark read or scanned, the batch's newest change per key MERGEd with the
position guard, the actions counted from the commit's summary."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cdcmirror.mirror.direct_merge import (
    COUNTED_KEYS,
    DIRECT_ROWS,
    Counts,
    could_go_direct,
    counted,
)
from cdcmirror.mirror.high_water import Mark, highest
from cdcmirror.mirror.key_change import applies_at_create, key_changes_at_create_sql
from cdcmirror.mirror.key_range import Bounds
from cdcmirror.mirror.merge_sql import dedupe_sql, direct_merge_sql
from cdcmirror.mirror.positions import source_length
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.spark.snapshot_guard import (
    Read,
    batch_commit_summary,
    recorded_mark,
    scanned_mark,
)
from cdcmirror.sql_text import as_of


def batch_mark(
    spark: Any,
    table: MirrorTable,
    target: str,
    tombstones: str | None,
    read: Read,
    agg: Mapping[str, Any],
) -> Mark:
    """The high-water mark of ``target`` as snapshot ``read`` holds it, with its
    ``tombstones``: recorded by their snapshots, or, when not and the batch could go
    without a classification, read from their positions. None (unknown) for a table of
    ``DIRECT_ROWS`` rows or more, whose batches are always classified."""
    if read.rows >= DIRECT_ROWS:
        return None
    stored = [recorded_mark(spark, target)]
    if tombstones:
        stored.append(recorded_mark(spark, tombstones))
    mark = highest(stored)
    if mark is not None or not could_go_direct(agg, read.rows):
        return mark
    n = source_length(table.dialect)
    scans = [scanned_mark(spark, as_of(target, read.id), n) if read.id is not None else []]
    if tombstones:
        scans.append(scanned_mark(spark, tombstones, n))
    return highest(scans)


def apply_direct(
    spark: Any,
    table: MirrorTable,
    target: str,
    view: str,
    soft: bool,
    applied: Any,
    bounds: Bounds,
    commit: Callable[[str], None],
    props: Mapping[str, str],
    changes: int,
) -> Counts:
    """MERGE the batch's ``applied`` events (``changes`` of them) into ``target``, the
    newest per key, through ``commit`` (the batch's data commit; its snapshot carries
    ``props``); what it did, by the commit's summary. Views: ``<view>_events``,
    ``<view>_deduped`` (``_decoded`` for tables whose key changes apply at their create)."""
    events = applied
    if applies_at_create(table):  # the delete halves of key changes are not applied
        applied.createOrReplaceTempView(view + "_decoded")
        events = spark.sql(key_changes_at_create_sql(table, view + "_decoded", applied.columns))
    events.createOrReplaceTempView(view + "_events")
    spark.sql(dedupe_sql(table, view + "_events")).createOrReplaceTempView(view + "_deduped")
    commit(direct_merge_sql(table, target, view + "_deduped", soft, bounds))
    return counted(batch_commit_summary(spark, target, props, COUNTED_KEYS), changes)
