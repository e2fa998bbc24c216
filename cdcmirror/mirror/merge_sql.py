"""The SQL the mirror runs per table and batch: dedupe, classify, MERGE, tombstones. Pure.

Names used: the decoded events are the view ``{events}``; the deduplicated, classified
events the view ``{changes}``. ``n`` is how many position elements come from the source:
the guard compares only those, so an event replayed by Debezium (same source position,
later Kafka offset) never replaces what it already wrote.

Hard deletes leave no row to hold a position, so each deleted key's position is kept in a
tombstone table (``<namespace>__cdcmirror.<table>__deleted``); an older event for that key
arriving later (a replay) is then recognised as stale instead of resurrecting the row. The
tombstones are appended (``tombstone_append_sql``: every delete recorded is newer than its
key's tombstones, or it would be stale), so a key deleted again has a row per delete and the
classification takes the newest (an append, which reads none of the tombstones a MERGE
into them would).
"""

from __future__ import annotations

from collections.abc import Sequence

from cdcmirror.cdc_columns import FIRST_OP, placeholder_flag
from cdcmirror.mirror.envelope import old_key_columns, q
from cdcmirror.mirror.key_range import Bounds, range_sql
from cdcmirror.mirror.positions import newer, source_length, went_backwards_sql
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.toast import filled_sql, inserted_sql, kept_sql, newest_value_sql, toastable
from cdcmirror.mirror.tombstone_pruning import PRUNED, pruned_case_sql
from cdcmirror.sql_text import as_of, sql_string

ACTIONS = ("insert", "update", "delete", "absent", "stale", PRUNED)


def keys_equal(table: MirrorTable, left: str, right: str) -> str:
    """Spark SQL: the rows ``left`` and ``right`` have the same key.

    >>> from cdcmirror.mirror.spec import MirrorColumn
    >>> t = MirrorTable("n.t", "s.p.t", "postgresql", "p.t", ("a", "b"), "upsert",
    ...     (MirrorColumn("a", "long", "int64"), MirrorColumn("b", "long", "int64")))
    >>> keys_equal(t, "t", "s")
    't.`a` = s.`a` AND t.`b` = s.`b`'
    """
    return " AND ".join(f"{left}.{q(k)} = {right}.{q(k)}" for k in table.key)


def _row_names(table: MirrorTable) -> list[str]:
    """Every column of a mirrored table's row: the source's, then the ``_cdc_`` ones."""
    return [*table.names, "_cdc_op", "_cdc_position", "_cdc_source_ts", "_cdc_deleted"]


_DEDUPED_CDC = ("_cdc_op", "_cdc_position", "_cdc_source_ts", "_cdc_partition", "_cdc_offset")


