"""One table's events of a micro-batch applied, top to bottom: the table evolved to the
batch's row schemas (events of a schema it cannot take dead-lettered, ``evolve.py``), the
events decoded and kept with their aggregate (``decode.py``), those that cannot be applied
dead-lettered, a keyed table's versions written into its history table when it has one
(``history.py``), the batch's newest TRUNCATE applied, then a keyless table's events appended,
or a keyed table's batch MERGEd without a classification when every change is newer than
everything stored (``direct.py``) or classified against what is stored (``classified.py``).

Every commit carries the batch's properties (``context.TableContext.commit``); the order of
positions is ``mirror/positions.py``'s, the SQL ``mirror/merge_sql.py``'s. With the
consistent tag, a batch that goes past the source's new consistent point is applied in two
commits, up to the point and after it (``_apply_split``, ``spark/consistent.py``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from cdcmirror.exceptions import CdcMirrorError, MirrorError
from cdcmirror.mirror.batch_aggregate import BatchAggregate
from cdcmirror.mirror.consistent_point import Position
from cdcmirror.mirror.direct_merge import goes_direct
from cdcmirror.mirror.high_water import Mark, raised, summary
from cdcmirror.mirror.key_range import Bounds, bounds_of
from cdcmirror.mirror.known_schemas import KnownSchemas
from cdcmirror.mirror.merge_sql import append_merge_sql, truncate_sql
from cdcmirror.mirror.positions import (
    history_restarted_message,
    later_mark,
    newer,
    position_literal,
    source_length,
)
from cdcmirror.mirror.reload_mark import IN_RELOAD
from cdcmirror.mirror.resume import batch_summary
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.stats import TableStats
from cdcmirror.mirror.transaction_metadata import Published
from cdcmirror.spark.cdc.classified import apply_classified
from cdcmirror.spark.cdc.context import TableContext
from cdcmirror.spark.cdc.decode import (
    AvroReads,
    aggregate_of,
    decode_events,
    kept_with_aggregate,
    let_go,
)
from cdcmirror.spark.cdc.direct import apply_direct, batch_mark
from cdcmirror.spark.cdc.evolve import BatchEvolution, reject_schemas
from cdcmirror.spark.cdc.history import apply_history
from cdcmirror.spark.cdc.plan import ReadMode, TopicBatch
from cdcmirror.spark.dead_letters import decoded_dead, raw_dead
from cdcmirror.spark.iceberg import (
    Read,
    current_snapshot,
    merge_on_read,
    rows_added,
    scanned_mark,
    snapshot_and_mark,
)
from cdcmirror.spark.tombstones import TombstoneTables, entombed
from cdcmirror.sql_text import as_of
from cdcmirror.table_properties import TRUNCATED_PROPERTY, TRUNCATED_TS_PROPERTY

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SplitAt = Callable[["DataFrame"], Position | None]
"""Where a table's batch splits at the consistent point (``spark/consistent.py``), asked for
after its decode, before its first commit, with its decoded events (the proof reads their
transactions, ``_cdc_tx``): the point's position, or None (one commit)."""
_NOT_IN_RELOAD = f"_cdc_position IS NULL OR _cdc_position[0] <> {IN_RELOAD}"


VIEWS = ("_decoded", "_events", "_walked", "_deduped", "_source", "_changes", "_effective")


@dataclass(frozen=True)
class TableSettings:
    """What applying any table of the job needs, the same for every batch."""

    kind: str  # avro, json or schemaless
    schemas: bool  # JSON with schemas
    soft: bool  # soft deletes
    fail_on_dead_letter: bool
    reads: AvroReads | None  # Avro read once: its frames and registry
    evolution: BatchEvolution
    known: KnownSchemas  # the row schemas each table took
    tombstones: TombstoneTables


@dataclass(frozen=True)
class TableOutcome:
    """What one table's share of a batch came to."""

    stats: TableStats
    dead: DataFrame | None  # its dead letters (the job writes the batch's at its end)
    table: MirrorTable  # as it is after the batch (evolved, its truncate mark)
    # read once, the events of a row schema not expected (0: none); when some: nothing of
    # the table was written, it takes a first look
    new_schemas: int = 0
    # applied in two commits at the consistent point: the snapshot that holds it at the
    # point (``spark/consistent.py``)
    at_point: Published | None = None


