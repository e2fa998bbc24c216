"""A CDC table's share of a batch read by the table itself (``single_pass.own_plan``): the
records of its own topic's ranges, not the whole batch's (an event stream's likewise:
``stream_apply.StreamBatch`` reads them once).

In row schemas the job has applied, the table's decode reads them once, straight from
Kafka (``single_pass.once_records``); in row schemas not known yet (JSON with schemas,
Avro; schemaless JSON: its field names), once in those of its first records
(``guess_schemas``). A new row schema found there (``NewSchemas``: nothing of the table is
written) takes a first look of the table's own:
its records read and cached, their row schemas and offsets summarised
(``batch_summary.topics_of_batch``), then applied from the cache. Each table does this on
its own thread, so a batch of several tables neither caches their records together nor
reads every table's records for each table."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from cdcmirror.mirror.checkpoint import Ranges
from cdcmirror.mirror.registry import SchemaRegistry
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.spark.avro_frames import AvroFrames
from cdcmirror.spark.batch_summary import topics_of_batch
from cdcmirror.spark.decode import with_utf8_check
from cdcmirror.spark.single_pass import OwnPlan, once_records
from cdcmirror.spark.stream_apply import StreamParts, StreamTable
from cdcmirror.spark.table_apply import NewSchemas

logger = logging.getLogger("cdcmirror.mirror")

R = TypeVar("R")
Apply = Callable[[Any, dict[str, Any]], R]  # a table's records as its decode reads them, parts


# a batch's tables, each one's parts with its ``records``; its streams, their parts and
# their records (a call reads them)
Readers = tuple[
    list[tuple[MirrorTable, dict[str, Any]]],
    list[tuple[StreamTable, StreamParts, Callable[[], Any]]],
]


def with_records(
    plan: OwnPlan, batch: Any, read: Callable[[Any, Ranges], Any] | None, spark: Any
) -> Readers | None:
    """Each table and stream of ``plan`` (``single_pass.own_plan``) with its records: one
    alone reads the ``batch``, each of several its own ranges, by ``read`` (None: cannot,
    so the batch takes its first look)."""
    tables, streams = plan
    several = len(tables) + len(streams) > 1
    if several and read is None:
        return None

    def records(ranges: Ranges) -> Callable[[], Any]:
        return partial(read, spark, ranges) if several and read else lambda: batch

    for _, parts in tables:
        parts["records"] = records(parts.pop("ranges"))
    return tables, [(st, parts, records(ranges)) for st, parts, ranges in streams]


def apply_own(
    records: Callable[[], Any],
    topic: str,
    parts: dict[str, Any],
    kind: str,
    registry: SchemaRegistry | None,
    frames: AvroFrames,
    apply: Apply[R],
) -> R:
    """``apply`` the table of ``topic`` to its ``records`` (a new read of them each call):
    read once when ``parts`` says its row schemas are known, else (or when a new one turns
    up) after a first look of its own. ``kind``: avro, json or schemaless."""
    if not parts.get("read_once"):
        guessed = guess_schemas(records(), topic, kind, registry, frames)
        if guessed:
            logger.info("%s: read once in the row schemas of its first records", topic)
            parts = {**parts, "schemas": guessed, "read_once": True, "guessed": True}
    if parts.get("read_once"):
        once = once_records(records(), parts["schemas"], frames, registry, kind)
        if once is not None:
            try:
                return apply(once, parts)
            except NewSchemas as exc:
                logger.info("%s; read again with a first look", exc)
    logger.info("%s: a first look at its records", topic)
    raw = records()
    df = with_utf8_check(raw) if registry is None else frames.decode_batch(raw, registry)
    df = df.persist()
    try:
        found = topics_of_batch(df, kind, None).get(topic)
        if found is None:  # transaction markers only
            found = {**parts, "events": 0, "schemas": set()}
        return apply(df, {k: v for k, v in found.items() if k != "read_once"})
    finally:
        df.unpersist()


SAMPLED = 8  # records whose row schemas a table's batch in unknown ones is read once in


def guess_schemas(
    raw: Any, topic: str, kind: str, registry: SchemaRegistry | None, frames: AvroFrames
) -> set[str]:
    """The row schemas of the first records of ``topic`` in ``raw`` (at most ``SAMPLED``;
    none that decodes: empty). A batch in row schemas the job has not applied yet (its
    first, or the first after a table's columns changed) is read once in them: a whole
    snapshot, or a batch of changes, is mostly in one. An event of another turns up in
    the decode (``NewSchemas``, nothing written), and the batch takes its first look."""
    # collected: Spark reads the first task's records only, not a first fetch in each task
    rows = raw.where(raw.topic == topic).where("value IS NOT NULL").limit(SAMPLED).collect()
    if not rows:
        return set()
    sample = raw.sparkSession.createDataFrame(rows, raw.schema)
    df = with_utf8_check(sample) if registry is None else frames.decode_batch(sample, registry)
    found = topics_of_batch(df, kind, None).get(topic)
    return {str(s) for s in found["schemas"]} if found else set()  # Avro: ids, as text
