"""``cdcmirror repair``: heal a drifted table.

A whole table (no ``--keys-from``) of ``[bootstrap] initial_load_min_rows`` rows or more is
loaded again by Spark (``commands/reload.py``) when no mirror job runs on it; ``--method``
chooses (``reload`` or ``snapshot``). Otherwise:

Rows to re-read (changed or missing in the mirror) are re-read by Debezium's incremental
snapshot, requested through the source's signal table and filtered to the drifted keys
when a reconcile report names them; the mirror job applies them through its normal path
and position guard (incremental snapshot reads carry the log position at which they were
read, so they replace older rows and lose to newer changes). Rows only in the mirror are
not something a snapshot can remove: repair checks that the source still lacks each such
key, then deletes the mirror row only if it still has the position read before.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cdcmirror.commands.initial_load import LoadedTable
from cdcmirror.config import Config
from cdcmirror.exceptions import ConfigError, ConnectorError, LeaseHeldError, NotLoadableError
from cdcmirror.load.progress import TableProgress
from cdcmirror.mirror.positions import observed_position
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.reconcile.canonical import NULL_MARK, SEPARATOR, RowShape
from cdcmirror.reconcile.repair import (
    SIGNAL_TYPE,
    RepairKeys,
    key_filter,
    keys_from_report,
    snapshot_signal,
)
from cdcmirror.source_model import SourceCatalog

logger = logging.getLogger(__name__)


AUTO, RELOAD, SNAPSHOT = "auto", "reload", "snapshot"
METHODS = (AUTO, RELOAD, SNAPSHOT)


@dataclass
class RepairResult:
    table: str
    signal_id: str | None
    reread: int | None  # keys re-read; None = the whole table
    removed: int
    kept: int  # extra keys the source has again (re-read instead)
    method: str = SNAPSHOT  # how: Debezium's incremental snapshot, or a re-load by Spark
    reloaded: LoadedTable | None = None  # the re-load's figures
    start: str = ""  # the re-load's read position, as the source names it


def _load_keys(path: Path, identifier: str) -> RepairKeys:
    try:
        report = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the reconcile report {path}: {exc}") from None
    return keys_from_report(report, identifier, str(path))


def repair(
    config: Config,
    table: str,
    keys_from: Path | None,
    progress: Callable[[str], None],
    method: str = AUTO,
    on_progress: Callable[[TableProgress], None] | None = None,
) -> RepairResult:
    if keys_from is not None and method == RELOAD:
        raise ConfigError(
            "--keys-from repairs the keys of a report through Debezium; --method reload "
            "loads the whole table again: give one of them"
        )
    if keys_from is None and method != SNAPSHOT:
        reloaded = _reload(config, table, method, progress, on_progress)
        if reloaded is not None:
            return reloaded
    return _reread(config, table, keys_from, progress)


def _reload(
    config: Config,
    table: str,
    method: str,
    progress: Callable[[str], None],
    on_progress: Callable[[TableProgress], None] | None,
) -> RepairResult | None:
    """The re-load by Spark, or None when ``auto`` finds the table small, held by a
    running mirror job, or with a column Spark cannot load."""
    from cdcmirror.commands.reload import reload_table

    if method == AUTO:
        from cdcmirror.catalog import load_catalog
        from cdcmirror.commands.job_tables import load_tables

        t = load_tables(config, load_catalog(config), [table])[0]
        if _estimated_rows(config, t) < config.bootstrap.initial_load_min_rows:
            return None
        if t.history:
            progress(
                "re-reading through Debezium instead of re-loading by Spark: the table keeps a "
                "history, where only a re-read makes versions"
            )
            return None
    try:
        report = reload_table(config, table, on_progress or _log_progress, progress)
    except (LeaseHeldError, NotLoadableError) as exc:
        if method != AUTO:
            raise
        progress(f"re-reading through Debezium instead of re-loading by Spark: {exc}")
        return None
    done = report.tables[0]
    return RepairResult(done.identifier, None, None, 0, 0, RELOAD, done, report.start)


def _estimated_rows(config: Config, t: MirrorTable) -> int:
    from cdcmirror.source.connection import open_engine
    from cdcmirror.source.load_reads import estimated_rows

    engine = open_engine(config.source)
    try:
        return sum(estimated_rows(engine, config.source.dialect, [t.source]).values())
    finally:
        engine.dispose()


def _log_progress(p: TableProgress) -> None:
    logger.info("%s", p.text())


def _reread(
    config: Config, table: str, keys_from: Path | None, progress: Callable[[str], None]
) -> RepairResult:
    from cdcmirror.catalog import load_catalog
    from cdcmirror.commands.job_tables import load_tables
    from cdcmirror.commands.reconcile import table_shapes
    from cdcmirror.source.connection import open_engine
    from cdcmirror.source.counts import SourceReader
    from cdcmirror.source.discovery import discover
    from cdcmirror.source.signal import insert_signal

    dialect = config.source.dialect
    t = load_tables(config, load_catalog(config), [table])[0]
    source_catalog = discover(config.source)
    signal = _signal_table_read(config, source_catalog)
    shape = table_shapes(source_catalog, [t])[t.identifier]
    if not isinstance(shape, RowShape):
        raise ConfigError(f"{t.identifier}: {shape}")
    keys = _load_keys(keys_from, t.identifier) if keys_from else None
    engine = open_engine(config.source)
    try:
        removed = kept = 0
        if keys is not None and keys.extra:
            progress(f"{t.identifier}: checking {len(keys.extra)} key(s) found only in the mirror")
            reader = SourceReader(engine, dialect)
            # read before the keys: a key added again after it is a change after it
            at, at_us = reader.log_position()
            back = reader.present_keys(t.source, shape, key_filter(dialect, shape, keys.extra))
            still_extra = [k for k in keys.extra if _text(shape, k) not in back]
            kept = len(keys.extra) - len(still_extra)
            keys.reread += [k for k in keys.extra if _text(shape, k) in back]
            missing_since = observed_position(dialect, at), at_us
            removed = _remove(config, t, shape, still_extra, missing_since)
        signal_id = None
        if keys is None or keys.reread:
            condition = key_filter(dialect, shape, keys.reread) if keys else None
            signal_id = str(uuid.uuid4())
            insert_signal(
                engine,
                dialect,
                signal,
                signal_id,
                SIGNAL_TYPE,
                snapshot_signal(t.source, condition),
            )
            what = f"{len(keys.reread)} key(s) of" if keys else "every row of"
            progress(f"asked Debezium to re-read {what} {t.source} (signal {signal_id})")
    finally:
        engine.dispose()
    return RepairResult(t.identifier, signal_id, len(keys.reread) if keys else None, removed, kept)


def _signal_table_read(config: Config, source_catalog: SourceCatalog) -> str:
    """The source's signal table, once the registered connector is known to read it."""
    from cdcmirror.bootstrap.connector import connector_name
    from cdcmirror.clients.connect import ConnectClient
    from cdcmirror.source.discovery import signal_table_name

    dialect = config.source.dialect
    signal: str | None = source_catalog.signal_table
    if not signal:
        wanted = signal_table_name(config.source, source_catalog.database)
        raise ConfigError(
            f"the source has no Debezium signal table {wanted}; create it with "
            f"sql/{dialect}/signal_table.sql (or set source.signal_table), then run "
            "`cdcmirror bootstrap` so the connector reads it"
        )
    name = connector_name(config.source.name)
    try:
        running = ConnectClient.of(config.connect).config(name)
    except ConnectorError:
        raise ConfigError(
            f"connector {name} is not registered; run `cdcmirror bootstrap` first"
        ) from None
    if running.get("signal.data.collection") != signal:
        raise ConfigError(
            f"connector {name} does not read the signal table {signal}; run "
            "`cdcmirror bootstrap` to update it"
        )
    return signal


