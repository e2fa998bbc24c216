"""The tables a command works on: the mirrored (CDC) tables of the catalog, apart from the
event streams' tables, all or the ones the user named."""

from __future__ import annotations

from typing import Any

from cdcmirror.config import Config
from cdcmirror.exceptions import CdcMirrorError, ConfigError
from cdcmirror.mirror.spec import MirrorTable, mirror_table
from cdcmirror.table_properties import LOAD_PENDING, LOAD_PROPERTY


def internal_namespace(config: Config) -> str:
    """Where the mirror keeps its own tables (dead letters, hard-delete tombstones)."""
    return f"{config.iceberg.namespace}__cdcmirror"


def load_tables(
    config: Config, catalog: Any, only: list[str] | None = None, required: bool = True
) -> list[MirrorTable]:
    from cdcmirror.catalog.mirrored import list_tables

    namespace = config.iceberg.namespace
    prefix = config.source.name
    tables = []
    for t in list_tables(catalog, namespace):
        spec = mirror_table(t.identifier, t.columns, t.key, t.properties, prefix)
        if spec is None:
            continue
        if only and t.identifier.split(".")[-1] not in only and t.identifier not in only:
            continue
        tables.append(spec)
    if only:
        found = {t.identifier.split(".")[-1] for t in tables} | {t.identifier for t in tables}
        missing = [name for name in only if name not in found]
        if missing:
            raise ConfigError(
                f"no mirrored table {', '.join(missing)} in namespace {namespace}; "
                "run `cdcmirror bootstrap` first"
            )
    if not tables and required:
        raise ConfigError(
            f"namespace {namespace} has no table created by `cdcmirror bootstrap`; run it first"
        )
    return tables


def cdc_names(config: Config, only: list[str] | None) -> list[str] | None:
    """The names of ``only`` that are not stream tables (None: all tables; [] none)."""
    if not only:
        return None
    namespace = config.iceberg.namespace
    mine = {s.identifier(namespace) for s in config.streams}
    mine |= {i.split(".")[-1] for i in mine}
    return [name for name in only if name not in mine]


def cdc_tables(
    config: Config, catalog: Any, only: list[str] | None, required: bool
) -> list[MirrorTable]:
    """The mirrored tables of ``only`` (all when None) that are not stream tables; ``required``:
    none is an error (a job with streams may have no CDC table)."""
    names = cdc_names(config, only)
    return [] if names == [] else load_tables(config, catalog, names, required)


def refuse_half_loaded(tables: list[MirrorTable]) -> None:
    """Stop before a table whose Spark initial load began and did not finish: its changes
    would be applied onto the rows it happens to hold, and the rows it lacks never come."""
    half = [t.identifier for t in tables if t.loading]
    if half:
        raise ConfigError(
            f"the initial load of {', '.join(half)} did not finish (table property "
            f"{LOAD_PROPERTY} = {LOAD_PENDING!r}): mirroring it now would leave out the rows "
            "it was not given. Run `cdcmirror bootstrap`, which loads it again, then start the "
            "mirror (or leave it out with --tables)"
        )


def refuse_uuids_without_converter(config: Config, tables: list[MirrorTable]) -> None:
    """Stop before mirroring MariaDB UUID columns that the registered connector reads
    without cdcmirror's converter: a value ending in zero bytes would arrive shifted."""
    from cdcmirror.bootstrap.connector import connector_name, missing_uuid_converter
    from cdcmirror.clients.connect import ConnectClient

    name = connector_name(config.source.name)
    try:
        client = ConnectClient.of(config.connect, timeout=10.0)
        if name not in client.names():
            return  # not registered (bootstrap --no-connector): nothing to check
        missing = missing_uuid_converter(tables, client.config(name))
    except CdcMirrorError:
        return  # Connect not reachable: the connector watch reports it
    if missing:
        raise ConfigError(
            f"connector {name} reads the UUID columns of {', '.join(missing)} without "
            "cdcmirror's MariaDB UUID converter, so a value ending in zero bytes would arrive "
            "shifted. Run `cdcmirror bootstrap`, which registers it (the local stack has its "
            "jar; on your own Kafka Connect, copy the jar `cdcmirror jars resolve` builds into "
            "the debezium-mariadb plugin directory first)"
        )
