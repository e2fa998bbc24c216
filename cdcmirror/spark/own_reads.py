"""A CDC table's share of a batch read by the table itself (``single_pass.cdc_only``): the
records of its own topic's ranges, not the whole batch's.

In row schemas the job has applied, the table's decode reads them once, straight from
Kafka (``single_pass.once_records``); a new row schema found there (``NewSchemas``: nothing
of the table is written) or row schemas not known yet take a first look of the table's own:
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
from cdcmirror.spark.single_pass import once_records
from cdcmirror.spark.table_apply import NewSchemas

logger = logging.getLogger("cdcmirror.mirror")

R = TypeVar("R")
Apply = Callable[[Any, dict[str, Any]], R]  # a table's records as its decode reads them, parts


def with_records(
    own: list[tuple[MirrorTable, dict[str, Any]]],
    batch: Any,
    read: Callable[[Any, Ranges], Any] | None,
    spark: Any,
) -> list[tuple[MirrorTable, dict[str, Any]]] | None:
    """The tables of a batch that reads each table's records on its own, each one's parts
    with its ``records`` (a call reads them): one table reads the ``batch``, each of several
    its ranges, by ``read`` (None: cannot, so the batch takes its first look)."""
    if len(own) > 1 and read is None:
        return None
    for _, parts in own:
        ranges = parts.pop("ranges")
        parts["records"] = partial(read, spark, ranges) if read and len(own) > 1 else lambda: batch
    return own


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
    if parts.get("read_once"):
        once = once_records(records(), parts["schemas"], frames, registry)
        if once is not None:
            try:
                return apply(once, parts)
            except NewSchemas as exc:
                logger.info("%s; read again with a first look", exc)
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
