"""A batch read of given Kafka offset ranges, read the way the mirror's stream reads them
(committed transactions only, headers, the stream's fetch sizes and tasks): a CDC table's
own records of a micro-batch (``spark/own_reads.py``), a stream table's compared ranges
(``spark/stream_reconcile.py``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cdcmirror.mirror.checkpoint import Ranges
from cdcmirror.spark.stream import read_options


def range_offsets(ranges: Ranges) -> tuple[str, str, str]:
    """The ``assign``, ``startingOffsets`` and ``endingOffsets`` options of ``ranges``
    (a start of -2 is Kafka's earliest offset).

    >>> range_offsets({"t": {1: (5, 9), 0: (-2, 3)}})
    ('{"t": [0, 1]}', '{"t": {"0": -2, "1": 5}}', '{"t": {"0": 3, "1": 9}}')
    """
    topics = sorted(ranges.items())
    assign = {t: sorted(parts) for t, parts in topics}
    starting = {t: {str(p): parts[p][0] for p in sorted(parts)} for t, parts in topics}
    ending = {t: {str(p): parts[p][1] for p in sorted(parts)} for t, parts in topics}
    return json.dumps(assign), json.dumps(starting), json.dumps(ending)


def read_ranges(
    spark: Any,
    kafka_options: Mapping[str, str],
    ranges: Ranges,
    events_per_task: int = 0,
    group: str | None = None,
) -> Any:
    """The Kafka records of ``ranges`` (end offsets exclusive), as the stream's frame has
    them: the same columns, committed transactions only (their markers take offsets).
    ``group``: the consumer group id of every such read of a job. Spark keys the executors'
    pooled consumers and their fetched data by group id and partition, and gives each read
    a new group id of its own, so a job reading its tables' ranges batch after batch would
    leave idle consumers, each holding up to a fetch of data, for minutes; with one group id
    they are reused. The ranges are assigned, not subscribed: the group is never joined and
    no offset is committed to it."""
    assign, starting, ending = range_offsets(ranges)
    reader = (
        spark.read.format("kafka")
        .options(**kafka_options)
        .option("assign", assign)
        .option("startingOffsets", starting)
        .option("endingOffsets", ending)
    )
    if group:
        reader = reader.option("kafka.group.id", group)
    for key, value in read_options(events_per_task).items():
        reader = reader.option(key, value)
    return reader.load()
