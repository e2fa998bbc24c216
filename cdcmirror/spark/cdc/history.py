"""A table's batch into its history table (``mirror.history``), before the mirror's own
work on it: first made from the mirrored table's rows when the history holds nothing, then
each batch's versions and the closing of the versions they follow in one MERGE. The rules
and the SQL are ``mirror/history.py``'s.

Before the mirror's commits of the batch, so that a crash between the two leaves the
history ahead: its own high-water mark then drops the re-run's changes it holds, and the
mirror applies them as it always would. The batch's TRUNCATE is seen in the events, before
the mirror empties the table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdcmirror.cdc_columns import placeholder_flag
from cdcmirror.exceptions import MirrorError
from cdcmirror.mirror import history as rules
from cdcmirror.mirror.batch_aggregate import BatchAggregate
from cdcmirror.mirror.high_water import is_fresh, raised, recorded, summary
from cdcmirror.mirror.key_range import Bounds, bounds_of
from cdcmirror.mirror.positions import newer, position_literal, source_length
from cdcmirror.mirror.toast import toastable
from cdcmirror.spark.cdc.context import TableContext
from cdcmirror.spark.dead_letters import joined_dead
from cdcmirror.spark.iceberg import (
    current_snapshot,
    iceberg_table,
    recorded_mark,
    scanned_mark,
    snapshot_history,
    with_commit_props,
)
from cdcmirror.spark.rows import first_value, one_row
from cdcmirror.sql_text import as_of, q, spark_name, sql_string

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

MAX_LINKS = 50  # key changes of one row in one batch followed back at most
_STEPS = ("_hev", "_hguard", "_hcur", "_hlived", "_hfill", "_hsame")


def apply_history(tb: TableContext, decoded: DataFrame, agg: BatchAggregate) -> DataFrame | None:
    """Write the batch's versions of ``tb``'s table (``decoded``: its decoded events) into
    its history table; the dead letters of changes whose version has a value known nowhere."""
    history = tb.table.history
    assert history is not None
    target = spark_name(history)
    spark, view, table = tb.spark, tb.view, tb.table
    bounds = bounds_of(table, agg.bounds)  # the batch's keys, old keys of key changes too
    with tb.stats.phase("history"):
        mark = _seeded_mark(tb, target)
        decoded.createOrReplaceTempView(view + "_hdecoded")
        made = [view + suffix for suffix in (*_STEPS, "_hdecoded")]  # the views, dropped after
        try:
            events = view + "_hev"
            spark.sql(
                rules.events_sql(table, view + "_hdecoded", table.truncated_at)
            ).createOrReplaceTempView(events)
            truncates = _truncates(tb, decoded) if agg.truncates else []
            if not is_fresh(agg.oldest_position, mark):
                spark.sql(rules.guarded_sql(table, events, target, bounds)).createOrReplaceTempView(
                    view + "_hguard"
                )
                events = view + "_hguard"
                if not truncates and spark.table(events).isEmpty():  # a replay: all recorded
                    return None
            filled = _filled(tb, events, target, agg, bounds, made)
            dead = _unknown(tb, filled) if filled != events else None
            first = truncates[0] if truncates else None
            if agg.rereads:
                spark.sql(
                    rules.same_rereads_dropped_sql(
                        table, filled, target, bounds, first[0] if first else None
                    )
                ).createOrReplaceTempView(view + "_hsame")
                filled = view + "_hsame"
            source = rules.versions_sql(table, filled, truncates, rules.unknown_sql(table))
            merge = rules.merge_sql(table, target, source, first, bounds)
            props = {**tb.props, **summary(raised(mark, agg.newest_position))}
            with_commit_props(spark, props, lambda: spark.sql(merge))
            return dead
        finally:
            for name in made:
                spark.catalog.dropTempView(name)


def _seeded_mark(tb: TableContext, target: str) -> list[int] | None:
    """The history table's high-water mark; a history that holds nothing yet is first made
    from the mirrored table's rows as they stand (the batch's changes are not in them: the
    history goes first), its mark theirs."""
    spark = tb.spark
    history = iceberg_table(spark, target)  # loaded once: a catalog read each
    if history.currentSnapshot() is not None:
        return recorded(snapshot_history(history))
    read = current_snapshot(spark, tb.target)
    n = source_length(tb.table.dialect)
    mark = recorded_mark(spark, tb.target) if read.id is not None else []
    if mark is None and read.id is not None:
        mark = scanned_mark(spark, as_of(tb.target, read.id), n)
    stored = as_of(tb.target, read.id) if read.id is not None else None
    props = {**tb.props, **summary(mark)}
    if stored is None:
        sql = f"INSERT INTO {target} SELECT * FROM {target} WHERE false"
    else:
        sql = rules.seed_sql(tb.table, target, stored)
    with_commit_props(spark, props, lambda: spark.sql(sql))
    return mark


def _filled(
    tb: TableContext,
    events: str,
    target: str,
    agg: BatchAggregate,
    bounds: Bounds,
    made: list[str],
) -> str:
    """The view of ``events`` with their unchanged-TOAST placeholders filled (the views of
    each step added to ``made``)."""
    table, spark, view = tb.table, tb.spark, tb.view
    if not toastable(table) or not agg.placeholders:
        return events
    spark.sql(rules.current_sql(table, target, events, bounds)).createOrReplaceTempView(
        view + "_hcur"
    )
    spark.sql(rules.lives_sql(table, events)).createOrReplaceTempView(view + "_hlived")
    spark.sql(
        rules.batch_filled_sql(table, view + "_hlived", view + "_hcur")
    ).createOrReplaceTempView(view + "_hfill")
    if not agg.key_change_fills:
        return view + "_hfill"
    unknown = rules.unknown_sql(table)
    filled, left = view + "_hfill", -1
    for link in range(MAX_LINKS):  # a link of a chain of key changes each
        step = spark.sql(rules.old_key_filled_sql(table, filled, target, bounds))
        filled = f"{view}_hfilled{link}"
        made.append(filled)
        step.localCheckpoint(eager=True).createOrReplaceTempView(filled)
        now = first_value(spark.sql(f"SELECT count_if({unknown}) FROM {filled}"))
        if now in (0, left):
            break
        left = now
    return filled


def _unknown(tb: TableContext, filled: str) -> DataFrame | None:
    """The dead letters of the changes whose version would hold a placeholder."""
    table = tb.table
    unknown = rules.unknown_sql(table)
    if unknown == "false":
        return None
    flags = ", ".join(
        f"IF({q(placeholder_flag(c))}, {sql_string(c)}, NULL)" for c in toastable(table)
    )
    errors = tb.spark.sql(
        f"SELECT element_at(_cdc_position, -2) AS _cdc_p, element_at(_cdc_position, -1) AS "
        f"_cdc_o, concat('history: the unchanged-TOAST value of ', concat_ws(', ', {flags}), "
        "' is known nowhere (not in the batch, not in the history of the key); its version "
        "is not written') AS _cdc_error "
        f"FROM {filled} WHERE {unknown}"
    ).localCheckpoint(eager=True)
    if errors.isEmpty():
        return None
    if tb.fail_on_dead_letter:
        first = one_row(errors)
        raise MirrorError(
            f"{table.identifier}: event at {table.topic} partition {first._cdc_p} offset "
            f'{first._cdc_o} cannot be applied: {first._cdc_error} (mirror.dead_letter = "fail")'
        )
    tb.stats.dead_lettered += errors.count()
    return joined_dead(tb.raw, errors, table.identifier)


def _truncates(tb: TableContext, decoded: DataFrame) -> list[tuple[list[int], int]]:
    """The batch's TRUNCATEs newer than the one applied before it (position, commit time in
    epoch microseconds), in position order."""
    table = tb.table
    where = "_cdc_error IS NULL AND _cdc_op = 't'"
    if table.truncated_at:
        n = source_length(table.dialect)
        where += f" AND {newer('_cdc_position', position_literal(table.truncated_at), n)}"
    rows = decoded.where(where).selectExpr(
        "_cdc_position AS p", "unix_micros(_cdc_source_ts) AS us"
    )
    return sorted(([int(x) for x in r.p], int(r.us)) for r in rows.collect())
