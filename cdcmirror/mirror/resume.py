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


def topics_summary(
    query_id: str,
    batch_id: int,
    starts: Mapping[str, Mapping[int, int]],
    held: Mapping[str, Mapping[int, int]],
) -> dict[str, str]:
    """``batch_summary`` of a plain event stream's commit (it may hold several topics'
    events, a stream read by a topic pattern): ``starts`` the batch's first offsets, ``held``
    the last offset the table holds of every topic partition of the stream after it.

    >>> s = topics_summary("q", 1, {"a": {0: 1}}, {"a": {0: 4}, "b": {1: 3}})
    >>> s[START_OFFSETS], s[END_OFFSETS]
    ('{"a:0": 1}', '{"a:0": 4, "b:1": 3}')
    """

    def text(offsets: Mapping[str, Mapping[int, int]]) -> str:
        flat = {f"{t}:{p}": o for t, ps in sorted(offsets.items()) for p, o in sorted(ps.items())}
        return json.dumps(flat)

    return {
        QUERY_ID: query_id,
        BATCH_ID: str(batch_id),
        START_OFFSETS: text(starts),
        END_OFFSETS: text(held),
    }


def recorded_held(summaries: Iterable[Mapping[str, str]]) -> dict[str, dict[int, int]]:
    """A stream table's last offsets per topic and partition: those its newest commit with
    offsets records (``topics_summary``), from summaries newest first.

    >>> recorded_held([{}, {END_OFFSETS: '{"t:0": 40, "t:1": 2}'}, {END_OFFSETS: '{"t:0": 9}'}])
    {'t': {0: 40, 1: 2}}
    """
    for summary in summaries:
        text = summary.get(END_OFFSETS)
        if not text:
            continue
        out: dict[str, dict[int, int]] = {}
        for where, offset in json.loads(text).items():
            topic, _, partition = str(where).rpartition(":")
            out.setdefault(topic, {})[int(partition)] = int(offset)
        return out
    return {}


def stream_starts(summaries: Iterable[Mapping[str, str]]) -> dict[str, dict[int, int]]:
    """Where a stream resumes when the checkpoint holds no batch, per topic and partition:
    its newest commit's batch again where that batch had events (its dead letters may not
    have been written; its events are not appended twice: they are held), else after the
    last offset held.

    >>> s = {START_OFFSETS: '{"t:0": 30}', END_OFFSETS: '{"t:0": 40, "t:1": 2}'}
    >>> stream_starts([s])
    {'t': {0: 30, 1: 3}}
    """
    for summary in summaries:
        if not summary.get(END_OFFSETS):
            continue
        out = {t: {p: o + 1 for p, o in ps.items()} for t, ps in recorded_held([summary]).items()}
        for where, offset in json.loads(summary.get(START_OFFSETS) or "{}").items():
            topic, _, partition = str(where).rpartition(":")
            out.setdefault(topic, {})[int(partition)] = int(offset)
        return out
    return {}


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
