"""``cdcmirror reconcile``: compare every mirrored table with its source.

Settling: a live pipeline always has events in flight, so one look can show a difference
that is not drift. Each look counts the source, reads the last committed offsets Kafka
holds for the table's topic, waits (up to the settle time) until the mirror's checkpoint
has committed those offsets, then counts the mirror. Tables that differ are looked at
again every few seconds until they agree or the settle time is spent. A table is *drift*
only when the mirror had applied everything Kafka held and the difference was still there
at the last look; *lagging* when the mirror had not caught up with Kafka.
``--deep`` keys found differing are read a second time after the mirror caught up again;
only keys that differ both times are reported.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cdcmirror import dialects
from cdcmirror.config import Config
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.reconcile.canonical import RowShape, row_shape
from cdcmirror.reconcile.compare import (
    DeepResult,
    TableCheck,
    counts_settled,
    diff_keys,
    drifted_buckets,
    in_both,
)
from cdcmirror.source_model import SourceCatalog

logger = logging.getLogger(__name__)
POLL_SECONDS = 1.0
RETRY_SECONDS = 2.0


@dataclass(frozen=True)
class ReconcileOptions:
    tables: list[str] | None = None
    deep: bool = False
    settle_seconds: float = 60.0
    buckets: int = 1024
    max_keys: int = 100


class Reconciler:
    """Holds the three connections (source, Kafka + checkpoint, Spark) for one run."""

    def __init__(
        self,
        config: Config,
        tables: list[MirrorTable],
        source: Any,
        mirror: Any,
        shapes: dict[str, RowShape | str],
        options: ReconcileOptions,
        progress: Callable[[str], None],
    ) -> None:
        self.config = config
        self.tables = tables
        self.source = source
        self.mirror = mirror
        self.shapes = shapes
        self.options = options
        self.progress = progress
        self.deadline = time.monotonic() + options.settle_seconds
        self.checks = {
            t.identifier: TableCheck(t.identifier, t.source, t.flavor, t.topic) for t in tables
        }

    # -- Kafka and the checkpoint -------------------------------------------------------
    def _wait_caught_up(self, tables: list[MirrorTable]) -> None:
        """Mark each table caught up once the checkpoint has committed the offsets Kafka
        holds now; wait for that until the deadline."""
        from cdcmirror.checkpoint_store import checkpoint_files
        from cdcmirror.commands.kafka_access import client_conf
        from cdcmirror.mirror.checkpoint import behind, committed_offsets
        from cdcmirror.stack.health import committed_end_offsets

        kafka = client_conf(self.config)
        checkpoint = checkpoint_files(self.config)
        ends = committed_end_offsets(kafka, [t.topic for t in tables])
        while True:
            committed = committed_offsets(checkpoint)
            for t in tables:
                check = self.checks[t.identifier]
                check.events_behind = behind(committed.get(t.topic, {}), ends.get(t.topic, {}))
                check.caught_up = check.events_behind == 0
            if all(self.checks[t.identifier].caught_up for t in tables):
                return
            if time.monotonic() >= self.deadline:
                return
            time.sleep(POLL_SECONDS)

    # -- counts -------------------------------------------------------------------------
    def _look(self, tables: list[MirrorTable]) -> None:
        from cdcmirror.exceptions import SourceError

        for t in tables:
            try:
                self.checks[t.identifier].source_rows = self.source.count(t.source)
            except SourceError as exc:
                self.checks[t.identifier].error = str(exc)
        tables = [t for t in tables if not self.checks[t.identifier].error]
        self._wait_caught_up(tables)
        for t in tables:
            check = self.checks[t.identifier]
            check.mirror_rows, check.position, check.source_ts = self.mirror.facts(t.identifier)
            if t.history is not None:
                check.history = self.mirror.history(t, self.options.deep)
            check.attempts += 1

    def counts(self) -> None:
        pending = [t for t in self.tables if not self.checks[t.identifier].error]
        while pending:
            self.progress(f"counting {len(pending)} table(s)")
            self._look(pending)
            pending = [t for t in pending if not counts_settled(self.checks[t.identifier])]
            if not pending or time.monotonic() >= self.deadline:
                return
            time.sleep(RETRY_SECONDS)

    # -- deep ---------------------------------------------------------------------------
    def _diff(
        self, t: MirrorTable, shape: RowShape, which: list[int]
    ) -> tuple[list[dict[str, str]], list[dict[str, str]], list[dict[str, str]], bool]:
        b = self.options.buckets
        names = tuple(c.name for c in shape.key or shape.columns)
        return diff_keys(
            names,
            self.source.key_rows(t.source, shape, b, which),
            self.mirror.key_rows(t.identifier, shape, b, which),
            self.options.max_keys,
        )

    def deep(self, t: MirrorTable) -> None:
        check = self.checks[t.identifier]
        shape = self.shapes[t.identifier]
        if isinstance(shape, str):
            check.error = shape
            return
        b = self.options.buckets
        self.progress(f"{t.identifier}: checksums of {b} buckets")
        drifted = drifted_buckets(
            self.source.bucket_sums(t.source, shape, b),
            self.mirror.bucket_sums(t.identifier, shape, b),
        )
        result = DeepResult(b, drifted, skipped_columns=list(shape.skipped))
        if drifted:
            self.progress(f"{t.identifier}: {len(drifted)} bucket(s) differ; listing keys")
            changed, missing, extra, truncated = self._diff(t, shape, drifted)
            if self.options.settle_seconds > 0 and (changed or missing or extra):
                self._wait_caught_up([t])
                again = self._diff(t, shape, drifted)
                changed = in_both(changed, again[0])
                missing = in_both(missing, again[1])
                extra = in_both(extra, again[2])
                if not (changed or missing or extra):
                    result.drifted_buckets = []  # every difference was in flight
            result.changed, result.missing, result.extra = changed, missing, extra
            result.keys_truncated = truncated
        check.deep = result

    def snapshots(self, catalog: Any) -> None:
        from cdcmirror.catalog.mirrored import current_snapshot

        for t in self.tables:
            snap = current_snapshot(catalog, t.identifier)
            if snap is not None:
                check = self.checks[t.identifier]
                check.snapshot_id = snap[0]
                check.snapshot_time = datetime.fromtimestamp(snap[1] / 1000, tz=UTC)


def table_shapes(catalog: SourceCatalog, tables: list[MirrorTable]) -> dict[str, RowShape | str]:
    """The deep-check shape of each table from the source catalog, or why there is none."""
    found = {s.qualified: s for s in catalog.tables}
    out: dict[str, RowShape | str] = {}
    for t in tables:
        source = found.get(t.source)
        if source is None:
            out[t.identifier] = f"source table {t.source} is not found or not included"
            continue
        columns = []
        for c in t.columns:
            if c.name in {sc.name for sc in source.columns}:
                columns.append((c.name, source.column(c.name).type, c.iceberg))
        out[t.identifier] = row_shape(t.dialect, columns, t.key)
    return out


def reconcile(
    config: Config, options: ReconcileOptions, progress: Callable[[str], None]
) -> tuple[list[TableCheck], datetime]:
    from cdcmirror.bootstrap.connector import connector_name
    from cdcmirror.catalog import load_catalog
    from cdcmirror.commands.job_tables import cdc_tables
    from cdcmirror.commands.kafka_access import require_login
    from cdcmirror.health.connector import connector_problem
    from cdcmirror.source.connection import open_engine
    from cdcmirror.source.counts import SourceReader
    from cdcmirror.source.discovery import discover
    from cdcmirror.spark.reconcile_side import MirrorTables
    from cdcmirror.spark.session import build_spark_session

    require_login(config)
    catalog = load_catalog(config)
    tables = cdc_tables(config, catalog, options.tables, required=not config.streams)
    if not tables:
        return [], datetime.now(tz=UTC)
    engine = open_engine(config.source)
    try:
        source = SourceReader(engine, config.source.dialect)
        shapes = table_shapes(discover(config.source), tables) if options.deep else {}
        progress("starting Spark")
        spark = build_spark_session(config, "cdcmirror-reconcile")
        run = Reconciler(config, tables, source, MirrorTables(spark), shapes, options, progress)
        for t in tables:
            if t.identifier in shapes and isinstance(shapes[t.identifier], str):
                run.checks[t.identifier].error = str(shapes[t.identifier])
        run.counts()
        if options.deep:
            for t in tables:
                if not run.checks[t.identifier].error:
                    run.deep(t)
        run.snapshots(catalog)
        binlog = None
        if dialects.of(config.source.dialect).binlog:
            from cdcmirror.health.binlog import binlog_health

            binlog = binlog_health(engine, config.connect, connector_name(config.source.name))
    finally:
        engine.dispose()
    problem = connector_problem(config.connect, connector_name(config.source.name))
    # the counts may agree now, but changes do not reach the mirror (any more); both, as a
    # failed task may be the sign of a reset binlog
    lost = "; ".join(p for p in (problem, binlog) if p)
    if lost:
        for check in run.checks.values():
            check.error = check.error or lost
    return [run.checks[t.identifier] for t in tables], datetime.now(tz=UTC)
