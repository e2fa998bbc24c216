"""What the mirror job maintains between its batches: the compaction of the tables it wrote
(and of the tombstone tables it appended to, their old tombstones pruned) every N batches,
and the bound on each table's snapshots."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cdcmirror.config.settings import Maintain
from cdcmirror.maintain.history_cap import checks_at
from cdcmirror.maintain.run import MaintainSettings
from cdcmirror.mirror.envelope import spark_name
from cdcmirror.spark.maintenance.expiry import cap_snapshots
from cdcmirror.spark.maintenance.maintain import maintain_between_batches

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class JobMaintenance:
    """What the mirror job maintains between its batches."""

    every_batches: int = 0  # `maintain` of its tables every N batches (0: never)
    settings: MaintainSettings = field(
        default_factory=lambda: MaintainSettings.of(Maintain(), position_length=3)
    )
    max_snapshots: int = 0  # each table's snapshots kept at most (``history_cap``; 0: no cap)
    # the tables the job applied a batch to since it last maintained them (filled as it runs)
    applied: set[str] = field(default_factory=set)
    # the tombstone tables it appended to since it last maintained them
    entombed: set[str] = field(default_factory=set)


def between_batches(
    spark: SparkSession,
    batch_id: int,
    identifiers: list[str],
    tombstones: list[str],
    maintenance: JobMaintenance,
    log: logging.Logger,
    applied: Iterable[str] = (),
    entombed: Iterable[str] = (),
) -> None:
    """The mirror job's housekeeping after batch ``batch_id``, which ``applied`` events to
    those tables and appended tombstones to the ``entombed`` tombstone tables: `maintain` of
    its tables (``identifiers``) that it applied a batch to since it last maintained them
    (``due``) and of the tombstone tables it appended to (their old tombstones pruned), and
    the bound on each table's snapshots, its ``tombstones`` tables' (Spark names) too."""
    every, cap = maintenance.every_batches, maintenance.max_snapshots
    maintenance.applied.update(applied)
    maintenance.entombed.update(entombed)
    if every and batch_id > 0 and batch_id % every == 0:
        tables = due(identifiers, maintenance.applied)
        settings, expire = maintenance.settings, not cap  # no bound: expired by age
        maintain_between_batches(spark, tables, settings, log, expire=expire)
        maintenance.applied.difference_update(tables)
        graves = sorted(maintenance.entombed)
        maintain_between_batches(spark, graves, settings, log, tombstones=True, expire=expire)
        maintenance.entombed.clear()
    if checks_at(batch_id, cap):
        cap_snapshots(spark, [spark_name(i) for i in identifiers] + tombstones, cap)


def due(identifiers: Iterable[str], applied: Iterable[str]) -> list[str]:
    """The tables the job maintains in a batch that maintains: those it ``applied`` a batch
    to since it last maintained them. An idle table gains no file and no snapshot from the
    job, and its maintenance (compaction, expiry, the orphan listing: Spark jobs even for a
    table of one file) would hold every such batch up for nothing.

    >>> due(["a.busy", "a.idle", "a.new"], {"a.busy", "a.new", "a.dropped"})
    ['a.busy', 'a.new']
    """
    done = set(applied)
    return [i for i in identifiers if i in done]
