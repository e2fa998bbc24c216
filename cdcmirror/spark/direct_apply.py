"""A keyed table's batch MERGEd without a classification (``mirror/direct_merge.py``): the
table's high-water mark read or scanned, the batch's deletes of stored keys counted, its
newest change per key MERGEd with the position guard, its deletes entombed, the actions
counted from the commits' summaries."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cdcmirror.mirror.direct_merge import COUNTED_KEYS, DIRECT_ROWS, could_go_direct
from cdcmirror.mirror.high_water import Mark, highest
from cdcmirror.mirror.key_change import applies_at_create, key_changes_at_create_sql
from cdcmirror.mirror.key_range import Bounds
from cdcmirror.mirror.merge_sql import (
    dedupe_sql,
    direct_merge_sql,
    stored_deletes_sql,
    tombstone_merge_sql,
)
from cdcmirror.mirror.positions import source_length
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.spark.snapshot_guard import (
    Read,
    batch_commit_summary,
    holds_rows,
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
    soft: bool,
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
    if mark is not None or not could_go_direct(agg, read.rows, soft):
        return mark
    n = source_length(table.dialect)
    scans = [scanned_mark(spark, as_of(target, read.id), n) if read.id is not None else []]
    if tombstones:
        scans.append(scanned_mark(spark, tombstones, n))
    return highest(scans)


@dataclass(frozen=True)
class DirectBatch:
    """A table's batch that goes without a classification, and how it commits."""

    spark: Any
    table: MirrorTable
    target: str
    view: str  # its temp views' prefix
    bounds: Bounds
    commit: Callable[[str, bool], None]  # (sql, the batch's data commit?), props on each
    props: Mapping[str, str]  # what its commits' snapshots carry


def apply_direct(
    d: DirectBatch, applied: Any, changes: int, soft: bool, read: Read, deletes: bool
) -> tuple[Mapping[str, str], int]:
    """MERGE the batch's ``applied`` events (``changes`` of them) into ``d.target``, the
    newest per key, through ``d.commit`` (the batch's data commit); the summary of its
    commit, and how many of its deletes (``deletes``: it has some) deleted a stored row,
    counted on snapshot ``read`` before the MERGE. Views: ``<view>_events``,
    ``<view>_deduped`` (``_decoded`` for tables whose key changes apply at their create)."""
    spark, table, view = d.spark, d.table, d.view
    events = applied
    if applies_at_create(table):  # the delete halves of key changes are not applied
        applied.createOrReplaceTempView(view + "_decoded")
        events = spark.sql(key_changes_at_create_sql(table, view + "_decoded", applied.columns))
    events.createOrReplaceTempView(view + "_events")
    spark.sql(dedupe_sql(table, view + "_events")).createOrReplaceTempView(view + "_deduped")
    deleted = 0
    if deletes and read.id is not None:
        stored = as_of(d.target, read.id)
        sql = stored_deletes_sql(table, view + "_deduped", stored, d.bounds)
        deleted = int(spark.sql(sql).head()[0])
    d.commit(direct_merge_sql(table, d.target, view + "_deduped", soft, d.bounds), True)
    return batch_commit_summary(spark, d.target, d.props, COUNTED_KEYS), deleted


def entomb_direct(d: DirectBatch, tombstones: str) -> int:
    """Record a tombstone for every delete of the direct batch (its ``<view>_deduped``,
    after its MERGE), as a classified batch does for its deletes and absent keys; how many
    it recorded."""
    matched = holds_rows(d.spark, tombstones)  # else appended
    sql = tombstone_merge_sql(
        d.table, tombstones, d.view + "_deduped", d.bounds, matched, classified=False
    )
    d.commit(sql, False)
    done = batch_commit_summary(d.spark, tombstones, d.props, ("added-records",))
    return int(done.get("added-records", 0))
