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

from cdcmirror.mirror.envelope import old_key_columns, q
from cdcmirror.mirror.spec import MirrorTable

NEW_KEY_HEADER = "__debezium.newkey"


def applies_at_create(table: MirrorTable) -> bool:
    """Whether this table's key changes are applied at their create half."""
    return bool(old_key_columns(table))


def key_changes_at_create_sql(table: MirrorTable, events: str, columns: Sequence[str]) -> str:
    """The batch's decoded ``events`` (their ``columns`` in order) without the delete halves
    of key changes, plus the old key's delete for each key-change create.

    >>> from cdcmirror.mirror.spec import MirrorColumn
    >>> t = MirrorTable("n.t", "s.p.t", "postgresql", "p.t", ("id",), "upsert",
    ...     (MirrorColumn("id", "long", "int64"), MirrorColumn("note", "string", "string")))
    >>> sql = key_changes_at_create_sql(t, "e", ["_cdc_op", "id", "note", "_t_note", "_ok_id"])
    >>> "SELECT 'd' AS `_cdc_op`, `_ok_id` AS `id`, NULL AS `note`, false AS `_t_note`" in sql
    True
    """
    old = dict(zip(table.key, old_key_columns(table), strict=True))
    if not old:
        return f"SELECT * FROM {events}"
    flags = {"_t_" + c.name for c in table.columns}
    nulls = {c.name for c in table.columns} | set(old.values()) | {"_error"}
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
    has_header = f"coalesce(exists(_headers, h -> h.key = '{NEW_KEY_HEADER}'), false)"
    delete_half = f"_cdc_op = 'd' AND {has_header}"
    first_old = q(next(iter(old.values())))
    return (
        f"SELECT {listed} FROM {events} WHERE NOT ({delete_half}) "
        f"UNION ALL SELECT {', '.join(synthetic)} FROM {events} WHERE {first_old} IS NOT NULL"
    )
