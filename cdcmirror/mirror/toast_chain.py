"""Unchanged-TOAST values across PostgreSQL key changes inside one batch. Pure SQL text.

A key change arrives as delete(old key) + create(new key, the old key in a header), and the
create carries placeholders for the row's unchanged TOASTed values. Inside one batch a row
can be re-keyed many times (A -> B, updated, B -> C, ...): its value is then the newest real
value along that chain, walked back by position:

1. ``dedupe_sql`` (``merge_sql.py``) fills a placeholder from the key's own earlier events
   since its newest key-change create, and leaves ``_ok_*`` (the old key) and ``_okpos`` (the
   create's position) on the row when that is not enough;
2. ``chain_step_sql`` looks at the old key's events before ``_okpos``: a real value since the
   old key's own key-change create fills the placeholder; else the row moves one link back
   (``_ok_*``/``_okpos`` become that create's old key and position). When the old key has no
   key-change create before ``_okpos``, the chain ends there (``_okpos`` NULL);
3. ``chain_end_fill_sql`` takes what is still missing from the stored row of the key the
   chain ended at (the row as it was before the batch).

A placeholder still set after that is a value the mirror cannot know (the row is neither in
the batch nor in the table): ``unknown_sql`` names those rows, and the applier dead-letters
them instead of writing NULL; ``reconcile --deep`` lists the key and ``repair`` heals it.
"""

from __future__ import annotations

from cdcmirror.mirror.envelope import old_key_columns, q, toastable
from cdcmirror.mirror.spec import MirrorTable

MAX_CHAIN_STEPS = 10_000  # a chain is never longer than the events of one batch


def key_change_with_placeholders(table: MirrorTable) -> str:
    """SQL condition over decoded events: a key-change create that still has placeholders."""
    old = old_key_columns(table)
    if not old:
        return "false"
    return f"({q(old[0])} IS NOT NULL AND ({_any_flag(table, '')}))"


def _any_flag(table: MirrorTable, alias: str) -> str:
    return " OR ".join(f"{alias}{q('_t_' + c)}" for c in toastable(table))


def pending_sql(table: MirrorTable) -> str:
    """Condition over deduplicated rows: a placeholder is left and a chain link to follow."""
    if not old_key_columns(table):
        return "false"
    return f"(_okpos IS NOT NULL AND ({_any_flag(table, '')}))"


def _row_cols(table: MirrorTable) -> list[str]:
    """Every column of a deduplicated row except the TOAST values, flags and chain links."""
    toast = set(toastable(table))
    cols = [c for c in table.names if c not in toast]
    return [*cols, "_cdc_op", "_cdc_position", "_cdc_source_ts", "_partition", "_offset"]


def chain_step_sql(table: MirrorTable, pending: str, events: str) -> str:
    """One link back along each pending row's key chain (see the module docstring).

    >>> from cdcmirror.mirror.spec import MirrorColumn
    >>> t = MirrorTable("n.t", "s.p.t", "postgresql", "p.t", ("id",), "upsert",
    ...     (MirrorColumn("id", "long", "int64"), MirrorColumn("note", "string", "string")))
    >>> "e.`id` = u.`_ok_id` AND e._cdc_position < u._okpos" in chain_step_sql(t, "p", "e")
    True
    """
    toast = toastable(table)
    old = old_key_columns(table)
    keys = ", ".join(f"u.{q(k)}" for k in table.key)
    on_old = " AND ".join(f"e.{q(k)} = u.{q(ok)}" for k, ok in zip(table.key, old, strict=True))
    prev_fields = ", ".join(f"'{ok}', e.{q(ok)}" for ok in old)
    aggs = [
        f"max_by(named_struct({prev_fields}, 'p', e._cdc_position), "
        f"IF(e.{q(old[0])} IS NULL, NULL, e._cdc_position)) AS _prev"
    ]
    aggs += [
        f"max_by(named_struct('v', e.{q(c)}, 'p', e._cdc_position), IF(e._cdc_op = 'd' OR "
        f"e.{q('_t_' + c)}, NULL, e._cdc_position)) AS {q('_bf_' + c)}"
        for c in toast
    ]
    links = (
        f"SELECT {keys}, {', '.join(aggs)} FROM {pending} u JOIN {events} e ON {on_old} "
        f"AND e._cdc_position < u._okpos GROUP BY {keys}"
    )
    cols = [f"u.{q(c)}" for c in _row_cols(table)]
    for c in toast:
        t, bf = q("_t_" + c), q("_bf_" + c)
        found = f"(a.{bf} IS NOT NULL AND (a._prev IS NULL OR a.{bf}.p >= a._prev.p))"
        cols.append(f"IF(u.{t} AND {found}, a.{bf}.v, u.{q(c)}) AS {q(c)}")
        cols.append(f"(u.{t} AND NOT {found}) AS {t}")
    # a further link, or the chain ends at the old key looked at now (its stored row next)
    cols += [f"IF(a._prev IS NULL, u.{q(ok)}, a._prev.{q(ok)}) AS {q(ok)}" for ok in old]
    cols.append("a._prev.p AS _okpos")
    on = " AND ".join(f"a.{q(k)} = u.{q(k)}" for k in table.key)
    return f"SELECT {', '.join(cols)} FROM {pending} u LEFT JOIN ({links}) a ON {on}"


def chain_end_fill_sql(table: MirrorTable, ended: str, target: str) -> str:
    """Placeholders left on rows whose chain ended, from the stored row of the key it ended
    at (``_ok_*``); rows without that stored row keep their flags."""
    toast = toastable(table)
    old = old_key_columns(table)
    stored = (
        f"SELECT {', '.join(q(k) for k in table.key)}, {', '.join(q(c) for c in toast)}, "
        f"true AS _present FROM {target}"
    )
    cols = [f"d.{q(c)}" for c in _row_cols(table)]
    for c in toast:
        t = q("_t_" + c)
        cols.append(f"IF(d.{t} AND o._present, o.{q(c)}, d.{q(c)}) AS {q(c)}")
        cols.append(f"(d.{t} AND o._present IS NULL) AS {t}")
    cols += [f"d.{q(ok)}" for ok in old]
    cols.append("d._okpos")
    on = " AND ".join(f"o.{q(k)} = d.{q(ok)}" for k, ok in zip(table.key, old, strict=True))
    return f"SELECT {', '.join(cols)} FROM {ended} d LEFT JOIN ({stored}) o ON {on}"


def unknown_sql(table: MirrorTable) -> str:
    """Condition over classified rows: a placeholder whose value the mirror cannot know.

    A row that came through a key change (``_ok_*`` set) must not take its own stored
    value; a row with no stored row (``insert``) has nothing to keep.
    """
    toast = toastable(table)
    if not toast:
        return "false"
    came_by_key_change = f"{q(old_key_columns(table)[0])} IS NOT NULL"
    return f"(({_any_flag(table, '')}) AND (_action = 'insert' OR {came_by_key_change}))"


def unknown_columns_sql(table: MirrorTable) -> str:
    """SQL text naming the columns still holding a placeholder (for the dead-letter reason)."""
    toast = toastable(table)
    if not toast:
        return "''"
    names = ", ".join(f"IF({q('_t_' + c)}, '{c}', NULL)" for c in toast)
    return f"concat_ws(', ', {names})"


def chain_columns(table: MirrorTable) -> list[str]:
    """The column order of a deduplicated row (pending and resolved frames are unioned)."""
    cols = _row_cols(table)
    for c in toastable(table):
        cols += [c, "_t_" + c]
    return [*cols, *old_key_columns(table), "_okpos"]
