"""The one Structured Streaming query of ``cdcmirror mirror``: Kafka source -> foreachBatch."""

from __future__ import annotations

import logging
import re
import signal
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from py4j.protocol import Py4JNetworkError

from cdcmirror.exceptions import (
    CdcMirrorError,
    ConfigError,
    MirrorError,
    ServiceUnavailableError,
)
from cdcmirror.spark.batches import NOT_STARTED, BatchGate
from cdcmirror.spark.cdc.batch import Applier
from cdcmirror.spark.kafka import read_options

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

logger = logging.getLogger(__name__)


def topics_pattern(topics: list[str], patterns: list[str] | None = None) -> str:
    """A Java regex matching exactly ``topics`` and the names ``patterns`` match (Kafka
    matches it against whole names).

    >>> topics_pattern(["shop.public.items", "shop.public.a-b"])
    'shop\\\\.public\\\\.items|shop\\\\.public\\\\.a\\\\-b'
    >>> topics_pattern(["a"], ["clicks-.*"])
    'a|(?:clicks-.*)'
    """
    return "|".join([re.escape(t) for t in topics] + [f"(?:{p})" for p in patterns or []])


def start_query(
    spark: SparkSession,
    applier: Applier,
    kafka_options: Mapping[str, str],
    topics: list[str],
    starting_offsets: str,
    checkpoint: str,
    trigger: str,
    available_now: bool,
    max_events_per_batch: int,
    events_per_task: int,
    patterns: list[str] | None = None,
) -> StreamingQuery:
    """The query over ``topics`` and the topics ``patterns`` match (plain event streams);
    ``kafka_options``: the brokers and how to log in (``kafka_security.spark_kafka_options``)."""
    reader = (
        spark.readStream.format("kafka")
        .options(**kafka_options)
        # the topics by a pattern that matches exactly them: `subscribe` fails on a topic
        # that does not exist yet (a table without changes), a pattern takes it once it does
        .option("subscribePattern", topics_pattern(topics, patterns))
        # "earliest", or per partition (mirror/resume.py); only a new checkpoint reads it
        .option("startingOffsets", starting_offsets)
    )
    if max_events_per_batch > 0:
        reader = reader.option("maxOffsetsPerTrigger", str(max_events_per_batch))
    for key, value in read_options(events_per_task).items():
        reader = reader.option(key, value)
    writer = (
        reader.load()
        .writeStream.foreachBatch(applier.process)
        .option("checkpointLocation", checkpoint)
        .queryName("cdcmirror")
    )
    writer = (
        writer.trigger(availableNow=True)
        if available_now
        else writer.trigger(processingTime=trigger)
    )
    query = writer.start()
    applier.query_id = str(query.id)
    logger.info("streaming query %s started (checkpoint %s)", query.id, checkpoint)
    return query


def run_until_stopped(query: StreamingQuery, gate: BatchGate) -> None:
    """Wait for the query; SIGTERM/SIGINT let the running batch finish, then stop it."""
    stop = threading.Event()

    def _handler(signum: int, _frame: Any) -> None:
        logger.warning("signal %d: stopping after the current batch", signum)
        stop.set()

    previous = {s: signal.signal(s, _handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        while query.isActive:
            if stop.is_set():
                gate.close()  # the running batch ends first, no other starts
                query.stop()
                break
            try:
                query.awaitTermination(1)
            except Exception:  # the query failed (StreamingQueryException): say why below
                break
        _raise_failure(query)
    except (Py4JNetworkError, ConnectionError) as exc:  # the JVM is gone
        raise jvm_gone(gate.failure_after(JVM_GONE_WAIT), exc) from exc
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


JVM_GONE_WAIT = 30.0  # seconds for the failing batch's Python to end, with room to spare
OUT_OF_MEMORY = "java.lang.OutOfMemoryError"
MEMORY_REMEDY = (
    "Spark ran out of memory (java.lang.OutOfMemoryError): the batch did not fit. Lower "
    "mirror.max_events_per_batch, or raise spark.driver.memory under [spark.conf] (4g unless "
    "set; the executors' memory on a cluster); the job starts again from its checkpoint, "
    "nothing is lost"
)


def jvm_gone(failure: str | None, exc: BaseException) -> CdcMirrorError:
    """The error of a job whose JVM stopped under it (``failure``: why its last batch failed,
    as the batch gate kept it: in local mode an OutOfMemoryError ends the JVM).

    >>> print(jvm_gone("t: batch 3 failed: java.lang.OutOfMemoryError: Java heap space",
    ...     ConnectionRefusedError()))  # doctest: +ELLIPSIS
    the Spark driver's JVM stopped: t: batch 3 failed: java.lang...; Spark ran out of memory ...
    >>> type(jvm_gone(None, ConnectionRefusedError("refused"))).__name__
    'CdcMirrorError'
    """
    if failure and OUT_OF_MEMORY in failure:
        return ConfigError(f"the Spark driver's JVM stopped: {_reason(failure)}; {MEMORY_REMEDY}")
    why = _reason(failure) if failure else f"{type(exc).__name__}: {exc}"
    return CdcMirrorError(f"the Spark driver's JVM stopped: {why}; see the job's log")


def _reason(text: str, marker: str = "MirrorError: ") -> str:
    """The first line of the error after ``marker`` in ``text`` (Spark wraps the mirror's
    own errors; ``MirrorError: `` also ends ``CdcMirrorError: ``), else of ``text``."""
    return _first_line(text.split(marker, 1)[1] if marker in text else text)


def _raise_failure(query: StreamingQuery) -> None:
    exc = query.exception()
    if exc is None:
        return
    text = str(exc)
    if NOT_STARTED in text:  # the batch after a stop request: a clean stop
        return
    if OUT_OF_MEMORY in text:  # a cluster's executor, or a JVM that survived it
        raise ConfigError(f"the mirror query stopped: {_reason(text)}; {MEMORY_REMEDY}")
    if "ServiceUnavailableError: " in text:  # e.g. the schema registry, from inside a batch
        raise ServiceUnavailableError(_reason(text, "ServiceUnavailableError: "))
    if "MirrorError: " in text:  # CdcMirrorError too
        raise MirrorError(_reason(text))
    if "TimeoutException" in text or "Connection refused" in text:
        raise ServiceUnavailableError(f"Kafka is not reachable: {_first_line(text)}")
    raise CdcMirrorError(f"the mirror query stopped: {_first_line(text)}")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text
