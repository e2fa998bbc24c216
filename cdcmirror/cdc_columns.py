"""The ``_cdc_`` columns cdcmirror adds after the source columns of every mirrored table.

Shared by ``bootstrap`` (which creates them) and the mirror job (which fills them).
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "_cdc_"


@dataclass(frozen=True)
class IcebergColumn:
    """One column of an Iceberg table as plain data; ``type`` is an Iceberg type string."""

    name: str
    type: str
    required: bool = False
    doc: str | None = None


OP = IcebergColumn(
    "_cdc_op", "string", doc="operation of the last change: r (snapshot read), c, u, d"
)
POSITION = IcebergColumn(
    "_cdc_position",
    "list<long>",
    doc="source position of the last change, compared element by element: PostgreSQL "
    "[phase, last commit LSN, LSN, ...], MySQL/MariaDB [phase, binlog file index, position, "
    "row, ...]; "
    "Kafka partition and offset come last",
)
SOURCE_TS = IcebergColumn(
    "_cdc_source_ts", "timestamptz", doc="commit time of the last change at the source"
)
DELETED = IcebergColumn(
    "_cdc_deleted", "boolean", doc="true when the row was deleted at the source (soft deletes)"
)
CDC_COLUMNS = (OP, POSITION, SOURCE_TS, DELETED)
