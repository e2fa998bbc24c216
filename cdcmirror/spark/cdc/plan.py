"""What a micro-batch holds and how each of its tables reads it: per topic, its events, its
first and last offsets per partition, its row schemas, and the read it takes.

Spark writes each batch's offsets to the checkpoint's offset log before running it
(``mirror/checkpoint.batch_ranges``), so the partitions a batch read, and where each started
and ended, are known without reading a record (:func:`planned`). Then each CDC table and
event stream reads its own records once (``records.py``): one table or stream reads the
batch's own frame; each of several reads its own ranges (``spark/kafka.read_ranges``: Spark's
Kafka source would read every record of the batch for each of them). A table whose row
schemas the job has applied reads in them (:attr:`ReadMode.KNOWN`); otherwise in those of its
first records (:attr:`ReadMode.GUESSED`), and an event of another schema found there sends it
to a first look of its own (:attr:`ReadMode.OWN_LOOK`: its records read, cached and
summarised, then applied from the cache). A batch whose ranges are not known is read whole,
cached, and summarised by a first look (:func:`summarised`, :attr:`ReadMode.CACHED`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import TYPE_CHECKING

from cdcmirror.exceptions import CdcMirrorError
from cdcmirror.mirror.checkpoint import Ranges, advanced
from cdcmirror.mirror.evolution import distinct_schemas_sql
from cdcmirror.mirror.known_schemas import KnownSchemas
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.sql_text import sql_string

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdcmirror.spark.streams.apply import StreamTable

logger = logging.getLogger("cdcmirror.mirror")


class ReadMode(Enum):
    """How a table's events of a batch are read for its decode."""

    CACHED = "cached"  # with the whole batch, cached and summarised by a first look
    KNOWN = "known"  # once, in row schemas the job has applied
    GUESSED = "guessed"  # once, in the row schemas of its first records
    OWN_LOOK = "own look"  # its own records read, cached and summarised

    @property
    def once(self) -> bool:
        """Read from Kafka by the decode itself, no first look before it: the decode
        counts the events and marks an event of a schema not expected (``NEW_SCHEMA``)."""
        return self in (ReadMode.KNOWN, ReadMode.GUESSED)


@dataclass(frozen=True)
class TopicBatch:
    """One topic's share of a micro-batch."""

    topic: str
    events: int  # with a value; an upper bound when planned from the offsets alone
    offsets: Mapping[int, int]  # partition -> its last offset in the batch
    starts: Mapping[int, int]  # partition -> its first offset in the batch
    schemas: frozenset[str] = frozenset()  # row schemas (JSON schema parts, Avro ids as text)
    mode: ReadMode = ReadMode.CACHED
    ranges: Ranges | None = None  # its own offset ranges, when it reads them itself

    def read_in(self, mode: ReadMode, schemas: frozenset[str]) -> TopicBatch:
        return replace(self, mode=mode, schemas=schemas)


@dataclass(frozen=True)
class StreamWork:
    """An event stream's share of a micro-batch: the topics it reads."""

    table: StreamTable
    topics: Mapping[str, TopicBatch]
    ranges: Ranges | None = None  # its own offset ranges, when it reads them itself


@dataclass(frozen=True)
class BatchPlan:
    tables: tuple[tuple[MirrorTable, TopicBatch], ...]
    streams: tuple[StreamWork, ...]
    own_reads: bool  # each reads its own records (else the batch is cached with a first look)


def cdc_topics_sql(topics: list[str] | None) -> str:
    """Condition over Kafka rows: a CDC table's (None: every row is; the row schemas are
    theirs only, a plain event stream's rows have none).

    >>> cdc_topics_sql(None), cdc_topics_sql([]), cdc_topics_sql(["a.b"])
    ('true', 'false', "topic IN ('a.b')")
    """
    if topics is None:
        return "true"
    names = ", ".join(sql_string(t) for t in topics)
    return f"topic IN ({names})" if names else "false"


