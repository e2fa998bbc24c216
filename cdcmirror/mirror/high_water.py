"""A table's high-water mark: an upper bound of every source position its rows and its
tombstones hold, so that a batch whose every change is newer needs no classification
(``mirror/direct_merge.py``). Pure.

Each commit the mirror makes for a keyed table's batch after reading the mark (the MERGE,
the tombstones; not the TRUNCATE before it, nor the put-back of rows a foreign commit
stored, ``spark/cdc/table.py``), and a keyless table's append, records ``HIGH_WATER`` in
its snapshot summary: the larger
of the mark the batch started from and the source part of its newest change, when that mark
was known.
The mark of a table is read from its newest snapshot: the first snapshot, newest first,
that records one, passing over file rewrites (``maintain``), which move no position. Any
other snapshot that records none (a soft re-load, a commit of another writer, a mirror
batch that started without a mark) leaves it unknown, and then only a scan of the
stored positions can tell it (``max_position_sql``). The initial load and a hard re-load
record the mark of the rows they wrote (``loaded``), so the first batch after them needs no
such scan. A table with no snapshot holds nothing.

The bound stays true whatever happens between two batches: a crash after a commit leaves
a mark that covers the half-done batch (the re-run is older, and classified); a rollback
goes back to a snapshot whose mark covered what it held. Positions of the initial load and
of re-loads are of the snapshot phase (0), below every streamed change.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

HIGH_WATER = "cdcmirror.high-water"  # snapshot summary: JSON list, the source part
REWRITE = "replace"  # the operation of a snapshot that rewrites files, rows unchanged

Mark = list[int] | None
"""A high-water mark: the source part of a position (``[]``: nothing is stored), or None:
not known."""


def recorded(snapshots: Iterable[tuple[str, Mapping[str, str]]]) -> Mark:
    """The mark the newest snapshots record, from ``(operation, summary)`` pairs newest
    first (a table's whole history, or as much of it as was walked).

    >>> recorded([("replace", {}), ("overwrite", {HIGH_WATER: "[1, 20, 30]"})])
    [1, 20, 30]
    >>> recorded([("append", {}), ("overwrite", {HIGH_WATER: "[1, 20, 30]"})]) is None
    True
    >>> recorded([])
    []
    """
    seen = False
    for operation, summary in snapshots:
        seen = True
        text = summary.get(HIGH_WATER)
        if text:
            return [int(x) for x in json.loads(text)]
        if operation != REWRITE:
            return None
    return None if seen else []


def highest(marks: Iterable[Mark]) -> Mark:
    """The mark of a table and its tombstones together: unknown if either is.

    >>> highest([[1, 5, 5], [1, 7, 0]]), highest([[1, 5, 5], None]), highest([[], []])
    ([1, 7, 0], None, [])
    """
    out: list[int] = []
    for mark in marks:
        if mark is None:
            return None
        out = max(out, mark)
    return out


def is_fresh(oldest: Sequence[int] | None, mark: Mark) -> bool:
    """Whether a batch whose oldest change has the source part ``oldest`` is newer than
    everything stored (a known ``mark``).

    >>> is_fresh([1, 8, 8], [1, 7, 9]), is_fresh([1, 7, 9], [1, 7, 9]), is_fresh([1, 8], None)
    (True, False, False)
    >>> is_fresh([0, 3, 3], []), is_fresh([1, None, 3], [])  # an element missing: not judged
    (True, False)
    """
    if mark is None or oldest is None or None in oldest:
        return False
    return list(oldest) > mark


def raised(mark: Mark, newest: Sequence[int] | None) -> Mark:
    """The mark a batch's commits record: ``mark`` raised to the batch's ``newest`` change.

    >>> raised([1, 5, 5], [1, 9, 0]), raised([1, 5, 5], None), raised(None, [1, 9, 0])
    ([1, 9, 0], [1, 5, 5], None)
    >>> raised([1, 5, 5], [1, None, 0]) is None  # a position with an element missing
    True
    """
    if mark is None or newest is None:
        return mark
    if None in newest:
        return None
    return max(mark, [int(x) for x in newest])


def summary(mark: Mark) -> dict[str, str]:
    """The snapshot summary property of ``mark`` (none when it is not known).

    >>> summary([1, 9, 0]), summary(None)
    ({'cdcmirror.high-water': '[1, 9, 0]'}, {})
    """
    return {} if mark is None else {HIGH_WATER: json.dumps(mark)}


def loaded(position: Sequence[int], n: int) -> Mark:
    """The mark of a table an initial load or a hard re-load replaced whole: every row holds
    the load's ``position``, so its source part (``n`` elements) is what a scan of the
    positions would find (above it for a load of no row: still a bound). A soft re-load's
    kept rows hold positions of their own: its commits record none.

    >>> loaded([0, 5000, 5000, -1, -1], 3)
    [0, 5000, 5000]
    """
    return [int(x) for x in position[:n]]


def max_position_sql(stored: str, n: int) -> str:
    """Spark SQL: the largest source part of a position that ``stored`` holds, as JSON text
    (NULL when it holds no row).

    >>> max_position_sql("t", 3)
    'SELECT to_json(max(slice(_cdc_position, 1, 3))) AS mark FROM t'
    """
    return f"SELECT to_json(max(slice(_cdc_position, 1, {n}))) AS mark FROM {stored}"


def scanned(text: str | None) -> Mark:
    """The mark ``max_position_sql`` read (None: a position with an element missing).

    >>> scanned("[1,2,3]"), scanned(None), scanned("[1,null,3]")
    ([1, 2, 3], [], None)
    """
    if text is None:
        return []
    position = json.loads(text)
    return None if None in position else [int(x) for x in position]
