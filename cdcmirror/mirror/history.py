"""History (SCD type 2) beside a mirrored table: every version of every row, valid from the
source position of the change that made it to the position of the next change of its key.
Pure: the history table's columns, and the SQL that turns a batch's changes into versions.

A version is made by each create, update or snapshot read (``_cdc_op`` r, c, u), in
position order per key, several per key and batch when the batch holds several changes of
it. The next change of the key closes it (``_cdc_valid_to`` = that change's position); a
delete only closes (``_cdc_deleted`` true on the version it closed: no row of its own, as
Spark's AUTO CDC SCD2 ends ``__END_AT`` and writes no delete row); a TRUNCATE closes every
version then current, marked deleted. Key changes come as a delete of the old key and a
create of the new one, so the old key's version closes and the new key's opens.

Each batch's versions and the closing of the versions they follow are one MERGE
(``merge_sql``): one commit, so the chain is never half written. Exactly once: the history
table's snapshots record their own high-water mark (``high_water.py``); a batch whose
oldest change is newer is all new, otherwise each key's changes at or before the newest
position its history holds are dropped (``guarded_sql``): a replay adds nothing, and a
change older than its key's newest version is never put in the middle of the chain (the
mirror's position order brings every key's changes in order, so such a change was recorded
already).

A re-read of a row while the table streams (Debezium's incremental snapshot, which
``cdcmirror repair`` asks for) makes a version marked ``repair`` only when its value differs
from the key's version before it (``same_rereads_dropped_sql``): a repair shows where the
mirror had it wrong, and a whole table read again adds nothing where it was right. A row
repair removes (only in the mirror, not at the source) ends its version, deleted, at the
source position repair read before it found the key missing (``removed_sql``).

Unchanged-TOAST placeholders (PostgreSQL) take the value of the key's previous version:
its earlier change in the batch, else its current version in the history; for the create
half of a key change, the old key's newest version before it (``filled_sql``). A value
known nowhere is not written: the change is a dead letter (``unknown_sql``).
"""

from __future__ import annotations

from collections.abc import Sequence

from cdcmirror.cdc_columns import IcebergColumn, placeholder_flag
from cdcmirror.mirror.envelope import old_key_columns, q
from cdcmirror.mirror.key_range import Bounds, range_sql
from cdcmirror.mirror.merge_sql import keys_equal
from cdcmirror.mirror.positions import newer, position_literal, reread_sql, source_length
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.toast import toastable
from cdcmirror.sql_text import sql_string as sql_text

SUFFIX = "__history"  # the default of ``mirror.history_suffix``

VALID_FROM = IcebergColumn(
    "_cdc_valid_from",
    "list<long>",
    doc="source position of the change that made this version (encoded like _cdc_position)",
)
VALID_TO = IcebergColumn(
    "_cdc_valid_to",
    "list<long>",
    doc="source position of the change that ended this version; NULL while it is current",
)
VALID_FROM_TS = IcebergColumn(
    "_cdc_valid_from_ts", "timestamptz", doc="commit time of _cdc_valid_from's change"
)
VALID_TO_TS = IcebergColumn(
    "_cdc_valid_to_ts", "timestamptz", doc="commit time of _cdc_valid_to's change"
)
REPAIR = "repair"  # the ``_cdc_op`` of a version a re-read (``cdcmirror repair``) made
OP = IcebergColumn(
    "_cdc_op",
    "string",
    doc="the change that made this version: r (snapshot read), c, u, repair (a re-read)",
)
IS_CURRENT = IcebergColumn(
    "_cdc_is_current", "boolean", doc="true on the key's current version (the mirror's row)"
)
DELETED = IcebergColumn(
    "_cdc_deleted",
    "boolean",
    doc="true when a delete or a TRUNCATE ended this version (at _cdc_valid_to)",
)
HISTORY_COLUMNS = (VALID_FROM, VALID_TO, VALID_FROM_TS, VALID_TO_TS, OP, IS_CURRENT, DELETED)
NAMES = tuple(c.name for c in HISTORY_COLUMNS)