def summarised(df: DataFrame, kind: str, cdc_topics: list[str] | None) -> dict[str, TopicBatch]:
    """The first look at records ``df`` (read, for a cached batch): per topic its events, first
    and last offsets per partition, and the distinct row schemas of its events (``kind``:
    avro, json or schemaless; ``cdc_topics``: the topics whose schemas count)."""
    from pyspark.sql import functions as F

    rows = (
        df.groupBy("topic", "partition")
        .agg(
            F.expr("count(value) AS events"),
            F.expr("min(offset) AS start_offset"),
            F.expr("max(offset) AS end_offset"),
            F.expr(f"{distinct_schemas_sql(kind, cdc_topics_sql(cdc_topics))} AS schemas"),
        )
        .collect()
    )
    events: dict[str, int] = {}
    offsets: dict[str, dict[int, int]] = {}
    starts: dict[str, dict[int, int]] = {}
    schemas: dict[str, set[str]] = {}
    for r in rows:
        events[r.topic] = events.get(r.topic, 0) + int(r.events)
        offsets.setdefault(r.topic, {})[int(r.partition)] = int(r.end_offset)
        starts.setdefault(r.topic, {})[int(r.partition)] = int(r.start_offset)
        schemas.setdefault(r.topic, set()).update(str(s) for s in r.schemas or [])
    return {
        t: TopicBatch(t, events[t], offsets[t], starts[t], frozenset(schemas[t])) for t in events
    }


def of_ranges(ranges: Ranges) -> dict[str, TopicBatch]:
    """:func:`summarised`'s answer from the offsets Spark planned the batch with
    (``mirror/checkpoint.advanced``), read from no record: the last offset of a partition
    is the one before its end (a transaction marker, perhaps), the first is the planned
    start, and ``events`` is how many offsets the ranges span (an upper bound).

    >>> of_ranges({"t": {0: (5, 9), 1: (-2, 3)}})["t"].offsets
    {0: 8, 1: 2}
    """
    return {
        topic: TopicBatch(
            topic,
            events=sum(end - max(start, 0) for start, end in parts.values()),
            offsets={p: end - 1 for p, (_, end) in parts.items()},
            starts={p: start for p, (start, _) in parts.items()},
        )
        for topic, parts in ranges.items()
    }


def streams_in(
    streams: Mapping[str, StreamTable], topics: Mapping[str, TopicBatch]
) -> list[StreamWork]:
    """The streams with events in a batch (``topics``: the batch's, as counted), each with
    its topics."""
    out = []
    for table in streams.values():
        mine = {t: b for t, b in topics.items() if table.spec.matches(t) and b.events}
        if mine:
            out.append(StreamWork(table, mine))
    return out


def cached(
    tables: Mapping[str, MirrorTable],
    streams: Mapping[str, StreamTable],
    topics: Mapping[str, TopicBatch],
) -> BatchPlan:
    """The plan of a batch read whole and cached: its ``topics`` as the first look found."""
    work = tuple((tables[t], b) for t, b in sorted(topics.items()) if t in tables)
    return BatchPlan(work, tuple(streams_in(streams, topics)), own_reads=False)


def planned(
    tables: Mapping[str, MirrorTable],
    streams: Mapping[str, StreamTable],
    batch_ranges: Callable[[int], Ranges | None] | None,
    batch_id: int,
    known: KnownSchemas | None,
) -> BatchPlan | None:
    """The plan of batch ``batch_id`` from its offsets (``batch_ranges``), when every
    partition that moved is a table's topic or a stream's and where each range starts is
    known; else None (the batch is read whole, with a first look). Each table reads its own
    ranges, in the row schemas the job applied to it (``known``) when there are, else in
    those its first records have (a guess)."""
    moved = _moved(batch_ranges, batch_id)
    if not moved:
        return None
    topics = of_ranges(moved)
    found = streams_in(streams, topics)
    covered = {t for w in found for t in w.topics} | {t for t in moved if t in tables}
    if covered != set(moved):
        return None
    starts = [start for parts in moved.values() for start, _ in parts.values()]
    if batch_id > 0 and min(starts) < 0:  # the batch before it is not in the offset log
        return None
    work = []
    for topic in sorted(t for t in moved if t in tables):
        table = tables[topic]  # a table's topic is no stream's
        schemas = None if known is None else known.of(table)
        batch = replace(topics[topic], ranges={topic: moved[topic]})
        if schemas is not None:
            batch = batch.read_in(ReadMode.KNOWN, frozenset(schemas))
        else:
            batch = batch.read_in(ReadMode.GUESSED, frozenset())
        work.append((table, batch))
    own = tuple(replace(w, ranges={t: moved[t] for t in w.topics}) for w in found)
    return BatchPlan(tuple(work), own, own_reads=True)


def _moved(planned: Callable[[int], Ranges | None] | None, batch_id: int) -> Ranges | None:
    """The partitions batch ``batch_id`` read that moved, and their ranges (None: unknown)."""
    if planned is None:
        return None
    try:
        ranges = planned(batch_id)
    except CdcMirrorError as exc:  # the usual path needs no offset log
        logger.warning("batch %d: its planned offsets are not known: %s", batch_id, exc)
        return None
    return None if ranges is None else advanced(ranges)
