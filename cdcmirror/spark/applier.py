"""The mirror's ``foreachBatch``: decode, dedupe by source position, MERGE into Iceberg.

Per micro-batch:

1. one small aggregate over the batch gives, per topic and partition, the event count, the
   end offset and the distinct row schemas (``spark/batch_evolution.py`` evolves to each);
2. each table with events is applied on its own thread (merges of different tables run
   concurrently): decode (``mirror/envelope.py``), dead-letter what cannot be applied,
   truncate, dedupe, classify against the stored positions, record tombstones, MERGE
   (``mirror/merge_sql.py``). Every commit carries the query id, batch id and the table's
   Kafka end offsets in its snapshot summary;
3. the dead letters of the batch are merged into the dead-letter table (keyed by topic,
   partition and offset, so a re-run adds nothing);
4. one structured log line per table.

A table whose events need a change the mirror must not make (incompatible type change) is
stopped: its events go to the dead-letter table with the reason, other tables go on.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from cdcmirror.exceptions import CdcMirrorError
from cdcmirror.mirror.carriers import DECIMAL_TEXT_UDF, decimal_text
from cdcmirror.mirror.envelope import (
    JSON_OPTIONS,
    NOT_UTF8_SQL,
    checked_exprs,
    decoded_exprs,
    envelope_ddl,
    q,
    raw_rows_sql,
    source_length,
    spark_name,
    wire_exprs,
)
from cdcmirror.mirror.evolution import Evolution, distinct_schemas_sql
from cdcmirror.mirror.key_change import (
    applied_count_sql,
    applies_at_create,
    key_changes_at_create_sql,
)
from cdcmirror.mirror.key_range import bounds_exprs, bounds_of
from cdcmirror.mirror.mariadb_uuid import suspect_sql
from cdcmirror.mirror.merge_sql import (
    append_merge_sql,
    classify_sql,
    dedupe_sql,
    merge_sql,
    newer,
    tombstone_merge_sql,
    truncate_sql,
)
from cdcmirror.mirror.positions import behind_truncate_sql, history_restarted_message, later_mark
from cdcmirror.mirror.registry import SchemaRegistry
from cdcmirror.mirror.resume import batch_summary
from cdcmirror.mirror.spec import TRUNCATED_PROPERTY, TRUNCATED_TS_PROPERTY, MirrorTable
from cdcmirror.mirror.toast_chain import (
    key_change_with_placeholders,
    unknown_columns_sql,
    unknown_sql,
)
from cdcmirror.spark.avro_frames import AvroFrames
from cdcmirror.spark.batch_evolution import BatchEvolution
from cdcmirror.spark.batch_gate import BatchGate
from cdcmirror.spark.conflicts import retry_on_conflict
from cdcmirror.spark.history_gap import history_restarted
from cdcmirror.spark.maintenance import MaintainSettings
from cdcmirror.spark.rejected_schemas import reject_schemas
from cdcmirror.spark.suspect_uuids import report_suspect_uuids

logger = logging.getLogger("cdcmirror.mirror")

HEADERS_TYPE = "ARRAY<STRUCT<key: STRING, value: BINARY>>"  # Kafka headers, as Spark reads them
DEAD_LETTER_COLUMNS = (
    "topic STRING, partition INT, offset BIGINT, key BINARY, value BINARY, error STRING, "
    "table_name STRING, query_id STRING, batch_id BIGINT, dead_lettered_at TIMESTAMP, "
    f"headers {HEADERS_TYPE}"
)


FAULT_ENV = "CDCMIRROR_FAULT"  # crash tests only; see Applier._with_props
FAULT_EXIT = 86


class MirrorError(CdcMirrorError):
    """The mirror cannot apply a batch (the message names the table and offsets)."""


@dataclass
class TableStats:
    table: str
    events: int = 0
    inserts: int = 0
    updates: int = 0
    deletes: int = 0
    duplicates: int = 0
    stale: int = 0
    dead_lettered: int = 0
    truncates: int = 0
    merge_seconds: float = 0.0
    table_seconds: float = 0.0  # everything for this table: decode, dedupe, classify, write
    # at the table's commit, from the source commit time of the batch's applicable events:
    # the newest event's delay, the median event's and the oldest event's
    lag_seconds: float | None = None
    lag_p50_seconds: float | None = None
    lag_max_seconds: float | None = None
    offsets: dict[int, int] = field(default_factory=dict)  # partition -> last offset
    starts: dict[int, int] = field(default_factory=dict)  # partition -> first offset
    stopped: str | None = None
    suspect_uuids: int = 0  # MariaDB UUID values that may have arrived shifted

    def committed(
        self, now: float, newest_us: int | None, median_us: int | None, oldest_us: int | None
    ) -> None:
        """Record the lags at commit time ``now`` (epoch seconds), from source commit times
        in epoch microseconds (None: the batch had no applicable event for this table).

        >>> s = TableStats("t")
        >>> s.committed(100.0, 99_000_000, 97_000_000, 90_000_000)
        >>> (s.lag_seconds, s.lag_p50_seconds, s.lag_max_seconds)
        (1.0, 3.0, 10.0)
        """
        if newest_us is None or median_us is None or oldest_us is None:
            return
        self.lag_seconds = now - newest_us / 1e6
        self.lag_p50_seconds = now - median_us / 1e6
        self.lag_max_seconds = now - oldest_us / 1e6

    def line(self, batch_id: int) -> str:
        out = {"batch": batch_id, **self.__dict__}
        out["offsets"] = {str(k): v for k, v in self.offsets.items()}
        out["starts"] = {str(k): v for k, v in self.starts.items()}
        out["merge_seconds"] = round(self.merge_seconds, 3)
        out["table_seconds"] = round(self.table_seconds, 3)
        for name in ("lag_seconds", "lag_p50_seconds", "lag_max_seconds"):
            if out[name] is not None:
                out[name] = round(out[name], 3)
        return json.dumps(out, sort_keys=True)


@dataclass(frozen=True)
class ApplierOptions:
    schemas: bool  # JSON converter with embedded schemas
    soft_deletes: bool
    fail_on_dead_letter: bool
    internal_namespace: str  # tombstones and the dead-letter table
    parallelism: int = 4
    maintain_every: int = 0  # run `maintain` on the mirrored tables every N batches (0: off)
    maintain_settings: MaintainSettings | None = None
    registry: SchemaRegistry | None = None  # Avro in the Confluent wire format
    # what is wrong with the source connector (FAILED, PAUSED), None when it runs
    source_health: Callable[[], str | None] | None = None


class CatalogHooks:
    """What the applier needs from the catalog (pyiceberg), passed in by the job."""

    def __init__(
        self,
        reload: Callable[[MirrorTable], MirrorTable],
        evolve: Callable[[MirrorTable, Evolution], MirrorTable],
    ) -> None:
        self.reload = reload
        self.evolve = evolve


class Applier:
    def __init__(
        self,
        spark: Any,
        tables: dict[str, MirrorTable],
        options: ApplierOptions,
        hooks: CatalogHooks,
    ) -> None:
        self.spark = spark
        self.tables = dict(tables)  # topic -> table
        self.options = options
        self.hooks = hooks
        self.query_id: str | None = None
        self.batch_spark = spark
        self._lock = threading.Lock()
        self.gate = BatchGate()
        self._avro = AvroFrames()
        self._tombstone_keys: dict[str, tuple[str, ...]] = {}  # tombstone table -> key types
        self._kind = (
            "avro" if options.registry is not None else "json" if options.schemas else "schemaless"
        )
        self.evolution = BatchEvolution(
            self._kind, options.registry, hooks.reload, hooks.evolve, self._remember
        )
        spark.udf.register(DECIMAL_TEXT_UDF, decimal_text, "string")
        self.dead_letter_table = f"{options.internal_namespace}.dead_letter"
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {q(options.internal_namespace)}")
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS {spark_name(self.dead_letter_table)} "
            f"({DEAD_LETTER_COLUMNS}) USING iceberg TBLPROPERTIES ('format-version'='2')"
        )
        dead_columns = spark.table(spark_name(self.dead_letter_table)).columns
        if "headers" not in dead_columns:  # made by an older cdcmirror: replays need headers
            spark.sql(
                f"ALTER TABLE {spark_name(self.dead_letter_table)} "
                f"ADD COLUMNS (headers {HEADERS_TYPE})"
            )

    def _remember(self, table: MirrorTable) -> None:
        with self._lock:
            self.tables[table.topic] = table

    # -- the batch ---------------------------------------------------------------------
    def process(self, df: Any, batch_id: int) -> None:
        with self.gate.batch():  # a stop waits for it (spark/batch_gate.py)
            self._process(df, batch_id)

    def _process(self, df: Any, batch_id: int) -> None:
        started = time.monotonic()
        # foreachBatch hands over a frame of its own session: temp views and SQL must use it
        self.batch_spark = df.sparkSession
        df = df.persist()
        raw = None
        if self.options.registry is not None:
            raw, df = df, self._from_avro(df).persist()
        try:
            summary = self._summary(df)
            work = []
            for topic, parts in summary.items():
                table = self.tables.get(topic)
                if table is None:
                    continue
                work.append((table, parts))
            with ThreadPoolExecutor(max_workers=max(1, self.options.parallelism)) as pool:
                futures = [
                    pool.submit(self._apply_table, df, batch_id, table, parts)
                    for table, parts in work
                ]
                results = [f.result() for f in futures]
            dead = [d for _, d in results if d is not None]
            stats = [s for s, _ in results]
            if dead:
                self._dead_letter(dead, batch_id)
            for s in stats:
                log = logger.error if s.stopped else logger.info
                log("mirror batch %s", s.line(batch_id))
            problem = self.options.source_health() if self.options.source_health else None
            if problem:
                logger.error("mirror batch %d: %s", batch_id, problem)
            every = self.options.maintain_every
            if every and batch_id > 0 and batch_id % every == 0:
                self._maintain()
            logger.info(
                "batch %d done in %.2fs (decode, apply, dead letters)",
                batch_id,
                time.monotonic() - started,
            )
        finally:
            df.unpersist()
            if raw is not None:
                raw.unpersist()

    def _from_avro(self, df: Any) -> Any:
        """Adds ``_json`` (the Avro value as the JSON converter's text), ``_decode_error`` and
        ``_schema_id``; the schemas of the batch's ids are fetched once, on the driver."""
        assert self.options.registry is not None
        framed = self._avro.with_ids(df)
        ids = [
            int(r[0])
            for r in framed.select("_schema_id")
            .where("_schema_id IS NOT NULL")
            .distinct()
            .collect()
        ]
        return self._avro.decode(framed, self.options.registry.schemas(ids))

    def _maintain(self) -> None:
        """`cdcmirror maintain` inside the job, between batches (mirror.maintain_every)."""
        from cdcmirror.spark.maintenance import maintain_table

        settings = self.options.maintain_settings or MaintainSettings()
        for table in list(self.tables.values()):
            done = maintain_table(self.spark, table.identifier, settings, logger.debug)
            logger.info(
                "maintained %s: %d -> %d data files, %d -> %d delete files",
                table.identifier,
                done.before.data_files,
                done.after.data_files,
                done.before.delete_files,
                done.after.delete_files,
            )

    def _summary(self, df: Any) -> dict[str, dict[str, Any]]:
        rows = (
            df.groupBy("topic", "partition")
            .agg(
                _expr("count(value) AS events"),
                _expr("min(offset) AS start_offset"),
                _expr("max(offset) AS end_offset"),
                _expr(f"{distinct_schemas_sql(self._kind)} AS schemas"),
            )
            .collect()
        )
        out: dict[str, dict[str, Any]] = {}
        for r in rows:
            t = out.setdefault(
                r.topic, {"events": 0, "offsets": {}, "starts": {}, "schemas": set()}
            )
            t["events"] += r.events
            t["offsets"][int(r.partition)] = int(r.end_offset)
            t["starts"][int(r.partition)] = int(r.start_offset)
            t["schemas"].update(r.schemas or [])
        return out

    # -- one table ---------------------------------------------------------------------
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
                return stats, self._raw_dead(events, f"table stopped: {verdict.stop}", table)
            rejected, events = reject_schemas(
                events, self._kind, table, verdict.rejected, self._raw_dead, stats
            )
            decoded = self._decode(events, table).persist()
            try:
                dead = self._apply_decoded(decoded, batch_id, table, stats)
            finally:
                decoded.unpersist()
                stats.table_seconds = time.monotonic() - started
            if rejected is not None:
                stats.dead_lettered += rejected[1]
                dead = rejected[0] if dead is None else dead.unionByName(rejected[0])
            return stats, dead
        except CdcMirrorError:
            raise
        except Exception as exc:
            raise MirrorError(
                f"{table.identifier}: batch {batch_id} failed (topic {table.topic}, "
                f"partition:end offset {where}): {exc}"
            ) from exc

    def _decode(self, events: Any, table: MirrorTable) -> Any:
        from pyspark.sql import functions as F

        avro = self.options.registry is not None
        text = F.col("_json") if avro else F.col("value").cast("string")
        schemas = self.options.schemas
        parsed = events.withColumn(
            "env", F.from_json(text, envelope_ddl(table, schemas), JSON_OPTIONS)
        ).withColumn("_raw", F.expr(raw_rows_sql("env", schemas)))
        return (
            parsed.selectExpr(
                *wire_exprs(table, schemas, "_decode_error" if avro else NOT_UTF8_SQL)
            )
            .selectExpr(*decoded_exprs(table))
            .selectExpr(*checked_exprs(table))
        )

    def _apply_decoded(
        self, decoded: Any, batch_id: int, table: MirrorTable, stats: TableStats
    ) -> Any:
        spark = self.batch_spark
        ts = "IF(_error IS NULL, unix_micros(_cdc_source_ts), NULL)"
        n = source_length(table.dialect)
        agg = decoded.selectExpr(  # one pass; bounds over every event are still bounds
            "count_if(_error IS NOT NULL) AS bad",
            f"max({ts}) AS newest_us",
            f"percentile_approx({ts}, 0.5) AS median_us",
            f"min({ts}) AS oldest_us",
            "max(IF(_error IS NULL AND _cdc_op = 't', _cdc_position, NULL)) AS truncated_at",
            "max_by(IF(_error IS NULL AND _cdc_op = 't', unix_micros(_cdc_source_ts), NULL), "
            "IF(_error IS NULL AND _cdc_op = 't', _cdc_position, NULL)) AS truncated_ts",
            f"{behind_truncate_sql(table.truncated_at, table.truncated_ts_us, n)} "
            "AS behind_truncate",
            "count_if(_error IS NULL AND _cdc_op = 't') AS truncates",
            f"{applied_count_sql(table)} AS applied",
            f"count_if(_error IS NULL AND {key_change_with_placeholders(table)}) "
            "AS key_change_fills",
            *bounds_exprs(table),
            f"count_if(_error IS NULL AND ({suspect_sql(table) or 'false'})) AS suspect_uuids",
        ).first()
        bounds = bounds_of(table, agg.asDict())
        source_us = (agg.newest_us, agg.median_us, agg.oldest_us)
        stats.dead_lettered = agg.bad
        stats.suspect_uuids = agg.suspect_uuids
        if agg.suspect_uuids:
            report_suspect_uuids(decoded, table, agg.suspect_uuids)
        bad = decoded.where("_error IS NOT NULL")
        dead = self._dead_letters(bad, table) if stats.dead_lettered else None
        good = decoded.where("_error IS NULL")
        target = spark_name(table.identifier)
        soft = self.options.soft_deletes
        props = batch_summary(
            self.query_id or "", batch_id, table.topic, stats.starts, stats.offsets
        )
        view = f"_cdcm_{abs(hash(table.identifier))}_{abs(batch_id)}"
        applied = good.where("_cdc_op IN ('c', 'u', 'd', 'r')")
        if agg.behind_truncate:
            raise MirrorError(
                history_restarted_message(
                    table.identifier,
                    agg.behind_truncate,
                    f"the table's last TRUNCATE is at {list(table.truncated_at)}, committed "
                    f"{table.truncated_ts_us} us after the epoch",
                )
            )
        truncated_at = list(table.truncated_at)
        if agg.truncated_at is not None:
            stats.truncates = agg.truncates
            batch_mark = [int(x) for x in agg.truncated_at]
            truncated_at = later_mark(truncated_at, batch_mark, source_length(table.dialect))
            ts_us = agg.truncated_ts if truncated_at == batch_mark else table.truncated_ts_us
            literal = _array_literal(truncated_at)
            self._with_props(
                props,
                lambda: spark.sql(
                    f"ALTER TABLE {target} SET TBLPROPERTIES "
                    f"('{TRUNCATED_PROPERTY}' = '{json.dumps(truncated_at)}', "
                    f"'{TRUNCATED_TS_PROPERTY}' = '{ts_us if ts_us is not None else ''}')"
                ),
            )
            self._with_props(props, lambda: spark.sql(truncate_sql(table, target, literal, soft)))
            self._remember(replace(table, truncated_at=tuple(truncated_at), truncated_ts_us=ts_us))
        if truncated_at:
            n = source_length(table.dialect)
            applied = applied.where(newer("_cdc_position", _array_literal(truncated_at), n))
        started = time.monotonic()
        if table.mode == "append" or not table.key:
            applied.createOrReplaceTempView(view + "_events")
            try:
                sql = append_merge_sql(table, target, view + "_events")
                self._with_props(props, lambda: spark.sql(sql))
            finally:
                spark.catalog.dropTempView(view + "_events")
            stats.inserts = applied.count() if truncated_at else agg.applied
            stats.merge_seconds = time.monotonic() - started
            stats.committed(time.time(), *source_us)
            return dead
        events = applied
        if applies_at_create(table):
            applied.createOrReplaceTempView(view + "_decoded")
            events = spark.sql(key_changes_at_create_sql(table, view + "_decoded", applied.columns))
        events.createOrReplaceTempView(view + "_events")
        tombstones = None
        if not soft:
            tombstones = self._tombstone_table(table)
        deduped = spark.sql(dedupe_sql(table, view + "_events"))
        if agg.key_change_fills:
            from cdcmirror.spark.key_chains import fill_key_chains

            deduped = fill_key_chains(
                spark, table, deduped, view + "_events", target, view, soft, bounds or {}
            )
        deduped.createOrReplaceTempView(view + "_deduped")
        # Computed once, before anything is written: a recomputation after the MERGE below
        # would classify against the new state (localCheckpoint is eager and cuts lineage).
        changes = spark.sql(
            classify_sql(table, view + "_deduped", target, tombstones, soft, bounds)
        ).localCheckpoint(eager=True)
        try:
            changes.createOrReplaceTempView(view + "_changes")
            rows = (
                changes.groupBy("_action")
                .agg(
                    _expr("count(*) AS n"),
                    _expr(f"count_if({unknown_sql(table)}) AS unknown"),
                    _expr("count_if(_backwards) AS backwards"),
                )
                .collect()
            )
            if sum(r.backwards for r in rows):  # before anything of this table is written
                raise MirrorError(history_restarted(table, changes, rows))
            counts = {r._action: r.n for r in rows}
            total = sum(counts.values())
            # superseded within the batch, or older than a truncate
            stats.duplicates = max(0, agg.applied - total)
            stats.inserts = counts.get("insert", 0)
            stats.updates = counts.get("update", 0)
            stats.deletes = counts.get("delete", 0)
            stats.stale = counts.get("stale", 0)
            unknown = None
            if sum(r.unknown for r in rows):
                unknown = self._unknown_toast(table, changes, applied, stats)
            if unknown is not None:
                dead = unknown if dead is None else dead.unionByName(unknown)
            if stats.inserts or stats.updates or stats.deletes:
                effective = changes.where(
                    f"_action IN ('insert', 'update', 'delete') AND NOT {unknown_sql(table)}"
                )
                effective.createOrReplaceTempView(view + "_effective")
                sql = merge_sql(table, target, view + "_effective", soft, bounds)
                self._with_props(props, lambda: spark.sql(sql), fault=True)
            # After the MERGE: a crash in between is healed by the re-run of this batch,
            # which finds the row gone and records the tombstone then ("absent").
            if tombstones and (counts.get("delete", 0) or counts.get("absent", 0)):
                sql = tombstone_merge_sql(table, tombstones, view + "_changes", bounds)
                self._with_props(props, lambda: spark.sql(sql))
        finally:
            for suffix in ("_decoded", "_events", "_walked", "_deduped", "_changes", "_effective"):
                spark.catalog.dropTempView(view + suffix)
        stats.merge_seconds = time.monotonic() - started
        stats.committed(time.time(), *source_us)
        return dead

    def _dead_letters(self, bad: Any, table: MirrorTable) -> Any:
        """Decoded events with ``_error`` as dead-letter rows; with ``dead_letter = "fail"``
        the first one stops the job instead."""
        if self.options.fail_on_dead_letter:
            first = bad.orderBy("_partition", "_offset").first()
            raise MirrorError(
                f"{table.identifier}: event at {first._topic} partition {first._partition} "
                f"offset {first._offset} cannot be applied: {first._error} "
                '(mirror.dead_letter = "fail")'
            )
        return bad.selectExpr(
            "_topic AS topic",
            "_partition AS partition",
            "_offset AS offset",
            "_key AS key",
            "_value AS value",
            "_headers AS headers",
            "_error AS error",
            f"'{table.identifier}' AS table_name",
        )

    def _unknown_toast(
        self, table: MirrorTable, changes: Any, events: Any, stats: TableStats
    ) -> Any:
        """The events whose unchanged TOAST value the mirror cannot know, as dead letters
        (never written as NULL); called when the batch has some."""
        unknown = changes.where(unknown_sql(table)).selectExpr(
            "_partition AS _p", "_offset AS _o", f"{unknown_columns_sql(table)} AS _columns"
        )
        reason = (
            "concat('unchanged TOAST value of column(s) ', _columns, ' is known neither in "
            "this batch nor in the mirror (the row came through a key change or is not "
            "stored); the row is left out: `cdcmirror reconcile --deep` lists its key and "
            "`cdcmirror repair --keys-from` re-reads it')"
        )
        bad = events.join(
            unknown, (events["_partition"] == unknown["_p"]) & (events["_offset"] == unknown["_o"])
        ).selectExpr(
            "_topic", "_partition", "_offset", "_key", "_value", "_headers", f"{reason} AS _error"
        )
        found = unknown.count()
        stats.dead_lettered += found
        logger.error(
            "%s: %d event(s) with unknown unchanged TOAST values dead-lettered",
            table.identifier,
            found,
        )
        return self._dead_letters(bad, table)

    def _tombstone_table(self, table: MirrorTable) -> str:
        name = f"{self.options.internal_namespace}.{table.identifier.split('.')[-1]}__deleted"
        cols = ", ".join(
            f"{q(k)} {_spark_type(table.column(k).iceberg)} NOT NULL" for k in table.key
        )
        wanted = tuple(_spark_type(table.column(k).iceberg) for k in table.key)
        if self._tombstone_keys.get(name) == wanted:
            return spark_name(name)
        self.batch_spark.sql(
            f"CREATE TABLE IF NOT EXISTS {spark_name(name)} ({cols}, _cdc_position ARRAY<BIGINT>, "
            "_cdc_source_ts TIMESTAMP) "
            "USING iceberg TBLPROPERTIES ('format-version'='2', "
            "'write.merge.mode'='merge-on-read', 'write.update.mode'='merge-on-read')"
        )
        # the key was widened (int -> long, decimal precision up): widen the tombstones too,
        # or a deleted key past the old range could not be recorded
        stored = {
            f.name: f.dataType.simpleString()
            for f in self.batch_spark.table(spark_name(name)).schema.fields
        }
        for k, spark_type in zip(table.key, wanted, strict=True):
            if stored.get(k, "").upper() != spark_type.upper():
                self.batch_spark.sql(
                    f"ALTER TABLE {spark_name(name)} ALTER COLUMN {q(k)} TYPE {spark_type}"
                )
        if "_cdc_source_ts" not in stored:  # made before tombstones kept the commit time
            self.batch_spark.sql(
                f"ALTER TABLE {spark_name(name)} ADD COLUMN _cdc_source_ts TIMESTAMP"
            )
        self._tombstone_keys[name] = wanted
        return spark_name(name)

    def _with_props(
        self, props: dict[str, str], fn: Callable[[], Any], fault: bool = False
    ) -> None:
        """Run ``fn`` so that every snapshot it commits carries ``props`` in its summary.

        ``fault``: this is a table MERGE, where ``CDCMIRROR_FAULT`` may end the process (the
        crash tests: ``mid-merge:SECONDS`` while it runs, ``after-commit`` right after it
        commits, before Spark records the batch in its checkpoint).
        """
        injected = os.environ.get(FAULT_ENV, "") if fault else ""
        if injected.startswith("mid-merge:"):
            timer = threading.Timer(float(injected.split(":", 1)[1]), os._exit, (FAULT_EXIT,))
            timer.daemon = True
            timer.start()
        jvm = self.spark.sparkContext._jvm
        java_props = jvm.java.util.HashMap()
        for k, v in props.items():
            java_props.put(k, v)
        retry_on_conflict(  # e.g. `cdcmirror maintain` rewrote files this MERGE deletes from
            lambda: jvm.org.apache.iceberg.spark.CommitMetadata.withCommitProperties(
                java_props, _JavaCallable(fn), jvm.java.lang.RuntimeException().getClass()
            ),
            "mirror commit",
        )
        if injected == "after-commit":
            logger.error("CDCMIRROR_FAULT=after-commit: exiting after the MERGE commit")
            os._exit(FAULT_EXIT)

    def _raw_dead(self, events: Any, error: str, table: MirrorTable) -> Any:
        from pyspark.sql import functions as F

        return events.select(
            F.col("topic"),
            F.col("partition"),
            F.col("offset"),
            F.col("key"),
            F.col("value"),
            F.col("headers"),
            F.lit(error).alias("error"),
            F.lit(table.identifier).alias("table_name"),
        )

    def _dead_letter(self, frames: list[Any], batch_id: int) -> None:
        from pyspark.sql import functions as F

        union = frames[0]
        for f in frames[1:]:
            union = union.unionByName(f)
        union = (
            union.withColumn("query_id", F.lit(self.query_id or ""))
            .withColumn("batch_id", F.lit(batch_id).cast("bigint"))
            .withColumn("dead_lettered_at", F.current_timestamp())
        )
        view = f"_cdcm_dead_{abs(batch_id)}"
        union.createOrReplaceTempView(view)
        # a dead letter that fails again (a re-run batch, `replay-dead-letters`) gets the new
        # reason and the run that found it
        self.batch_spark.sql(
            f"MERGE INTO {spark_name(self.dead_letter_table)} t USING {view} s "
            "ON t.topic = s.topic AND t.partition = s.partition AND t.offset = s.offset "
            "WHEN MATCHED THEN UPDATE SET error = s.error, query_id = s.query_id, "
            "batch_id = s.batch_id, dead_lettered_at = s.dead_lettered_at "
            "WHEN NOT MATCHED THEN INSERT *"
        )
        self.batch_spark.catalog.dropTempView(view)


class _JavaCallable:
    """A Python function as a ``java.util.concurrent.Callable`` (through Py4J)."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn

    def call(self) -> None:
        self.fn()
        return None

    class Java:
        implements: ClassVar[list[str]] = ["java.util.concurrent.Callable"]


def _expr(text: str) -> Any:
    from pyspark.sql import functions as F

    return F.expr(text)


def _array_literal(values: list[int]) -> str:
    return f"array({', '.join(str(v) for v in values)})"


_SPARK_TYPES = {"int": "INT", "long": "BIGINT", "string": "STRING", "date": "DATE"}


def _spark_type(iceberg: str) -> str:
    if iceberg in _SPARK_TYPES:
        return _SPARK_TYPES[iceberg]
    if iceberg == "timestamp":
        return "TIMESTAMP_NTZ"
    if iceberg == "timestamptz":
        return "TIMESTAMP"
    return iceberg.upper()
