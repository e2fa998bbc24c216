"""Applying one table's decoded events of a micro-batch: dead-letter what cannot be
applied, truncate, dedupe, classify against the stored positions, MERGE, record tombstones
(the SQL: ``mirror/merge_sql.py``; the order of positions: ``mirror/positions.py``).

Every commit carries the batch's properties (``spark/commits.py``)."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from cdcmirror.exceptions import MirrorError
from cdcmirror.mirror.batch_aggregate import aggregate_exprs, read_aggregate
from cdcmirror.mirror.direct_merge import goes_direct
from cdcmirror.mirror.envelope import spark_name
from cdcmirror.mirror.high_water import HIGH_WATER, Mark, raised, summary
from cdcmirror.mirror.key_change import (
    applies_at_create,
    key_changes_at_create_sql,
)
from cdcmirror.mirror.key_range import Bounds, bounds_of
from cdcmirror.mirror.merge_sql import (
    append_merge_sql,
    broadcasts_keys,
    classify_sql,
    dedupe_sql,
    merge_sql,
    restore_sql,
    tombstone_append_sql,
    truncate_sql,
)
from cdcmirror.mirror.positions import (
    history_restarted_message,
    later_mark,
    newer,
    position_literal,
    source_length,
)
from cdcmirror.mirror.reload_mark import IN_RELOAD
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.toast_chain import unknown_sql
from cdcmirror.spark import commits
from cdcmirror.spark.action_counts import count_actions, count_exprs, unapplied_dead
from cdcmirror.spark.batch_stats import TableStats
from cdcmirror.spark.dead_letters import decoded_dead
from cdcmirror.spark.direct_apply import DirectBatch, apply_direct, batch_mark
from cdcmirror.spark.kept import keep, let_go
from cdcmirror.spark.snapshot_guard import (
    Read,
    current_snapshot,
    foreign_parent,
    merge_on_read,
)
from cdcmirror.spark.tombstones import Entombed, TombstoneTables, entombed
from cdcmirror.sql_text import as_of
from cdcmirror.table_properties import TRUNCATED_PROPERTY, TRUNCATED_TS_PROPERTY


class NewSchemas(Exception):
    """A batch read once (``spark/single_pass.py``) holds an event of a row schema the job
    has not applied: nothing of it is written, it is applied the usual way."""


logger = logging.getLogger("cdcmirror.mirror")

VIEWS = ("_decoded", "_events", "_walked", "_deduped", "_source", "_changes", "_effective")


@dataclass
class TableBatch:
    """One table's share of a micro-batch, and what applying it needs."""

    spark: Any  # the batch's session (its temp views)
    table: MirrorTable
    batch_id: int
    stats: TableStats
    props: dict[str, str]  # snapshot summary properties of every commit
    soft: bool  # soft deletes
    fail_on_dead_letter: bool
    tombstones: TombstoneTables
    remember: Callable[[MirrorTable], None]  # the table's new truncate mark
    raw: Any  # the table's Kafka records of the batch (dead letters keep their key and value)
    read_once: bool = False  # no first look: the decode counts the events, checks schemas

    @property
    def target(self) -> str:
        """The table's Spark name."""
        return spark_name(self.table.identifier)

    @property
    def view(self) -> str:
        return f"_cdcm_{abs(hash(self.table.identifier))}_{abs(self.batch_id)}"

    def commit(self, sql: str, data: bool = False) -> None:
        """Run ``sql``, its snapshots carrying the batch's properties; ``data``: it is the
        MERGE of the batch's rows (``commits.data_commit``)."""
        commit = commits.data_commit if data else commits.with_commit_props
        commit(self.spark, self.props, lambda: self.spark.sql(sql))


def apply_decoded(tb: TableBatch, decoded: Any) -> Any:
    """Apply the decoded events (computed and kept by the job that aggregates them); the
    batch's dead letters of this table (or None)."""
    from pyspark.sql import Row

    if tb.table.reloaded is not None:  # changes the re-loaded rows hold: dropped, not counted
        decoded = decoded.where(f"_cdc_position IS NULL OR _cdc_position[0] <> {IN_RELOAD}")
    with tb.stats.phase("decode"):
        decoded, values = keep(decoded, aggregate_exprs(tb.table))
    try:
        return _apply_kept(tb, decoded, Row(**read_aggregate(values)))
    finally:
        let_go(decoded)


