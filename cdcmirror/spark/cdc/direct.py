"""A keyed table's batch MERGEd without a classification (``mirror/direct_merge.py``): the
table's high-water mark read or scanned, the batch's newest change per key MERGEd without
reading stored positions, with the branches its operations need (its keys counted on the
MERGE's own job), what a foreign commit stored newer put back, a change the MERGE left out
written by the other branch, its deletes entombed, the actions counted from the commits'
summaries, the deletes of stored rows told by the keys' first events or, when the commit
disagrees, counted against the snapshot the batch read."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from cdcmirror.mirror.batch_aggregate import BatchAggregate
from cdcmirror.mirror.direct_merge import (
    COUNTED_KEYS,
    KEY_COUNTS,
    branches,
    could_go_direct,
    counted,
    direct_merge_sql,
    inferred_deletes,
    missed,
    stored_deletes_sql,
    summed,
    trusted,
)
from cdcmirror.mirror.high_water import Mark, highest
from cdcmirror.mirror.key_change import applies_at_create, key_changes_at_create_sql
from cdcmirror.mirror.key_range import Bounds
from cdcmirror.mirror.merge_sql import dedupe_sql, restore_sql, tombstone_append_sql
from cdcmirror.mirror.positions import source_length
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.spark.cdc.context import TableContext
from cdcmirror.spark.iceberg import (
    Read,
    batch_commit_summary,
    foreign_parent,
    recorded_mark,
    scanned_mark,
)
from cdcmirror.spark.rows import first_value
from cdcmirror.spark.tombstones import tombstone_marks
from cdcmirror.sql_text import as_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation, SparkSession


def batch_mark(
    spark: SparkSession,
    table: MirrorTable,
    target: str,
    tombstones: str | None,
    read: Read,
    agg: BatchAggregate,
    soft: bool,
) -> Mark:
    """The high-water mark of ``target`` as snapshot ``read`` holds it, with its
    ``tombstones``: recorded by their snapshots, or, when not and the batch could go
    without a classification, read from the positions of the one that records none (once:
    the batch's commits record it from then on; a pruning of the tombstones records none),
    and never below the tombstones' pruned mark (``tombstone_pruning.py``: the positions of
    the pruned ones are no longer there to scan)."""
    stored = [recorded_mark(spark, target)]
    pruned: list[int] = []
    if tombstones:
        recorded, pruned = tombstone_marks(spark, tombstones)
        stored.append(recorded)
    mark = highest(stored)
    if mark is not None or not could_go_direct(agg, soft):
        return highest([mark, pruned])
    n = source_length(table.dialect)
    scans = [stored[0]]
    if scans[0] is None:
        scans[0] = scanned_mark(spark, as_of(target, read.id), n) if read.id is not None else []
    if tombstones:
        scans.append(stored[1] if stored[1] is not None else scanned_mark(spark, tombstones, n))
    return highest([*scans, pruned])


OBSERVED_WAIT = 10.0  # seconds, at most, for a MERGE's source counts after it ran


def dedupe_direct(d: TableContext, applied: DataFrame) -> Observation:
    """The batch's ``applied`` events, the newest per key, as the view ``<view>_deduped``
    (from ``<view>_events``; ``_decoded`` for tables whose key changes apply at their
    create), and as ``<view>_source``, the MERGE's, which counts its keys
    (``direct_merge.KEY_COUNTS``) on the MERGE's own job; the observation of those counts."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    spark, table, view = d.spark, d.table, d.view
    events = applied
    if applies_at_create(table):  # the delete halves of key changes are not applied
        applied.createOrReplaceTempView(view + "_decoded")
        events = spark.sql(key_changes_at_create_sql(table, view + "_decoded", applied.columns))
    events.createOrReplaceTempView(view + "_events")
    # a direct batch carries no placeholder (direct_merge.could_go_direct): nothing to fill
    deduped = spark.sql(dedupe_sql(table, view + "_events", first_op=True, placeholders=False))
    deduped.createOrReplaceTempView(view + "_deduped")
    seen = Observation(f"cdcmirror_direct_{uuid.uuid4().hex}")
    counts = f"to_json(struct({', '.join(KEY_COUNTS)})) AS v"
    deduped.observe(seen, F.expr(counts)).createOrReplaceTempView(view + "_source")
    return seen


def observed_keys(seen: Observation, wait: float = OBSERVED_WAIT) -> dict[str, int] | None:
    """The key counts ``dedupe_direct`` observed on the MERGE's source, once the MERGE ran;
    None when they have not come within ``wait`` seconds (Spark hands them over as its query
    ends: an observation that never ran is never fulfilled, and ``Observation.get`` would
    wait for ever)."""
    java = seen._jo
    assert java is not None, "an observation of a query that ran"
    future = java.future()
    deadline = time.monotonic() + wait
    while not future.isCompleted():
        if time.monotonic() > deadline:
            return None
        time.sleep(0.005)
    from py4j.protocol import Py4JJavaError

    try:
        got = seen.get
    except Py4JJavaError:
        # Spark 4.1 fulfils the observation of a MERGE source it found empty with a row of
        # no columns, which pyspark cannot convert (4.0 never runs it): nothing observed, so
        # the caller counts
        return None
    values: dict[str, int] = json.loads(str(got["v"]))
    return values


