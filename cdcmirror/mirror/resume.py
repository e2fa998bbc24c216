"""Where a mirror starts reading when its checkpoint holds no batch: from the Kafka offsets
its tables' snapshots record. Pure.

Every commit the mirror makes to a table carries in its snapshot summary the Kafka offsets
of the table's events in that batch, per partition: the first (``START_OFFSETS``) and the
last (``END_OFFSETS``). Batches run one after another, and one starts only after the one
before it finished everything (every table, tombstones, dead letters, Spark's checkpoint).
So, for each partition, every event before the first one of the newest batch that a
commit records for it is done; that batch itself may be half done (a crash after the
table's commit, before its tombstones or dead letters were written). Starting there runs it
again, which the position guard makes harmless, and loses nothing. A partition no commit
records (no event applied yet, or commits made before start offsets were recorded)
starts at the earliest offset Kafka holds, as a new mirror does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

START_OFFSETS = "cdcmirror.kafka-start-offsets"
END_OFFSETS = "cdcmirror.kafka-end-offsets"
QUERY_ID = "cdcmirror.query-id"
BATCH_ID = "cdcmirror.batch-id"
EARLIEST = -2  # Spark's Kafka source: the earliest offset of the partition


def batch_summary(
    query_id: str, batch_id: int, topic: str, starts: Mapping[int, int], ends: Mapping[int, int]
) -> dict[str, str]:
    """The snapshot summary properties of a table's commit in a batch.

    >>> batch_summary("q", 7, "t", {0: 5}, {0: 9})[START_OFFSETS]
    '{"t:0": 5}'
    """
    return {
        QUERY_ID: query_id,
        BATCH_ID: str(batch_id),
        START_OFFSETS: json.dumps({f"{topic}:{p}": o for p, o in sorted(starts.items())}),
        END_OFFSETS: json.dumps({f"{topic}:{p}": o for p, o in sorted(ends.items())}),
    }


def recorded_starts(summaries: Iterable[Mapping[str, str]]) -> dict[str, dict[int, int]]:
    """Per topic and partition, the first offset of the newest batch a commit records for it,
    from a table's snapshot summaries, newest first.

    >>> newest, older = {START_OFFSETS: '{"t:0": 40}'}, {START_OFFSETS: '{"t:0": 9, "t:1": 3}'}
    >>> recorded_starts([newest, {}, older])
    {'t': {0: 40, 1: 3}}
    """
    out: dict[str, dict[int, int]] = {}
    for summary in summaries:
        text = summary.get(START_OFFSETS)
        if not text:
            continue  # maintain's rewrites, the lease, an older cdcmirror
        for where, offset in json.loads(text).items():
            topic, _, partition = str(where).rpartition(":")
            out.setdefault(topic, {}).setdefault(int(partition), int(offset))
    return out


def starting_offsets(
    partitions: Mapping[str, Iterable[int]], recorded: Mapping[str, Mapping[int, int]]
) -> str | None:
    """Spark's ``startingOffsets`` JSON naming every partition of the subscribed topics, or
    None when no commit records any offset (start at the earliest, as a new mirror does).

    >>> starting_offsets({"a": [0, 1], "b": [0]}, {"a": {1: 12}})
    '{"a": {"0": -2, "1": 12}, "b": {"0": -2}}'
    >>> starting_offsets({"a": [0]}, {}) is None
    True
    """
    if not any(recorded.get(t) for t in partitions):
        return None
    out = {
        topic: {str(p): int(recorded.get(topic, {}).get(p, EARLIEST)) for p in sorted(parts)}
        for topic, parts in sorted(partitions.items())
    }
    return json.dumps(out)