_W = "_cdc_position"
_VALUE = "v"


def history_identifier(identifier: str, suffix: str) -> str:
    """The history table of mirrored table ``identifier``, in its namespace.

    >>> history_identifier("shop.orders", "__history")
    'shop.orders__history'
    """
    return identifier + suffix


def _keys(table: MirrorTable, alias: str = "") -> str:
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + q(k) for k in table.key)


def merge_key(k: str) -> str:
    """The MERGE source's column that matches a current version of key column ``k``."""
    return f"_cdc_mk_{k}"


def seed_sql(table: MirrorTable, history: str, mirror: str) -> str:
    """The first versions of a history table made beside a mirrored table that holds rows:
    each row as it stands (``mirror``: the table, or the table ``AS OF`` the snapshot the
    batch read), valid from its position. Rows a soft delete marked are not current.

    >>> from cdcmirror.mirror.spec import MirrorColumn
    >>> t = MirrorTable("n.t", "s.p.t", "mysql", "p.t", ("id",), "upsert",
    ...     (MirrorColumn("id", "long", "int64"),))
    >>> seed_sql(t, "h", "m")  # doctest: +NORMALIZE_WHITESPACE
    "INSERT INTO h SELECT `id`, _cdc_position, CAST(NULL AS ARRAY<BIGINT>), _cdc_source_ts,
    CAST(NULL AS TIMESTAMP), coalesce(_cdc_op, 'r'), true, false FROM m
    WHERE NOT coalesce(_cdc_deleted, false)"
    """
    cols = ", ".join(q(c) for c in table.names)
    return (
        f"INSERT INTO {history} SELECT {cols}, _cdc_position, CAST(NULL AS ARRAY<BIGINT>), "
        "_cdc_source_ts, CAST(NULL AS TIMESTAMP), coalesce(_cdc_op, 'r'), true, false "
        f"FROM {mirror} WHERE NOT coalesce(_cdc_deleted, false)"
    )


def events_sql(table: MirrorTable, decoded: str, truncated_at: Sequence[int]) -> str:
    """The batch's changes that history records: decoded without error, a create, update,
    delete or snapshot read, newer than the table's TRUNCATE applied before the batch."""
    cols = [*table.names, *(placeholder_flag(c) for c in toastable(table))]
    cols += [*old_key_columns(table), "_cdc_op", _W, "_cdc_source_ts"]
    where = "_cdc_error IS NULL AND _cdc_op IN ('c', 'u', 'd', 'r')"
    if truncated_at:
        n = source_length(table.dialect)
        where += f" AND {newer(_W, position_literal(truncated_at), n)}"
    return f"SELECT {', '.join(q(c) for c in cols)} FROM {decoded} WHERE {where}"


def guarded_sql(table: MirrorTable, events: str, history: str, bounds: Bounds) -> str:
    """``events`` without the changes each key's history already holds: those at or before
    the newest position its versions name (the start of one, or the end a delete or TRUNCATE
    gave one). Only the batch's keys' versions are read (their files by the batch's key
    ``bounds``, ``key_range.py``)."""
    n = source_length(table.dialect)
    keys = _keys(table)
    newest = (
        f"SELECT {_keys(table, 'h')}, max(greatest(h._cdc_valid_from, h._cdc_valid_to)) "
        f"AS _cdc_newest FROM {history} h LEFT SEMI JOIN (SELECT DISTINCT {keys} FROM {events}) "
        f"b ON {keys_equal(table, 'h', 'b')} WHERE {range_sql('h', bounds)} "
        f"GROUP BY {_keys(table, 'h')}"
    )
    return (
        f"SELECT e.* FROM {events} e LEFT JOIN ({newest}) s ON {keys_equal(table, 'e', 's')} "
        f"WHERE s._cdc_newest IS NULL OR {newer('e._cdc_position', 's._cdc_newest', n)}"
    )


