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

A batch with hard deletes goes direct too, and every deleted key gets its tombstone after
the MERGE, as a classified batch records its deletes and absent keys. The commit's position
deletes are its updates and its deletes of stored rows together; which is which comes from
the batch itself: a key's first event in the batch says whether the source had the row
before it (``u``, ``d``: it had; ``c``: it had not), and a batch newer than the table comes
after everything the table holds, so the table had it too. Those counts are taken on the
MERGE's own source (:data:`KEY_COUNTS`, no Spark job of their own) and kept only when the
commit's summary agrees with them (:func:`inferred_deletes`); when it does not (a key's
earlier event was dead-lettered, a row was removed behind the mirror's back, a snapshot read
among the changes), the deletes are counted against the snapshot the batch read
(``merge_sql.stored_deletes_sql``: the deletes broadcast, one scan of the stored key and
position columns; 0.8-0.9 s of a 100-change batch's 2.1 s when it was taken every time).
Two opposite disagreements in one batch (a key taken as stored that was not, another taken
as not stored that was) would cancel out in the check: the batch line's split of its counts,
never its rows, could then be off by them.
With soft deletes (a stub row for a key never stored) such a batch is classified.

A batch of any size goes direct (100k changes into 100k rows, one run each way: updates
7.7 s against 8.9 s classified, inserts into a warm table 6.0 against 6.7 s; the
classification's join with the stored keys and its kept result cost more than the guard's
read of the stored positions in the MERGE). A table too big (``DIRECT_ROWS``, where the
classification cuts the stored rows to the batch's keys before the MERGE reads them,
``merge_sql.broadcasts_keys``) is classified as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from cdcmirror.cdc_columns import FIRST_OP
from cdcmirror.mirror.high_water import Mark, is_fresh
from cdcmirror.mirror.merge_sql import BROADCAST_ROWS

DIRECT_ROWS = BROADCAST_ROWS  # rows of a table (its snapshot's count), below


def could_go_direct(agg: Mapping[str, Any], stored_rows: int, soft: bool) -> bool:
    """Whether a batch (its aggregate, ``batch_aggregate.py``) into a table of
    ``stored_rows`` rows goes without a classification if it is newer than the table's
    mark: some change, no placeholder, no TRUNCATE, no delete with ``soft`` deletes, a
    table of fewer than ``DIRECT_ROWS`` rows.

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
        agg["applied"] > 0
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


KEY_COUNTS = (
    "count(*) AS keys",
    "count_if(_cdc_op = 'd') AS deletes",
    f"count_if({FIRST_OP} IN ('u', 'd') AND _cdc_op <> 'd') AS updates",
    f"count_if({FIRST_OP} IN ('u', 'd') AND _cdc_op = 'd') AS stored_deletes",
    f"count_if({FIRST_OP} NOT IN ('c', 'u', 'd')) AS unsure",
)
"""What a direct batch's newest changes per key (``merge_sql.dedupe_sql`` with its
``first_op``) would do to a table that holds exactly the keys whose first event in the
batch is an update or a delete: its keys, its deletes, its updates, its deletes of stored
rows, and the keys whose first event tells nothing (a snapshot read)."""


def inferred_deletes(keys: Mapping[str, int] | None, summary: Mapping[str, str]) -> int | None:
    """The deletes of stored rows that a direct MERGE made, from its keys' counts
    (:data:`KEY_COUNTS`, None: not observed), when its commit's ``summary`` (the entries of
    :data:`COUNTED_KEYS`) agrees with them: a row added for every change but a delete, and a
    position deleted for every update and delete of a stored row. None: not known (count
    them against the stored rows).

    >>> keys = {"keys": 10, "deletes": 3, "updates": 5, "stored_deletes": 2, "unsure": 0}
    >>> inferred_deletes(keys, {"added-records": "7", "added-position-deletes": "7"})
    2
    >>> inferred_deletes(keys, {"added-records": "7", "added-position-deletes": "9",
    ...     "removed-position-deletes": "2"})
    2
    >>> # one of the deletes met no stored row (its create was dead-lettered, say)
    >>> inferred_deletes(keys, {"added-records": "7", "added-position-deletes": "6"}) is None
    True
    >>> inferred_deletes({**keys, "unsure": 1}, {"added-records": "7",
    ...     "added-position-deletes": "7"}) is None
    True
    >>> inferred_deletes(None, {}) is None
    True
    """
    if keys is None or keys["unsure"]:
        return None
    added, positions, removed = (int(summary.get(key, 0)) for key in COUNTED_KEYS)
    upserts = keys["keys"] - keys["deletes"]
    if added != upserts or positions - removed != keys["updates"] + keys["stored_deletes"]:
        return None
    return keys["stored_deletes"]
