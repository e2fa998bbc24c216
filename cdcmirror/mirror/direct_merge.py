"""A batch MERGEd without a classification first. Pure.

A keyed table's batch is usually classified before its MERGE (``merge_sql.classify_sql``):
a join of its keys with the stored positions and tombstones, which finds the stale changes
(replays), the changes of a restarted source history, the deletes of keys never stored and
the TOAST values known nowhere, and counts each action. When every change of the batch is
newer than the table's high-water mark (``high_water.py``), none of those can be there:
nothing stored is as new, so no change is stale or goes backwards, and no tombstone is
newer than a change. If the batch also deletes nothing (no tombstone to record, no absent
key to tell apart) and carries no unchanged-TOAST placeholder (no stored value to look up),
the MERGE alone does the work, still with the position guard in its MATCHED branches
(``merge_sql.direct_merge_sql``), and the Iceberg commit's summary counts what it did: in a
merge-on-read table each update deletes the row's old position and adds a row, each insert
adds a row. That saves the classification's scan of the stored keys, its join and the two
Spark jobs that keep and count it; with the guard and the insert branch the MERGE itself
costs about what they saved (a warm 100-update batch 2.78 s against 2.96 s classified,
``benchmarks/RESULTS.md``, 2026-12-01).

A batch too big for this (``DIRECT_EVENTS``) or a table too big (``DIRECT_ROWS``, where the
classification cuts the stored rows to the batch's keys before the MERGE reads them,
``merge_sql.broadcasts_keys``) is classified as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from cdcmirror.mirror.high_water import Mark, is_fresh
from cdcmirror.mirror.merge_sql import BROADCAST_ROWS

DIRECT_EVENTS = 10_000  # changes of a batch, at most
DIRECT_ROWS = BROADCAST_ROWS  # rows of a table (its snapshot's count), below


def could_go_direct(agg: Mapping[str, Any], stored_rows: int) -> bool:
    """Whether a batch (its aggregate, ``batch_aggregate.py``) into a table of
    ``stored_rows`` rows goes without a classification if it is newer than the table's
    mark: no delete, no placeholder, no TRUNCATE, small enough.

    >>> agg = {"applied": 100, "deletes": 0, "placeholders": 0, "truncated_at": None}
    >>> could_go_direct(agg, 10_000), could_go_direct({**agg, "deletes": 1}, 10_000)
    (True, False)
    >>> could_go_direct(agg, DIRECT_ROWS), could_go_direct({**agg, "applied": 0}, 10)
    (False, False)
    """
    return (
        0 < agg["applied"] <= DIRECT_EVENTS
        and stored_rows < DIRECT_ROWS
        and not agg["deletes"]
        and not agg["placeholders"]
        and agg["truncated_at"] is None
    )


def goes_direct(agg: Mapping[str, Any], stored_rows: int, mark: Mark) -> bool:
    """``could_go_direct``, and the batch's oldest change is newer than ``mark``.

    >>> agg = {"applied": 9, "deletes": 0, "placeholders": 0, "truncated_at": None,
    ...     "oldest_position": [1, 50, 50]}
    >>> goes_direct(agg, 10, [1, 40, 40]), goes_direct(agg, 10, [1, 50, 50])
    (True, False)
    >>> goes_direct(agg, 10, None)
    False
    """
    return could_go_direct(agg, stored_rows) and is_fresh(agg["oldest_position"], mark)


class Counts(NamedTuple):
    inserts: int
    updates: int
    duplicates: int


COUNTED_KEYS = ("added-records", "added-position-deletes", "removed-position-deletes")
"""The entries of a direct MERGE's commit summary that :func:`counted` reads."""


def counted(summary: Mapping[str, str], applied: int) -> Counts:
    """What the direct MERGE did, from its snapshot's summary (merge-on-read: an update adds
    a position delete and a row, an insert a row) and the batch's ``applied`` changes (the
    rest were superseded by a newer change of their key in the batch). A data file's earlier
    position deletes are written again into its new delete file (Iceberg keeps one per data
    file), and the old file's counted as removed: the new ones are the difference.

    >>> counted({"added-records": "10", "added-position-deletes": "4"}, 12)
    Counts(inserts=6, updates=4, duplicates=2)
    >>> counted({"added-records": "5", "added-position-deletes": "4",
    ...     "removed-position-deletes": "2"}, 8)
    Counts(inserts=3, updates=2, duplicates=3)
    >>> counted({}, 3)  # nothing written
    Counts(inserts=0, updates=0, duplicates=3)
    """
    added, deleted, removed = (int(summary.get(key, 0)) for key in COUNTED_KEYS)
    deleted -= removed
    return Counts(added - deleted, deleted, applied - added)