_PER_KEY = "PARTITION BY {keys} ORDER BY _cdc_position"
_SO_FAR = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"


def lives_sql(table: MirrorTable, events: str) -> str:
    """``events`` with ``_cdc_life``: how many creates (or snapshot reads) of the key came
    up to each change in the batch. A create starts a life of the key: the values of a
    change of life 0 go back to the key's current version before the batch, those of a
    later life to its create (and, for a key change, to the old key)."""
    over = _PER_KEY.format(keys=_keys(table))
    return (
        f"SELECT *, sum(IF(_cdc_op IN ('c', 'r'), 1, 0)) OVER ({over} {_SO_FAR}) AS _cdc_life "
        f"FROM {events}"
    )


def batch_filled_sql(table: MirrorTable, lived: str, current: str) -> str:
    """Each unchanged-TOAST placeholder of ``lived`` (``lives_sql``) filled from the newest
    earlier change of the key's life in the batch that carries the value, else, in life 0,
    from the key's current version (``current``: the history's current versions of the
    batch's keys); ``_cdc_t_<c>`` stays true when neither has it. ``_cdc_kc``: the life's
    create, with its old key when it is a key change's."""
    toast = toastable(table)
    old = old_key_columns(table)
    over = _PER_KEY.format(keys=f"{_keys(table)}, _cdc_life")
    fills = [
        f"last(IF(_cdc_op = 'd' OR {q(placeholder_flag(c))}, NULL, named_struct('{_VALUE}', "
        f"{q(c)})), true) OVER ({over} {_SO_FAR}) AS {q('_cdc_hf_' + c)}"
        for c in toast
    ]
    if old:
        fields = ", ".join(f"'{ok}', {q(ok)}" for ok in old)
        fills.append(
            f"first(IF(_cdc_op IN ('c', 'r'), named_struct({fields}, 'p', _cdc_position), "
            f"NULL), true) OVER ({over} {_SO_FAR}) AS _cdc_kc"
        )
    inner = f"SELECT *, {', '.join(fills)} FROM {lived}"
    cols = []
    for c in table.names:
        if c not in toast:
            cols.append(f"e.{q(c)}")
            continue
        t, bf = q(placeholder_flag(c)), q("_cdc_hf_" + c)
        known = f"coalesce(e.{bf}, IF(e._cdc_life = 0, cur.{q('_cdc_s_' + c)}, NULL))"
        cols += [
            f"IF(e.{t}, {known}.{_VALUE}, e.{q(c)}) AS {q(c)}",
            f"e.{t} AND {known} IS NULL AS {t}",
        ]
    cols += ["e._cdc_op", "e._cdc_position", "e._cdc_source_ts", "e._cdc_life"]
    if old:
        cols.append("e._cdc_kc")
    return (
        f"SELECT {', '.join(cols)} FROM ({inner}) e LEFT JOIN {current} cur "
        f"ON {keys_equal(table, 'e', 'cur')}"
    )


def current_sql(table: MirrorTable, history: str, events: str, bounds: Bounds) -> str:
    """The history's current versions of ``events``' keys, each TOASTable value as
    ``_cdc_s_<c>`` (a struct, so that a NULL value is told from none)."""
    vals = ", ".join(
        f"named_struct('{_VALUE}', h.{q(c)}) AS {q('_cdc_s_' + c)}" for c in toastable(table)
    )
    return (
        f"SELECT {_keys(table, 'h')}{', ' + vals if vals else ''} FROM {history} h "
        f"LEFT SEMI JOIN (SELECT DISTINCT {_keys(table)} FROM {events}) b "
        f"ON {keys_equal(table, 'h', 'b')} WHERE h._cdc_is_current AND {range_sql('h', bounds)}"
    )


