"""A batch MERGEd without a classification first. Pure.

A keyed table's batch is usually classified before its MERGE (``merge_sql.classify_sql``):
a join of its keys with the stored positions and tombstones, which finds the stale changes
(replays), the changes of a restarted source history, the deletes of keys never stored and
the TOAST values known nowhere, and counts each action. When every change of the batch is
newer than the table's high-water mark (``high_water.py``), none of those can be there but
the deletes of keys never stored: nothing stored is as new, so no change is stale or goes
backwards, and no tombstone is newer than a change. If the batch also carries no
unchanged-TOAST placeholder (no stored value to look up), the MERGE alone does the work,
still with the position guard in its MATCHED branches (``merge_sql.direct_merge_sql``),
and the Iceberg commit's summary counts what it did: in a merge-on-read table each update
deletes the row's old position and adds a row, each insert adds a row, each delete deletes
a position. That saves the classification's scan of the stored keys and tombstones, its
join and the two Spark jobs that keep and count it.

A batch with hard deletes goes direct too: its deletes are counted against the stored keys
before the MERGE (``merge_sql.stored_deletes_sql``: the deletes broadcast, one scan of the
stored key and position columns), which tells the updates from the deletes in the commit's
position deletes, and every deleted key gets its tombstone after the MERGE, as a classified
batch records its deletes and absent keys. With soft deletes (a stub row for a key never
stored) such a batch is classified.

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


def could_go_direct(agg: Mapping[str, Any], stored_rows: int, soft: bool) -> bool:
    """Whether a batch (its aggregate, ``batch_aggregate.py``) into a table of
    ``stored_rows`` rows goes without a classification if it is newer than the table's
    mark: no placeholder, no TRUNCATE, no delete with ``soft`` deletes, small enough.

    >>> agg = {"applied": 100, "deletes": 1, "placeholders": 0, "truncated_at": None}
    >>> could_go_direct(agg, 10_000, False), could_go_direct(agg, 10_000, True)
    (True, False)
    >>> could_go_direct({**agg, "deletes": 0}, 10_000, True)
    True
    >>> could_go_direct(agg, DIRECT_ROWS, False), could_go_direct({**agg, "applied": 0}, 10, False)
    (False, False)
    >>> could_go_direct({**agg, "placeholders": 2}, 10, False)
    False
    """
    return (
        0 < agg["applied"] <= DIRECT_EVENTS
        and stored_rows < DIRECT_ROWS
        and not (soft and agg["deletes"])
        and not agg["placeholders"]
        and agg["truncated_at"] is None
    )


def goes_direct(agg: Mapping[str, Any], stored_rows: int, soft: bool, mark: Mark) -> bool:
    """``could_go_direct``, and the batch's oldest change is newer than ``mark``.

    >>> agg = {"applied": 9, "deletes": 0, "placeholders": 0, "truncated_at": None,
    ...     "oldest_position": [1, 50, 50]}
    >>> goes_direct(agg, 10, False, [1, 40, 40]), goes_direct(agg, 10, False, [1, 50, 50])
    (True, False)
    >>> goes_direct(agg, 10, False, None)
    False
    """
    fresh = is_fresh(agg["oldest_position"], mark)
    return could_go_direct(agg, stored_rows, soft) and fresh


class Counts(NamedTuple):
    inserts: int
    updates: int
    duplicates: int
    deletes: int = 0


COUNTED_KEYS = ("added-records", "added-position-deletes", "removed-position-deletes")
"""The entries of a direct MERGE's commit summary that :func:`counted` reads."""


def counted(
    summary: Mapping[str, str], applied: int, deleted: int = 0, entombed: int = 0
) -> Counts:
    """What the direct MERGE did, from its snapshot's summary (merge-on-read: an update adds
    a position delete and a row, an insert a row, a delete a position delete), the batch's
    ``applied`` changes (the rest were superseded by a newer change of their key in the
    batch), its ``deleted`` keys (the deletes of a stored key, ``stored_deletes_sql``) and
    the tombstones it recorded, ``entombed`` (every newest-per-key delete, stored or not). A
    data file's earlier position deletes are written again into its new delete file
    (Iceberg keeps one per data file), and the old file's counted as removed: the new ones
    are the difference.

    >>> counted({"added-records": "10", "added-position-deletes": "4"}, 12)
    Counts(inserts=6, updates=4, duplicates=2, deletes=0)
    >>> counted({"added-records": "5", "added-position-deletes": "4",
    ...     "removed-position-deletes": "2"}, 8)
    Counts(inserts=3, updates=2, duplicates=3, deletes=0)
    >>> counted({}, 3)  # nothing written
    Counts(inserts=0, updates=0, duplicates=3, deletes=0)
    >>> # 3 upserts (1 an update), 2 deletes of stored keys, 1 of a key never stored
    >>> counted({"added-records": "3", "added-position-deletes": "3"}, 7, 2, 3)
    Counts(inserts=2, updates=1, duplicates=1, deletes=2)
    """
    added, positions, removed = (int(summary.get(key, 0)) for key in COUNTED_KEYS)
    updates = positions - removed - deleted
    return Counts(added - updates, updates, applied - added - entombed, deleted)
