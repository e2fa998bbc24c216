"""The mirror's ``foreachBatch``, top to bottom:

1. plan: the batch's offsets from the checkpoint's offset log, each table and event stream
   reading its own records (``plan.planned``), or, when they are not known, the whole batch
   read, cached and summarised by a first look (``plan.summarised``); with the consistent
   tag, the batch's proof made beside it all on a thread of its own (``spark/consistent.py``);
2. each table with events applied on a thread of its own (tables merge concurrently):
   its records read as its plan says (``records.py``), then ``table.apply_table`` (evolve,
   decode, truncate, MERGE directly or classified, tombstones); a table read once that met
   an event of a schema it did not expect takes a first look of its own and is applied
   again (nothing of it was written); each event stream's batch (``streams/apply.py``);
3. the batch's dead letters MERGEd into the dead-letter table (keyed by topic, partition
   and offset, so a re-run adds nothing), one structured log line per table, the job's
   maintenance between batches, the metrics; with the consistent tag, the tags moved to the
   proven point.

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
from typing import TYPE_CHECKING, NamedTuple

from cdcmirror.exceptions import MirrorError
from cdcmirror.mirror.avro import WriterSchemas
from cdcmirror.mirror.checkpoint import Ranges
from cdcmirror.mirror.evolution import Evolution
from cdcmirror.mirror.known_schemas import KnownSchemas
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.stats import TableStats
from cdcmirror.mirror.transaction_metadata import Published
from cdcmirror.spark.avro_frames import AvroFrames
from cdcmirror.spark.batches import ATTEMPTS, BatchGate, retried
from cdcmirror.spark.cdc.decode import AvroReads, register_functions
from cdcmirror.spark.cdc.evolve import BatchEvolution
from cdcmirror.spark.cdc.plan import (
    BatchPlan,
    ReadMode,
    StreamWork,
    TopicBatch,
    cached,
    planned,
    summarised,
)
from cdcmirror.spark.cdc.records import Formats, first_look, guess, once
from cdcmirror.spark.cdc.table import (
    SplitAt,
    TableOutcome,
    TableSettings,
    apply_table,
)
from cdcmirror.spark.consistent import ConsistentTag, PendingProof, Proof
from cdcmirror.spark.dead_letters import ensure_dead_letter_table, write_dead_letters
from cdcmirror.spark.maintenance.job import JobMaintenance, between_batches
from cdcmirror.spark.streams.apply import Evolve, StreamBatch, StreamTable
from cdcmirror.spark.tombstones import TombstoneTables

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Applier", "ApplierOptions", "CatalogHooks", "MirrorError", "TableStats"]

logger = logging.getLogger("cdcmirror.mirror")

SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
ADAPTIVE = "spark.sql.adaptive.enabled"
EVENTS_PER_PARTITION = 2_000


@dataclass(frozen=True)
class ApplierOptions:
    schemas: bool  # JSON converter with embedded schemas
    soft_deletes: bool
    fail_on_dead_letter: bool
    internal_namespace: str  # tombstones and the dead-letter table
    parallelism: int = 4
    maintenance: JobMaintenance = field(default_factory=JobMaintenance)  # off unless told
    registry: WriterSchemas | None = None  # Avro in the Confluent wire format
    stream_registry: WriterSchemas | None = None  # for Avro event streams ([[streams]])
    # what is wrong with the source connector (FAILED, PAUSED), None when it runs
    source_health: Callable[[], str | None] | None = None
    # told of each applied batch (its stats, its seconds) and failed one (metrics.py)
    on_batch: Callable[[list[TableStats], float], None] | None = None
    on_failure: Callable[[], None] | None = None
    # a batch's offset ranges as Spark planned them (from the checkpoint's offset log)
    batch_ranges: Callable[[int], Ranges | None] | None = None
    # the row schemas earlier runs applied, kept by the job
    known_schemas: KnownSchemas | None = None
    # records of offset ranges (spark/kafka.read_ranges): each of a batch's tables and streams
    read_ranges: Callable[[SparkSession, Ranges], DataFrame] | None = None
    # the source's consistent tag (spark/consistent.py); None: off
    consistency: ConsistentTag | None = None
    # told after each batch of the consistent point's source commit time, epoch ms (metrics)
    on_point: Callable[[int], None] | None = None


@dataclass(frozen=True)
class CatalogHooks:
    """What the applier needs from the catalog (pyiceberg), passed in by the job."""

    reload: Callable[[MirrorTable], MirrorTable]
    evolve: Callable[[MirrorTable, Evolution], MirrorTable]
    evolve_stream: Evolve | None = None
    # a stream's table as its snapshots record it (what it holds)
    reload_stream: Callable[[StreamTable], StreamTable] | None = None


class _Done(NamedTuple):
    """One table's or stream's share of a batch, done."""

    stats: TableStats
    dead: DataFrame | None
    at_point: Published | None = None  # the table's snapshot at the consistent point


@dataclass(frozen=True)
class _Work:
    """What a batch applies: each table with its share and its records, each stream with
    its share and its records."""

    tables: Sequence[tuple[MirrorTable, TopicBatch, DataFrame | None]]  # None: its own read
    streams: Sequence[tuple[StreamWork, DataFrame]]
    single_pass: bool  # the records are read from Kafka, not cached (streams read once)


class Applier:
    def __init__(
        self,
        spark: SparkSession,
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
        registry = options.registry
        kind = "avro" if registry is not None else "json" if options.schemas else "schemaless"
        self._formats = Formats(kind, AvroFrames(), registry)
        self._known = options.known_schemas or KnownSchemas()  # the row schemas each took
        self._settings = TableSettings(
            kind=kind,
            schemas=options.schemas,
            soft=options.soft_deletes,
            fail_on_dead_letter=options.fail_on_dead_letter,
            reads=AvroReads(self._formats.frames, registry) if registry is not None else None,
            evolution=BatchEvolution(kind, registry, hooks.reload, hooks.evolve),
            known=self._known,
            tombstones=TombstoneTables(options.internal_namespace),
        )
        self._shuffle_most = int(spark.conf.get(SHUFFLE_PARTITIONS) or "200")
        self._shuffle_least = max(1, int(spark.sparkContext.defaultParallelism))
        register_functions(spark)
        self.dead_letter_table = f"{options.internal_namespace}.dead_letter"
        ensure_dead_letter_table(spark, options.internal_namespace, self.dead_letter_table)

    # -- the batch ---------------------------------------------------------------------
    def process(self, df: DataFrame, batch_id: int) -> None:
        with self.gate.batch():  # a stop waits for it (spark/batches.py)
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

    def _process(self, df: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        # foreachBatch hands over a frame of its own session: temp views and SQL must use it
        self.batch_spark = df.sparkSession
        # Spark 4.1 leaves adaptive execution on in a stateless query's batches (SPARK-53941),
        # where 4.0 turned it off in the query's session: each query stage of the MERGE
        # became a Spark job of its own, for no gain (benchmarks/RESULTS.md), and the batch
        # sizes its shuffles itself (``_size_shuffles``). Off on every line alike.
        self.batch_spark.conf.set(ADAPTIVE, "false")
        self._read_all(df, batch_id, started)

    def _read_all(self, df: DataFrame, batch_id: int, started: float) -> None:
        """The batch's tables and streams with their records, applied (:meth:`_apply_all`)."""
        plan = planned(self.tables, self.streams, self.options.batch_ranges, batch_id, self._known)
        work = self._own_reads(plan, df) if plan is not None else None
        if work is not None:  # each table and stream reads its own records
            self._apply_all(work, batch_id, started, -1.0)
            return
        # read once, for the summary, every table's decode and the streams: JSON checked for
        # UTF-8; Avro decoded (the streams read the records, kept too)
        raw = df.persist() if self._formats.registry is not None else None
        batch = self._formats.checked(raw if raw is not None else df).persist()
        try:
            cdc = sorted(self.tables) if self.streams else None
            look = cached(self.tables, self.streams, summarised(batch, self._formats.kind, cdc))
            read_seconds = time.monotonic() - started
            records = raw if raw is not None else batch
            tables = [(t, b, batch) for t, b in look.tables]
            work = _Work(tables, [(w, records) for w in look.streams], single_pass=False)
            self._apply_all(work, batch_id, started, read_seconds)
        finally:
            batch.unpersist()
            if raw is not None:
                raw.unpersist()

    def _own_reads(self, plan: BatchPlan, df: DataFrame) -> _Work | None:
        """The plan's tables and streams with their records: one alone reads the batch, each
        of several its own ranges (None: they cannot, so the batch takes its first look)."""
        several = len(plan.tables) + len(plan.streams) > 1
        read = self.options.read_ranges
        if several and read is None:
            return None

        def records(ranges: Ranges | None) -> DataFrame:
            if several and read is not None and ranges is not None:
                return read(self.batch_spark, ranges)
            return df

        return _Work(
            [(t, b, None if several else df) for t, b in plan.tables],
            [(w, records(w.ranges)) for w in plan.streams],
            single_pass=True,
        )

    def _apply_all(self, work: _Work, batch_id: int, started: float, read_seconds: float) -> None:
        """Apply the tables and the streams concurrently, then :meth:`_finish`
        (``read_seconds`` < 0: no first look, each read its records once). With the
        consistent tag, the batch's proof is made from every table's decoded events before
        any table commits (``spark/consistent.py``): then every table runs at once, as each
        waits for the others' decode."""
        self._size_shuffles(work)
        consistency = self.options.consistency
        if consistency is None:
            results = self._apply_tables(work, batch_id, None, self.options.parallelism)
            self._finish(batch_id, results, started, read_seconds)
            return
        tables = [t for t, _, _ in work.tables]
        with PendingProof(consistency, self.batch_spark, batch_id, tables) as proof:
            workers = max(self.options.parallelism, len(tables))
            results = self._apply_tables(work, batch_id, proof, workers)
            proven = proof.result()
        self._publish(batch_id, proven, results)
        self._finish(batch_id, results, started, read_seconds)

    def _apply_tables(
        self, work: _Work, batch_id: int, proof: PendingProof | None, workers: int
    ) -> list[_Done]:
        """The tables and streams of ``work`` on ``workers`` threads (the proof's error
        first, when it failed: the tables waiting for it fail with it)."""
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            tables = [pool.submit(self._table, t, b, r, batch_id, proof) for t, b, r in work.tables]
            single = work.single_pass
            streams = [pool.submit(self._stream, w, r, batch_id, single) for w, r in work.streams]
            if proof is not None:
                proof.result()
            return [f.result() for f in tables] + [f.result() for f in streams]

    def _publish(self, batch_id: int, proof: Proof, results: list[_Done]) -> None:
        """The consistent tag after the batch's commits (``spark/consistent.py``)."""
        consistency = self.options.consistency
        assert consistency is not None
        cdc = {t.identifier for t in self.tables.values()}
        done = [r for r in results if r.stats.table in cdc]
        at_point = {r.stats.table: r.at_point for r in done if r.at_point is not None}
        problems = [
            f"{r.stats.table}: {r.stats.stopped or f'{r.stats.dead_lettered} dead letter(s)'}"
            for r in done
            if r.stats.stopped or r.stats.dead_lettered
        ]
        line = consistency.publish(self.batch_spark, batch_id, proof, at_point, problems)
        log = logger.warning if problems else logger.info
        log("mirror batch %d: %s", batch_id, line)
        if consistency.point is not None and self.options.on_point is not None:
            self.options.on_point(consistency.point.commit_ms)

    def _size_shuffles(self, work: _Work) -> None:
        """Each batch's shuffles (the newest event per key, the classification's and the
        MERGE's joins) split into one partition per ``EVENTS_PER_PARTITION`` events, at least
        one per core and at most the session's setting: at the session's own, a small
        batch ran as many tasks of a few rows in each shuffle stage (Spark turns adaptive
        execution, which would coalesce them, off in a streaming query's session)."""
        events = sum(b.events for _, b, _ in work.tables)
        events += sum(b.events for w, _ in work.streams for b in w.topics.values())
        partitions = partitions_for(events, self._shuffle_least, self._shuffle_most)
        self.batch_spark.conf.set(SHUFFLE_PARTITIONS, str(partitions))

    # -- one table ---------------------------------------------------------------------
    def _table(
        self,
        table: MirrorTable,
        batch: TopicBatch,
        records: DataFrame | None,
        batch_id: int,
        proof: PendingProof | None,
    ) -> _Done:
        """One table's batch in a Spark job group of its own (the job group is per thread):
        the batch line counts the table's Spark jobs (``spark_jobs``). With the consistent
        tag, the table hands its decoded events' runs to the ``proof`` and waits for it
        (``split_at``), or tells it that it has none, or fails it."""
        sc = self.batch_spark.sparkContext
        group = f"cdcmirror-{batch_id}-{table.identifier}"
        sc.setJobGroup(group, f"cdcmirror batch {batch_id}: {table.identifier}")
        split_at = _split_of(proof, table)
        try:
            try:
                outcome = self._read_and_apply(table, batch, records, batch_id, split_at)
            except BaseException as exc:
                if proof is not None:
                    proof.done(table, exc)
                raise
            if proof is not None:
                proof.done(table)
            outcome.stats.spark_jobs = len(sc.statusTracker().getJobIdsForGroup(group))
            with self._lock:
                self.tables[outcome.table.topic] = outcome.table
            return _Done(outcome.stats, outcome.dead, outcome.at_point)
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
            sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]

    def _read_and_apply(
        self,
        table: MirrorTable,
        batch: TopicBatch,
        records: DataFrame | None,
        batch_id: int,
        split_at: SplitAt | None,
    ) -> TableOutcome:
        """The table's records read as ``batch.mode`` says, then applied; read once, again
        with a first look of its own when an event of another schema turned up."""
        if records is not None and batch.mode is ReadMode.CACHED:
            return self._apply(table, batch, records, batch_id, split_at)
        raw = records if records is not None else self._own_records(batch)
        if batch.mode is ReadMode.GUESSED and not batch.schemas:
            guessed = guess(raw, batch.topic, self._formats)
            if guessed:
                logger.info("%s: read once in the row schemas of its first records", batch.topic)
            batch = batch.read_in(ReadMode.GUESSED, guessed)
        if batch.mode.once and batch.schemas:
            read = once(raw, batch, self._formats)
            if read is not None:
                outcome = self._apply(table, batch, read, batch_id, split_at)
                if not outcome.new_schemas:
                    return outcome
                logger.info(
                    "%s: %d event(s) of a new row schema; read again with a first look",
                    table.identifier,
                    outcome.new_schemas,
                )
        logger.info("%s: a first look at its records", batch.topic)
        fresh = self._own_records(batch) if records is None else raw
        looked, found = first_look(fresh, batch, self._formats)
        try:
            return self._apply(table, found, looked, batch_id, split_at)
        finally:
            looked.unpersist()

    def _own_records(self, batch: TopicBatch) -> DataFrame:
        """A new read of the table's own ranges (a read per call: a read once that must be
        read again takes a new one)."""
        read = self.options.read_ranges
        assert read is not None and batch.ranges is not None, "a table reading its own ranges"
        return read(self.batch_spark, batch.ranges)

    def _apply(
        self,
        table: MirrorTable,
        batch: TopicBatch,
        records: DataFrame,
        batch_id: int,
        split_at: SplitAt | None,
    ) -> TableOutcome:
        query = self.query_id or ""
        return apply_table(
            self.batch_spark, records, table, batch, batch_id, query, self._settings, split_at
        )

    # -- one stream ----------------------------------------------------------------------
    def _stream(
        self, work: StreamWork, records: DataFrame, batch_id: int, single_pass: bool
    ) -> _Done:
        evolve = self.hooks.evolve_stream
        assert evolve is not None, "a job with streams evolves them"
        registry = self.options.stream_registry
        with self._lock:
            table = self.streams[work.table.identifier]
        stream = StreamBatch(self.batch_spark, table, evolve, self._formats.frames, registry)
        query = self.query_id or ""
        stats, done, dead = stream.apply_topics(records, query, batch_id, work.topics, single_pass)
        with self._lock:
            self.streams[table.identifier] = done
        return _Done(stats, dead)

    # -- the batch's end -----------------------------------------------------------------
    def _finish(
        self,
        batch_id: int,
        results: list[_Done],
        started: float,
        read: float,
    ) -> None:
        """After the tables: the dead letters, the batch's log lines, maintenance."""
        dead = [r.dead for r in results if r.dead is not None]
        stats = [r.stats for r in results]
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
        histories = {t.identifier: t.history for t in self.tables.values() if t.history}
        names = [t.identifier for t in self.tables.values()] + list(self.streams)
        names += histories.values()
        tombstones = self._settings.tombstones
        written = [s.table for s in stats if s.events]
        written += [histories[name] for name in written if name in histories]
        graves = [tombstones.identifier_of(s.table) for s in stats if s.entombed]
        between_batches(
            self.spark,
            batch_id,
            names,
            tombstones.made(),
            self.options.maintenance,
            logger,
            applied=written,
            entombed=graves,
        )
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


def _split_of(proof: PendingProof | None, table: MirrorTable) -> SplitAt | None:
    """Where ``table``'s batch splits at the consistent point (None: no tag): asked for once
    the table's events are decoded, with them, when the proof is made."""
    if proof is None:
        return None
    return lambda decoded: proof.split_at(table, decoded)


def partitions_for(events: int, least: int, most: int) -> int:
    """The shuffle partitions of a batch of ``events`` events.

    >>> [partitions_for(n, 2, 8) for n in (0, 100, 4_000, 4_001, 10_000, 1_000_000)]
    [2, 2, 2, 3, 5, 8]
    """
    return max(min(least, most), min(most, -(-events // EVENTS_PER_PARTITION)))