def old_key_filled_sql(table: MirrorTable, filled: str, history: str, bounds: Bounds) -> str:
    """The create half of a key change whose placeholder the key's own life cannot fill
    (``batch_filled_sql``) takes the old key's newest version before the create: in the
    batch (a change of the old key, its values as filled there) or in the history. A
    placeholder that version does not know either stays: when the old key was made by a key
    change of the same batch, that one's values are filled by the same step, so the step is
    run again over its own output until nothing more is filled (one run per link of the
    longest chain); what stays is known nowhere (``unknown_sql``)."""
    toast = toastable(table)
    old = old_key_columns(table)
    flags = " OR ".join(q(placeholder_flag(c)) for c in toast)
    values = ", ".join(
        f"'{c}', {q(c)}, '{placeholder_flag(c)}', {q(placeholder_flag(c))}" for c in toast
    )
    batch_side = (
        f"SELECT {_keys(table)}, _cdc_position AS p, named_struct({values}) AS v "
        f"FROM {filled} WHERE _cdc_op <> 'd'"
    )
    stored = ", ".join(f"'{c}', {q(c)}, '{placeholder_flag(c)}', false" for c in toast)
    history_side = (
        f"SELECT {_keys(table)}, _cdc_valid_from AS p, named_struct({stored}) AS v FROM {history} "
        f"WHERE {range_sql('', bounds)}"
    )
    on = " AND ".join(f"o.{q(k)} = n._cdc_kc.{q(ok)}" for k, ok in zip(table.key, old, strict=True))
    need = f"_cdc_kc.{q(old[0])} IS NOT NULL AND ({flags})"
    found = (
        f"SELECT n._cdc_position AS _cdc_np, max_by(o.v, o.p) AS _cdc_ov "
        f"FROM (SELECT * FROM {filled} WHERE {need}) n JOIN ({batch_side} UNION ALL "
        f"{history_side}) o ON {on} AND o.p < n._cdc_kc.p GROUP BY n._cdc_position"
    )
    cols = []
    for c in table.names:
        if c not in toast:
            cols.append(f"f.{q(c)}")
            continue
        t = q(placeholder_flag(c))
        use = f"(f.{t} AND f._cdc_life > 0 AND o._cdc_ov IS NOT NULL)"
        cols += [
            f"IF({use}, o._cdc_ov.{q(c)}, f.{q(c)}) AS {q(c)}",
            f"IF({use}, o._cdc_ov.{t}, f.{t}) AS {t}",
        ]
    cols += ["f._cdc_op", "f._cdc_position", "f._cdc_source_ts", "f._cdc_life", "f._cdc_kc"]
    return (
        f"SELECT {', '.join(cols)} FROM {filled} f LEFT JOIN ({found}) o "
        f"ON f._cdc_position = o._cdc_np"
    )


def unknown_sql(table: MirrorTable) -> str:
    """Over filled changes: a version's value is still a placeholder (known nowhere)."""
    flags = [q(placeholder_flag(c)) for c in toastable(table)]
    if not flags:
        return "false"
    return f"(_cdc_op <> 'd' AND ({' OR '.join(flags)}))"


def _row_json(table: MirrorTable, alias: str = "") -> str:
    prefix = f"{alias}." if alias else ""
    fields = ", ".join(f"{sql_text(c)}, {prefix}{q(c)}" for c in table.names)
    return f"to_json(named_struct({fields}))"


