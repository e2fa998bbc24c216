"""A micro-batch of the plain event topics (``[[streams]]``): per stream table, decode the
JSON events, add the fields an inferred stream gained, append (or upsert by key) in one
commit, and hand back the dead letters. The SQL: ``streams/sql.py``."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple

from cdcmirror.cdc_columns import IcebergColumn
from cdcmirror.exceptions import CdcMirrorError, MirrorError
from cdcmirror.mirror.avro import WriterSchemas
from cdcmirror.mirror.resume import topics_summary
from cdcmirror.mirror.stats import TableStats
from cdcmirror.spark import iceberg
from cdcmirror.spark.avro_frames import AvroFrames
from cdcmirror.spark.dead_letters import joined_dead
from cdcmirror.spark.rows import one_row
from cdcmirror.sql_text import median_sql, spark_name, sql_string
from cdcmirror.streams.avro_direct import added_columns
from cdcmirror.streams.schema import infer_columns
from cdcmirror.streams.spec import StreamSpec
from cdcmirror.streams.sql import (
    JSON_OPTIONS,
    JSON_TEXT,
    NEW_FIELDS,
    NEW_SCHEMA_ID,
    append_sql,
    decoded_exprs,
    event_ddl,
    held_after,
    known_ids_guard_sql,
    new_fields_guard_sql,
    not_held_sql,
    unknown_fields_sql,
    upsert_sql,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from cdcmirror.spark.cdc.plan import TopicBatch

logger = logging.getLogger("cdcmirror.mirror")
_GOOD = "_cdc_error IS NULL AND _cdc_new"
_COUNTS = (
    f"count_if({_GOOD}) AS good",
    "count_if(_cdc_error IS NOT NULL) AS bad",
    "count_if(_cdc_error IS NULL AND NOT _cdc_new) AS held",
    f"max(IF({_GOOD}, unix_micros(_kafka_timestamp), NULL)) AS newest",
    f"{median_sql(f'IF({_GOOD}, unix_micros(_kafka_timestamp), NULL)')} AS median",
    f"min(IF({_GOOD}, unix_micros(_kafka_timestamp), NULL)) AS oldest",
)


class StreamCounts(NamedTuple):
    """A batch's events of one stream, counted (``_COUNTS``): written, dead-lettered, held
    already, and the Kafka times of those written (epoch microseconds; None: none)."""

    good: int
    bad: int
    held: int
    newest: int | None
    median: int | None
    oldest: int | None

    @classmethod
    def of(cls, values: Mapping[str, object]) -> StreamCounts:
        """The counts from a row or an observation of ``_COUNTS``."""

        def micros(name: str) -> int | None:
            value = values.get(name)
            return None if value is None else int(str(value))

        good, bad, held = (int(str(values.get(n) or 0)) for n in ("good", "bad", "held"))
        return cls(good, bad, held, micros("newest"), micros("median"), micros("oldest"))


class StreamRead(NamedTuple):
    """A stream's records ready to decode (``StreamBatch._read``)."""

    events: DataFrame
    table: StreamTable
    text: str  # the JSON text column
    error: str  # the decode error column ("" when there is none)
    guard: str  # a condition a new event must meet to be written, or ""


SAMPLE_FOR_NEW_FIELDS = 200  # events whose new fields an inferred stream's types come from


@dataclass(frozen=True)
class StreamTable:
    spec: StreamSpec
    identifier: str
    columns: tuple[IcebergColumn, ...]  # the event's columns (not the Kafka ones)
    # topic -> partition -> the last offset the table holds (sql.py: exactly once)
    held: dict[str, dict[int, int]] = field(default_factory=dict)
    avro_ids: tuple[int, ...] = ()  # an Avro stream's schema ids looked up so far

    def matches_sql(self) -> str:
        """Condition over Kafka rows: the record is one of this stream's."""
        if self.spec.topic:
            return f"topic = {sql_string(self.spec.topic)}"
        return f"topic RLIKE {sql_string('^(?:' + self.spec.topic_pattern + ')$')}"


# told which columns an inferred stream's table gains; returns the table with them
Evolve = Callable[[StreamTable, list[IcebergColumn]], StreamTable]


