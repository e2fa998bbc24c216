"""The first look at a micro-batch: per topic, its events, first and last offsets per
partition, and the distinct row schemas of its events (``mirror/evolution.py``)."""

from __future__ import annotations

from typing import Any

from cdcmirror.mirror.checkpoint import Ranges
from cdcmirror.mirror.evolution import distinct_schemas_sql
from cdcmirror.sql_text import sql_string


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


def topics_of_batch(df: Any, kind: str, cdc_topics: list[str] | None) -> dict[str, dict[str, Any]]:
    """topic -> {"events", "offsets" (partition -> last), "starts" (partition -> first),
    "schemas"} of the batch ``df`` (``kind``: avro, json or schemaless)."""
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
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        t = out.setdefault(r.topic, {"events": 0, "offsets": {}, "starts": {}, "schemas": set()})
        t["events"] += r.events
        t["offsets"][int(r.partition)] = int(r.end_offset)
        t["starts"][int(r.partition)] = int(r.start_offset)
        t["schemas"].update(r.schemas or [])
    return out


def summary_of_ranges(ranges: Ranges) -> dict[str, dict[str, Any]]:
    """``topics_of_batch``'s answer from the offsets Spark planned the batch with
    (``mirror/checkpoint.advanced``), read from no record: the last offset of a partition
    is the one before its end (a transaction marker, perhaps), the first is the planned
    start, and ``events`` is how many offsets the ranges span (an upper bound).

    >>> summary_of_ranges({"t": {0: (5, 9), 1: (-2, 3)}})["t"]["offsets"]
    {0: 8, 1: 2}
    """
    out: dict[str, dict[str, Any]] = {}
    for topic, parts in ranges.items():
        out[topic] = {
            "events": sum(end - max(start, 0) for start, end in parts.values()),
            "offsets": {p: end - 1 for p, (_, end) in parts.items()},
            "starts": {p: start for p, (start, _) in parts.items()},
            "schemas": set(),
        }
    return out
