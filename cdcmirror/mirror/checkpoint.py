"""What a Structured Streaming checkpoint says the mirror has committed: the Kafka offsets
of its newest committed micro-batch, and the offsets each micro-batch was planned with.
Reads the checkpoint's ``offsets/`` and ``commits/`` logs through ``CheckpointLogs``
(local files or S3: ``checkpoint_store.py``)."""

from __future__ import annotations

import json
from typing import Protocol

from cdcmirror.mirror.resume import EARLIEST


class CheckpointLogs(Protocol):
    def names(self, directory: str) -> list[str]:
        """The file names in one of the checkpoint's directories (none when it is absent)."""
        ...

    def read(self, relative: str) -> str: ...


def parse_offsets_file(text: str) -> dict[str, dict[int, int]]:
    """The Kafka source's offsets from one ``offsets/<batch>`` file: a version line, the
    batch metadata, then one JSON line per source (cdcmirror's query has one).

    >>> parse_offsets_file('v1\\n{"batchWatermarkMs":0}\\n{"t":{"0":5,"1":7}}')
    {'t': {0: 5, 1: 7}}
    """
    lines = [line for line in text.splitlines() if line.strip()]
    out: dict[str, dict[int, int]] = {}
    for line in lines[2:]:
        data = json.loads(line)
        if not isinstance(data, dict):
            continue
        for topic, partitions in data.items():
            out[topic] = {int(p): int(o) for p, o in partitions.items()}
    return out


def _batches(logs: CheckpointLogs, directory: str) -> list[int]:
    return sorted(int(name) for name in logs.names(directory) if name.isdigit())


def holds_batches(logs: CheckpointLogs) -> bool:
    """True when Spark has planned a batch in this checkpoint (it resumes from there and
    ignores the query's starting offsets)."""
    return bool(_batches(logs, "offsets"))


def committed_offsets(logs: CheckpointLogs) -> dict[str, dict[int, int]]:
    """Offsets up to which every event is in Iceberg (empty before the first batch)."""
    commits = _batches(logs, "commits")
    if not commits:
        return {}
    return parse_offsets_file(logs.read(f"offsets/{commits[-1]}"))


def behind(committed: dict[int, int], end: dict[int, int]) -> int:
    """Events Kafka holds for a topic that the mirror has not committed.

    >>> behind({0: 5}, {0: 9, 1: 2})
    6
    """
    return sum(max(0, o - committed.get(p, 0)) for p, o in end.items())


# partition -> (first offset that can be in the batch, end offset: the first after it)
Ranges = dict[str, dict[int, tuple[int, int]]]


def batch_ranges(logs: CheckpointLogs, batch_id: int, starting: str) -> Ranges | None:
    """Per topic and partition, the offsets of micro-batch ``batch_id`` as Spark planned
    them before running it (its offset log is written first): from the end of the batch
    before (for batch 0: ``starting``, the query's starting offsets) to this batch's end.
    A start not known (a partition read from its earliest offset) is ``EARLIEST``. None
    when the log does not hold the batch."""
    names = set(logs.names("offsets"))
    if str(batch_id) not in names:
        return None
    ends = parse_offsets_file(logs.read(f"offsets/{batch_id}"))
    before: dict[str, dict[int, int]] = {}
    if str(batch_id - 1) in names:
        before = parse_offsets_file(logs.read(f"offsets/{batch_id - 1}"))
    elif batch_id == 0:
        before = parse_starting(starting)
    return planned_ranges(before, ends)


def parse_starting(starting: str) -> dict[str, dict[int, int]]:
    """Spark's ``startingOffsets`` option as offsets (``earliest``: none known).

    >>> parse_starting('{"t": {"0": 12, "1": -2}}'), parse_starting("earliest")
    ({'t': {0: 12, 1: -2}}, {})
    """
    if not starting.lstrip().startswith("{"):
        return {}
    data = json.loads(starting)
    return {str(t): {int(p): int(o) for p, o in ps.items()} for t, ps in data.items()}


def planned_ranges(before: dict[str, dict[int, int]], ends: dict[str, dict[int, int]]) -> Ranges:
    """The batch's range per partition: from the offset ``before`` it (``EARLIEST`` where
    none is known or it names a special offset) to its end.

    >>> planned_ranges({"t": {0: 5}}, {"t": {0: 9, 1: 3}})
    {'t': {0: (5, 9), 1: (-2, 3)}}
    """
    out: Ranges = {}
    for topic, parts in ends.items():
        known = before.get(topic, {})
        out[topic] = {
            p: (known[p] if known.get(p, -1) >= 0 else EARLIEST, end) for p, end in parts.items()
        }
    return out


def advanced(ranges: Ranges) -> Ranges:
    """The partitions a batch can hold records of (an end after its start).

    >>> advanced({"t": {0: (5, 5), 1: (-2, 3), 2: (-2, 0)}, "u": {0: (1, 1)}})
    {'t': {1: (-2, 3)}}
    """
    out: Ranges = {}
    for topic, parts in ranges.items():
        moved = {p: r for p, r in parts.items() if r[1] > max(r[0], 0)}
        if moved:
            out[topic] = moved
    return out