def same_rereads_dropped_sql(
    table: MirrorTable,
    filled: str,
    history: str,
    bounds: Bounds,
    first_truncate: Sequence[int] | None = None,
) -> str:
    """``filled`` without the re-reads (``positions.reread_sql``) whose row equals the key's
    version before them: its change before them in the batch (none after a delete), else
    its current version in the history. A re-read after the batch's ``first_truncate``
    (position) is kept: the TRUNCATE ended the version it equals. Rows compared as JSON
    text, which compares any column type."""
    over = _PER_KEY.format(keys=_keys(table))
    stepped = (
        f"SELECT *, {_row_json(table)} AS _cdc_row, lag(IF(_cdc_op = 'd', NULL, "
        f"{_row_json(table)})) OVER w AS _cdc_prev, row_number() OVER w AS _cdc_rn "
        f"FROM {filled} WINDOW w AS ({over})"
    )
    current = (
        f"SELECT {_keys(table, 'h')}, {_row_json(table, 'h')} AS _cdc_row FROM {history} h "
        f"LEFT SEMI JOIN (SELECT DISTINCT {_keys(table)} FROM {filled} WHERE {reread_sql()}) b "
        f"ON {keys_equal(table, 'h', 'b')} WHERE h._cdc_is_current AND {range_sql('h', bounds)}"
    )
    before = "IF(e._cdc_rn = 1, cur._cdc_row, e._cdc_prev)"
    same = f"{reread_sql('e._cdc_op', 'e._cdc_position')} AND e._cdc_row = {before}"
    if first_truncate is not None:
        n = source_length(table.dialect)
        same += f" AND NOT {newer('e._cdc_position', position_literal(first_truncate), n)}"
    return (
        f"SELECT e.* EXCEPT (_cdc_row, _cdc_prev, _cdc_rn) FROM ({stepped}) e "
        f"LEFT JOIN ({current}) cur ON {keys_equal(table, 'e', 'cur')} "
        f"WHERE NOT coalesce({same}, false)"
    )


def removed_sql(
    table: MirrorTable,
    history: str,
    key_text: str,
    rows: dict[str, list[int]],
    end: Sequence[int],
    end_us: int,
) -> str:
    """End, deleted, at source position ``end`` (commit time ``end_us``, epoch
    microseconds), the current version of each key of ``rows`` (key text, by ``key_text``
    over the history's columns -> the mirrored row's position) that starts at or before
    that row's position: the keys repair removes from the mirror because the source does
    not have them. A version that starts later holds a change applied since, which wins.

    >>> from cdcmirror.mirror.spec import MirrorColumn
    >>> t = MirrorTable("n.t", "s.p.t", "postgresql", "p.t", ("id",), "upsert",
    ...     (MirrorColumn("id", "long", "int64"),))
    >>> removed_sql(t, "h", "CAST(id AS STRING)", {"7": [1, 5, 5, 0, 3]}, [1, 9, 9, -1, -1], 5)
    ... # doctest: +NORMALIZE_WHITESPACE
    "MERGE INTO h t USING (SELECT * FROM VALUES ('7', array(1L, 5L, 5L, 0L, 3L)) AS s(k, p)) s
    ON t._cdc_is_current AND CAST(id AS STRING) = s.k
    WHEN MATCHED AND NOT slice(t._cdc_valid_from, 1, 3) > slice(s.p, 1, 3)
    THEN UPDATE SET _cdc_valid_to = array(1L, 9L, 9L, -1L, -1L),
    _cdc_valid_to_ts = timestamp_micros(5), _cdc_is_current = false, _cdc_deleted = true"
    """
    values = ", ".join(f"({sql_text(k)}, {position_literal(p)})" for k, p in rows.items())
    later = newer("t._cdc_valid_from", "s.p", source_length(table.dialect))
    return (
        f"MERGE INTO {history} t USING (SELECT * FROM VALUES {values} AS s(k, p)) s "
        f"ON t._cdc_is_current AND {key_text} = s.k WHEN MATCHED AND NOT {later} "
        f"THEN UPDATE SET _cdc_valid_to = {position_literal(end)}, _cdc_valid_to_ts = "
        f"timestamp_micros({end_us}), _cdc_is_current = false, _cdc_deleted = true"
    )


def _first_after(truncates: Sequence[tuple[Sequence[int], int]], at: str) -> tuple[str, str]:
    """SQL: the position and commit time (epoch microseconds) of the first of the batch's
    ``truncates`` after position ``at``; NULL when none is."""
    if not truncates:
        return "CAST(NULL AS ARRAY<BIGINT>)", "CAST(NULL AS TIMESTAMP)"
    pos = " ".join(
        f"WHEN {at} < {position_literal(p)} THEN {position_literal(p)}" for p, _ in truncates
    )
    ts = " ".join(
        f"WHEN {at} < {position_literal(p)} THEN timestamp_micros({us})" for p, us in truncates
    )
    return f"CASE {pos} END", f"CASE {ts} END"


