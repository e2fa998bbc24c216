"""A CDC table's records of a micro-batch as its decode reads them (``plan.ReadMode``).

Read once (``KNOWN``, ``GUESSED``): straight from Kafka into the decode, JSON checked for
UTF-8 (against the expected schema parts, ``schema_parts.utf8_sql``), Avro with their schema
ids only (the decode reads the bodies of the expected ids). The guess: the row schemas of the
table's first records, a whole snapshot or a batch of changes being mostly in one. A first
look (``CACHED``, ``OWN_LOOK``): the records read, checked or decoded, cached, and summarised
(``plan.summarised``), then applied from the cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cdcmirror.mirror.avro import WriterSchemas
from cdcmirror.spark.avro_frames import AvroFrames
from cdcmirror.spark.cdc.decode import with_utf8_check
from cdcmirror.spark.cdc.plan import TopicBatch, summarised

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

SAMPLED = 8  # records whose row schemas a table's batch in unknown ones is read once in


@dataclass(frozen=True)
class Formats:
    """How the batch's values are written: ``kind`` (avro, json or schemaless), and for Avro
    the job's frames and registry."""

    kind: str
    frames: AvroFrames
    registry: WriterSchemas | None

    def checked(self, raw: DataFrame) -> DataFrame:
        """Records ready for a first look: JSON checked for UTF-8, Avro decoded."""
        if self.registry is None:
            return with_utf8_check(raw)
        return self.frames.decode_batch(raw, self.registry)


def once(raw: DataFrame, batch: TopicBatch, formats: Formats) -> DataFrame | None:
    """The records of a batch of one table read once in ``batch.schemas``: JSON checked for
    UTF-8 (schemaless: wholly, with schemas: after the expected schema part); Avro with their
    schema ids, the bodies of the expected ones read by the decode. None: an expected schema
    is no id (as a job that read JSON kept them), so the table takes a first look."""
    if formats.registry is None and formats.kind == "schemaless":
        return with_utf8_check(raw)  # no schema part to skip
    if formats.registry is None:
        return with_utf8_check(raw, sorted(batch.schemas))
    if not all(s.isdigit() for s in batch.schemas):
        return None
    return formats.frames.with_ids(raw)


def guess(raw: DataFrame, topic: str, formats: Formats) -> frozenset[str]:
    """The row schemas of the first records of ``topic`` in ``raw`` (at most ``SAMPLED``;
    none that decodes: empty). An event of another schema turns up in the decode (its
    ``NEW_SCHEMA`` mark), nothing of the table is written, and it takes a first look."""
    # collected: Spark reads the first task's records only, not a first fetch in each task
    rows = raw.where(raw.topic == topic).where("value IS NOT NULL").limit(SAMPLED).collect()
    if not rows:
        return frozenset()
    sample = raw.sparkSession.createDataFrame(rows, raw.schema)
    found = summarised(formats.checked(sample), formats.kind, None).get(topic)
    return found.schemas if found else frozenset()  # Avro: ids, as text


def first_look(raw: DataFrame, batch: TopicBatch, formats: Formats) -> tuple[DataFrame, TopicBatch]:
    """A table's own records read, checked or decoded and cached (the caller unpersists
    them), and its share of the batch as they hold it (transaction markers only: no events)."""
    from cdcmirror.spark.cdc.plan import ReadMode

    df = formats.checked(raw).persist()
    found = summarised(df, formats.kind, None).get(batch.topic)
    if found is None:
        return df, TopicBatch(batch.topic, 0, batch.offsets, batch.starts, mode=ReadMode.OWN_LOOK)
    return df, found.read_in(ReadMode.OWN_LOOK, found.schemas)
