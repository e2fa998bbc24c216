"""Tombstones pruned by age, and the mark that keeps the pruning from ever writing a wrong
row. Pure.

A hard delete leaves a tombstone (``merge_sql.tombstone_append_sql``), so that an older
change of the deleted key arriving later (a replay) is found stale instead of bringing the
row back. Kept for ever, the tombstones grow with every key ever deleted.
``cdcmirror maintain`` removes the ones whose source commit is older than
``maintain.tombstone_retention_hours`` (``spark/maintenance/prune.py``), and first records the
newest source position it removes as the tombstone table's ``PRUNED_BELOW`` property
(raised, never lowered). A change at or below that mark whose key the table holds neither as
a row nor as a tombstone cannot be told apart: its key may have been deleted after it (a
replay, which must stay out) or never stored. The classification marks it ``pruned``
(:func:`pruned_case_sql`): it is not written, it goes to the dead-letter table with
:func:`pruned_reason`, and `cdcmirror reconcile --deep` sees the row if it should exist. A
delete at or below the mark is ``absent`` as before (nothing to remove).

Changes newer than the mark are classified as before, and a batch MERGEd without a
classification (``mirror/direct_merge.py``) is newer than every tombstone, so pruned ones
too. The classification reads the mark and the tombstones from one snapshot of the
tombstone table's metadata, so a pruning that lands during a batch is seen whole or not at
all (the mark is committed before the tombstones are removed).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from cdcmirror.mirror.high_water import max_position_sql
from cdcmirror.mirror.positions import newer, position_literal

PRUNED_BELOW = "cdcmirror.tombstones-pruned-below"  # tombstone table property: JSON list
PRUNED = "pruned"  # the classification's action of a change the mark leaves unknown


def pruned_mark(text: str | None) -> list[int] | None:
    """The mark a tombstone table's ``PRUNED_BELOW`` property holds (None: nothing pruned).

    >>> pruned_mark('[1, 250, 250]'), pruned_mark(None), pruned_mark('')
    ([1, 250, 250], None, None)
    """
    return [int(x) for x in json.loads(text)] if text else None


def prunable_sql(tombstones: str, cutoff: str, n: int) -> str:
    """Spark SQL: the newest source position (first ``n`` elements, JSON text; NULL: none)
    of the tombstones whose source commit is before ``cutoff`` (``YYYY-MM-DD HH:MM:SS``,
    the session's time zone; ``high_water.max_position_sql`` over them). A tombstone without
    a commit time is never pruned.

    >>> prunable_sql("ns.t__deleted", "2026-11-27 00:00:00", 3)
    "SELECT to_json(max(slice(_cdc_position, 1, 3))) AS mark FROM (SELECT _cdc_position FROM ns.t__deleted WHERE _cdc_source_ts < TIMESTAMP '2026-11-27 00:00:00') aged"
    """  # noqa: E501
    aged = f"SELECT _cdc_position FROM {tombstones} WHERE _cdc_source_ts < TIMESTAMP '{cutoff}'"
    return max_position_sql(f"({aged}) aged", n)


def covered_sql(position: str, mark: Sequence[int], n: int) -> str:
    """Spark SQL: ``position`` is at or below ``mark`` (its first ``n`` elements).

    >>> covered_sql("_cdc_position", [1, 50, 50], 3)
    'NOT slice(_cdc_position, 1, 3) > slice(array(1L, 50L, 50L), 1, 3)'
    """
    return f"NOT {newer(position, position_literal(mark), n)}"


def prune_sql(tombstones: str, mark: Sequence[int], n: int) -> str:
    """Spark SQL: remove every tombstone at or below ``mark``.

    >>> prune_sql("ns.t__deleted", [1, 50, 50], 3)
    'DELETE FROM ns.t__deleted WHERE NOT slice(_cdc_position, 1, 3) > slice(array(1L, 50L, 50L), 1, 3)'
    """  # noqa: E501
    return f"DELETE FROM {tombstones} WHERE {covered_sql('_cdc_position', mark, n)}"


def pruned_case_sql(mark: Sequence[int] | None, n: int, tombstones_joined: bool) -> str:
    """The classification's ``CASE`` branch (``merge_sql.classify_sql``, stored row ``t``,
    newest tombstone ``tb`` when ``tombstones_joined``, change ``s``) that marks a change
    ``pruned``: not a delete, at or below ``mark``, its key neither stored nor entombed.
    Empty when nothing was pruned.

    >>> pruned_case_sql(None, 3, True)
    ''
    >>> pruned_case_sql([1, 5, 5], 3, False)
    "WHEN t._cdc_position IS NULL AND s._cdc_op <> 'd' AND NOT slice(s._cdc_position, 1, 3) > slice(array(1L, 5L, 5L), 1, 3) THEN 'pruned' "
    """  # noqa: E501
    if mark is None:
        return ""
    entombed = " AND tb._cdc_position IS NULL" if tombstones_joined else ""
    return (
        f"WHEN t._cdc_position IS NULL{entombed} AND s._cdc_op <> 'd' "
        f"AND {covered_sql('s._cdc_position', mark, n)} THEN '{PRUNED}' "
    )


def pruned_reason(mark: Sequence[int]) -> str:
    """The dead-letter reason of a change the classification marked ``pruned``.

    >>> pruned_reason([1, 5, 5])[:60]
    'older than the tombstones `cdcmirror maintain` pruned (up to'
    """
    return (
        f"older than the tombstones `cdcmirror maintain` pruned (up to source position "
        f"{json.dumps(list(mark))}, maintain.tombstone_retention_hours), and its key is "
        "neither stored nor entombed: whether the key was deleted after this change cannot "
        "be told, so it is not written. A replay of a deleted row needs nothing; if the row "
        "should exist, `cdcmirror reconcile --deep` lists its key and `cdcmirror repair "
        "--keys-from` re-reads it"
    )