def dedupe_sql(
    table: MirrorTable, events: str, first_op: bool = False, placeholders: bool = True
) -> str:
    """The newest event per key (``first_op``: with its key's first operation in the batch,
    ``cdc_columns.FIRST_OP``). An unchanged-TOAST value is filled from the newest earlier
    event of the same key in the batch that has the value; when a key-change create of this
    key came after that event (or there is none), ``_cdc_ok_*`` / ``_cdc_okpos`` name the old key
    and the create's position for ``toast_chain.py``; else the stored value is kept.
    ``placeholders`` False: no event of the batch carries a placeholder (a direct batch,
    ``direct_merge.py``), so there is nothing to fill and no old key to name: the newest
    event is kept as it is, without its placeholder flags (and without their work).

    Each key's events numbered newest first (positions end with the Kafka partition and
    offset: no two events tie), the first kept, the fills taken over all of the key's
    events: one shuffle of the columns used and one sort, against an aggregate of every
    column into a struct, which sorts on both sides of its shuffle.
    """
    keys = ", ".join(q(k) for k in table.key)
    toast = toastable(table) if placeholders else []
    old = old_key_columns(table) if placeholders else []
    partition = f"PARTITION BY {keys}"
    per_key = f"({partition})"
    fills = "".join(f", {newest_value_sql(c, per_key)}" for c in toast)
    if old:
        fields = ", ".join(f"{sql_string(ok)}, {q(ok)}" for ok in old)
        fills += (
            f", max_by(named_struct({fields}, 'p', _cdc_position), "
            f"IF({q(old[0])} IS NULL, NULL, _cdc_position)) OVER {per_key} AS _cdc_kc"
        )
    if first_op:
        fills += f", min_by(_cdc_op, _cdc_position) OVER {per_key} AS {FIRST_OP}"
    used = [*table.names, *(placeholder_flag(c) for c in toast), *old, *_DEDUPED_CDC]
    newest = f"row_number() OVER ({partition} ORDER BY _cdc_position DESC) AS _cdc_rn"
    numbered = f"SELECT {', '.join(q(c) for c in used)}, {newest}{fills} FROM {events}"
    cols = []
    for c in table.names:
        if c in toast:
            cols += filled_sql(c, bool(old))
        else:
            cols.append(f"n.{q(c)}")
    cols += [f"_cdc_kc.{q(ok)} AS {q(ok)}" for ok in old]
    if old:
        cols.append("_cdc_kc.p AS _cdc_okpos")
    cols += [f"n.{c}" for c in _DEDUPED_CDC]
    if first_op:
        cols.append(f"n.{FIRST_OP}")
    return f"SELECT {', '.join(cols)} FROM ({numbered}) AS n WHERE n._cdc_rn = 1"


BROADCAST_KEYS = 500_000
BROADCAST_ROWS = 1_000_000
"""Up to ``BROADCAST_KEYS`` changes into a table of ``BROADCAST_ROWS`` rows or more, a
batch's keys are broadcast to cut the stored rows where they are read
(``_stored_sql``): one scan of the key and position columns instead of a shuffle of
them. Below, the shuffle is as cheap and the broadcast's own job is a cost a small batch
would notice; a larger batch is joined the usual way."""


def broadcasts_keys(changes: int, stored_rows: int) -> bool:
    """Whether a batch of ``changes`` into ``stored_rows`` rows broadcasts its keys."""
    return changes <= BROADCAST_KEYS and stored_rows >= BROADCAST_ROWS


def classify_sql(
    table: MirrorTable,
    deduped: str,
    target: str,
    tombstones: str | None,
    soft: bool,
    bounds: Bounds | None = None,
    broadcast: bool = False,
    pruned_below: Sequence[int] | None = None,
) -> str:
    """Each deduplicated event with ``_cdc_action``: what it does to the stored row,
    ``_cdc_backwards``: a stale event that comes from a restarted source history
    (``positions.went_backwards_sql``). ``bounds``: the batch's key range
    (``key_range.py``), so only stored rows inside it are read. ``broadcast``: the stored
    rows are first cut to the batch's keys by a semi join with them broadcast
    (``_stored_sql``). ``pruned_below``: the mark of the tombstones pruned by age
    (``tombstone_pruning.py``), under which a change of a key neither stored nor entombed is
    ``pruned``."""
    n = source_length(table.dialect)
    stale_tomb = ""
    join_tomb = ""
    backwards = went_backwards_sql(
        "s._cdc_position", "s._cdc_source_ts", "t._cdc_position", "t._cdc_source_ts", n
    )
    stored = "t._cdc_position AS _cdc_stored_position, t._cdc_source_ts AS _cdc_stored_ts"
    if tombstones:
        stored_tomb = _stored_sql(table, tombstones, deduped, bounds, broadcast, newest=True)
        join_tomb = f" LEFT JOIN {stored_tomb} tb ON {keys_equal(table, 's', 'tb')}"
        stale_tomb = (
            "WHEN tb._cdc_position IS NOT NULL AND NOT "
            f"{newer('s._cdc_position', 'tb._cdc_position', n)} THEN 'stale' "
        )
        backwards += " OR " + went_backwards_sql(
            "s._cdc_position", "s._cdc_source_ts", "tb._cdc_position", "tb._cdc_source_ts", n
        )
        stored = (
            "coalesce(t._cdc_position, tb._cdc_position) AS _cdc_stored_position, "
            "coalesce(t._cdc_source_ts, tb._cdc_source_ts) AS _cdc_stored_ts"
        )
    absent_delete = "'delete'" if soft else "'absent'"
    action = (
        f"CASE {stale_tomb}{pruned_case_sql(pruned_below, n, bool(tombstones))}"
        f"WHEN t._cdc_position IS NULL THEN IF(s._cdc_op = 'd', {absent_delete}, 'insert') "
        f"WHEN {newer('s._cdc_position', 't._cdc_position', n)} "
        "THEN IF(s._cdc_op = 'd', 'delete', 'update') "
        "ELSE 'stale' END"
    )
    return (
        "SELECT * EXCEPT (_cdc_gap), "
        "(_cdc_action = 'stale' AND coalesce(_cdc_gap, false)) AS _cdc_backwards "
        f"FROM (SELECT s.*, {action} AS _cdc_action, ({backwards}) AS _cdc_gap, {stored} "
        f"FROM {deduped} s "
        f"LEFT JOIN {_stored_sql(table, target, deduped, bounds, broadcast)} t "
        f"ON {keys_equal(table, 's', 't')}"
        f"{join_tomb})"
    )


