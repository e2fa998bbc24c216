"""How the mirror reads Kafka: the options of every read (the stream's, and a batch read of
given offset ranges: a CDC table's own records of a micro-batch, a stream table's compared
ranges), and those batch reads."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from cdcmirror.mirror.checkpoint import Ranges

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def read_options(events_per_task: int) -> dict[str, str]:
    """How a batch is read from Kafka. A Kafka partition's events of one batch are read
    by several tasks of at most ``events_per_task`` events (0: one task per Kafka
    partition): the batch is then cached in as many parts and decoded on every core, where
    a topic of one partition was read, and decoded, on one core. Fetches of up to 16 MiB per
    partition: a Debezium event with its schema is kilobytes, and the default 1 MiB takes
    a fetch per few hundred events. A fetch that finds nothing new returns after 20 ms, not Kafka's
    500: a batch's range can end on a transaction marker, which the read waited for with an
    empty fetch, and that wait was most of the read of a small batch. Every read takes them
    all: committed transactions only (Debezium's exactly-once Connect worker writes
    transactions, whose markers take offsets), a lost offset fails the read, the consumer
    never creates a topic (with the broker's defaults, racing Debezium), and headers are
    kept (Debezium names the old key of a PostgreSQL key change in one: TOAST fill).

    >>> read_options(0)["kafka.isolation.level"]
    'read_committed'
    >>> read_options(0)["kafka.max.partition.fetch.bytes"]
    '16777216'
    >>> read_options(25000)["maxRecordsPerPartition"]
    '25000'
    """
    options = {
        "kafka.isolation.level": "read_committed",
        "failOnDataLoss": "true",
        "kafka.allow.auto.create.topics": "false",
        "includeHeaders": "true",
        "kafka.max.partition.fetch.bytes": str(16 << 20),
        "kafka.fetch.max.bytes": str(50 << 20),  # the broker's own cap is 55 MiB
        "kafka.fetch.max.wait.ms": "20",
    }
    if events_per_task > 0:
        options["maxRecordsPerPartition"] = str(events_per_task)
    return options


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
    spark: SparkSession,
    kafka_options: Mapping[str, str],
    ranges: Ranges,
    events_per_task: int = 0,
    group: str | None = None,
) -> DataFrame:
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