def versions_sql(
    table: MirrorTable,
    filled: str,
    truncates: Sequence[tuple[Sequence[int], int]],
    unknown: str = "false",
) -> str:
    """The MERGE's source (``merge_sql``): a version for each create, update and snapshot
    read of ``filled``, ended by the key's next change or the batch's first TRUNCATE after
    it (``_cdc_mk_*`` NULL: inserted); then, for each key, a row that closes its current
    version (``_cdc_mk_*``: the key), carrying the key's first change of the batch as
    ``_cdc_valid_from`` / ``_cdc_valid_from_ts`` / ``_cdc_op``. A re-read's version is
    marked ``repair``. ``truncates``: the batch's
    TRUNCATEs (position, commit time in epoch microseconds), in position order;
    ``unknown``: a change whose version is not written (``unknown_sql``), though it ends the
    version before it."""
    over = _PER_KEY.format(keys=_keys(table))
    tp, tts = _first_after(truncates, "_cdc_position")
    stepped = (
        f"SELECT *, lead(_cdc_position) OVER w AS _cdc_np, lead(_cdc_source_ts) OVER w AS "
        f"_cdc_nts, lead(_cdc_op) OVER w AS _cdc_nop, {tp} AS _cdc_tp, {tts} AS _cdc_tts, "
        f"row_number() OVER w AS _cdc_rn FROM {filled} WINDOW w AS ({over})"
    )
    by_truncate = "(_cdc_tp IS NOT NULL AND (_cdc_np IS NULL OR _cdc_tp < _cdc_np))"
    names = ", ".join(q(c) for c in table.names)
    nulls = ", ".join(f"IF(false, {q(k)}, NULL) AS {q(merge_key(k))}" for k in table.key)
    version = (
        f"SELECT {names}, _cdc_position AS _cdc_valid_from, "
        f"IF({by_truncate}, _cdc_tp, _cdc_np) AS _cdc_valid_to, "
        "_cdc_source_ts AS _cdc_valid_from_ts, "
        f"IF({by_truncate}, _cdc_tts, _cdc_nts) AS _cdc_valid_to_ts, "
        f"IF({reread_sql()}, '{REPAIR}', _cdc_op) AS _cdc_op, "
        "(_cdc_np IS NULL AND _cdc_tp IS NULL) AS _cdc_is_current, "
        f"({by_truncate} OR coalesce(_cdc_nop = 'd', false)) AS _cdc_deleted, {nulls} "
        f"FROM stepped WHERE _cdc_op <> 'd' AND NOT {unknown}"
    )
    keys = ", ".join(f"{q(k)} AS {q(merge_key(k))}" for k in table.key)
    close = (
        f"SELECT {names}, _cdc_position, CAST(NULL AS ARRAY<BIGINT>), _cdc_source_ts, "
        f"CAST(NULL AS TIMESTAMP), _cdc_op, false, false, {keys} FROM stepped WHERE _cdc_rn = 1"
    )
    return f"WITH stepped AS ({stepped}) {version} UNION ALL {close}"