def _stored_sql(
    table: MirrorTable,
    stored: str,
    deduped: str,
    bounds: Bounds | None,
    broadcast: bool,
    newest: bool = False,
) -> str:
    """The key and position columns of ``stored``'s rows inside the batch's key range.
    ``broadcast``: only the rows of the batch's keys, by a semi join with those keys
    broadcast, so the table's side is scanned and cut where it is read instead of being
    shuffled whole to meet the batch (an outer join cannot broadcast the side it keeps).
    ``newest``: ``stored`` may hold several rows of a key (the tombstones), the newest of
    each is taken."""
    keys = [f"r.{q(k)}" for k in table.key]
    position = ["r._cdc_position", "r._cdc_source_ts"]
    group = ""
    if newest:
        position = [
            "max(r._cdc_position) AS _cdc_position",
            "max_by(r._cdc_source_ts, r._cdc_position) AS _cdc_source_ts",
        ]
        group = f" GROUP BY {', '.join(keys)}"
    cols = ", ".join([*keys, *position])
    within = range_sql("r", bounds or {})
    if not broadcast:
        return f"(SELECT {cols} FROM {stored} r WHERE {within}{group})"
    batch_keys = ", ".join(q(k) for k in table.key)
    return (
        f"(SELECT /*+ BROADCAST(k) */ {cols} FROM {stored} r "
        f"LEFT SEMI JOIN (SELECT {batch_keys} FROM {deduped}) k ON {keys_equal(table, 'r', 'k')} "
        f"WHERE {within}{group})"
    )


