"""The Iceberg tables the source's tables map to under a config (bootstrap's mapping, also
what a re-load evolves its table to)."""

from __future__ import annotations

from cdcmirror.bootstrap.plan import DesiredTable, desired_table
from cdcmirror.config import Config
from cdcmirror.exceptions import ConfigError, UnsupportedTypeError
from cdcmirror.source_model import SourceCatalog, SourceTable
from cdcmirror.typemap import MappingOptions


def desired_of(config: Config, catalog: SourceCatalog, table: SourceTable) -> DesiredTable:
    """The Iceberg table ``table`` maps to under ``config``."""
    options = MappingOptions(
        unknown_types=config.source.unknown_types,
        tinyint1_as_boolean=config.source.tinyint1_as_boolean,
    )
    return desired_table(
        catalog,
        table,
        config.iceberg.namespace,
        config.iceberg.table_name,
        options,
        config.iceberg.partition,
    )


def desired_tables(config: Config, catalog: SourceCatalog) -> list[DesiredTable]:
    out, errors = [], []
    for table in catalog.tables:
        try:
            out.append(desired_of(config, catalog, table))
        except UnsupportedTypeError as exc:
            errors.append(str(exc))
    if errors:
        raise UnsupportedTypeError("\n".join(errors))
    by_name: dict[str, str] = {}
    for d in out:
        other = by_name.setdefault(d.identifier, d.source.qualified)
        if other != d.source.qualified:
            raise ConfigError(
                f"{other} and {d.source.qualified} both map to Iceberg table {d.identifier}; set "
                'iceberg.table_name = "{schema}__{table}"'
            )
    return out