def apply_table(
    spark: SparkSession,
    records: DataFrame,
    table: MirrorTable,
    batch: TopicBatch,
    batch_id: int,
    query_id: str,
    settings: TableSettings,
    split_at: SplitAt | None = None,
) -> TableOutcome:
    """Apply ``table``'s events of ``records`` (the batch's, or its own, as ``batch.mode``
    reads them); ``split_at``: with the consistent tag, the point's position, when the batch
    goes past it (the changes up to it are committed first, :func:`_apply_split`), asked for
    once the events are decoded."""
    stats = TableStats(table.identifier, events=batch.events)
    stats.offsets.update(batch.offsets)
    stats.starts.update(batch.starts)
    if stats.events == 0:
        return TableOutcome(stats, None, table)
    where = ", ".join(f"{p}:{o}" for p, o in sorted(batch.offsets.items()))
    started = time.monotonic()
    try:
        return _apply(spark, records, table, batch, batch_id, query_id, settings, stats, split_at)
    except CdcMirrorError:
        raise
    except Exception as exc:
        raise MirrorError(
            f"{table.identifier}: batch {batch_id} failed (topic {table.topic}, "
            f"partition:end offset {where}): {exc}"
        ) from exc
    finally:
        stats.table_seconds = time.monotonic() - started


def _apply(
    spark: SparkSession,
    records: DataFrame,
    table: MirrorTable,
    batch: TopicBatch,
    batch_id: int,
    query_id: str,
    settings: TableSettings,
    stats: TableStats,
    split_at: SplitAt | None,
) -> TableOutcome:
    seen = sorted(batch.schemas)
    verdict = settings.evolution.apply(table, seen)
    table = verdict.table
    events = records.where(records.topic == table.topic).where("value IS NOT NULL")
    if verdict.stop:
        stats.stopped = verdict.stop
        stats.dead_lettered = stats.events
        return TableOutcome(stats, raw_dead(events, f"table stopped: {verdict.stop}", table), table)
    rejected, events = reject_schemas(events, settings.kind, table, verdict.rejected, stats)
    known = seen if batch.mode.once else None
    # learnt too when the table changed under known ones (a widening the batch took)
    if known is None or batch.mode is ReadMode.GUESSED or settings.known.of(table) is None:
        settings.known.learn(table, set(seen), not verdict.rejected)  # Avro: the ids, as text
    decoded = decode_events(
        events,
        table,
        settings.schemas,
        settings.reads or False,
        known,
        seen,
        verdict.carriers,
        transactions=split_at is not None,  # the proof reads each event's transaction
    )
    props = batch_summary(query_id, batch_id, table.topic, batch.starts, batch.offsets)
    tb = TableContext(
        spark,
        table,
        batch_id,
        stats,
        props,
        settings.soft,
        settings.fail_on_dead_letter,
        settings.tombstones,
        events,
    )
    outcome = _apply_decoded(tb, decoded, batch.mode.once, split_at)
    if rejected is not None:
        stats.dead_lettered += rejected[1]
        dead = rejected[0] if outcome.dead is None else outcome.dead.unionByName(rejected[0])
        outcome = replace(outcome, dead=dead)
    return outcome


def _apply_decoded(
    tb: TableContext, decoded: DataFrame, read_once: bool, split_at: SplitAt | None
) -> TableOutcome:
    """Apply the decoded events (kept, with their aggregate, by the job that computes it).

    Changes the re-loaded rows hold are dropped, not counted; with the consistent tag they
    are dropped after the proof has read them (a transaction is complete with them)."""
    outside = None if tb.table.reloaded is None else _NOT_IN_RELOAD
    if outside is not None and split_at is None:
        decoded = decoded.where(outside)
    with tb.stats.phase("decode"):
        whole, agg = kept_with_aggregate(decoded, tb.table)
    kept = whole
    try:
        if split_at is None or (read_once and agg.new_schemas):  # the latter: read again
            return _apply_kept(tb, kept, agg, read_once)
        with tb.stats.phase("point"):
            at = split_at(whole)
        if outside is not None:
            with tb.stats.phase("decode"):
                kept = whole.where(outside)
                agg = aggregate_of(kept, tb.table)
        if at is None:
            return _apply_kept(tb, kept, agg, read_once)
        return _apply_split(tb, kept, agg, at)
    finally:
        let_go(whole)


