"""A source's consistent point, batch by batch (DESIGN.md, "A consistent database"; the proof
is ``mirror/consistent_point.py``): each table decodes its events with their transactions
(``_cdc_tx``) and hands its runs of them to the batch's proof (:class:`PendingProof`, which
meanwhile reads the transaction topic); the proof is made once every table of the batch has
handed them in, before any table commits, and a table whose batch goes past the new point
applies it in two commits (``spark/cdc/table.py``); after them every mirrored table's tag
moves to its snapshot at the point (:meth:`ConsistentTag.publish`).

The ledger the proof carries from batch to batch is kept beside the streaming checkpoint,
one file per batch (``LedgerStore``): a batch run again starts from the ledger of the batch
before it, so it proves what it proved the first time. The tag only moves forward: every
snapshot tagged records a high-water mark at or before the point, or the point stays (a
batch run again can find a table already past the point)."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from cdcmirror.exceptions import MirrorError
from cdcmirror.mirror.avro import WriterSchemas
from cdcmirror.mirror.consistent_point import (
    Batch,
    Ledger,
    Point,
    Position,
    Step,
    advance,
    held_back,
    lag_seconds,
)
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.mirror.transaction_metadata import (
    ChangeRun,
    Published,
    batch_of,
    decoded_runs_sql,
    past_point,
    runs_of,
)
from cdcmirror.spark.avro_frames import AvroFrames
from cdcmirror.spark.iceberg import (
    empty_snapshot,
    publish_point,
    publish_point_at_once,
    snapshot_and_mark,
)
from cdcmirror.sql_text import spark_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

logger = logging.getLogger("cdcmirror.mirror")


TransactionReader = Callable[[str, int], tuple[list[tuple[int, bytes | None]], int]]
"""How the proof reads the transaction topic: its records from an offset to its end now, as
(offset, value), and the offset after them (``stack/health.records_from``, the job's Kafka
client): a few records a batch, read without a Spark job."""


class LedgerStore(Protocol):
    """Where the ledger is kept between batches (``checkpoint_store.ConsistentLedgers``)."""

    def before(self, batch_id: int) -> Ledger | None:
        """The ledger the newest batch before ``batch_id`` left (None: none was kept)."""

    def save(self, batch_id: int, ledger: Ledger) -> None:
        """Keep the ledger ``batch_id`` leaves."""


@dataclass(frozen=True)
class Proof:
    """A batch's proof: the ledger it started from, what it read, the step it makes."""

    before: Ledger
    batch: Batch
    step: Step

    def split_at(self, table: MirrorTable) -> Position | None:
        """The position at which ``table``'s batch is applied in two commits (None: one)."""
        point = self.step.ledger.point
        if not self.step.moved or point is None or table.source not in self.step.split:
            return None
        return point.position


def table_runs(decoded: DataFrame, table: MirrorTable) -> list[ChangeRun]:
    """The runs of ``table``'s decoded events of a batch (with ``_cdc_tx``): one small job
    over the kept events (``transaction_metadata.decoded_runs_sql``)."""
    spark = decoded.sparkSession
    view = f"_cdcm_runs_{uuid.uuid4().hex}"
    decoded.createOrReplaceTempView(view)
    try:
        row = spark.sql(decoded_runs_sql(view, table.dialect)).collect()[0]
    finally:
        spark.catalog.dropTempView(view)
    return runs_of(table.topic, row["runs"])


