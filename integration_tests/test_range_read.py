"""A batch's own read of Kafka offset ranges (``spark/kafka.py``) against a real broker
and Spark: split into tasks of at most ``events_per_task`` offsets, every committed record
read exactly once across the splits (transaction markers included in the ranges).

Spark 4.0's batch read splits a partition's range by ``maxRecordsPerPartition`` only when
both its ends are offsets (an earliest start, -2, included); with ``latest`` as its end
(or a subscription from ``earliest``) the range stays one task, and a 100k-event batch
of a one-partition topic decoded on one core. The mirror's ranges always end at offsets."""

from __future__ import annotations

from typing import Any

from cdcmirror.spark.kafka import read_ranges
from cdcmirror.stack.control import Stack
from support import services
from support.spark import SparkWorld


def _produce(topic: str, counts: dict[int, int]) -> dict[tuple[int, int], str]:
    """``counts[p]`` records into partition p, in transactions of 7 (markers take offsets);
    (partition, offset) -> value of each record written."""
    from confluent_kafka import Producer

    written: dict[tuple[int, int], str] = {}

    def delivered(err: Any, msg: Any) -> None:
        assert err is None, err
        written[(msg.partition(), msg.offset())] = msg.value().decode()

    producer = Producer(
        {"bootstrap.servers": services.KAFKA, "transactional.id": services.unique("tx")}
    )
    producer.init_transactions(30)
    for p, n in counts.items():
        for start in range(0, n, 7):
            producer.begin_transaction()
            for i in range(start, min(start + 7, n)):
                producer.produce(topic, f"p{p}-{i}".encode(), partition=p, on_delivery=delivered)
            producer.commit_transaction(30)
    producer.flush(30)
    return written


def test_a_range_read_is_split_into_tasks_and_reads_each_record_once(
    stack: Stack, spark_world: SparkWorld
) -> None:
    topic = services.unique("ranges")
    services.create_topic(topic, 2)
    written = _produce(topic, {0: 100, 1: 30})
    ends = {p: max(o for (q, o) in written if q == p) + 2 for p in (0, 1)}  # past the marker
    ranges = {topic: {0: (0, ends[0]), 1: (-2, ends[1])}}
    kafka = {"kafka.bootstrap.servers": services.KAFKA}
    frame = read_ranges(spark_world.spark, kafka, ranges, events_per_task=25)
    tasks = -(-ends[0] // 25) + -(-ends[1] // 25)  # both ranges start at offset 0
    assert tasks > 2  # split: more tasks than the topic's two partitions
    assert frame.rdd.getNumPartitions() == tasks
    rows = frame.selectExpr("partition", "offset", "CAST(value AS STRING) AS v").collect()
    read = {(r.partition, r.offset): r.v for r in rows}
    assert len(rows) == len(read)  # no record twice
    assert read == written
    whole = read_ranges(spark_world.spark, kafka, ranges)
    assert whole.rdd.getNumPartitions() == 2  # 0: one task per Kafka partition
