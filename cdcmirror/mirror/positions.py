"""Source positions as Python values (the Spark SQL side is ``merge_sql.newer``). Pure.

A position is a list of longs compared element by element; only the first ``n`` elements
(``envelope.source_length``) come from the source, the rest are Kafka's partition and offset,
which order events inside one batch but never decide between a batch and what is stored.
"""

from __future__ import annotations

from collections.abc import Sequence


def later_mark(stored: Sequence[int], batch: Sequence[int], n: int) -> list[int]:
    """The truncate mark to keep: the later of the stored one and the batch's, by source part.

    A replayed TRUNCATE (older than the stored mark) must not move the mark back, or the
    replayed events between the two would bring truncated rows back.

    >>> later_mark([1, 90, 90, 0, 7], [1, 50, 50, 0, 99], 3)
    [1, 90, 90, 0, 7]
    >>> later_mark([], [1, 50, 50, 0, 99], 3)
    [1, 50, 50, 0, 99]
    >>> later_mark([1, 50, 50, 0, 7], [1, 60, 61, 0, 1], 3)
    [1, 60, 61, 0, 1]
    """
    if stored and list(stored[:n]) >= list(batch[:n]):
        return list(stored)
    return list(batch)