def merge_sql(
    table: MirrorTable,
    history: str,
    source: str,
    first_truncate: tuple[Sequence[int], int] | None,
    bounds: Bounds | None = None,
) -> str:
    """One batch into ``history`` (``source``: ``versions_sql``): each current version that a
    change of the batch follows closed at the key's first change, or at the batch's
    ``first_truncate`` (position, commit time in epoch microseconds) when that came between;
    after a TRUNCATE every other version that was current before it is closed too; each new
    version inserted. Deleted: ended by a delete or a TRUNCATE. ``bounds``: the batch's key
    range, so that only the files that may hold its keys are read (a TRUNCATE's versions
    outside it are not matched, and closed as every other one)."""
    n = source_length(table.dialect)
    on = " AND ".join(f"t.{q(k)} = s.{q(merge_key(k))}" for k in table.key)
    on += f" AND {range_sql('t', bounds or {})}"
    end, end_ts, by_truncate = "s._cdc_valid_from", "s._cdc_valid_from_ts", "false"
    if first_truncate is not None:
        tp, us = position_literal(first_truncate[0]), f"timestamp_micros({first_truncate[1]})"
        before = newer(tp, "t._cdc_valid_from", n)
        by_truncate = f"({tp} < s._cdc_valid_from AND {before})"
        end, end_ts = f"IF({by_truncate}, {tp}, {end})", f"IF({by_truncate}, {us}, {end_ts})"
    matched = (
        f"UPDATE SET _cdc_valid_to = {end}, _cdc_valid_to_ts = {end_ts}, "
        f"_cdc_is_current = false, _cdc_deleted = {by_truncate} OR s._cdc_op = 'd'"
    )
    cols = [*table.names, *NAMES]
    insert = (
        f"INSERT ({', '.join(q(c) for c in cols)}) VALUES ({', '.join('s.' + q(c) for c in cols)})"
    )
    sql = (
        f"MERGE INTO {history} t USING ({source}) s ON t._cdc_is_current AND {on} "
        f"WHEN MATCHED THEN {matched} "
        f"WHEN NOT MATCHED AND s.{q(merge_key(table.key[0]))} IS NULL THEN {insert}"
    )
    if first_truncate is not None:
        sql += (
            f" WHEN NOT MATCHED BY SOURCE AND t._cdc_is_current AND {before} THEN UPDATE SET "
            f"_cdc_valid_to = {tp}, _cdc_valid_to_ts = {us}, _cdc_is_current = false, "
            "_cdc_deleted = true"
        )
    return sql


def current_count_sql(history: str) -> str:
    """How many versions of ``history`` are current (reconcile: the mirror's live rows)."""
    return f"SELECT count_if(_cdc_is_current) AS n FROM {history}"


def chain_problems_sql(table: MirrorTable, history: str) -> str:
    """Reconcile ``--deep``: the versions that break their key's chain. Per key, by start:
    a version that is not the last must be closed (not current, an end), and end where the
    next starts, or, ended by a delete or TRUNCATE, at or before it; the last is current
    exactly when it has no end."""
    over = _PER_KEY.format(keys=_keys(table)).replace("_cdc_position", "_cdc_valid_from")
    stepped = f"SELECT *, lead(_cdc_valid_from) OVER ({over}) AS _cdc_next FROM {history}"
    broken = (
        "(_cdc_next IS NOT NULL AND (_cdc_is_current OR _cdc_valid_to IS NULL OR "
        "(NOT _cdc_deleted AND _cdc_valid_to <> _cdc_next) OR "
        "(_cdc_deleted AND _cdc_valid_to > _cdc_next))) OR "
        "(_cdc_next IS NULL AND _cdc_is_current <> (_cdc_valid_to IS NULL))"
    )
    return f"SELECT count_if({broken}) AS n FROM ({stepped})"


def current_differs_sql(table: MirrorTable, history: str, mirror: str) -> str:
    """Reconcile ``--deep``: the current versions that are not a live row of the mirror, and
    the live rows of the mirror that are no current version (rows compared as JSON text,
    which compares any column type)."""
    row = _row_json(table)
    current = f"SELECT {row} AS r FROM {history} WHERE _cdc_is_current"
    live = f"SELECT {row} AS r FROM {mirror} WHERE NOT coalesce(_cdc_deleted, false)"
    return (
        f"SELECT (SELECT count(*) FROM ({current} EXCEPT ALL {live})) + "
        f"(SELECT count(*) FROM ({live} EXCEPT ALL {current})) AS n"
    )
