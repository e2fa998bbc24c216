"""A keyed table's batch classified against what is stored: the newest event per key (key
changes applied at their create where they carry unchanged TOAST values, which the key
chain fills), each one's ``_cdc_action`` against the table as the snapshot the batch read
holds it and against the tombstones (``merge_sql.classify_sql``), the actions counted on the
job that computes them, what cannot be applied dead-lettered, the MERGE of the effective
changes, what a foreign commit stored newer put back, and the tombstones of the deletes.

The TOAST key-chain walk (``mirror/toast_chain.py``): only rows with a placeholder left and a
chain link to follow take part, first against their own stored row, then one step per link,
each a join against the batch's events and the stored rows; the loop ends when no row has a
link left (a chain is never longer than the batch, and every step goes strictly back in
position).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from cdcmirror.exceptions import MirrorError
from cdcmirror.mirror.action_counts import ActionCounts, action_count_exprs
from cdcmirror.mirror.batch_aggregate import BatchAggregate
from cdcmirror.mirror.envelope import q
from cdcmirror.mirror.key_change import applies_at_create, key_changes_at_create_sql
from cdcmirror.mirror.key_range import Bounds
from cdcmirror.mirror.merge_sql import (
    broadcasts_keys,
    classify_sql,
    dedupe_sql,
    merge_sql,
    restore_sql,
    tombstone_append_sql,
)
from cdcmirror.mirror.positions import history_restarted_message
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.toast_chain import (
    MAX_CHAIN_STEPS,
    chain_columns,
    chain_step_sql,
    own_stored_fill_sql,
    pending_sql,
    unknown_sql,
)
from cdcmirror.spark.cdc.context import TableContext
from cdcmirror.spark.dead_letters import pruned_dead, unknown_toast_dead
from cdcmirror.spark.iceberg import Read, foreign_parent
from cdcmirror.spark.tombstones import Entombed
from cdcmirror.sql_text import as_of, sql_string

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Observation, SparkSession


def apply_classified(
    tb: TableContext,
    applied: DataFrame,
    agg: BatchAggregate,
    bounds: Bounds,
    known: Entombed,
    read: Read,
    tombstones: str | None,
) -> DataFrame | None:
    """Dedupe, classify, MERGE and record tombstones; the dead letters of changes it cannot
    apply (an unchanged TOAST value known nowhere, a change older than the pruned
    tombstones), or None."""
    spark, table, view, stats = tb.spark, tb.table, tb.view, tb.stats
    with stats.phase("dedupe_classify"):
        changes, counted = _classified(tb, applied, agg, bounds, known, read)
    with stats.phase("counts"):
        counts = _count_actions(table, changes, counted, agg, tb)
        dead = _unapplied_dead(tb, changes, counts, known)
    if stats.inserts or stats.updates or stats.deletes:
        effective = changes.where(
            f"_cdc_action IN ('insert', 'update', 'delete') AND NOT {unknown_sql(table)}"
        )
        effective.createOrReplaceTempView(view + "_effective")
        with stats.phase("merge"):
            inserts = bool(stats.inserts or (tb.soft and stats.deletes))
            kept = bool(counts.placeholders)
            matched = bool(stats.updates or stats.deletes)  # else an append of the inserts
            stats.inserts_only = not matched
            args = (table, tb.target, view + "_effective", tb.soft, bounds, inserts, kept)
            tb.commit(merge_sql(*args, guarded=False, matched=matched), data=True)
            parent = foreign_parent(spark, tb.target, read.id, tb.props)
            if parent is not None:  # an insert-only MERGE left the rows it found stored
                put_back = restore_sql(table, tb.target, parent, view + "_effective")
                tb.put_back(read.id, put_back if matched else merge_sql(*args))
    # After the MERGE: a crash in between is healed by the re-run of this batch, which
    # finds the row gone and records the tombstone then ("absent").
    if tombstones and (counts.delete or counts.absent):
        with stats.phase("tombstones"):
            tb.commit(tombstone_append_sql(table, tombstones, view + "_changes"))
    return dead


def _classified(
    tb: TableContext,
    applied: DataFrame,
    agg: BatchAggregate,
    bounds: Bounds,
    known: Entombed,
    read: Read,
) -> tuple[DataFrame, Observation]:
    """The batch's newest event per key with its ``_cdc_action`` (``merge_sql.classify_sql``)
    against the target as snapshot ``read`` holds it and the tombstones ``known`` (with
    their pruned mark), as the view ``<view>_changes``, and the observation that counts
    them."""
    from pyspark.sql import Observation

    spark, table, view, target = tb.spark, tb.table, tb.view, tb.target
    events = applied
    if applies_at_create(table):
        applied.createOrReplaceTempView(view + "_decoded")
        events = spark.sql(key_changes_at_create_sql(table, view + "_decoded", applied.columns))
    events.createOrReplaceTempView(view + "_events")
    deduped = spark.sql(dedupe_sql(table, view + "_events"))
    if agg.key_change_fills:
        deduped = fill_key_chains(
            spark,
            table,
            deduped,
            events=view + "_events",
            target=target,
            view=view,
            soft=tb.soft,
            bounds=bounds,
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
    changes = classified.observe(counted, *_count_exprs(table)).localCheckpoint(eager=True)
    changes.createOrReplaceTempView(view + "_changes")
    return changes, counted


def fill_key_chains(
    spark: SparkSession,
    table: MirrorTable,
    deduped: DataFrame,
    *,
    events: str,
    target: str,
    view: str,
    soft: bool,
    bounds: Bounds,
) -> DataFrame:
    """``deduped`` with every placeholder filled that the chain or a stored row can fill
    (``events``: the batch's events, a view; ``target``: the stored rows; ``view``: the prefix
    of its own temp views)."""
    cols = chain_columns(table)
    deduped = deduped.select(*cols)
    pending = deduped.where(pending_sql(table))
    done = [deduped.where(f"NOT {pending_sql(table)}")]
    if pending.isEmpty():
        return done[0]
    pending.createOrReplaceTempView(view + "_pending")
    own = spark.sql(own_stored_fill_sql(table, view + "_pending", target, soft, bounds))
    pending = own.select(*cols).localCheckpoint(eager=True)
    done.append(pending.where(f"NOT {pending_sql(table)}"))
    pending = pending.where(pending_sql(table))
    steps = 0
    while steps < MAX_CHAIN_STEPS and not pending.isEmpty():
        steps += 1
        pending.createOrReplaceTempView(view + "_pending")
        sql = chain_step_sql(table, view + "_pending", events, target, soft, bounds)
        stepped = spark.sql(sql).select(*cols).localCheckpoint(eager=True)  # cut the lineage
        done.append(stepped.where(f"NOT {pending_sql(table)}"))
        pending = stepped.where(pending_sql(table))
    spark.catalog.dropTempView(view + "_pending")
    out = done[0]
    for frame in done[1:]:
        out = out.unionByName(frame)
    return out


def _count_exprs(table: MirrorTable) -> list[Column]:
    from pyspark.sql import functions as F

    return [F.expr(e) for e in action_count_exprs(table)]


def _count_actions(
    table: MirrorTable,
    changes: DataFrame,
    counted: Observation,
    agg: BatchAggregate,
    tb: TableContext,
) -> ActionCounts:
    """The classified changes per action into the stats; stops before anything of the table
    is written when a change comes from a restarted source history."""
    counts = ActionCounts.of(counted.get)
    if counts.backwards:
        raise MirrorError(history_restarted(table, changes, counts.backwards))
    stats = tb.stats
    # superseded within the batch, or older than a truncate
    stats.duplicates = max(0, agg.applied - counts.classified)
    stats.inserts, stats.updates = counts.insert, counts.update
    stats.deletes, stats.stale = counts.delete, counts.stale
    return counts


def _unapplied_dead(
    tb: TableContext, changes: DataFrame, counts: ActionCounts, known: Entombed
) -> DataFrame | None:
    """The classified ``changes`` that are not applied and go to the dead-letter table (None:
    none): ``unknown`` ones (an unchanged TOAST value known nowhere) and ``pruned`` ones
    (older than the tombstones ``known`` had pruned, ``mirror/tombstone_pruning.py``),
    counted into the stats."""
    table, stats = tb.table, tb.stats
    dead = None
    if counts.unknown:
        dead, found = unknown_toast_dead(table, changes, tb.raw, tb.fail_on_dead_letter)
        stats.dead_lettered += found
    if counts.pruned and known.pruned_below is not None:
        fail, below = tb.fail_on_dead_letter, known.pruned_below
        pruned = pruned_dead(table, changes, tb.raw, fail, below)
        stats.dead_lettered += counts.pruned
        dead = pruned if dead is None else dead.unionByName(pruned)
    return dead


def history_restarted(table: MirrorTable, changes: DataFrame, backwards: int) -> str:
    """The mirror's stop when changes of a restarted source history meet stored rows (the rule:
    ``positions.went_backwards_sql``; the classification marks them ``_cdc_backwards``), with
    one of the changes: its key, position and commit time, and those of what is stored."""
    key = ", ".join(f"concat({sql_string(k + '=')}, CAST({q(k)} AS STRING))" for k in table.key)
    first = (
        changes.where("_cdc_backwards")
        .selectExpr(
            f"concat_ws(', ', {key}) AS k",
            "_cdc_position",
            "CAST(_cdc_source_ts AS STRING) AS ts",
            "_cdc_stored_position",
            "CAST(_cdc_stored_ts AS STRING) AS stored_ts",
        )
        .first()
    )
    assert first is not None, "a change marked _cdc_backwards"
    example = (
        f"e.g. {first.k}: position {list(first._cdc_position)} committed {first.ts}, "
        f"stored at {list(first._cdc_stored_position)} committed {first.stored_ts}"
    )
    return history_restarted_message(table.identifier, backwards, example)
