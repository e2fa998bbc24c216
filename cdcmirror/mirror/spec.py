"""What the mirror knows about one mirrored table, as plain data. Pure.

Built from the Iceberg table bootstrap created: its columns and the ``cdcmirror.*``
properties (source, key, mode, carriers).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from cdcmirror import dialects
from cdcmirror.cdc_columns import PREFIX
from cdcmirror.exceptions import ConfigError
from cdcmirror.load.plan import read_through
from cdcmirror.mirror.reload_mark import Mark, parse_mark
from cdcmirror.table_properties import (
    CARRIERS_PROPERTY,
    HISTORY_PROPERTY,
    LOAD_PENDING,
    LOAD_PROPERTY,
    MODE_PROPERTY,
    RELOADED_PROPERTY,
    SOURCE_PROPERTY,
    TRUNCATED_PROPERTY,
    TRUNCATED_TS_PROPERTY,
)


@dataclass(frozen=True)
class MirrorColumn:
    name: str
    iceberg: str  # Iceberg type string
    carrier: str  # Debezium carrier (see mirror/carriers.py)


@dataclass(frozen=True)
class MirrorTable:
    identifier: str  # namespace.table
    topic: str
    flavor: str  # postgresql, mysql or mariadb
    source: str  # schema.table at the source
    key: tuple[str, ...]
    mode: str  # upsert or append
    columns: tuple[MirrorColumn, ...]  # the source columns, in table order
    truncated_at: tuple[int, ...] = ()
    truncated_ts_us: int | None = None  # the commit time of the truncate at truncated_at
    reloaded: Mark | None = None  # the changes a re-load's rows hold
    loading: bool = False  # a Spark initial load began and did not finish
    read_through: tuple[int, ...] | None = None  # where its last load's reads ended
    history: str | None = None  # its history table (``mirror/history.py``), when it has one

    @property
    def dialect(self) -> str:
        return dialects.of_flavor(self.flavor).name

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> MirrorColumn:
        return next(c for c in self.columns if c.name == name)

    def with_columns(self, columns: tuple[MirrorColumn, ...]) -> MirrorTable:
        return replace(self, columns=columns)


def topic_of(topic_prefix: str, source: str) -> str:
    """Debezium's topic for a table: ``<prefix>.<schema or database>.<table>``."""
    return f"{topic_prefix}.{source}"


def mirror_table(
    identifier: str,
    columns: list[tuple[str, str]],
    key: tuple[str, ...],
    properties: dict[str, str],
    topic_prefix: str,
) -> MirrorTable | None:
    """The mirror's view of an Iceberg table; None when cdcmirror did not create it.

    ``columns`` are (name, Iceberg type) in table order, ``_cdc_`` columns included;
    ``key`` is the table's identifier fields.
    """
    source = properties.get(SOURCE_PROPERTY)
    if not source:
        return None
    flavor, _, qualified = source.partition(":")
    if flavor not in dialects.FLAVORS:
        raise ConfigError(
            f"{identifier}: table property {SOURCE_PROPERTY} = {source!r} names no source "
            f"flavor ({', '.join(dialects.FLAVORS)}); run `cdcmirror bootstrap` to record it"
        )
    try:
        carriers: dict[str, str] = json.loads(properties.get(CARRIERS_PROPERTY) or "")
    except ValueError:
        carriers = {}
    out = []
    missing = []
    for name, iceberg in columns:
        if name.startswith(PREFIX):
            continue
        if name not in carriers:
            missing.append(name)
            continue
        out.append(MirrorColumn(name, iceberg, carriers[name]))
    if missing:
        raise ConfigError(
            f"{identifier}: no Debezium carrier recorded for column(s) {', '.join(missing)} "
            f"(table property {CARRIERS_PROPERTY}); run `cdcmirror bootstrap` to record them"
        )
    truncated: tuple[int, ...] = ()
    if properties.get(TRUNCATED_PROPERTY):
        truncated = tuple(int(x) for x in json.loads(properties[TRUNCATED_PROPERTY]))
    return MirrorTable(
        identifier=identifier,
        topic=topic_of(topic_prefix, qualified),
        flavor=flavor,
        source=qualified,
        key=key,
        mode=properties.get(MODE_PROPERTY, "upsert" if key else "append"),
        columns=tuple(out),
        truncated_at=truncated,
        truncated_ts_us=int(properties[TRUNCATED_TS_PROPERTY])
        if properties.get(TRUNCATED_TS_PROPERTY)
        else None,
        reloaded=parse_mark(properties.get(RELOADED_PROPERTY)),
        loading=properties.get(LOAD_PROPERTY) == LOAD_PENDING,
        read_through=read_through(properties.get(LOAD_PROPERTY)),
        history=properties.get(HISTORY_PROPERTY) or None,
    )


def carriers_json(table: MirrorTable) -> str:
    return json.dumps({c.name: c.carrier for c in table.columns}, separators=(",", ":"))