class PendingProof:
    """A batch's proof, made on a thread of its own: it reads the transaction topic, then
    waits for the runs of every table of the batch (``tables``), each handed in by the
    table once its events are decoded (:meth:`split_at`, or :meth:`done` for a table that
    decoded none), and advances the point; the tables wait for it before their first
    commit. Every table of the batch must run at once (a table waiting here holds its
    thread). Used as a context manager by the batch: leaving it waits for the proof's
    thread, so that a batch run again never proves beside the run before it."""

    def __init__(
        self,
        tag: ConsistentTag,
        spark: SparkSession,
        batch_id: int,
        tables: Sequence[MirrorTable],
    ) -> None:
        self._runs: dict[str, Future[list[ChangeRun]]] = {t.identifier: Future() for t in tables}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cdcmirror-proof")
        self._future: Future[Proof] = self._pool.submit(
            _prove_in_group, tag, spark, batch_id, self._collected
        )

    def result(self) -> Proof:
        """The proof (its error, when it failed)."""
        return self._future.result()

    def split_at(self, table: MirrorTable, decoded: DataFrame) -> Position | None:
        """:meth:`Proof.split_at`, once the proof is made with ``table``'s runs of its
        ``decoded`` events (handed in by the table's own thread, once)."""
        future = self._runs[table.identifier]
        if not future.done():
            try:
                runs = table_runs(decoded, table)
            except BaseException as exc:  # the proof fails with it
                future.set_exception(exc)
                raise
            future.set_result(runs)
        return self.result().split_at(table)

    def done(self, table: MirrorTable, error: BaseException | None = None) -> None:
        """``table``'s share of the batch is over: when it handed in no runs, it has none
        (it decoded no events: none in the batch, or a stopped table), or its ``error``
        fails the proof, and every table waiting for it."""
        future = self._runs[table.identifier]
        if future.done():
            return
        if error is None:
            future.set_result([])
        else:
            future.set_exception(error)

    def _collected(self) -> list[ChangeRun]:
        """Every table's runs, once all are handed in; a table's error, as it raised it (the
        batch's retry judges it, ``spark/batches.py``), when one failed."""
        wait(self._runs.values(), return_when=FIRST_EXCEPTION)
        for future in self._runs.values():
            if future.done() and (error := future.exception()) is not None:
                raise error
        return [run for future in self._runs.values() for run in future.result()]

    def __enter__(self) -> PendingProof:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for future in self._runs.values():  # the batch failed before the table began
            if not future.done():
                future.set_exception(MirrorError("the batch stopped before its proof"))
        self._pool.shutdown(wait=True)


def _prove_in_group(
    tag: ConsistentTag,
    spark: SparkSession,
    batch_id: int,
    collected: Callable[[], list[ChangeRun]],
) -> Proof:
    """:meth:`ConsistentTag.prove` in a Spark job group of its own (the group is per thread),
    so that no table's batch line counts the proof's jobs."""
    sc = spark.sparkContext
    sc.setJobGroup(f"cdcmirror-{batch_id}-proof", f"cdcmirror batch {batch_id}: the proof")
    return tag.prove(spark, batch_id, collected)


