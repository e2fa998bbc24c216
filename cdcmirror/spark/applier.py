"""The mirror's ``foreachBatch``: decode, dedupe by source position, MERGE into Iceberg.

Per micro-batch:

1. one small aggregate over the batch gives, per topic and partition, the event count, the
   end offset and the distinct row schemas (``spark/batch_evolution.py`` evolves to each);
2. each table with events is applied on its own thread (tables merge concurrently): decode
   (``mirror/envelope.py``), dead-letter what cannot be applied, truncate, dedupe, classify
   against the stored positions, record tombstones, MERGE (``spark/table_apply.py``). Each
   commit's summary holds the query id, batch id and Kafka end offsets (``spark/commits.py``);
3. the dead letters of the batch are merged into the dead-letter table (keyed by topic,
   partition and offset, so a re-run adds nothing);
4. one structured log line per table.

A batch whose offset ranges are known skips 1. and the cache: each table and stream reads
its own records (``spark/own_reads.py``).

A table whose events need a change the mirror must not make (incompatible type change) is
stopped: its events go to the dead-letter table with the reason, other tables go on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from cdcmirror.exceptions import CdcMirrorError, MirrorError
from cdcmirror.mirror.checkpoint import Ranges
from cdcmirror.mirror.evolution import Evolution
from cdcmirror.mirror.known_schemas import KnownSchemas
from cdcmirror.mirror.registry import SchemaRegistry
from cdcmirror.mirror.resume import batch_summary
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.spark.avro_frames import AvroFrames
from cdcmirror.spark.batch_evolution import BatchEvolution
from cdcmirror.spark.batch_gate import BatchGate
from cdcmirror.spark.batch_stats import TableStats
from cdcmirror.spark.batch_summary import topics_of_batch
from cdcmirror.spark.dead_letters import ensure_dead_letter_table, raw_dead, write_dead_letters
from cdcmirror.spark.decode import AvroReads, decode_events, register_functions, with_utf8_check
from cdcmirror.spark.executor_loss import ATTEMPTS, retried
from cdcmirror.spark.maintenance import JobMaintenance, between_batches
from cdcmirror.spark.own_reads import apply_own, with_records
from cdcmirror.spark.rejected_schemas import reject_schemas
from cdcmirror.spark.shuffle_size import ShuffleSize
from cdcmirror.spark.single_pass import own_plan
from cdcmirror.spark.stream_apply import Evolve, StreamBatch, StreamParts, StreamTable, streams_in
from cdcmirror.spark.table_apply import NewSchemas, TableBatch, apply_decoded
from cdcmirror.spark.tombstones import TombstoneTables

__all__ = ["Applier", "ApplierOptions", "CatalogHooks", "MirrorError", "TableStats"]

logger = logging.getLogger("cdcmirror.mirror")


@dataclass(frozen=True)
class ApplierOptions:
    schemas: bool  # JSON converter with embedded schemas
    soft_deletes: bool
    fail_on_dead_letter: bool
    internal_namespace: str  # tombstones and the dead-letter table
    parallelism: int = 4
    maintenance: JobMaintenance = field(default_factory=JobMaintenance)  # off unless told
    registry: SchemaRegistry | None = None  # Avro in the Confluent wire format
    stream_registry: SchemaRegistry | None = None  # for Avro event streams ([[streams]])
    # what is wrong with the source connector (FAILED, PAUSED), None when it runs
    source_health: Callable[[], str | None] | None = None
    # told of each applied batch (its stats, its seconds) and failed one (metrics.py)
    on_batch: Callable[[list[TableStats], float], None] | None = None
    on_failure: Callable[[], None] | None = None
    # a batch's offset ranges as Spark planned them (spark/single_pass.py uses them)
    batch_ranges: Callable[[int], Ranges | None] | None = None
    # the row schemas earlier runs applied (spark/single_pass.py), kept by the job
    known_schemas: KnownSchemas | None = None
    # records of offset ranges (spark/range_read.py): each of a batch's tables and streams
    read_ranges: Callable[[Any, Ranges], Any] | None = None


@dataclass(frozen=True)
class CatalogHooks:
    """What the applier needs from the catalog (pyiceberg), passed in by the job."""

    reload: Callable[[MirrorTable], MirrorTable]
    evolve: Callable[[MirrorTable, Evolution], MirrorTable]
    evolve_stream: Evolve | None = None
    # a stream's table as its snapshots record it (what it holds)
    reload_stream: Callable[[StreamTable], StreamTable] | None = None


class Applier:
    def __init__(
        self,
        spark: Any,
        tables: dict[str, MirrorTable],
        options: ApplierOptions,
        hooks: CatalogHooks,
        streams: dict[str, StreamTable] | None = None,
    ) -> None:
        self.spark = spark
        self.tables = dict(tables)  # topic -> table
        self.streams = dict(streams or {})  # identifier -> plain event stream ([[streams]])
        self.options = options
        self.hooks = hooks
        self.query_id: str | None = None
        self.batch_spark = spark
        self._lock = threading.Lock()
        self.gate = BatchGate()
        self._avro = AvroFrames()
        self._shuffle = ShuffleSize(spark)  # each batch's, sized to its events
        self._tombstones = TombstoneTables(options.internal_namespace)
        # the row schemas each table took (JSON with schemas)
        self._known = options.known_schemas or KnownSchemas()
        registry = options.registry  # Avro: a batch read once reads its bodies in the decode
        self._reads: bool | AvroReads = registry is not None and AvroReads(self._avro, registry)
        self._kind = "avro" if registry is not None else "json" if options.schemas else "schemaless"
        self.evolution = BatchEvolution(
            self._kind, options.registry, hooks.reload, hooks.evolve, self._remember
        )
        register_functions(spark)
        self.dead_letter_table = f"{options.internal_namespace}.dead_letter"
        ensure_dead_letter_table(spark, options.internal_namespace, self.dead_letter_table)

    def _remember(self, table: MirrorTable) -> None:
        with self._lock:
            self.tables[table.topic] = table

    # -- the batch ---------------------------------------------------------------------
    def process(self, df: Any, batch_id: int) -> None:
        with self.gate.batch():  # a stop waits for it (spark/batch_gate.py)
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    self._process(df, batch_id)
                    return
                except Exception as exc:
                    if retried(exc, batch_id, attempt, logger):
                        self._reread_streams()
                        continue
                    if self.options.on_failure is not None:
                        self.options.on_failure()
                    raise

    def _reread_streams(self) -> None:
        """Before a batch runs again: each stream's table as its snapshots say (the failed run
        may have committed a stream's events, then failed before the job's record of them)."""
        if (reread := self.hooks.reload_stream) is not None:
            with self._lock:
                self.streams = {name: reread(table) for name, table in self.streams.items()}

    def _process(self, df: Any, batch_id: int) -> None:
        started = time.monotonic()
        # foreachBatch hands over a frame of its own session: temp views and SQL must use it
        self.batch_spark = df.sparkSession
        plan = own_plan(self.tables, self.streams, self.options.batch_ranges, batch_id, self._known)
        own = plan and with_records(plan, df, self.options.read_ranges, self.batch_spark)
        if own:  # each table and stream reads its own records (spark/own_reads.py)
            self._apply_all(df, batch_id, own[0], own[1], started, -1.0, True, df)
            return
        if self.options.registry is None:  # JSON: checked once, for summary and decode
            df = with_utf8_check(df)
        df = df.persist()
        raw = None
        if self.options.registry is not None:
            raw, df = df, self._avro.decode_batch(df, self.options.registry).persist()
        try:
            # reads the Kafka batch (and caches it)
            summary = topics_of_batch(df, self._kind, sorted(self.tables) if self.streams else None)
            read_seconds = time.monotonic() - started
            work = [(self.tables[t], p) for t, p in summary.items() if t in self.tables]
            streams = [(st, p, None) for st, p in streams_in(self.streams, summary)]
            records = raw if raw is not None else df
            self._apply_all(records, batch_id, work, streams, started, read_seconds, False, df)
        finally:
            df.unpersist()
            if raw is not None:
                raw.unpersist()

    def _apply_all(
        self,
        records: Any,
        batch_id: int,
        work: list[tuple[MirrorTable, dict[str, Any]]],
        streams: Sequence[tuple[StreamTable, StreamParts, Callable[[], Any] | None]],
        started: float,
        read_seconds: float,
        single_pass: bool,
        decoded: Any = None,
    ) -> None:
        """Apply the tables (``decoded``: the batch as they read it) and the streams
        (``records``: the batch's Kafka records, or a stream's own read) concurrently, then
        ``_finish`` (``read_seconds`` < 0: no first look, each read its records once)."""
        self._shuffle.size(self.batch_spark, [p for _, p in work], [p for _, p, _ in streams])
        with ThreadPoolExecutor(max_workers=max(1, self.options.parallelism)) as pool:
            futures = [
                pool.submit(self._apply_counted, decoded, batch_id, table, parts)
                for table, parts in work
            ]
            futures += [
                pool.submit(self._apply_stream, records, batch_id, st, parts, single_pass, read)
                for st, parts, read in streams
            ]
            results = [f.result() for f in futures]
        self._finish(batch_id, results, started, read_seconds)

    def _finish(
        self, batch_id: int, results: list[tuple[TableStats, Any]], started: float, read: float
    ) -> None:
        """After the tables: the dead letters, the batch's log lines, maintenance."""
        dead = [d for _, d in results if d is not None]
        stats = [s for s, _ in results]
        applied = time.monotonic()
        if dead:
            query = self.query_id or ""
            write_dead_letters(self.batch_spark, self.dead_letter_table, dead, query, batch_id)
        dead_seconds = time.monotonic() - applied
        for s in stats:
            log = logger.error if s.stopped else logger.info
            log("mirror batch %s", s.line(batch_id))
        problem = self.options.source_health() if self.options.source_health else None
        if problem:
            logger.error("mirror batch %d: %s", batch_id, problem)
        names = [t.identifier for t in self.tables.values()] + list(self.streams)
        tombstones, maintenance = self._tombstones.made(), self.options.maintenance
        written = [s.table for s in stats if s.events]
        graves = [self._tombstones.identifier_of(s.table) for s in stats if s.entombed]
        args = (names, tombstones, maintenance, logger, written, graves)
        between_batches(self.spark, batch_id, *args)
        seconds = time.monotonic() - started
        logger.info(
            "batch %d done in %.2fs (%s, tables %.2fs, dead letters %.2fs)",
            batch_id,
            seconds,
            "read once, no first look" if read < 0 else f"read and summary {read:.2f}s",
            applied - started - max(read, 0.0),
            dead_seconds,
        )
        if self.options.on_batch is not None:
            self.options.on_batch(stats, seconds)

    def _apply_stream(
        self,
        raw: Any,
        batch_id: int,
        table: StreamTable,
        parts: StreamParts,
        single_pass: bool,
        read: Callable[[], Any] | None = None,
    ) -> tuple[TableStats, Any]:
        """``raw``: the batch's records; ``read``: reads the stream's own instead."""
        evolve = self.hooks.evolve_stream
        assert evolve is not None, "a job with streams evolves them"
        registry, raw = self.options.stream_registry, raw if read is None else read()
        batch = StreamBatch(self.batch_spark, table, evolve, self._avro, registry)
        query = self.query_id or ""
        stats, done, dead = batch.apply_parts(raw, query, batch_id, parts, single_pass)
        with self._lock:
            self.streams[table.identifier] = done
        return stats, dead

    # -- one table ---------------------------------------------------------------------
    def _apply_counted(
        self, df: Any, batch_id: int, table: MirrorTable, parts: dict[str, Any]
    ) -> tuple[TableStats, Any]:
        """``_apply_table`` in a Spark job group of its own (the job group is per thread):
        the batch line counts the table's Spark jobs (``spark_jobs``)."""
        sc = self.batch_spark.sparkContext
        group = f"cdcmirror-{batch_id}-{table.identifier}"
        sc.setJobGroup(group, f"cdcmirror batch {batch_id}: {table.identifier}")
        try:
            stats, dead = self._apply_any(df, batch_id, table, parts)
            stats.spark_jobs = len(sc.statusTracker().getJobIdsForGroup(group))
            return stats, dead
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
            sc.setLocalProperty("spark.job.description", None)

    def _apply_any(
        self, df: Any, batch_id: int, table: MirrorTable, parts: dict[str, Any]
    ) -> tuple[TableStats, Any]:
        """The table's share of ``df``, or its own records (``spark/own_reads.py``)."""
        if "records" not in parts:
            return self._apply_table(df, batch_id, table, parts)
        registry, frames = self.options.registry, self._avro

        def apply(records: Any, found: dict[str, Any]) -> tuple[TableStats, Any]:
            return self._apply_table(records, batch_id, table, found)

        return apply_own(parts["records"], table.topic, parts, self._kind, registry, frames, apply)

    def _apply_table(
        self, df: Any, batch_id: int, table: MirrorTable, parts: dict[str, Any]
    ) -> tuple[TableStats, Any]:
        stats = TableStats(
            table.identifier,
            events=parts["events"],
            offsets=parts["offsets"],
            starts=parts["starts"],
        )
        if stats.events == 0:
            return stats, None
        where = ", ".join(f"{p}:{o}" for p, o in sorted(parts["offsets"].items()))
        started = time.monotonic()
        try:
            verdict = self.evolution.apply(table, sorted(parts["schemas"]))
            table = verdict.table
            events = df.where(df.topic == table.topic).where("value IS NOT NULL")
            if verdict.stop:
                stats.stopped = verdict.stop
                stats.dead_lettered = stats.events
                return stats, raw_dead(events, f"table stopped: {verdict.stop}", table)
            rejected, events = reject_schemas(
                events, self._kind, table, verdict.rejected, raw_dead, stats
            )
            seen = sorted(parts["schemas"])  # the batch's row schemas
            known = seen if parts.get("read_once") else None
            # learnt too when the table changed under known ones (a widening the batch took)
            learn = known is None or parts.get("guessed") or self._known.of(table) is None
            if learn:  # Avro: the ids, as text
                self._known.learn(table, {str(s) for s in seen}, not verdict.rejected)
            decoded = decode_events(
                events, table, self.options.schemas, self._reads, known, seen, verdict.carriers
            )
            try:
                batch = self._table_batch(events, batch_id, table, stats, known is not None)
                dead = apply_decoded(batch, decoded)
            finally:
                stats.table_seconds = time.monotonic() - started
            if rejected is not None:
                stats.dead_lettered += rejected[1]
                dead = rejected[0] if dead is None else dead.unionByName(rejected[0])
            return stats, dead
        except (CdcMirrorError, NewSchemas):
            raise
        except Exception as exc:
            raise MirrorError(
                f"{table.identifier}: batch {batch_id} failed (topic {table.topic}, "
                f"partition:end offset {where}): {exc}"
            ) from exc

    def _table_batch(
        self, raw: Any, batch_id: int, table: MirrorTable, stats: TableStats, read_once: bool
    ) -> TableBatch:
        props = batch_summary(
            self.query_id or "", batch_id, table.topic, stats.starts, stats.offsets
        )
        return TableBatch(
            self.batch_spark,
            table,
            batch_id,
            stats,
            props,
            self.options.soft_deletes,
            self.options.fail_on_dead_letter,
            self._tombstones,
            self._remember,
            raw,
            read_once,
        )
