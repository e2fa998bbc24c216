"""``cdcmirror repair --table T --method reload``: load a whole mirrored table again by
Spark over JDBC (the initial load's path), in place, while no mirror job runs on it.

Why the table is the source's state once the mirror job runs again:

- The re-load holds the table's mirror lease from before the first row is read until its
  rows are committed, so no mirror job applies anything to it meanwhile (a running one
  makes the re-load refuse, naming it).
- Every change the mirror applied before was committed at the source before the read
  began, so the read has it. Every change it has not applied is still in Kafka after its
  checkpoint, whenever it was committed.
- The re-loaded rows carry a snapshot-phase position (phase 0, ``load/plan.py``), below
  every streamed change, so the mirror, run again, applies each change it had not applied
  on top through its position guard, in source order per key: each key ends at its newest
  change (a change the read saw already is applied again, and a newer one follows it).
- PostgreSQL's reads share one exported snapshot, so a row updated while the table is read
  is read once; MySQL/MariaDB's reads are key ranges, so each key is read once.
- A row the mirror has and the source has not is gone with the overwrite (hard deletes) or
  kept, marked deleted (``deletes = "soft"``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from cdcmirror import dialects
from cdcmirror.commands.initial_load import (
    Leased,
    LoadContext,
    LoadReport,
    binlog_now,
    load_all,
    snapshot_session_init,
    table_load,
)
from cdcmirror.config import Config
from cdcmirror.exceptions import ConfigError
from cdcmirror.load.progress import TableProgress
from cdcmirror.mirror.positions import binlog_file_index, loaded_position
from cdcmirror.mirror.reload_mark import BinlogReloadMark, from_snapshot
from cdcmirror.table_properties import RELOADED_PROPERTY

logger = logging.getLogger(__name__)

LEASE_HOLDER = "re-load of cdcmirror repair"


def reload_table(
    config: Config,
    table: str,
    on_progress: Callable[[TableProgress], None],
    progress: Callable[[str], None],
) -> LoadReport:
    """Load ``table`` again from the source; raises ``ConfigError`` when a mirror job holds
    it (nothing is read then) or the table cannot be re-loaded."""
    from cdcmirror.catalog import load_catalog
    from cdcmirror.catalog.leases import my_lease
    from cdcmirror.commands.job_tables import load_tables
    from cdcmirror.source.connection import open_engine, source_url
    from cdcmirror.source.discovery import discover
    from cdcmirror.source.load_reads import estimated_rows

    iceberg = load_catalog(config)
    t = load_tables(config, iceberg, [table])[0]
    if t.mode != "upsert" or not t.key:
        raise ConfigError(
            f"{t.identifier} has no key (it is mirrored as an append log), so a re-load "
            "would drop its history; repair it with --method snapshot"
        )
    if t.history:
        raise ConfigError(
            f"{t.identifier} keeps a history table ({t.history}), where a re-load by Spark "
            "would make no versions; repair it with --method snapshot (Debezium's re-read "
            "makes a version, marked repair, of each row that differed)"
        )
    with Leased(iceberg, [t.identifier], my_lease(LEASE_HOLDER)):
        d = _desired(config, iceberg, discover(config.source), t.source)
        load = table_load(config.source.dialect, d)  # refuses a column Spark cannot load
        engine = open_engine(config.source)
        try:
            ctx = LoadContext(
                config=config,
                engine=engine,
                url=source_url(config.source),
                iceberg=iceberg,
                dialect=config.source.dialect,
                estimates=estimated_rows(engine, config.source.dialect, [t.source]),
                on_progress=on_progress,
                keep_deleted=config.mirror.soft_deletes,
            )
            report = LoadReport("spark", sum(ctx.estimates.values()))
            progress(f"{t.identifier}: re-loading {t.source} by Spark")
            _read_at_fixed_start(ctx, load, report)
        finally:
            engine.dispose()
    return report


def _desired(config: Config, iceberg: Any, catalog: Any, source: str) -> Any:
    """The table as bootstrap maps it now; the Iceberg table is evolved first (new source
    columns, widenings) and a change bootstrap cannot make stops the re-load."""
    from cdcmirror.bootstrap.desired import desired_of
    from cdcmirror.bootstrap.plan import DRIFT_ADVICE, plan_table
    from cdcmirror.catalog.tables import apply_plan, read_existing

    found = [s for s in catalog.tables if s.qualified == source]
    if not found:
        raise ConfigError(
            f"the source has no table {source} (or source.include leaves it out); "
            "nothing to re-load it from"
        )
    d = desired_of(config, catalog, found[0])
    existing = read_existing(iceberg, d.identifier)
    plan = plan_table(d, existing)
    names = {c.name for c in d.columns}
    dropped = [c for c in (existing.columns if existing else {}) if c not in names]
    if len(plan.drift) > len(dropped):  # more than columns the source dropped: no re-load
        raise ConfigError(
            f"cannot re-load {d.identifier}: " + "; ".join(plan.drift) + f". {DRIFT_ADVICE}"
        )
    if plan.action == "alter":
        apply_plan(iceberg, plan, config.iceberg.format_version)
    return d


def _read_at_fixed_start(ctx: LoadContext, load: Any, report: LoadReport) -> None:
    """Read the table at a start every change the mirror has not applied comes after."""
    from cdcmirror.catalog.mirrored import set_properties
    from cdcmirror.source.load_reads import binlog_position, exported_snapshot

    d = dialects.of(ctx.dialect)
    if d.slot:
        with exported_snapshot(ctx.url) as snap:
            report.start = f"exported snapshot {snap.name} at LSN {snap.lsn:X}"
            position = loaded_position(ctx.dialect, (snap.lsn,))
            init = snapshot_session_init(snap.name)
            load_all(ctx, [load], report, init, position, snap.taken_us, lambda: (snap.lsn,))
        # committed rows first: a mark on rows not written would drop changes they lack
        mark = from_snapshot(snap.xids, snap.lsn)
        set_properties(ctx.iceberg, load.identifier, {RELOADED_PROPERTY: mark.text()})
        return
    file, pos, clock_ms = binlog_position(ctx.engine)
    report.start = f"binlog {file}:{pos}"
    position = loaded_position(ctx.dialect, (binlog_file_index(file), pos))
    now_us = int(time.time() * 1e6)
    load_all(ctx, [load], report, d.session_init, position, now_us, lambda: binlog_now(ctx))
    binlog_mark = BinlogReloadMark(binlog_file_index(file), pos, clock_ms)
    set_properties(ctx.iceberg, load.identifier, {RELOADED_PROPERTY: binlog_mark.text()})
