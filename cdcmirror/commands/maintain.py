"""``cdcmirror maintain``: which tables, with which settings; the work is in
``spark/maintenance/maintain.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdcmirror.config import Config
from cdcmirror.maintain.run import MaintainSettings, TableMaintenance
from cdcmirror.mirror.positions import source_length


def settings_of(config: Config) -> MaintainSettings:
    return MaintainSettings.of(config.maintain, source_length(config.source.dialect))


def tables_to_maintain(config: Config, catalog: Any, only: list[str] | None) -> list[str]:
    """The mirrored tables, their history tables and the streams' (or the named ones) and the
    mirror's own tables, which grow by small commits too: for a full run all of them
    (hard-delete tombstones, dead letters), for named tables their tombstone tables (whose
    old tombstones are pruned)."""
    from cdcmirror.catalog.mirrored import list_tables
    from cdcmirror.commands.job_tables import cdc_tables, internal_namespace
    from cdcmirror.commands.streams import job_streams
    from cdcmirror.spark.tombstones import TombstoneTables

    streams = job_streams(config, catalog, only) if config.streams else None
    required = not (streams and streams.tables)
    mirrored = cdc_tables(config, catalog, only, required)
    cdc = [t.identifier for t in mirrored]
    histories = [t.history for t in mirrored if t.history]  # mirror.history
    names = cdc + histories + (streams.identifiers if streams else [])
    namespace = internal_namespace(config)
    internal = [t.identifier for t in list_tables(catalog, namespace)]
    if not only:
        return names + internal
    graves = [TombstoneTables(namespace).identifier_of(name) for name in cdc]
    return names + [name for name in graves if name in internal]


def maintain(
    config: Config, only: list[str] | None, progress: Callable[[str], None]
) -> list[TableMaintenance]:
    from cdcmirror.catalog import load_catalog
    from cdcmirror.commands.job_tables import internal_namespace
    from cdcmirror.spark.maintenance.maintain import maintain_table
    from cdcmirror.spark.session import build_spark_session
    from cdcmirror.spark.tombstones import is_tombstone_table

    names = tables_to_maintain(config, load_catalog(config), only)
    spark = build_spark_session(config, "cdcmirror-maintain")
    settings = settings_of(config)
    internal = internal_namespace(config)
    results = []
    for i, name in enumerate(names, 1):
        progress(f"[{i}/{len(names)}] {name}")
        tombstones = is_tombstone_table(name, internal)
        results.append(maintain_table(spark, name, settings, progress, tombstones))
    return results
