"""A micro-batch's shuffle partitions, sized to its events.

Every shuffle of a batch (the newest event per key, the classification's and the MERGE's
joins) splits into ``spark.sql.shuffle.partitions`` tasks. At the session's 4, a batch of
100 events ran four tasks of a few rows in each shuffle stage (Spark turns adaptive
execution, which would coalesce them, off in a streaming query's session), the cores twice
over. Each batch's session takes one partition per ``EVENTS_PER_PARTITION`` events, at
least one per core and at most the session's own setting (the user's ``[spark.conf]`` or
cdcmirror's default)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

KEY = "spark.sql.shuffle.partitions"
EVENTS_PER_PARTITION = 2_000


def partitions_for(events: int, least: int, most: int) -> int:
    """The shuffle partitions of a batch of ``events`` events.

    >>> [partitions_for(n, 2, 8) for n in (0, 100, 4_000, 4_001, 10_000, 1_000_000)]
    [2, 2, 2, 3, 5, 8]
    """
    return max(min(least, most), min(most, -(-events // EVENTS_PER_PARTITION)))


class ShuffleSize:
    """Sizes each batch's shuffles: at least one partition per core (a small batch into a
    large table still shuffles the table's rows it reads: with 1M keys in one task, a MERGE
    of 100 updates took 2.58 s against 1.85 s), at most the session's setting."""

    def __init__(self, spark: Any) -> None:
        self.most = int(spark.conf.get(KEY))
        self.least = max(1, int(spark.sparkContext.defaultParallelism))

    def size(
        self,
        batch_spark: Any,
        tables: Iterable[Mapping[str, Any]],
        streams: Iterable[Mapping[str, Mapping[str, Any]]],
    ) -> int:
        """Set the batch session's shuffle partitions for the events of its ``tables``'
        parts and ``streams``' parts (topic -> parts); the partitions set."""
        events = sum(int(p["events"]) for p in tables)
        events += sum(int(p["events"]) for parts in streams for p in parts.values())
        partitions = partitions_for(events, self.least, self.most)
        batch_spark.conf.set(KEY, str(partitions))
        return partitions