def _text(shape: RowShape, key: dict[str, str]) -> str:
    """The canonical key text of a report key (columns joined like the SQL does)."""
    columns = shape.key or shape.columns
    return chr(SEPARATOR).join(key.get(c.name, chr(NULL_MARK)) for c in columns)


def _remove(
    config: Config,
    table: MirrorTable,
    shape: RowShape,
    keys: list[dict[str, str]],
    missing_since: tuple[list[int], int],
) -> int:
    """Delete the mirror rows of keys the source does not have (compare-and-delete), as the
    mirror deletes: marked deleted (soft) or removed with a tombstone (hard); their history
    versions ended at ``missing_since`` (position, epoch microseconds)."""
    if not keys:
        return 0
    from cdcmirror.commands.job_tables import internal_namespace
    from cdcmirror.spark.reconcile_side import MirrorTables
    from cdcmirror.spark.session import build_spark_session
    from cdcmirror.spark.tombstones import TombstoneTables

    mirror = MirrorTables(build_spark_session(config, "cdcmirror-repair"))
    rows = mirror.positions(table.identifier, shape, key_filter("spark", shape, keys))
    soft = config.mirror.soft_deletes
    graves = TombstoneTables(internal_namespace(config))
    mirror.delete_unchanged(table, shape, rows, soft, graves, missing_since)
    return len(rows)