class StreamBatch:
    """One batch of one stream table."""

    def __init__(
        self,
        spark: SparkSession,
        table: StreamTable,
        evolve: Evolve,
        frames: AvroFrames | None = None,
        registry: WriterSchemas | None = None,
    ) -> None:
        """``frames`` and ``registry``: for an Avro stream."""
        self.spark, self.table, self.evolve = spark, table, evolve
        self.frames, self.registry = frames, registry

    def apply_topics(
        self,
        raw: DataFrame,
        query_id: str,
        batch_id: int,
        topics: Mapping[str, TopicBatch],
        single_pass: bool,
    ) -> tuple[TableStats, StreamTable, DataFrame | None]:
        """``apply`` with the batch's share of each of the stream's topics (as the applier's
        first look counts them, or as Spark planned them: ``single_pass``, ``raw`` not
        cached): the table's stats, the table after it, its dead letters."""
        table = self.table
        stats = TableStats(table.identifier, events=sum(b.events for b in topics.values()))
        for b in topics.values():
            stats.offsets.update(b.offsets)
            stats.starts.update(b.starts)
        offsets = {t: (dict(b.starts), dict(b.offsets)) for t, b in topics.items()}
        try:
            done, dead = self.apply(raw, query_id, batch_id, offsets, stats, single_pass)
        except CdcMirrorError:
            raise
        except Exception as exc:
            raise MirrorError(f"{table.identifier}: batch {batch_id} failed: {exc}") from exc
        return stats, done, dead

    def apply(
        self,
        raw: DataFrame,
        query_id: str,
        batch_id: int,
        parts: dict[str, tuple[dict[int, int], dict[int, int]]],
        stats: TableStats,
        single_pass: bool = False,
    ) -> tuple[StreamTable, DataFrame | None]:
        """Write the batch's events of this stream (``raw``: the batch's Kafka rows;
        ``parts``: per topic of the stream, its first and last offsets per partition);
        returns the table (evolved, what it holds) and the dead letters (or None).

        A batch with events after what the table holds is written in one pass: the parse
        feeds the write, whose own job counts the events (an observation); they are decoded
        again only for their dead letters, in a batch that has some. A batch whose events
        the table holds already (one that runs again) writes nothing; its dead letters are
        made again (a MERGE: once). ``single_pass``: ``raw`` is read from Kafka, not
        cached, and nothing passes over the events before the write (``_read``)."""
        table = self.table
        records = raw.where(table.matches_sql()).where("value IS NOT NULL")
        started = time.monotonic()
        try:
            held = held_after(table.held, {t: ends for t, (_, ends) in parts.items()})
            replay = held == table.held  # read as a usual batch: its counts and dead letters
            read = self._read(records, table, single_pass and not replay, stats)
            if replay:
                counts = self._counted(read, stats)
                logger.info("%s: batch %d was written before", table.identifier, batch_id)
            else:
                starts = {t: starts for t, (starts, _) in parts.items()}
                props = topics_summary(query_id, batch_id, starts, held)
                try:
                    counts = self._write_observed(read, props, stats)
                except Exception as exc:
                    guarded = read.guard
                    if not guarded or not any(m in str(exc) for m in (NEW_FIELDS, NEW_SCHEMA_ID)):
                        raise
                    read = self._read(records, read.table, False, stats)
                    counts = self._write_observed(read, props, stats)
            if single_pass:  # the planned ranges only bound the events
                stats.events = counts.good + counts.bad + counts.held
            stats.replayed = counts.held
            stats.inserts, stats.dead_lettered = counts.good, counts.bad
            stats.committed(time.time(), counts.newest, counts.median, counts.oldest)
            dead = self._dead_letters(records, read) if counts.bad else None
        finally:
            stats.table_seconds = time.monotonic() - started
        return replace(read.table, held=held), dead

    def _read(
        self, records: DataFrame, table: StreamTable, single_pass: bool, stats: TableStats
    ) -> StreamRead:
        """The stream's ``records`` ready to decode, the table with the fields they carry,
        the JSON text and decode error columns, and a guard for the write (SQL, or ""):
        ``single_pass``, nothing passes over the events first; the write stops at an event
        the table cannot take yet (a field it lacks, an Avro id not looked up: the guard),
        and runs again after the usual read."""
        if table.spec.format != "avro":
            if table.spec.infer and not single_pass:  # fields it lacks become columns first
                table = self._with_fields_of(records, table, JSON_TEXT, stats)
            guarded = single_pass and table.spec.infer
            fields = new_fields_guard_sql(table.columns, JSON_TEXT) if guarded else ""
            return StreamRead(records, table, JSON_TEXT, "", fields)
        assert self.frames is not None and self.registry is not None, "an Avro stream"
        framed = self.frames.with_ids(records)
        ids = list(table.avro_ids) if single_pass else []
        if single_pass and not ids:  # the subject's newest schema, as the table was made
            newest = self.registry.latest_id(table.spec.schema)
            ids = [newest] if newest is not None else []
        guard = known_ids_guard_sql(ids) if ids else ""
        if not ids:
            rows = framed.select("_cdc_schema_id").where("_cdc_schema_id IS NOT NULL").distinct()
            ids = [int(r[0]) for r in rows.collect()]
        schemas = self.registry.schemas(ids)
        added = added_columns(table.columns, schemas, table.identifier)
        if added:
            logger.info(
                "%s: new field(s) %s added from the registry",
                table.identifier,
                ", ".join(f"{c.name} {c.type}" for c in added),
            )
            table = self.evolve(table, added)
        table = replace(table, avro_ids=tuple(sorted({*table.avro_ids, *schemas})))
        decoded = self.frames.decode(framed, schemas, table.columns)
        return StreamRead(decoded, table, "_cdc_json", "_cdc_decode_error", guard)

    def _decode(self, read: StreamRead, guard: bool = False) -> DataFrame:
        """The decoded events (``_cdc_new``: not held yet), with their Kafka coordinates, not the
        record (``_dead_letters`` takes it from the batch's records); ``guard``: with the read's
        condition a new event must meet, or the query stops (the write's decode)."""
        from pyspark.sql import functions as F

        events, table, text, error = read.events, read.table, read.text, read.error
        event = F.from_json(F.expr(text), event_ddl(table.columns), JSON_OPTIONS)
        if "_cdc_avro" in events.columns:  # read from Avro straight into the columns
            event = F.when(F.col("_cdc_avro").isNotNull(), F.col("_cdc_avro")).otherwise(event)
        parsed = events.withColumn("e", event)
        closed = table.spec.format == "json" and not table.spec.infer
        exprs = decoded_exprs(table.columns, closed, text, error)
        new = not_held_sql(table.held)
        if guard and read.guard:
            new = f"({new}) AND {read.guard}"
        return parsed.selectExpr(*exprs, f"{new} AS _cdc_new")

    def _write_observed(
        self, read: StreamRead, props: dict[str, str], stats: TableStats
    ) -> StreamCounts:
        """Write the good events that are not held yet; their counts (``_COUNTS``), taken by
        the write's own job."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        counted = Observation(f"cdcmirror_stream_{uuid.uuid4().hex}")
        decoded = self._decode(read, guard=True)
        observed = decoded.observe(counted, *(F.expr(c) for c in _COUNTS))
        self._write(observed.where("_cdc_new"), read.table, props, stats)
        return StreamCounts.of(counted.get)

    def _counted(self, read: StreamRead, stats: TableStats) -> StreamCounts:
        """The counts (``_COUNTS``) of events that are not written (a batch that runs again)."""
        with stats.phase("decode"):
            row = one_row(self._decode(read).selectExpr(*_COUNTS))
        return StreamCounts.of(row.asDict())

    def _dead_letters(self, records: DataFrame, read: StreamRead) -> DataFrame:
        """The batch's dead letters, made from decoded events held in a cache meanwhile: the
        error filter over a parse that is not cached would copy the parse into each
        reference of ``_cdc_error``."""
        decoded = self._decode(read).persist()
        try:
            bad = decoded.where("_cdc_error IS NOT NULL").selectExpr(
                "_kafka_topic AS _cdc_t",
                "_kafka_partition AS _cdc_p",
                "_kafka_offset AS _cdc_o",
                "_cdc_error",
            )
            return joined_dead(records, bad, read.table.identifier).localCheckpoint(eager=True)
        finally:
            decoded.unpersist()

    def _write(
        self, decoded: DataFrame, table: StreamTable, props: dict[str, str], stats: TableStats
    ) -> None:
        view = f"_cdcm_stream_{abs(hash(table.identifier))}"
        decoded.createOrReplaceTempView(view)
        target = spark_name(table.identifier)
        if table.spec.key_columns:
            sql = upsert_sql(target, view, table.columns, table.spec.key_columns)
        else:
            sql = append_sql(target, view, table.columns)
        try:
            with stats.phase("merge"):
                iceberg.data_commit(self.spark, props, lambda: self.spark.sql(sql))
        finally:
            self.spark.catalog.dropTempView(view)

    def _with_fields_of(
        self, events: DataFrame, table: StreamTable, text: str, stats: TableStats
    ) -> StreamTable:
        """An inferred stream's table with the fields of ``events`` it lacks."""
        with stats.phase("decode"):
            new = _unknown_names(events, table, text)
        return self._with_new_fields(events, table, new) if new else table

    def _with_new_fields(
        self, events: DataFrame, table: StreamTable, new: list[str]
    ) -> StreamTable:
        """An inferred stream: fields ``new`` of the batch's events become columns (their
        types from up to ``SAMPLE_FOR_NEW_FIELDS`` events that have them)."""
        having = " OR ".join(
            f"get_json_object(CAST(value AS STRING), {sql_string('$.' + n)}) IS NOT NULL"
            for n in new
        )
        sample = [
            json.loads(r[0])
            for r in events.where(having)
            .selectExpr("CAST(value AS STRING)")
            .limit(SAMPLE_FOR_NEW_FIELDS)
            .collect()
        ]
        events_new = [
            {k: v for k, v in e.items() if k in new} for e in sample if isinstance(e, dict)
        ]
        added = infer_columns(events_new or [dict.fromkeys(new)], table.identifier)
        logger.info(
            "%s: new field(s) %s added",
            table.identifier,
            ", ".join(f"{c.name} {c.type}" for c in added),
        )
        return self.evolve(table, added)


def _unknown_names(events: DataFrame, table: StreamTable, text: str) -> list[str]:
    """The fields of an inferred stream's events that no column holds (one pass over the
    events' keys, before they are decoded)."""
    fields = unknown_fields_sql(table.columns, text)
    rows = events.selectExpr(f"explode({fields}) AS k").distinct().collect()
    return sorted(str(r.k) for r in rows)
