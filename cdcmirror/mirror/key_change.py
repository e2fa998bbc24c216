"""Key changes are applied at their create half. Pure SQL text.

On a key change Debezium sends delete(old key) with the header ``__debezium.newkey``, a
tombstone, then create(new key) with ``__debezium.oldkey``. On PostgreSQL the create carries
placeholders for the row's unchanged TOASTed values, which only the old key's row has
(``toast_chain.py`` walks back to it). A batch boundary can fall between the two halves
(``mirror.max_events_per_batch``, or the halves on different Kafka partitions): applied as
they come, the delete would remove the old row one batch before the create needs it, and
the value would be lost.

So for tables whose events carry the old key (``old_key_columns``), the delete half is not
applied; each key-change create brings the old key's delete itself, at the create's
position. Until the create arrives the mirror shows the old row, the source's state before
that transaction, and its values are there for the create's placeholders. Replays and
guards are unchanged: the delete has a position like any event, newer than the old row's.
"""

from __future__ import annotations

from collections.abc import Sequence

from cdcmirror.cdc_columns import placeholder_flag
from cdcmirror.mirror.envelope import NEW_KEY_HEADER, old_key_columns, q
from cdcmirror.mirror.spec import MirrorTable


def applies_at_create(table: MirrorTable) -> bool:
    """Whether this table's key changes are applied at their create half (append-mode
    tables keep every event as it comes)."""
    return bool(old_key_columns(table)) and table.mode != "append"


def key_changes_at_create_sql(table: MirrorTable, events: str, columns: Sequence[str]) -> str:
    """The batch's decoded ``events`` (their ``columns`` in order) without the delete halves
    of key changes, plus the old key's delete for each key-change create.

    >>> from cdcmirror.mirror.spec import MirrorColumn
    >>> t = MirrorTable("n.t", "s.p.t", "postgresql", "p.t", ("id",), "upsert",
    ...     (MirrorColumn("id", "long", "int64"), MirrorColumn("note", "string", "string")))
    >>> cols = ["_cdc_op", "id", "note", "_cdc_t_note", "_cdc_ok_id"]
    >>> sql = key_changes_at_create_sql(t, "e", cols)
    >>> "SELECT 'd' AS `_cdc_op`, `_cdc_ok_id` AS `id`, NULL AS `note`, false AS " in sql
    True
    """
    old = dict(zip(table.key, old_key_columns(table), strict=True))
    if not applies_at_create(table):
        return f"SELECT * FROM {events}"
    flags = {placeholder_flag(c.name) for c in table.columns}
    nulls = {c.name for c in table.columns} | set(old.values()) | {"_cdc_error"}
    synthetic = []
    for name in columns:
        if name == "_cdc_op":
            synthetic.append(f"'d' AS {q(name)}")
        elif name in old:
            synthetic.append(f"{q(old[name])} AS {q(name)}")
        elif name in flags:
            synthetic.append(f"false AS {q(name)}")
        elif name in nulls:
            synthetic.append(f"NULL AS {q(name)}")
        else:  # Kafka coordinates, position, commit time: the create's
            synthetic.append(q(name))
    listed = ", ".join(q(c) for c in columns)
    return (
        f"SELECT {listed} FROM {events} WHERE NOT {delete_half_sql(table)} "
        f"UNION ALL SELECT {', '.join(synthetic)} FROM {events} WHERE {create_half_sql(table)}"
    )


def delete_half_sql(table: MirrorTable) -> str:
    """Condition over decoded events: the delete half of a key change, which is skipped."""
    if not applies_at_create(table):
        return "false"
    header = f"coalesce(array_contains(_cdc_headers.key, '{NEW_KEY_HEADER}'), false)"
    return f"(_cdc_op = 'd' AND {header})"


def create_half_sql(table: MirrorTable) -> str:
    """Condition over decoded events: a key-change create, which brings the old key's delete."""
    old = old_key_columns(table)
    return f"({q(old[0])} IS NOT NULL)" if applies_at_create(table) else "false"


def applied_count_sql(table: MirrorTable) -> str:
    """Aggregate over decoded events: how many rows the applier's change events number
    (``_cdc_op`` c/u/d/r, the delete halves skipped, one delete added per key-change create),
    before a truncate in the batch drops the older ones.

    >>> from cdcmirror.mirror.spec import MirrorColumn
    >>> t = MirrorTable("n.t", "s.p.t", "mysql", "p.t", ("id",), "upsert",
    ...     (MirrorColumn("id", "long", "int64"),))
    >>> applied_count_sql(t).count("count_if")
    2
    """
    return _applied_sql(table, "_cdc_op IN ('c', 'u', 'd', 'r')")


def applied_deletes_sql(table: MirrorTable) -> str:
    """Aggregate over decoded events: how many of the applier's change events are deletes
    (the delete halves of key changes skipped, the old key's delete of each key-change
    create counted).

    >>> from cdcmirror.mirror.spec import MirrorColumn
    >>> t = MirrorTable("n.t", "s.p.t", "mysql", "p.t", ("id",), "upsert",
    ...     (MirrorColumn("id", "long", "int64"),))
    >>> for part in applied_deletes_sql(t).split(" + "):
    ...     print(part)
    count_if(_cdc_error IS NULL AND _cdc_op = 'd' AND NOT false)
    count_if(_cdc_error IS NULL AND false)
    """
    return _applied_sql(table, "_cdc_op = 'd'")


def _applied_sql(table: MirrorTable, ops: str) -> str:
    """Aggregate: the good events of ``ops`` but the delete halves of key changes, plus the
    old key's delete of each key-change create."""
    good = "_cdc_error IS NULL"
    return (
        f"count_if({good} AND {ops} AND NOT {delete_half_sql(table)})"
        f" + count_if({good} AND {create_half_sql(table)})"
    )