def merge_sql(
    table: MirrorTable,
    target: str,
    changes: str,
    soft: bool,
    bounds: Bounds | None = None,
    inserts: bool = True,
    placeholders: bool = True,
    guarded: bool = True,
    matched: bool = True,
    classified: bool = True,
) -> str:
    """MERGE the classified changes (``insert``/``update``/``delete`` rows) into the table,
    guarded by position so a concurrent or repeated run cannot go backwards. Only a row
    classified ``insert`` is inserted: an ``update`` whose row another writer deleted since
    the classification must not come back through the insert branch. ``bounds``: the
    batch's key range, so that the scan of the table skips files outside it. ``inserts``
    False: no change inserts a row (none is classified ``insert``, and with soft deletes
    none is a delete, whose absent row gets a stub), so the MERGE has no NOT MATCHED
    branch, which would have Spark join the whole table's side of it (an outer join).
    ``placeholders`` False: no change carries an unchanged-TOAST placeholder, so no stored
    value is read (``toast.kept_sql`` would have the scan read those columns of every row).
    ``guarded`` False: no stored position is read again (``spark/iceberg.py``).
    ``matched`` False: every change is an ``insert`` (no MATCHED branch: Spark appends the
    rows its anti join with the table keeps, instead of an outer join that rewrites; a row
    another writer stored since the classification is left as it is, so after a foreign
    commit the guarded MERGE runs too, ``spark/cdc/table.py``). ``classified`` False: the
    changes were not classified (``direct_merge_sql``): every change not stored but a delete
    is inserted."""
    n = source_length(table.dialect)
    guard = newer("s._cdc_position", "t._cdc_position", n) if guarded else "true"
    toast = set(toastable(table)) if placeholders else set()
    sets = [kept_sql(c) if c in toast else f"{q(c)} = s.{q(c)}" for c in table.names]
    on_delete = f"UPDATE SET {_CDC_SET}, _cdc_deleted = true" if soft else "DELETE"
    inserted = _not_matched_sql(table, soft, toast, classified)
    head = (
        f"MERGE INTO {target} t USING {changes} s ON {keys_equal(table, 't', 's')} "
        f"AND {range_sql('t', bounds or {})} "
    )
    if not matched:
        return head + inserted.lstrip()
    return (
        head + f"WHEN MATCHED AND s._cdc_op = 'd' AND {guard} THEN {on_delete} "
        f"WHEN MATCHED AND s._cdc_op <> 'd' AND {guard} THEN UPDATE SET "
        f"{', '.join(sets)}, {_CDC_SET}, _cdc_deleted = false" + (inserted if inserts else "")
    )


_CDC_SET = "_cdc_op = s._cdc_op, _cdc_position = s._cdc_position, _cdc_source_ts = s._cdc_source_ts"


def _not_matched_sql(
    table: MirrorTable, soft: bool, toast: set[str], classified: bool = True
) -> str:
    """The MERGE's NOT MATCHED branches: a row classified ``insert`` (``toast``: its columns
    that may hold an unchanged-TOAST placeholder; ``classified`` False: any change but a
    delete), and with ``soft`` deletes the stub of a deleted row that is not stored."""
    columns = ", ".join(q(c) for c in _row_names(table))
    values = [inserted_sql(c) if c in toast else f"s.{q(c)}" for c in table.names]
    insert_values = ", ".join([*values, "s._cdc_op", "s._cdc_position", "s._cdc_source_ts"])
    absent = ""
    if soft:
        stub = ", ".join(
            [f"s.{q(c)}" if c in table.key else "NULL" for c in table.names]
            + ["s._cdc_op", "s._cdc_position", "s._cdc_source_ts", "true"]
        )
        absent = f" WHEN NOT MATCHED AND s._cdc_op = 'd' THEN INSERT ({columns}) VALUES ({stub})"
    inserts = "s._cdc_action = 'insert'" if classified else "s._cdc_op <> 'd'"
    return (
        f" WHEN NOT MATCHED AND {inserts} THEN INSERT ({columns}) "
        f"VALUES ({insert_values}, false){absent}"
    )


def restore_sql(
    table: MirrorTable, target: str, parent: int, changes: str, classified: bool = True
) -> str:
    """After a MERGE without the guard was committed on a snapshot (``parent``) that a foreign
    commit had changed since the classification read the table (``spark/iceberg.py``):
    put back each row of the batch's ``changes`` that ``parent`` held at a newer position than
    the change, as the guard would have kept it: over the batch's row, or again where the
    batch deleted it. ``classified`` False: the changes of a batch MERGEd without a
    classification (``direct_merge_sql``), whose deletes are their ``_cdc_op``."""
    n = source_length(table.dialect)
    action = "e._cdc_action" if classified else "IF(e._cdc_op = 'd', 'delete', 'upsert')"
    names = _row_names(table)
    sets = ", ".join(f"{q(c)} = r.{q(c)}" for c in names)
    columns = ", ".join(q(c) for c in names)
    values = ", ".join(f"r.{q(c)}" for c in names)
    return (
        f"MERGE INTO {target} t USING (SELECT p.*, {action} AS _cdc_batch_action "
        f"FROM {as_of(target, parent)} p JOIN {changes} e ON {keys_equal(table, 'p', 'e')} "
        f"WHERE {newer('p._cdc_position', 'e._cdc_position', n)}) r "
        f"ON {keys_equal(table, 't', 'r')} "
        f"WHEN MATCHED AND {newer('r._cdc_position', 't._cdc_position', n)} THEN UPDATE SET {sets} "
        f"WHEN NOT MATCHED AND r._cdc_batch_action = 'delete' "
        f"THEN INSERT ({columns}) VALUES ({values})"
    )


