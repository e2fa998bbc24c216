"""The key range of a batch, so that reading the target follows the batch, not the table.
Pure SQL text.

Classification and the MERGE join the batch's keys with the stored rows. Without a bound on
the target side Spark reads the key column of every data file. With ``t.k BETWEEN lo AND hi``
(lo, hi: the smallest and largest key of the batch, old keys of key changes included) Iceberg
skips every file whose key range lies outside: a batch on recent rows of a table that grows
by key reads the newest files only. The bound never changes a result, since every key of the
batch lies inside it. Integer key columns only (their literals are exact); a table whose
key has none is read whole, as before.
"""

from __future__ import annotations

from collections.abc import Mapping

from cdcmirror.cdc_columns import key_high, key_low
from cdcmirror.mirror.envelope import old_key_columns, q
from cdcmirror.mirror.spec import MirrorTable

_INTEGRAL = ("int", "long")

# Per ranged key column, the smallest and largest value of the batch.
Bounds = Mapping[str, tuple[int, int]]


def ranged_keys(table: MirrorTable) -> list[str]:
    """Key columns a range can bound."""
    return [k for k in table.key if table.column(k).iceberg in _INTEGRAL]


def bounds_exprs(table: MirrorTable) -> list[str]:
    """Aggregate expressions over decoded events: ``_cdc_lo_<k>``/``_cdc_hi_<k>`` per ranged key,
    the old key of key-change creates included (their delete lands on it).

    >>> from cdcmirror.mirror.spec import MirrorColumn
    >>> t = MirrorTable("n.t", "s.p.t", "mysql", "p.t", ("id",), "upsert",
    ...     (MirrorColumn("id", "long", "int64"),))
    >>> bounds_exprs(t)
    ['min(`id`) AS `_cdc_lo_id`', 'max(`id`) AS `_cdc_hi_id`']
    """
    old = dict(zip(table.key, old_key_columns(table), strict=False))
    out = []
    for k in ranged_keys(table):
        low, high = f"min({q(k)})", f"max({q(k)})"
        if k in old:
            low = f"least({low}, min({q(old[k])}))"
            high = f"greatest({high}, max({q(old[k])}))"
        out += [f"{low} AS {q(key_low(k))}", f"{high} AS {q(key_high(k))}"]
    return out


def bounds_of(table: MirrorTable, row: Mapping[str, object]) -> dict[str, tuple[int, int]]:
    """The bounds read back from the aggregate row (keys the batch has no value for left out)."""
    out = {}
    for k in ranged_keys(table):
        low, high = row.get(key_low(k)), row.get(key_high(k))
        if isinstance(low, int) and isinstance(high, int):
            out[k] = (low, high)
    return out


def range_sql(alias: str, bounds: Bounds) -> str:
    """Condition on the stored rows (``alias.`` prefix, or none with ``alias`` empty).

    >>> range_sql("t", {"id": (3, 9)})
    't.`id` BETWEEN 3 AND 9'
    >>> range_sql("", {})
    'true'
    """
    prefix = f"{alias}." if alias else ""
    parts = [f"{prefix}{q(k)} BETWEEN {lo} AND {hi}" for k, (lo, hi) in sorted(bounds.items())]
    return " AND ".join(parts) or "true"