def _apply_kept(tb: TableBatch, decoded: Any, agg: Any) -> Any:
    table, stats = tb.table, tb.stats
    if tb.read_once:
        if agg.new_schemas:
            raise NewSchemas(f"{table.identifier}: {agg.new_schemas} event(s) of a new row schema")
        stats.events = agg.events
        if not agg.events:  # the partitions moved by transaction markers only
            return None
    bounds = bounds_of(table, agg.asDict())
    source_us = (agg.newest_us, agg.median_us, agg.oldest_us)
    stats.dead_lettered = agg.bad
    dead = None
    if stats.dead_lettered:
        bad = decoded.where("_cdc_error IS NOT NULL")
        # made now: the kept decode is let go after the table's work
        dead = decoded_dead(bad, table, tb.fail_on_dead_letter, tb.raw).localCheckpoint(eager=True)
    applied = decoded.where("_cdc_error IS NULL").where("_cdc_op IN ('c', 'u', 'd', 'r')")
    truncated_at = _truncate(tb, agg)
    if truncated_at:
        n = source_length(table.dialect)
        applied = applied.where(newer("_cdc_position", position_literal(truncated_at), n))
    if table.mode == "append" or not table.key:
        applied.createOrReplaceTempView(tb.view + "_events")
        try:
            with stats.phase("merge"):
                tb.commit(append_merge_sql(table, tb.target, tb.view + "_events"))
        finally:
            tb.spark.catalog.dropTempView(tb.view + "_events")
        stats.inserts = applied.count() if truncated_at else agg.applied
    else:
        try:
            dead = _apply_keyed(tb, applied, agg, bounds or {}, dead)
        finally:
            for suffix in VIEWS:
                tb.spark.catalog.dropTempView(tb.view + suffix)
    stats.committed(time.time(), *source_us)
    return dead


def _truncate(tb: TableBatch, agg: Any) -> list[int]:
    """Apply the batch's newest TRUNCATE, if any; the table's truncate mark after it."""
    table = tb.table
    if agg.behind_truncate:
        raise MirrorError(
            history_restarted_message(
                table.identifier,
                agg.behind_truncate,
                f"the table's last TRUNCATE is at {list(table.truncated_at)}, committed "
                f"{table.truncated_ts_us} us after the epoch",
            )
        )
    truncated_at = list(table.truncated_at)
    if agg.truncated_at is None:
        return truncated_at
    tb.stats.truncates = agg.truncates
    batch_mark = [int(x) for x in agg.truncated_at]
    truncated_at = later_mark(truncated_at, batch_mark, source_length(table.dialect))
    ts_us = agg.truncated_ts if truncated_at == batch_mark else table.truncated_ts_us
    with tb.stats.phase("truncate"):
        tb.commit(
            f"ALTER TABLE {tb.target} SET TBLPROPERTIES "
            f"('{TRUNCATED_PROPERTY}' = '{json.dumps(truncated_at)}', "
            f"'{TRUNCATED_TS_PROPERTY}' = '{ts_us if ts_us is not None else ''}')"
        )
        tb.commit(truncate_sql(table, tb.target, position_literal(truncated_at), tb.soft))
    tb.remember(replace(table, truncated_at=tuple(truncated_at), truncated_ts_us=ts_us))
    return truncated_at


def _apply_keyed(tb: TableBatch, applied: Any, agg: Any, bounds: Bounds, dead: Any) -> Any:
    """Dedupe, classify, MERGE and record tombstones; the dead letters so far and those of
    unknown unchanged TOAST values."""
    spark, table, view, stats, target = tb.spark, tb.table, tb.view, tb.stats, tb.target
    tombstones = None if tb.soft else tb.tombstones.ensure(spark, table)
    read, mark = _marked_read(tb, agg, tombstones)  # classified on it, MERGEd unguarded
    if goes_direct(agg.asDict(), tb.soft, mark) and merge_on_read(spark, target):
        _apply_direct(tb, applied, agg, bounds, read, tombstones)
        return dead
    with stats.phase("dedupe_classify"):
        known = entombed(spark, tombstones)  # the tombstones and their pruned mark
        changes, counted = _classified(tb, applied, agg, bounds, known, read)
    with stats.phase("counts"):
        counts = count_actions(table, changes, counted, agg, stats)
        found = unapplied_dead(table, changes, counts, tb.raw, tb.fail_on_dead_letter, known, stats)
        if found is not None:
            dead = found if dead is None else dead.unionByName(found)
    if stats.inserts or stats.updates or stats.deletes:
        effective = changes.where(
            f"_cdc_action IN ('insert', 'update', 'delete') AND NOT {unknown_sql(table)}"
        )
        effective.createOrReplaceTempView(view + "_effective")
        with stats.phase("merge"):
            inserts = bool(stats.inserts or (tb.soft and stats.deletes))
            kept = bool(counts["placeholders"])
            matched = bool(stats.updates or stats.deletes)  # else an append of the inserts
            stats.inserts_only = not matched
            args = (table, target, view + "_effective", tb.soft, bounds, inserts, kept)
            tb.commit(merge_sql(*args, guarded=False, matched=matched), data=True)
            parent = foreign_parent(spark, target, read.id, tb.props)
            if parent is not None:  # an insert-only MERGE left the rows it found stored
                put_back = restore_sql(table, target, parent, view + "_effective")
                _after_foreign(tb, read.id, put_back if matched else merge_sql(*args))
    # After the MERGE: a crash in between is healed by the re-run of this batch, which
    # finds the row gone and records the tombstone then ("absent").
    if tombstones and (counts.get("delete", 0) or counts.get("absent", 0)):
        with stats.phase("tombstones"):
            tb.commit(tombstone_append_sql(table, tombstones, view + "_changes"))
    return dead


