"""The catalog side of the mirror job: find the mirrored tables, evolve one (pyiceberg)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

from cdcmirror.catalog.types import to_iceberg, to_spec

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CatalogTable:
    """An Iceberg table as plain data: what ``mirror.spec.mirror_table`` is built from."""

    identifier: str
    columns: list[tuple[str, str]]  # (name, Iceberg type), in order
    key: tuple[str, ...]
    properties: dict[str, str]


def read_table(catalog: Any, identifier: str) -> CatalogTable | None:
    try:
        table = catalog.load_table(identifier)
    except NoSuchTableError:
        return None
    schema = table.schema()
    columns = [(f.name, to_spec(f.field_type)) for f in schema.fields]
    key = tuple(schema.find_column_name(i) or "" for i in schema.identifier_field_ids)
    return CatalogTable(identifier, columns, key, dict(table.properties))


def list_tables(catalog: Any, namespace: str) -> list[CatalogTable]:
    """Every table of the namespace (an empty list when the namespace does not exist)."""
    try:
        names = catalog.list_tables(namespace)
    except NoSuchNamespaceError:
        return []
    out = []
    for ident in names:
        table = read_table(catalog, ".".join(ident))
        if table is not None:
            out.append(table)
    return out


def evolve_table(
    catalog: Any,
    identifier: str,
    add: list[tuple[str, str, str]],
    widen: list[tuple[str, str]],
    properties: dict[str, str],
) -> None:
    """Add columns (name, Iceberg type, doc), widen columns (name, new type), set properties,
    in one commit."""
    table = catalog.load_table(identifier)
    with table.transaction() as tx:
        if add or widen:
            with tx.update_schema() as update:
                for name, kind, doc in add:
                    update.add_column(name, to_iceberg(kind), doc=doc)
                for name, kind in widen:
                    update.update_column(name, field_type=to_iceberg(kind))
        if properties:
            tx.set_properties(properties)
    logger.info(
        "evolved %s: added %s, widened %s",
        identifier,
        ", ".join(f"{n} {t}" for n, t, _ in add) or "nothing",
        ", ".join(f"{n} -> {t}" for n, t in widen) or "nothing",
    )


def set_properties(catalog: Any, identifier: str, properties: dict[str, str]) -> None:
    """Set table properties in one commit, read again when another commit came between."""
    from pyiceberg.exceptions import CommitFailedException

    for attempt in range(5):
        table = catalog.load_table(identifier)
        try:
            with table.transaction() as tx:
                tx.set_properties(properties)
            return
        except CommitFailedException:
            if attempt == 4:
                raise
            time.sleep(0.2 * (attempt + 1))


def current_snapshot(catalog: Any, identifier: str) -> tuple[int, int] | None:
    """(snapshot id, commit time in ms) of the table's current snapshot, None before the
    first commit."""
    snapshot = catalog.load_table(identifier).current_snapshot()
    if snapshot is None:
        return None
    return int(snapshot.snapshot_id), int(snapshot.timestamp_ms)


def snapshot_summaries(
    catalog: Any, identifier: str, tag: str | None = None
) -> list[dict[str, str]]:
    """The summary properties of the table's current snapshot (or the one ``tag`` names,
    when the table has it) and its ancestors, newest first (snapshots expired by `maintain`
    are gone)."""
    from pyiceberg.table.snapshots import ancestors_of

    table = catalog.load_table(identifier)
    start = table.current_snapshot()
    ref = table.metadata.refs.get(tag) if tag else None
    if ref is not None:
        start = table.metadata.snapshot_by_id(ref.snapshot_id) or start
    return [
        dict(s.summary.additional_properties) if s.summary is not None else {}
        for s in ancestors_of(start, table.metadata)
    ]


def drop_namespace_tables(catalog: Any, namespace: str) -> list[str]:
    """Drop every table of the namespace and the namespace itself; the dropped names."""
    try:
        names = [".".join(i) for i in catalog.list_tables(namespace)]
    except NoSuchNamespaceError:
        return []
    for name in names:
        catalog.purge_table(name)
    catalog.drop_namespace(namespace)
    return names
