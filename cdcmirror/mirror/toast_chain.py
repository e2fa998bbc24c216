"""Unchanged-TOAST values across PostgreSQL key changes inside one batch. Pure SQL text.

A key change arrives as delete(old key) + create(new key, the old key in a header), and the
create carries placeholders for the row's unchanged TOASTed values. Inside one batch a row
can be re-keyed many times (A -> B, updated, B -> C, ...): its value is then the newest real
value along that chain, walked back by position:

1. ``dedupe_sql`` (``merge_sql.py``) fills a placeholder from the key's own earlier events
   since its newest key-change create, and leaves ``_cdc_ok_*`` (the old key) and
   ``_cdc_okpos`` (the create's position) on the row when that is not enough;
2. ``own_stored_fill_sql`` takes the row's own stored row when it was written at or after
   ``_cdc_okpos`` (a batch replayed after a crash or a lost checkpoint: the row is already
   there, made from these same events);
3. ``chain_step_sql`` looks at the old key's life before ``_cdc_okpos``, since the old key's own
   key-change create (if any): its newest real value in the batch, or its stored row when
   that was written within that life (the newest of the two wins). When neither has it,
   the row moves one link back (``_cdc_ok_*``/``_cdc_okpos`` become that create's old key and
   position); when the old key has no key-change create before ``_cdc_okpos``, the chain ends
   there (``_cdc_okpos`` NULL). The stored row of an old key is the row as it was before the
   batch, or, in a replayed batch, as an earlier run of these events left it: only its
   position tells which life of the key it belongs to, never its presence.

A placeholder still set after that is a value the mirror cannot know (the row is neither in
the batch nor in the table): ``unknown_sql`` names those rows, and the applier dead-letters
them instead of writing NULL; ``reconcile --deep`` lists the key and ``repair`` heals it.
"""

from __future__ import annotations

from cdcmirror.cdc_columns import before_fill, placeholder_flag
from cdcmirror.mirror.envelope import old_key_columns, q
from cdcmirror.mirror.key_range import Bounds, range_sql
from cdcmirror.mirror.positions import newer, source_length
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.toast import toastable
from cdcmirror.sql_text import sql_string

MAX_CHAIN_STEPS = 10_000  # a chain is never longer than the events of one batch


def key_change_with_placeholders(table: MirrorTable) -> str:
    """SQL condition over decoded events: a key-change create that still has placeholders."""
    old = old_key_columns(table)
    if not old:
        return "false"
    return f"({q(old[0])} IS NOT NULL AND ({_any_flag(table, '')}))"


def _any_flag(table: MirrorTable, alias: str) -> str:
    return " OR ".join(f"{alias}{q(placeholder_flag(c))}" for c in toastable(table))


def pending_sql(table: MirrorTable) -> str:
    """Condition over deduplicated rows: a placeholder is left and a chain link to follow."""
    if not old_key_columns(table):
        return "false"
    return f"(_cdc_okpos IS NOT NULL AND ({_any_flag(table, '')}))"


def _row_cols(table: MirrorTable) -> list[str]:
    """Every column of a deduplicated row except the TOAST values, flags and chain links."""
    toast = set(toastable(table))
    cols = [c for c in table.names if c not in toast]
    return [*cols, "_cdc_op", "_cdc_position", "_cdc_source_ts", "_cdc_partition", "_cdc_offset"]


def stored_sql(table: MirrorTable, target: str, soft: bool, bounds: Bounds) -> str:
    """The stored rows a chain may read: keys, TOAST values and position (``_cdc_sp``), within
    the batch's key range (every key a chain visits has an event in the batch); a
    soft-deleted row holds no value."""
    keys = ", ".join(q(k) for k in table.key)
    values = ", ".join(q(c) for c in toastable(table))
    alive = " AND NOT coalesce(_cdc_deleted, false)" if soft else ""
    return (
        f"SELECT {keys}, {values}, _cdc_position AS _cdc_sp FROM {target} "
        f"WHERE {range_sql('', bounds)}{alive}"
    )


def own_stored_fill_sql(
    table: MirrorTable, pending: str, target: str, soft: bool, bounds: Bounds
) -> str:
    """Placeholders filled from the row's own stored row when that was written at or after
    the key change that created the row (a replayed batch: the row is already there, made
    from the same events); an older stored row is another life of the key and is not read.

    >>> from cdcmirror.mirror.spec import MirrorColumn
    >>> t = MirrorTable("n.t", "s.p.t", "postgresql", "p.t", ("id",), "upsert",
    ...     (MirrorColumn("id", "long", "int64"), MirrorColumn("note", "string", "string")))
    >>> "NOT slice(u._cdc_okpos, 1, 3) > slice(o._cdc_sp, 1, 3)" in own_stored_fill_sql(t, "p", "t",
    ...     False, {})
    True
    """
    n = source_length(table.dialect)
    cols = [f"u.{q(c)}" for c in _row_cols(table)]
    ok = f"(o._cdc_sp IS NOT NULL AND NOT {newer('u._cdc_okpos', 'o._cdc_sp', n)})"
    for c in toastable(table):
        t = q(placeholder_flag(c))
        cols.append(f"IF(u.{t} AND {ok}, o.{q(c)}, u.{q(c)}) AS {q(c)}")
        cols.append(f"(u.{t} AND NOT {ok}) AS {t}")
    cols += [f"u.{q(k)}" for k in old_key_columns(table)]
    cols.append("u._cdc_okpos")
    on = " AND ".join(f"o.{q(k)} = u.{q(k)}" for k in table.key)
    return (
        f"SELECT {', '.join(cols)} FROM {pending} u "
        f"LEFT JOIN ({stored_sql(table, target, soft, bounds)}) o ON {on}"
    )


