"""A source's consistent point, batch by batch (DESIGN.md, "A consistent database"; the proof
is ``mirror/consistent_point.py``): before the tables apply, the batch's transaction records
and change orders are read and the point advanced (:meth:`ConsistentTag.prove`); the tables
whose batch goes past the new point apply it in two commits (``spark/cdc/table.py``); after
them every mirrored table's tag moves to its snapshot at the point (:meth:`publish`).

The ledger the proof carries from batch to batch is kept beside the streaming checkpoint,
one file per batch (``LedgerStore``): a batch run again starts from the ledger of the batch
before it, so it proves what it proved the first time. The tag only moves forward: every
snapshot tagged records a high-water mark at or before the point, or the point stays (a
batch run again can find a table already past the point)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

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
    change_ddl,
    changes_sql,
    past_point,
)
from cdcmirror.spark.iceberg import empty_snapshot, publish_point, snapshot_and_mark
from cdcmirror.spark.kafka import read_topic_from
from cdcmirror.sql_text import spark_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

logger = logging.getLogger("cdcmirror.mirror")


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


@dataclass
class ConsistentTag:
    """The consistent tag of one source's mirrored tables."""

    tag: str
    dialect: str
    schemas: bool  # JSON with schemas
    transaction_topic: str
    kafka_options: Mapping[str, str]
    store: LedgerStore
    tables: Sequence[MirrorTable]  # every keyed and keyless table of the job
    point: Point | None = field(default=None)  # the newest published, for the metrics
    waiting: str | None = field(default=None)  # why the point did not move, for the log

    def prove(self, spark: SparkSession, records: DataFrame, batch_id: int) -> Proof:
        """Advance the point over the batch's ``records`` (every table's, as the stream
        hands them over) and the transaction records written since the ledger's."""
        from pyspark.sql import functions as F

        before = self.store.before(batch_id) or self._first_ledger(spark)
        if self.point is None:
            self.point = before.point
        markers, next_offset = read_topic_from(
            spark, self.kafka_options, self.transaction_topic, before.next_offset
        )
        topics = [t.topic for t in self.tables]
        view = f"_cdcm_tx_{abs(batch_id)}"
        parsed = records.where(F.col("topic").isin(topics)).where("value IS NOT NULL")
        ddl = change_ddl(self.dialect, self.schemas)
        parsed = parsed.withColumn("e", F.from_json(F.expr("CAST(value AS STRING)"), ddl))
        parsed.createOrReplaceTempView(view)
        try:
            rows = spark.sql(changes_sql(view, self.dialect, self.schemas)).collect()
        finally:
            spark.catalog.dropTempView(view)
        runs = [
            ChangeRun(r["topic"], r["tx"], int(r["lo"]), int(r["hi"]), tuple(r["newest"]))
            for r in rows
        ]
        collections = {t.topic: t.source for t in self.tables}
        batch = batch_of(
            runs,
            collections,
            [(o, v) for o, v in markers if v is not None],
            self.dialect,
            self.schemas,
            next_offset,
        )
        step = advance(before, batch, frozenset(collections.values()))
        return Proof(before, batch, step)

    def _first_ledger(self, spark: SparkSession) -> Ledger:
        """A ledger from the point the tables name (a new mirror, or a lost checkpoint): the
        transaction topic read from after the point's END."""
        from cdcmirror.spark.iceberg import published_point

        texts = []
        for t in self.tables:
            found = published_point(spark, spark_name(t.identifier), self.tag)
            texts.append(found[1] if found else None)
        named = {t for t in texts if t is not None}
        if len(named) == 1 and None not in texts:
            point = Point.parse(named.pop())
            logger.info("consistent tag %s: resuming from the point %s", self.tag, point.tx)
            return Ledger(point, next_offset=point.offset + 1)
        return Ledger()

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
        for t in self.tables:
            publish_point(spark, spark_name(t.identifier), self.tag, chosen[t.identifier], text)
        self.store.save(batch_id, step.ledger)
        self.point, self.waiting = point, step.waiting
        lag = lag_seconds(point, int(time.time() * 1000))
        return (
            f"consistent tag {self.tag} at transaction {point.tx} (committed {lag:.1f} s ago) "
            f"on {len(chosen)} table(s)"
            + (f"; the next waits: {step.waiting}" if step.waiting else "")
        )

    def _stays(self, why: str) -> str:
        self.waiting = why
        where = f"at transaction {self.point.tx}" if self.point else "not set yet"
        return f"consistent tag {self.tag} stays ({where}): {why}"
