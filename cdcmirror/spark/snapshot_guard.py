"""The position guard of a batch's MERGE, checked on snapshots instead of on every stored row.

The classification compares each change's position with the stored row's
(``merge_sql.classify_sql``), on the snapshot it reads: :func:`current_snapshot`, pinned by
``VERSION AS OF``. The MERGE then writes only changes found newer there, without comparing
positions again: that comparison made Iceberg read the nested position column, and so every
column of its scan row by row, over every file the batch touches (at 10M rows 3-4 s of a
9-10 s MERGE). It gives the guarded MERGE's rows when nothing but file rewrites
(``maintain``) was committed between the snapshot the classification read and the one the
MERGE was committed on: commits after the MERGE's own scan are Iceberg's to refuse
(serializable isolation), and a refused commit is retried (``commits``). A foreign commit in
between (the mirror's tables are cdcmirror's to write: a writer outside it, or a second job
despite the lease) is found after the MERGE (:func:`foreign_parent`), and each row of the
batch's keys that the MERGE's snapshot held at a newer position is put back
(``merge_sql.restore_sql``), as the guard would have kept it.

The table's high-water mark (``mirror/high_water.py``) is read from its snapshots too
(:func:`recorded_mark`), and a direct MERGE's counts from its commit's summary
(:func:`batch_commit_summary`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from cdcmirror.mirror.high_water import REWRITE, Mark, max_position_sql, recorded, scanned
from cdcmirror.mirror.resume import BATCH_ID, QUERY_ID
from cdcmirror.spark.java_classes import iceberg_table

MAX_WALK = 1000  # snapshots looked at, at most, between the classification and the MERGE


class Read(NamedTuple):
    """The snapshot a batch's classification reads."""

    id: int | None  # None: the table has none yet
    rows: int  # the rows it holds, by its summary (position deletes not taken off)


def current_snapshot(spark: Any, target: str) -> Read:
    """``target``'s current snapshot."""
    snapshot = iceberg_table(spark, target).currentSnapshot()
    if snapshot is None:
        return Read(None, 0)
    return Read(int(snapshot.snapshotId()), _records(snapshot) or 0)


def snapshot_holds_rows(snapshot: Any) -> bool:
    """Whether a table's current ``snapshot`` (Java, or None) may hold rows: False only when
    there is none or its summary counts none (a summary without the count may hold rows)."""
    return snapshot is not None and _records(snapshot) != 0


def _records(snapshot: Any) -> int | None:
    """The rows a snapshot's summary counts (``total-records``; position deletes are not
    taken off it, so a table whose rows were deleted row by row still counts them); None:
    not counted."""
    rows = str(snapshot.summary().get("total-records"))
    return int(rows) if rows.isdigit() else None


def foreign_parent(
    spark: Any, target: str, read: int | None, props: Mapping[str, str]
) -> int | None:
    """After the batch's MERGE (its snapshot carries ``props``): the snapshot it was committed
    on when a commit other than a file rewrite, and not the batch's, lies between ``read``
    (the snapshot the classification read) and it, or when ``read`` is no longer behind it
    (a rollback); None when there is none, or when the MERGE committed nothing."""
    table = iceberg_table(spark, target)
    snapshot = table.currentSnapshot()
    ours: Any = None
    foreign = False
    for _ in range(MAX_WALK):
        if snapshot is None:  # the history's start (or expired): ``read`` was not met
            foreign = foreign or read is not None
            break
        sid = int(snapshot.snapshotId())
        if sid == read:
            break
        summary = snapshot.summary()
        batch = summary.get(QUERY_ID) == props.get(QUERY_ID)
        batch = batch and summary.get(BATCH_ID) == props.get(BATCH_ID)
        if batch and ours is None:
            ours = snapshot
        elif not batch and ours is not None and snapshot.operation() != REWRITE:
            foreign = True
        parent = snapshot.parentId()
        snapshot = None if parent is None else table.snapshot(parent)
    else:
        foreign = True  # too far apart to tell: put back what is newer, at worst nothing
    if ours is None or not foreign:
        return None
    parent = ours.parentId()
    return None if parent is None else int(parent)


def snapshot_history(table: Any) -> Iterator[tuple[str, Mapping[str, str]]]:
    """``(operation, summary)`` of ``table``'s snapshots, newest first, ``MAX_WALK`` at most
    (expired parents end it)."""
    snapshot = table.currentSnapshot()
    for _ in range(MAX_WALK):
        if snapshot is None:
            return
        yield str(snapshot.operation()), snapshot.summary()
        parent = snapshot.parentId()
        snapshot = None if parent is None else table.snapshot(parent)


def recorded_mark(spark: Any, target: str) -> Mark:
    """The high-water mark ``target``'s snapshots record (``high_water.recorded``)."""
    return recorded(snapshot_history(iceberg_table(spark, target)))


def scanned_mark(spark: Any, stored: str, n: int) -> Mark:
    """The high-water mark of what ``stored`` (a table, or one ``AS OF`` a snapshot) holds,
    read from its positions (``high_water.max_position_sql``)."""
    return scanned(spark.sql(max_position_sql(stored, n)).head()[0])


def batch_commit_summary(
    spark: Any, target: str, props: Mapping[str, str], keys: Iterable[str]
) -> dict[str, str]:
    """The ``keys`` that the summary of ``target``'s newest snapshot the batch of ``props``
    committed holds (empty when none is found). Only those are fetched: each entry of a Java
    map read from Python costs round trips (the whole summary: 6 % of a small batch's work in
    a py-spy profile, which slows the Python it samples)."""
    for _, summary in snapshot_history(iceberg_table(spark, target)):
        if summary.get(QUERY_ID) == props.get(QUERY_ID) and summary.get(BATCH_ID) == props.get(
            BATCH_ID
        ):
            found = {key: summary.get(key) for key in keys}
            return {key: str(value) for key, value in found.items() if value is not None}
    return {}


def merge_on_read(spark: Any, target: str) -> bool:
    """Whether ``target``'s MERGEs write delete files (every table cdcmirror makes)."""
    properties = iceberg_table(spark, target).properties()
    return str(properties.get("write.merge.mode")) == "merge-on-read"
