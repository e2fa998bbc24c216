"""What a Structured Streaming checkpoint says the mirror has committed: the Kafka offsets
of its newest committed micro-batch. Reads the checkpoint's ``offsets/`` and ``commits/``
logs through ``CheckpointLogs`` (local files or S3: ``checkpoint_store.py``)."""

from __future__ import annotations

import json
from typing import Protocol


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