def tombstone_append_sql(
    table: MirrorTable, tombstones: str, changes: str, classified: bool = True
) -> str:
    """Record the position of every hard-deleted key (also keys deleted before they landed):
    appended, a row per delete (the classification takes the newest of a key). Each is newer
    than its key's tombstones: a delete that is not is classified ``stale`` and not
    recorded, and a batch MERGEd without a classification is newer than every tombstone.
    ``classified`` False: ``changes`` are a direct batch's events, whose every delete is
    recorded (``spark/cdc/direct.entomb_direct``).

    One file a batch (a ``COALESCE(1)`` hint; a few MB even for 200k deletes): without it
    each partition of the kept batch wrote a file of its deletes, ten small files for the
    20k deletes of a 100k batch, for ``maintain`` to compact and a classification to open
    (the one file costs the append nothing it would notice)."""
    keys = ", ".join(q(k) for k in table.key)
    deleted = "_cdc_action IN ('delete', 'absent')" if classified else "_cdc_op = 'd'"
    return (
        f"INSERT INTO {tombstones} ({keys}, _cdc_position, _cdc_source_ts) "
        f"SELECT /*+ COALESCE(1) */ {keys}, _cdc_position, _cdc_source_ts "
        f"FROM {changes} WHERE {deleted}"
    )


def append_merge_sql(table: MirrorTable, target: str, events: str) -> str:
    """Keyless tables: every event appended once. A change (insert, update, delete) once per
    source position, the source part of ``_cdc_position``: Debezium sending it again (at
    another Kafka offset), in the same batch or a later one, or a batch run again, adds
    nothing; the source part of a change is its own (PostgreSQL's LSN, the binlog event's
    position and row). A read (``r``) once per whole position, Kafka offset included: the
    reads of one snapshot, or of one incremental-snapshot chunk, share their source part, so
    a new snapshot appends its reads again (``docs/limits.md``)."""
    n = source_length(table.dialect)
    source = f"slice(_cdc_position, 1, {n})"
    once = f"IF(_cdc_op = 'r', _cdc_position, {source})"
    columns = ", ".join(q(c) for c in _row_names(table))
    values = ", ".join([f"s.{q(c)}" for c in table.names])
    events_once = (
        f"(SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY {once} "
        f"ORDER BY _cdc_position) AS _cdc_nth FROM {events}) WHERE _cdc_nth = 1)"
    )
    return (
        f"MERGE INTO {target} t USING {events_once} s "
        f"ON slice(t._cdc_position, 1, {n}) = slice(s._cdc_position, 1, {n}) "
        "AND (t._cdc_position = s._cdc_position OR (t._cdc_op <> 'r' AND s._cdc_op <> 'r')) "
        f"WHEN NOT MATCHED THEN INSERT ({columns}) VALUES ({values}, s._cdc_op, "
        "s._cdc_position, s._cdc_source_ts, s._cdc_op = 'd')"
    )


def truncate_sql(table: MirrorTable, target: str, position: str, soft: bool) -> str:
    """Empty the table of rows older than the truncate (``position`` is an array literal)."""
    n = source_length(table.dialect)
    older = f"slice(_cdc_position, 1, {n}) < slice({position}, 1, {n})"
    if soft:
        return (
            f"UPDATE {target} SET _cdc_deleted = true, _cdc_op = 't' "
            f"WHERE {older} AND NOT coalesce(_cdc_deleted, false)"
        )
    return f"DELETE FROM {target} WHERE {older}"