def _apply_split(
    tb: TableContext, kept: DataFrame, agg: BatchAggregate, split_at: Position
) -> TableOutcome:
    """The batch in two commits: the changes at or before the consistent point's position
    (commit order is position order, so exactly those of the transactions up to the point),
    then the rest. The snapshot between them holds the table at the point; the second keeps
    the head as fresh as one commit would. Each half is applied as a batch of its own (its
    aggregate, its high-water mark); an event whose position is not known (a dead letter)
    goes with the first."""
    n = source_length(tb.table.dialect)
    later = f"coalesce({newer('_cdc_position', position_literal(split_at), n)}, false)"
    halves = [kept.where(f"NOT {later}"), kept.where(later)]
    with tb.stats.phase("decode"):
        aggs = [aggregate_of(h, tb.table) for h in halves]
    tb.stats.events = agg.events
    first = TableStats(tb.table.identifier)
    table, dead = tb.table, []
    if aggs[0].events:
        done = _apply_kept(replace(tb, stats=first), halves[0], aggs[0], read_once=False)
        table, dead = done.table, [done.dead]
    at_point = Published(*snapshot_and_mark(tb.spark, tb.target))
    second = _apply_kept(replace(tb, table=table), halves[1], aggs[1], read_once=False)
    # the batch line's: every half that applies a change went without a classification (a
    # half of a key change's delete alone applies nothing: its create carries the delete)
    direct = [h.direct for h, agg in ((first, aggs[0]), (tb.stats, aggs[1])) if agg.applied]
    tb.stats.direct = bool(direct) and all(direct)
    tb.stats.keys_broadcast = tb.stats.keys_broadcast or first.keys_broadcast
    tb.stats.add(first)
    found = [d for d in (*dead, second.dead) if d is not None]
    merged = found[0].unionByName(found[1]) if len(found) == 2 else (found[0] if found else None)
    return replace(second, stats=tb.stats, dead=merged, at_point=at_point)


def _apply_kept(
    tb: TableContext, decoded: DataFrame, agg: BatchAggregate, read_once: bool
) -> TableOutcome:
    table, stats = tb.table, tb.stats
    if read_once:
        if agg.new_schemas:
            return TableOutcome(stats, None, table, new_schemas=int(agg.new_schemas))
        stats.events = agg.events
        if not agg.events:  # the partitions moved by transaction markers only
            return TableOutcome(stats, None, table)
    bounds = bounds_of(table, agg.bounds)
    stats.dead_lettered = agg.bad
    dead = None
    if stats.dead_lettered:
        bad = decoded.where("_cdc_error IS NOT NULL")
        # made now: the kept decode is let go after the table's work
        fail = tb.fail_on_dead_letter
        dead = decoded_dead(bad, table, fail, tb.raw).localCheckpoint(eager=True)
    applied = decoded.where("_cdc_error IS NULL").where("_cdc_op IN ('c', 'u', 'd', 'r')")
    if table.history is not None and table.key and table.mode != "append":
        lost = apply_history(tb, decoded, agg)  # first: the TRUNCATE is not applied yet
        if lost is not None:
            dead = lost if dead is None else dead.unionByName(lost)
    table = _truncate(tb, agg)
    if table.truncated_at:
        n = source_length(table.dialect)
        applied = applied.where(newer("_cdc_position", position_literal(table.truncated_at), n))
    if table.mode == "append" or not table.key:
        _append(tb, applied, agg)
    else:
        try:
            found = _apply_keyed(tb, applied, agg, bounds)
        finally:
            for suffix in VIEWS:
                tb.spark.catalog.dropTempView(tb.view + suffix)
        if found is not None:
            dead = found if dead is None else dead.unionByName(found)
    stats.committed(time.time(), agg.newest_us, agg.median_us, agg.oldest_us)
    return TableOutcome(stats, dead, table)