def chain_step_sql(
    table: MirrorTable, pending: str, events: str, target: str, soft: bool, bounds: Bounds
) -> str:
    """One link back along each pending row's key chain (see the module docstring).

    >>> from cdcmirror.mirror.spec import MirrorColumn
    >>> t = MirrorTable("n.t", "s.p.t", "postgresql", "p.t", ("id",), "upsert",
    ...     (MirrorColumn("id", "long", "int64"), MirrorColumn("note", "string", "string")))
    >>> sql = chain_step_sql(t, "p", "e", "t", False, {})
    >>> "e.`id` = u.`_cdc_ok_id` AND e._cdc_position < u._cdc_okpos" in sql
    True
    """
    toast = toastable(table)
    old = old_key_columns(table)
    n = source_length(table.dialect)
    keys = ", ".join(f"u.{q(k)}" for k in table.key)

    def at_old_key(alias: str) -> str:  # ``alias``'s key is the pending row's old key
        pairs = zip(table.key, old, strict=True)
        return " AND ".join(f"{alias}.{q(k)} = u.{q(ok)}" for k, ok in pairs)

    prev_fields = ", ".join(f"{sql_string(ok)}, e.{q(ok)}" for ok in old)
    aggs = [
        f"max_by(named_struct({prev_fields}, 'p', e._cdc_position), "
        f"IF(e.{q(old[0])} IS NULL, NULL, e._cdc_position)) AS _cdc_prev"
    ]
    aggs += [
        f"max_by(named_struct('v', e.{q(c)}, 'p', e._cdc_position), IF(e._cdc_op = 'd' OR "
        f"e.{q(placeholder_flag(c))}, NULL, e._cdc_position)) AS {q(before_fill(c))}"
        for c in toast
    ]
    links = (
        f"SELECT {keys}, {', '.join(aggs)} FROM {pending} u JOIN {events} e ON {at_old_key('e')} "
        f"AND e._cdc_position < u._cdc_okpos GROUP BY {keys}"
    )
    # the old key's stored row, when written within the old key's life on this chain:
    # since its own key-change create (if any) and before it was re-keyed (``_okpos``)
    since = f"(a._cdc_prev IS NULL OR NOT {newer('a._cdc_prev.p', 'o._cdc_sp', n)})"
    stored_ok = f"(o._cdc_sp IS NOT NULL AND {since} AND {newer('u._cdc_okpos', 'o._cdc_sp', n)})"
    cols = [f"u.{q(c)}" for c in _row_cols(table)]
    for c in toast:
        t, bf = q(placeholder_flag(c)), q(before_fill(c))
        in_batch = f"(a.{bf} IS NOT NULL AND (a._cdc_prev IS NULL OR a.{bf}.p >= a._cdc_prev.p))"
        batch_wins = f"({in_batch} AND NOT ({stored_ok} AND {newer('o._cdc_sp', f'a.{bf}.p', n)}))"
        value = f"IF({batch_wins}, a.{bf}.v, IF({stored_ok}, o.{q(c)}, u.{q(c)}))"
        found = f"({in_batch} OR {stored_ok})"
        cols.append(f"IF(u.{t} AND {found}, {value}, u.{q(c)}) AS {q(c)}")
        cols.append(f"(u.{t} AND NOT {found}) AS {t}")
    # a further link, or the chain ends at the old key looked at now
    cols += [f"IF(a._cdc_prev IS NULL, u.{q(ok)}, a._cdc_prev.{q(ok)}) AS {q(ok)}" for ok in old]
    cols.append("a._cdc_prev.p AS _cdc_okpos")
    on = " AND ".join(f"a.{q(k)} = u.{q(k)}" for k in table.key)
    return (
        f"SELECT {', '.join(cols)} FROM {pending} u LEFT JOIN ({links}) a ON {on} "
        f"LEFT JOIN ({stored_sql(table, target, soft, bounds)}) o ON {at_old_key('o')}"
    )


def unknown_sql(table: MirrorTable) -> str:
    """Condition over classified rows: a placeholder whose value the mirror cannot know.

    A row that came through a key change (``_cdc_ok_*`` set) must not take its own stored
    value; a row with no stored row (``insert``) has nothing to keep; a stale event (older
    than the stored row) writes nothing.
    """
    toast = toastable(table)
    if not toast:
        return "false"
    came_by_key_change = f"{q(old_key_columns(table)[0])} IS NOT NULL"
    writes = "_cdc_action IN ('insert', 'update')"  # a stale event writes nothing
    fills = f"(_cdc_action = 'insert' OR {came_by_key_change})"
    return f"(({_any_flag(table, '')}) AND {writes} AND {fills})"


def unknown_columns_sql(table: MirrorTable) -> str:
    """SQL text naming the columns still holding a placeholder (for the dead-letter reason)."""
    toast = toastable(table)
    if not toast:
        return "''"
    names = ", ".join(f"IF({q(placeholder_flag(c))}, {sql_string(c)}, NULL)" for c in toast)
    return f"concat_ws(', ', {names})"


def chain_columns(table: MirrorTable) -> list[str]:
    """The column order of a deduplicated row (pending and resolved frames are unioned)."""
    cols = _row_cols(table)
    for c in toastable(table):
        cols += [c, placeholder_flag(c)]
    return [*cols, *old_key_columns(table), "_cdc_okpos"]
