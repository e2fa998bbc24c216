"""Which columns identify a row: the primary key, else a unique index over NOT NULL columns.
Pure."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UniqueIndex:
    name: str
    columns: tuple[str, ...]
    usable: bool = True  # False for partial or expression indexes


def choose_key(
    primary_key: tuple[str, ...], unique_indexes: list[UniqueIndex], not_null: set[str]
) -> tuple[tuple[str, ...], str]:
    """(key columns, where they come from). The smallest usable unique index wins, by name
    on ties; an index with a nullable column cannot identify rows.

    >>> choose_key(("id",), [], {"id"})
    (('id',), 'primary key')
    >>> idx = [UniqueIndex("b_uq", ("b", "c")), UniqueIndex("a_uq", ("a",))]
    >>> choose_key((), idx, {"a", "b", "c"})
    (('a',), 'unique index a_uq')
    >>> choose_key((), [UniqueIndex("n_uq", ("n",))], set())
    ((), 'none')
    """
    if primary_key:
        return primary_key, "primary key"
    candidates = [
        i
        for i in unique_indexes
        if i.usable and i.columns and all(c in not_null for c in i.columns)
    ]
    if not candidates:
        return (), "none"
    best = min(candidates, key=lambda i: (len(i.columns), i.name))
    return best.columns, f"unique index {best.name}"