def _append(tb: TableContext, applied: DataFrame, agg: BatchAggregate) -> None:
    """A keyless table's events, each appended once (``merge_sql.append_merge_sql``). The
    commit records the table's high-water mark, as a keyed table's do: the consistent point
    tags no snapshot that holds a change after it (``spark/consistent.py``). The batch line
    counts the rows the commit added: a change sent again, or one before a TRUNCATE of the
    batch, adds none."""
    with tb.stats.phase("merge"):
        read, mark = snapshot_and_mark(tb.spark, tb.target)  # one version of its metadata
        if mark is None:  # written before marks were recorded here: read once from the rows
            n = source_length(tb.table.dialect)
            mark = scanned_mark(tb.spark, as_of(tb.target, read), n) if read else []
    tb = tb.with_props(summary(raised(mark, agg.newest_position)))
    applied.createOrReplaceTempView(tb.view + "_events")
    try:
        with tb.stats.phase("merge"):
            tb.commit(append_merge_sql(tb.table, tb.target, tb.view + "_events"), data=True)
    finally:
        tb.spark.catalog.dropTempView(tb.view + "_events")
    tb.stats.inserts = rows_added(tb.spark, tb.target, read)


def _truncate(tb: TableContext, agg: BatchAggregate) -> MirrorTable:
    """Apply the batch's newest TRUNCATE, if any; the table with its truncate mark after it."""
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
    if agg.truncated_at is None:
        return table
    tb.stats.truncates = agg.truncates
    stored = list(table.truncated_at)
    truncated_at = later_mark(stored, agg.truncated_at, source_length(table.dialect))
    ts_us = agg.truncated_ts if truncated_at == agg.truncated_at else table.truncated_ts_us
    with tb.stats.phase("truncate"):
        tb.commit(
            f"ALTER TABLE {tb.target} SET TBLPROPERTIES "
            f"('{TRUNCATED_PROPERTY}' = '{json.dumps(truncated_at)}', "
            f"'{TRUNCATED_TS_PROPERTY}' = '{ts_us if ts_us is not None else ''}')"
        )
        tb.commit(truncate_sql(table, tb.target, position_literal(truncated_at), tb.soft))
    return replace(table, truncated_at=tuple(truncated_at), truncated_ts_us=ts_us)


def _apply_keyed(
    tb: TableContext, applied: DataFrame, agg: BatchAggregate, bounds: Bounds
) -> DataFrame | None:
    """A keyed table's batch, MERGEd directly or classified; the dead letters of changes it
    cannot apply."""
    tombstones = None if tb.soft else tb.tombstones.ensure(tb.spark, tb.table)
    tb, read, mark = _marked_read(tb, agg, tombstones)  # classified on it, MERGEd unguarded
    if goes_direct(agg, tb.soft, mark) and merge_on_read(tb.spark, tb.target):
        apply_direct(tb, applied, agg, read, tombstones, bounds)
        return None
    with tb.stats.phase("dedupe_classify"):
        known = entombed(tb.spark, tombstones)  # the tombstones and their pruned mark
    return apply_classified(tb, applied, agg, bounds, known, read, tombstones)


def _marked_read(
    tb: TableContext, agg: BatchAggregate, tombstones: str | None
) -> tuple[TableContext, Read, Mark]:
    """The table's current snapshot and its high-water mark with ``tombstones``'; every
    commit of the batch from now on records the mark raised to the batch's newest change."""
    with tb.stats.phase("dedupe_classify"):
        read = current_snapshot(tb.spark, tb.target)
        mark = batch_mark(tb.spark, tb.table, tb.target, tombstones, read, agg, tb.soft)
    return tb.with_props(summary(raised(mark, agg.newest_position))), read, mark