def stored_deletes(d: TableContext, read: Read, bounds: Bounds) -> int:
    """How many of the deduplicated batch's deletes delete a row that snapshot ``read`` of
    ``d.target`` (the one before the MERGE) holds (``direct_merge.stored_deletes_sql``)."""
    if read.id is None:
        return 0
    sql = stored_deletes_sql(d.table, d.view + "_deduped", as_of(d.target, read.id), bounds)
    return int(first_value(d.spark.sql(sql)))


def merge_direct(
    d: TableContext, read: Read, bounds: Bounds, matched: bool, inserts: bool
) -> Mapping[str, str]:
    """MERGE the deduplicated batch into ``d.target`` (the batch's data commit) with the
    branches ``direct_merge.branches`` gave, and put back what a foreign commit since
    snapshot ``read`` stored newer; the entries of its commit's summary that
    ``direct_merge.counted`` reads."""
    sql = direct_merge_sql(
        d.table, d.target, d.view + "_source", d.soft, bounds, matched=matched, inserts=inserts
    )
    d.commit(sql, data=True)
    summary = batch_commit_summary(d.spark, d.target, d.props, COUNTED_KEYS)  # the MERGE's
    parent = foreign_parent(d.spark, d.target, read.id, d.props)
    if parent is not None:
        put_back = restore_sql(d.table, d.target, parent, d.view + "_deduped", classified=False)
        d.put_back(read.id, put_back)
    return summary


def complete_direct(d: TableContext, bounds: Bounds, matched: bool) -> Mapping[str, str]:
    """After a direct MERGE with one branch (``matched``: its MATCHED ones) that left changes
    out (``direct_merge.missed``), the other: with the position guard, so that the rows it
    wrote are not written again; the summary of its commit."""
    sql = direct_merge_sql(
        d.table,
        d.target,
        d.view + "_deduped",
        d.soft,
        bounds,
        matched=not matched,
        inserts=matched,
        guarded=True,
    )
    d.commit(sql, data=True)
    return batch_commit_summary(d.spark, d.target, d.props, COUNTED_KEYS)


def entomb_direct(d: TableContext, tombstones: str, deletes: int | None) -> int:
    """Record a tombstone for every delete of the direct batch after its MERGE, as a
    classified batch does for its deletes and absent keys; the newest change per key that
    are deletes: ``deletes`` (observed on the MERGE), or when not known, counted.

    Every delete event of the batch is recorded (``<view>_events``), also one that a later
    change of its key in the batch superseded: each is newer than every tombstone, and a
    true delete, so the newest tombstone of a key (what the classification reads) is the
    same, and no dedupe of the batch is computed again for it."""
    sql = tombstone_append_sql(d.table, tombstones, d.view + "_events", classified=False)
    d.commit(sql)
    if deletes is not None:
        return deletes
    sql = f"SELECT count_if(_cdc_op = 'd') FROM {d.view}_deduped"
    return int(first_value(d.spark.sql(sql)))


def apply_direct(
    d: TableContext,
    applied: DataFrame,
    agg: BatchAggregate,
    read: Read,
    tombstones: str | None,
    bounds: Bounds,
) -> None:
    """MERGE the batch's ``applied`` events (``agg``: their aggregate) into ``d.target``,
    which snapshot ``read`` held before, and record its deletes' tombstones after it (a crash
    in between: the batch runs again, classified, and records them); its counts, phases and
    ``direct`` into ``d.stats``."""
    stats = d.stats
    deletes = bool(agg.deletes)
    matched, inserts = branches(agg)
    seen = dedupe_direct(d, applied)
    with stats.phase("merge"):
        summary = merge_direct(d, read, bounds, matched, inserts)
        keys = trusted(observed_keys(seen), summary)
        if missed(keys, summary, matched, inserts):  # a change its first event misled
            summary = summed(summary, complete_direct(d, bounds, matched))
    deleted = inferred_deletes(keys, summary) if deletes else 0
    if deleted is None:  # the batch's first events and its commit disagree: counted
        with stats.phase("counts"):
            deleted = stored_deletes(d, read, bounds)
    entombed = 0
    if deletes and tombstones:
        with stats.phase("tombstones"):
            entombed = entomb_direct(d, tombstones, keys["deletes"] if keys else None)
    counts = counted(summary, agg.applied, deleted, entombed)
    stats.inserts, stats.updates, stats.duplicates, stats.deletes = counts
    stats.direct, stats.inserts_only = True, not matched
