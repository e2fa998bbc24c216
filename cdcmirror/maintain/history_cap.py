"""How many snapshots a table the mirror job writes keeps (``maintain.max_snapshots``). Pure.

Every commit stays in the table's metadata JSON, about 1 KB with the batch's properties,
until it is expired, and every load of the table and every commit reads or writes that
file again. A job with a short trigger adds thousands of snapshots an hour to each busy
table, and every commit and load grows with them (``benchmarks/snapshot_history.py``
measures how much). So the job expires each table's oldest
snapshots itself once it holds more than the cap plus a slack, down to the cap, and looks
every ``check_every`` batches (each batch adds a few snapshots to a table at most: the
MERGE, a TRUNCATE's two, the tombstones' own table)."""

from __future__ import annotations


def check_every(cap: int) -> int:
    """Every how many batches the job counts its tables' snapshots (0: never, no cap).

    >>> check_every(1000), check_every(30), check_every(0)
    (50, 1, 0)
    """
    return max(1, cap // 20) if cap > 0 else 0


def checks_at(batch_id: int, cap: int) -> bool:
    """Whether the job counts its tables' snapshots after batch ``batch_id``.

    >>> [b for b in range(1, 201) if checks_at(b, 1000)]
    [50, 100, 150, 200]
    >>> checks_at(50, 0)
    False
    """
    every = check_every(cap)
    return every > 0 and batch_id > 0 and batch_id % every == 0


def over_cap(snapshots: int, cap: int) -> bool:
    """Whether a table of ``snapshots`` snapshots is expired down to ``cap``: past it by a
    tenth of it (at least one), so that an expiry removes many at once, not one each batch.

    >>> over_cap(1100, 1000), over_cap(1101, 1000), over_cap(3, 2), over_cap(4, 2)
    (False, True, False, True)
    >>> over_cap(10, 0)
    False
    """
    return cap > 0 and snapshots > cap + max(1, cap // 10)
