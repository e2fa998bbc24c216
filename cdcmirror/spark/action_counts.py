"""A classified batch's changes counted per action by the observation on the job that
computes them (``spark/table_apply.py``), and the changes it leaves unapplied as dead
letters (an unchanged TOAST value known nowhere, a change older than the pruned tombstones)."""

from __future__ import annotations

from typing import Any

from cdcmirror.exceptions import MirrorError
from cdcmirror.mirror.merge_sql import ACTIONS
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.toast import placeholder_sql
from cdcmirror.mirror.toast_chain import unknown_sql
from cdcmirror.mirror.tombstone_pruning import PRUNED
from cdcmirror.spark.batch_stats import TableStats
from cdcmirror.spark.dead_letters import pruned_dead, unknown_toast_dead
from cdcmirror.spark.history_gap import history_restarted
from cdcmirror.spark.tombstones import Entombed


def count_exprs(table: MirrorTable) -> list[Any]:
    """The classified changes per action, the ``unknown`` ones (an unchanged TOAST value known
    nowhere) and the ``backwards`` ones (from a restarted source history)."""
    from pyspark.sql import functions as F

    return [
        *(F.expr(f"count_if(_cdc_action = '{a}')").alias(a) for a in ACTIONS),
        F.expr(f"count_if({unknown_sql(table)})").alias("unknown"),
        F.expr("count_if(_cdc_backwards)").alias("backwards"),
        F.expr(f"count_if({placeholder_sql(table)})").alias("placeholders"),
    ]


def count_actions(
    table: MirrorTable, changes: Any, counted: Any, agg: Any, stats: TableStats
) -> dict[str, int]:
    """The classified changes per action (and ``unknown``: events whose unchanged TOAST value
    is known nowhere) into ``stats``; stops before anything of the table is written when a
    change comes from a restarted source history."""
    metrics = counted.get
    counts = {a: int(metrics[a]) for a in ACTIONS if metrics[a]}
    if metrics["backwards"]:
        raise MirrorError(history_restarted(table, changes, int(metrics["backwards"])))
    # superseded within the batch, or older than a truncate
    stats.duplicates = max(0, agg.applied - sum(counts.values()))
    stats.inserts = counts.get("insert", 0)
    stats.updates = counts.get("update", 0)
    stats.deletes = counts.get("delete", 0)
    stats.stale = counts.get("stale", 0)
    return {**counts, **{k: int(metrics[k]) for k in ("unknown", "placeholders")}}


def unapplied_dead(
    table: MirrorTable,
    changes: Any,
    counts: dict[str, int],
    raw: Any,
    fail: bool,
    known: Entombed,
    stats: TableStats,
) -> Any:
    """The classified ``changes`` that are not applied and go to the dead-letter table (None:
    none): ``unknown`` ones (an unchanged TOAST value known nowhere) and ``pruned`` ones
    (older than the tombstones ``known`` had pruned, ``mirror/tombstone_pruning.py``),
    counted into ``stats``."""
    dead = None
    if counts.get("unknown"):
        dead, found = unknown_toast_dead(table, changes, raw, fail)
        stats.dead_lettered += found
    if counts.get(PRUNED) and known.pruned_below is not None:
        pruned = pruned_dead(table, changes, raw, fail, known.pruned_below)
        stats.dead_lettered += counts[PRUNED]
        dead = pruned if dead is None else dead.unionByName(pruned)
    return dead
