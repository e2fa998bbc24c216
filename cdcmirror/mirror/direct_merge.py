"""A batch MERGEd without a classification first. Pure.

A keyed table's batch is usually classified before its MERGE (``merge_sql.classify_sql``):
a join of its keys with the stored positions and tombstones, which finds the stale changes
(replays), the changes of a restarted source history, the deletes of keys never stored and
the TOAST values known nowhere, and counts each action. When every change of the batch is
newer than the table's high-water mark (``high_water.py``), none of those can be there but
the deletes of keys never stored: nothing stored is as new, so no change is stale or goes
backwards, and no tombstone is newer than a change. If the batch also carries no
unchanged-TOAST placeholder (no stored value to look up), the MERGE alone does the work
(:func:`direct_merge_sql`), and the Iceberg commit's summary counts what it did: in a
merge-on-read table each update
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
(:func:`stored_deletes_sql`: the deletes broadcast, one scan of the stored key and
position columns, a large part of a small batch when it was taken every time).
Two opposite disagreements in one batch (a key taken as stored that was not, another taken
as not stored that was) would cancel out in the check: the batch line's split of its counts,
never its rows, could then be off by them.
With soft deletes (a stub row for a key never stored) such a batch is classified.

A batch of any size into a table of any size goes direct: a big batch gains from it too
(``benchmarks/merge_variants.py``). The MERGE reads no stored position (a nested column:
Iceberg would read the scan row by row): the mark already proves every change newer, and a
commit of another writer between the snapshot the mark was read on and the MERGE is found
after it and its newer rows put back (``merge_sql.restore_sql``), as after a classified
batch's MERGE. Its branches follow the batch's operations (:func:`branches`): a batch
without a create has no NOT MATCHED branch (an inner join, which can broadcast the batch
instead of shuffling the table's side), one of creates only no MATCHED branch (an anti join
and an append). A change that meets what its first event did not say (an update of a key not
stored, a create of a stored one: an earlier event of the key was dead-lettered) shows in
the commit's summary (:func:`missed`), and the missing branch runs after it; so does a MERGE
that wrote nothing, whose counts of the batch prove nothing (:func:`trusted`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from cdcmirror.cdc_columns import FIRST_OP
from cdcmirror.mirror.batch_aggregate import BatchAggregate
from cdcmirror.mirror.envelope import q
from cdcmirror.mirror.high_water import Mark, is_fresh
from cdcmirror.mirror.key_range import Bounds, range_sql
from cdcmirror.mirror.merge_sql import keys_equal, merge_sql
from cdcmirror.mirror.positions import newer, source_length
from cdcmirror.mirror.spec import MirrorTable


def could_go_direct(agg: BatchAggregate, soft: bool) -> bool:
    """Whether a batch (its aggregate, ``batch_aggregate.py``) goes without a classification
    if it is newer than the table's mark: some change, no placeholder, no TRUNCATE, no delete
    with ``soft`` deletes.

    >>> from dataclasses import replace
    >>> agg = BatchAggregate(applied=100, deletes=1)
    >>> could_go_direct(agg, False), could_go_direct(agg, True)
    (True, False)
    >>> could_go_direct(replace(agg, deletes=0), True)
    True
    >>> could_go_direct(replace(agg, applied=0), False)
    False
    >>> could_go_direct(replace(agg, placeholders=2), False)
    False
    """
    return (
        agg.applied > 0
        and not (soft and agg.deletes)
        and not agg.placeholders
        and agg.truncated_at is None
    )


def goes_direct(agg: BatchAggregate, soft: bool, mark: Mark) -> bool:
    """``could_go_direct``, and the batch's oldest change is newer than ``mark``.

    >>> agg = BatchAggregate(applied=9, oldest_position=[1, 50, 50])
    >>> goes_direct(agg, False, [1, 40, 40]), goes_direct(agg, False, [1, 50, 50])
    (True, False)
    >>> goes_direct(agg, False, None)
    False
    """
    return could_go_direct(agg, soft) and is_fresh(agg.oldest_position, mark)


def branches(agg: BatchAggregate) -> tuple[bool, bool]:
    """The direct MERGE's branches for a batch (its aggregate): MATCHED when it has a change
    that is not a create (an update, a delete), NOT MATCHED when it has a create (or a
    snapshot read).

    >>> branches(BatchAggregate(applied=10)), branches(BatchAggregate(applied=10, creates=10))
    ((True, False), (False, True))
    >>> branches(BatchAggregate(applied=10, creates=3))
    (True, True)
    """
    return agg.applied > agg.creates, agg.creates > 0


def missed(
    keys: Mapping[str, int] | None, summary: Mapping[str, str], matched: bool, inserts: bool
) -> bool:
    """Whether a direct MERGE with only some of its branches (``matched``, ``inserts``) may
    have left changes out: the commit added fewer rows than the batch has keys whose newest
    change is not a delete (``keys``: :data:`KEY_COUNTS`; None, not known: it may have).

    >>> keys = {"keys": 10, "deletes": 2}
    >>> missed(keys, {"added-records": "8"}, True, False)
    False
    >>> missed(keys, {"added-records": "7"}, True, False), missed(None, {}, False, True)
    (True, True)
    >>> missed(None, {}, True, True)  # both branches: nothing left out
    False
    """
    if matched and inserts:
        return False
    if keys is None:
        return True
    return int(summary.get("added-records", 0)) != keys["keys"] - keys["deletes"]


def summed(first: Mapping[str, str], then: Mapping[str, str]) -> dict[str, str]:
    """The :data:`COUNTED_KEYS` of two commits' summaries together.

    >>> summed({"added-records": "5", "added-position-deletes": "2"}, {"added-records": "1"})
    {'added-records': '6', 'added-position-deletes': '2', 'removed-position-deletes': '0'}
    """
    return {k: str(int(first.get(k, 0)) + int(then.get(k, 0))) for k in COUNTED_KEYS}


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


def trusted(keys: Mapping[str, int] | None, summary: Mapping[str, str]) -> dict[str, int] | None:
    """The key counts (:data:`KEY_COUNTS`) observed on a direct MERGE's source, when they
    can be trusted: Spark may skip the batch's side of a join whose table side turns out
    empty (no stored row in the batch's key range), and the counts then cover none or part
    of the batch (all zero, seen on an update of a key past every stored one). A MERGE that
    wrote something read both sides whole; one that wrote nothing proves nothing (None).

    >>> keys = {"keys": 2, "deletes": 0, "updates": 2, "stored_deletes": 0, "unsure": 0}
    >>> trusted(keys, {"added-records": "2", "added-position-deletes": "2"}) == keys
    True
    >>> trusted({**keys, "keys": 0}, {"added-records": "1"}) is None
    True
    >>> trusted(keys, {}) is None, trusted(None, {"added-records": "1"}) is None
    (True, True)
    """
    if keys is None or not keys["keys"]:
        return None
    added, positions, _ = (int(summary.get(key, 0)) for key in COUNTED_KEYS)
    return dict(keys) if added or positions else None


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


def direct_merge_sql(
    table: MirrorTable,
    target: str,
    events: str,
    soft: bool,
    bounds: Bounds | None = None,
    matched: bool = True,
    inserts: bool = True,
    guarded: bool = False,
) -> str:
    """MERGE a batch's newest change per key (``dedupe_sql``), not classified: a batch newer
    than the table's high-water mark that carries no unchanged-TOAST placeholder
    (this module). No stored position is read (``guarded`` False: the mark
    proves every change newer; a foreign commit in between is put back after it,
    ``restore_sql``). ``matched`` False: no MATCHED branch (the batch holds creates only:
    Spark appends what its anti join with the table keeps); ``inserts`` False: no NOT MATCHED
    branch (no create: an inner join, which can broadcast the batch)."""
    return merge_sql(
        table,
        target,
        events,
        soft,
        bounds,
        inserts=inserts,
        placeholders=False,
        guarded=guarded,
        matched=matched,
        classified=False,
    )


def stored_deletes_sql(
    table: MirrorTable, deduped: str, stored: str, bounds: Bounds | None = None
) -> str:
    """How many of a batch's newest changes per key (``dedupe_sql``) are deletes of a key
    that ``stored`` holds at an older position: the rows a direct MERGE of them deletes.
    The deletes are broadcast, so the stored side is one scan of its key and position
    columns inside the batch's key range, without a shuffle (keys are unique on both sides:
    an inner join counts each once)."""
    n = source_length(table.dialect)
    keys = ", ".join(q(k) for k in table.key)
    return (
        f"SELECT /*+ BROADCAST(d) */ count(*) AS deleted FROM {stored} r "
        f"JOIN (SELECT {keys}, _cdc_position FROM {deduped} WHERE _cdc_op = 'd') d "
        f"ON {keys_equal(table, 'r', 'd')} AND {newer('d._cdc_position', 'r._cdc_position', n)} "
        f"WHERE {range_sql('r', bounds or {})}"
    )