@dataclass
class ConsistentTag:
    """The consistent tag of one source's mirrored tables."""

    tag: str
    dialect: str
    schemas: bool  # JSON with schemas
    transaction_topic: str
    read_transactions: TransactionReader
    store: LedgerStore
    tables: Sequence[MirrorTable]  # every keyed and keyless table of the job
    registry: WriterSchemas | None = None  # Avro events: their writer schemas
    point: Point | None = field(default=None)  # the newest published, for the metrics
    waiting: str | None = field(default=None)  # why the point did not move, for the log
    _frames: AvroFrames = field(default_factory=AvroFrames)
    # False once the catalog proved to have no multi-table commit (it will not get one)
    _at_once: bool = field(default=True)

    def prove(
        self, spark: SparkSession, batch_id: int, collected: Callable[[], Sequence[ChangeRun]]
    ) -> Proof:
        """Advance the point over the transaction records written since the ledger's and the
        batch's runs of changes, every table's (``collected``: they come as the tables
        decode their events)."""
        kept = self.store.before(batch_id)
        before = kept if kept is not None else self._first_ledger(spark, batch_id)
        if self.point is None:
            self.point = before.point
        markers, next_offset = self.read_transactions(self.transaction_topic, before.next_offset)
        texts = self._marker_texts(spark, markers)
        collections = {t.topic: t.source for t in self.tables}
        batch = batch_of(
            collected(),
            collections,
            texts,
            self.dialect,
            self.schemas and self.registry is None,
            next_offset,
        )
        loaded = {t.source: t.read_through for t in self.tables if t.read_through is not None}
        step = advance(before, batch, frozenset(collections.values()), loaded)
        return Proof(before, batch, step)

    def _marker_texts(
        self, spark: SparkSession, markers: Sequence[tuple[int, bytes | None]]
    ) -> list[tuple[int, str]]:
        """The transaction topic's records as (offset, JSON text)."""
        present = [(o, v) for o, v in markers if v is not None]
        if self.registry is None or not present:
            return [(o, v.decode("utf-8", "replace")) for o, v in present]
        topic = self.transaction_topic
        frame = spark.createDataFrame(
            [(topic, 0, o, v) for o, v in present],
            "topic string, partition int, offset long, value binary",
        )
        # read by Spark (``avro_frames.py``) into the text the schemaless JSON converter writes
        texts = self._frames.decode_batch(frame, self.registry)
        rows = texts.select("offset", "_cdc_json").collect()
        return [(int(r["offset"]), str(r["_cdc_json"])) for r in rows if r["_cdc_json"] is not None]

    def _first_ledger(self, spark: SparkSession, batch_id: int) -> Ledger:
        """A ledger from the point the tables name (a new mirror, or a lost checkpoint): the
        transaction topic read from after the point's END. Tables naming two points (a job
        stopped while it moved the tags) start from the newer: the job resumes each table
        from the batch of its tagged snapshot, so every change after it comes again."""
        from cdcmirror.spark.iceberg import published_point

        named = []
        for t in self.tables:
            found = published_point(spark, spark_name(t.identifier), self.tag)
            if found is not None:
                named.append(Point.parse(found[1]))
        if not named:
            logger.info(
                "consistent tag %s: no ledger before batch %d and no table tagged: a ledger "
                "from the transaction topic's start",
                self.tag,
                batch_id,
            )
            return Ledger()
        point = max(named, key=lambda p: p.offset)
        logger.info(
            "consistent tag %s: resuming from the point %s (%d of %d table(s) tagged, at %d "
            "point(s))",
            self.tag,
            point.tx,
            len(named),
            len(self.tables),
            len(set(named)),
        )
        return Ledger(point, next_offset=point.offset + 1)

    def publish(
        self,
        spark: SparkSession,
        batch_id: int,
        proof: Proof,
        at_point: Mapping[str, Published],
        problems: Sequence[str],
    ) -> str:
        """After the batch's commits: move every table's tag to its snapshot at the point,
        when the batch proved a new one that every table can name, and keep the ledger;
        ``at_point``: the snapshot of each table applied in two commits; ``problems``: why
        a change of the batch was not applied (then the point stays for good). A line for
        the batch's log."""
        step, point = proof.step, proof.step.ledger.point
        if problems:
            why = f"a change of the window was not applied ({'; '.join(problems)})"
            held = replace(held_back(proof.before, proof.batch), held=why)
            self.store.save(batch_id, held)
            return self._stays(why)
        if not step.moved or point is None:
            self.store.save(batch_id, step.ledger)
            return self._stays(step.waiting or "no transaction completed")
        started = time.monotonic()
        chosen: dict[str, int] = {}
        for t in self.tables:
            target = spark_name(t.identifier)
            found = at_point.get(t.identifier)
            if found is None:
                snapshot_id, mark = snapshot_and_mark(spark, target)
                if snapshot_id is None:
                    empty_snapshot(spark, target)
                    snapshot_id, mark = snapshot_and_mark(spark, target)
                found = Published(snapshot_id, mark)
            if found.snapshot_id is None or past_point(found.mark, point.position):
                self.store.save(batch_id, held_back(proof.before, proof.batch))
                why = f"{t.identifier} holds changes past the point (a batch run again)"
                return self._stays(why)
            chosen[t.identifier] = found.snapshot_id
        text = point.text()
        at_once = self._at_once and publish_point_at_once(spark, self.tag, chosen, text)
        self._at_once = at_once
        if not at_once:
            for t in self.tables:
                target = spark_name(t.identifier)
                publish_point(spark, target, self.tag, chosen[t.identifier], text)
        self.store.save(batch_id, step.ledger)
        self.point, self.waiting = point, step.waiting
        lag = lag_seconds(point, int(time.time() * 1000))
        return (
            f"consistent tag {self.tag} at transaction {point.tx} (committed {lag:.1f} s ago) "
            f"on {len(chosen)} table(s){' in one catalog commit' if at_once else ''} in "
            f"{time.monotonic() - started:.2f} s"
            + (f"; the next waits: {step.waiting}" if step.waiting else "")
        )

    def _stays(self, why: str) -> str:
        self.waiting = why
        where = f"at transaction {self.point.tx}" if self.point else "not set yet"
        return f"consistent tag {self.tag} stays ({where}): {why}"
