"""Which batches skip the applier's first look (the aggregate over the cached batch): every
batch whose ranges are known, each of its CDC tables and event streams then reading its
own records (``spark/own_reads.py``; a table once when they are in row schemas the job has
seen, JSON with schemas or Avro). Spark writes each batch's offsets to the checkpoint's
offset log before running it (``mirror/checkpoint.batch_ranges``), so the partitions a
batch read, and where each started and ended, are known without reading a record; the
events are then read from Kafka once, by the stream's write or the table's decode, and
counted there. One table or stream reads the batch's own frame; each of several reads its
own ranges (``spark/range_read.py``: Spark's Kafka source would read every record of the
batch for each of them).

A CDC table's decode needs the table evolved to every row schema of its events first: the
first look collects them. Without it, the decode marks each event whose schema is not one
the job has applied before (``schema_parts.known_schema_sql``; Avro: its schema id,
``evolution.known_ids_sql``), and a table with such an event takes its first look then,
before anything of it is written."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from cdcmirror.exceptions import CdcMirrorError
from cdcmirror.mirror.checkpoint import Ranges, advanced
from cdcmirror.mirror.known_schemas import KnownSchemas
from cdcmirror.mirror.registry import SchemaRegistry
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.spark.avro_frames import AvroFrames
from cdcmirror.spark.batch_summary import summary_of_ranges
from cdcmirror.spark.decode import with_utf8_check
from cdcmirror.spark.stream_apply import StreamParts, StreamTable, streams_in

logger = logging.getLogger("cdcmirror.mirror")


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


# a batch's tables and their parts; its streams, their parts and their own ranges
OwnPlan = tuple[
    list[tuple[MirrorTable, dict[str, Any]]], list[tuple[StreamTable, StreamParts, Ranges]]
]


def own_plan(
    tables: Mapping[str, MirrorTable],
    streams: Mapping[str, StreamTable],
    planned: Callable[[int], Ranges | None] | None,
    batch_id: int,
    known: KnownSchemas | None,
) -> OwnPlan | None:
    """The CDC tables and event streams of batch ``batch_id`` when every partition that
    moved is a table's topic or a stream's and where each range starts is known; else None.
    Each table's parts are from the planned ranges, ``ranges`` its own
    (``spark/own_reads.py``), and ``read_once`` set, with the ``schemas``, when its row
    schemas are ``known``; each stream's parts are its topics', with their ranges."""
    moved = _moved(planned, batch_id)
    if not moved:
        return None
    summary = summary_of_ranges(moved)
    found = streams_in(dict(streams), summary)
    covered = {t for _, parts in found for t in parts} | {t for t in moved if t in tables}
    if covered != set(moved):
        return None
    starts = [start for parts in moved.values() for start, _ in parts.values()]
    if batch_id > 0 and min(starts) < 0:  # the batch before it is not in the offset log
        return None
    out = []
    for topic in sorted(t for t in moved if t in tables):
        table, parts = tables[topic], summary[topic]  # a table's topic is no stream's
        parts["ranges"] = {topic: moved[topic]}
        schemas = None if known is None else known.of(table)
        if schemas is not None:
            parts["schemas"] = set(schemas)
            parts["read_once"] = True
        out.append((table, parts))
    return out, [(st, parts, {t: moved[t] for t in parts}) for st, parts in found]


def once_records(
    df: Any,
    schemas: set[str],
    frames: AvroFrames,
    registry: SchemaRegistry | None,
    kind: str,
) -> Any | None:
    """The records of a batch of one table's events as its decode takes them: JSON checked
    for UTF-8; Avro with their schema ids, the bodies of the known ones read by the decode
    (``decode.decode_events``, with the table as its evolution leaves it; an event of
    another id is marked new; ``registry`` None: JSON). None: a known schema is no id (as a
    job that read JSON kept them), so the batch takes the first look. ``kind``: avro, json
    or schemaless."""
    if registry is None and kind == "schemaless":
        return with_utf8_check(df)  # no schema part to skip
    if registry is None:
        return with_utf8_check(df, sorted(schemas))
    if not all(s.isdigit() for s in schemas):
        return None
    return frames.with_ids(df)
