"""Which batches skip the applier's first look (the aggregate over the cached batch): those
whose records are all one event stream's. Spark writes each batch's offsets to the
checkpoint's offset log before running it (``mirror/checkpoint.batch_ranges``), so the
partitions a batch read, and where each started and ended, are known without reading a
record; the stream's events are then read from Kafka once, by its write, and counted by
it. A batch of several streams' events keeps the first look and its cache."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from cdcmirror.exceptions import CdcMirrorError
from cdcmirror.mirror.checkpoint import Ranges, advanced
from cdcmirror.spark.batch_summary import summary_of_ranges
from cdcmirror.spark.stream_apply import StreamParts, StreamTable, streams_in

logger = logging.getLogger("cdcmirror.mirror")


def streams_only(
    streams: Mapping[str, StreamTable],
    cdc_topics: Mapping[str, Any],
    planned: Callable[[int], Ranges | None] | None,
    batch_id: int,
) -> list[tuple[StreamTable, StreamParts]] | None:
    """The stream of batch ``batch_id`` when every partition it read that moved belongs to
    one stream (``planned``: the batch's offset ranges), else None: a batch with CDC events
    or with several streams' (Spark's Kafka source reads every record of the batch for
    each stream's write, so their first look and cache read it once), or unknown ranges."""
    if not streams or planned is None:
        return None
    try:
        ranges = planned(batch_id)
    except CdcMirrorError as exc:  # the usual path needs no offset log
        logger.warning("batch %d: its planned offsets are not known: %s", batch_id, exc)
        return None
    if ranges is None:
        return None
    moved = advanced(ranges)
    if any(topic in cdc_topics for topic in moved):
        return None
    found = streams_in(dict(streams), summary_of_ranges(moved))
    return found if len(found) == 1 else None