def _marked_read(tb: TableBatch, agg: Any, tombstones: str | None) -> tuple[Read, Mark]:
    """The table's current snapshot and its high-water mark with ``tombstones``'; every
    commit of the batch from now on records the mark raised to the batch's newest change."""
    with tb.stats.phase("dedupe_classify"):
        read = current_snapshot(tb.spark, tb.target)
        args = (tb.spark, tb.table, tb.target, tombstones, read, agg.asDict(), tb.soft)
        mark = batch_mark(*args)
        tb.props = {**tb.props, **summary(raised(mark, agg.newest_position))}
    return read, mark


def _apply_direct(
    tb: TableBatch, applied: Any, agg: Any, bounds: Bounds, read: Read, tombstones: str | None
) -> None:
    """MERGE a batch that needs no classification (``spark/direct_apply.py``)."""
    direct = DirectBatch(
        tb.spark,
        tb.table,
        tb.target,
        tb.view,
        bounds,
        tb.commit,
        tb.props,
        lambda sql: _after_foreign(tb, read.id, sql),
    )
    apply_direct(direct, applied, agg, read, tombstones, tb.soft, tb.stats)


def _after_foreign(tb: TableBatch, read: int | None, sql: str) -> None:
    """After the unguarded MERGE, committed on a snapshot that a foreign commit made since
    the batch read snapshot ``read`` (``spark/snapshot_guard.py``): ``sql`` puts
    back the rows of the batch's keys that were stored newer (``merge_sql.restore_sql``), or,
    after an insert-only MERGE, which left the rows it found stored, MERGEs the batch with
    the position guard."""
    logger.warning(
        "%s: a commit not made by this batch landed between the snapshot it read (%s) and "
        "its MERGE; the batch's keys are written as the position guard decides",
        tb.table.identifier,
        read,
    )
    # put back rows of a foreign commit, whose positions no mark covers
    unmarked = {k: v for k, v in tb.props.items() if k != HIGH_WATER}
    replace(tb, props=unmarked).commit(sql)


def _classified(
    tb: TableBatch,
    applied: Any,
    agg: Any,
    bounds: Bounds,
    known: Entombed,
    read: Read,
) -> tuple[Any, Any]:
    """The batch's newest event per key with its ``_cdc_action`` (``merge_sql.classify_sql``)
    against the target as snapshot ``read`` holds it and the tombstones ``known`` (with
    their pruned mark), as the view ``<view>_changes``, and the observation that counts them
    (``action_counts.count_actions``)."""
    from pyspark.sql import Observation

    spark, table, view, target = tb.spark, tb.table, tb.view, tb.target
    events = applied
    if applies_at_create(table):
        applied.createOrReplaceTempView(view + "_decoded")
        events = spark.sql(key_changes_at_create_sql(table, view + "_decoded", applied.columns))
    events.createOrReplaceTempView(view + "_events")
    deduped = spark.sql(dedupe_sql(table, view + "_events"))
    if agg.key_change_fills:
        from cdcmirror.spark.key_chains import fill_key_chains

        deduped = fill_key_chains(
            spark, table, deduped, view + "_events", target, view, tb.soft, bounds
        )
    deduped.createOrReplaceTempView(view + "_deduped")
    broadcast = tb.stats.keys_broadcast = broadcasts_keys(agg.applied, read.rows)
    stored = as_of(target, read.id)
    classified = spark.sql(
        classify_sql(
            table,
            view + "_deduped",
            stored,
            known.stored,
            tb.soft,
            bounds,
            broadcast,
            known.pruned_below,
        )
    )
    # Counted by the job that computes it (an observation: no second job), and computed
    # once, before anything is written: a recomputation after the MERGE below would
    # classify against the new state (localCheckpoint is eager and cuts lineage).
    counted = Observation(f"cdcmirror_counts_{uuid.uuid4().hex}")
    changes = classified.observe(counted, *count_exprs(table)).localCheckpoint(eager=True)
    changes.createOrReplaceTempView(view + "_changes")
    return changes, counted
