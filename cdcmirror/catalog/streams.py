"""The Iceberg tables of plain event streams (``[[streams]]``) through pyiceberg: create one,
read it back, add the columns an inferred stream gained."""

from __future__ import annotations

import itertools
import json
import logging
from typing import Any

from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    YearTransform,
)
from pyiceberg.types import NestedField

from cdcmirror.catalog.types import to_iceberg, to_spec
from cdcmirror.cdc_columns import IcebergColumn
from cdcmirror.streams.schema import KAFKA_COLUMNS, KAFKA_NAMES
from cdcmirror.streams.spec import StreamSpec, stream_dict
from cdcmirror.table_properties import MERGE_ON_READ, STREAM_PROPERTY, WRITE_DEFAULTS

logger = logging.getLogger(__name__)

_TRANSFORMS = {
    "identity": IdentityTransform,
    "year": YearTransform,
    "month": MonthTransform,
    "day": DayTransform,
    "hour": HourTransform,
}


def read_stream_table(catalog: Any, identifier: str) -> list[IcebergColumn] | None:
    """The event columns of a stream's table (its Kafka columns left out); None when the
    catalog has no such table."""
    try:
        table = catalog.load_table(identifier)
    except NoSuchTableError:
        return None
    return [
        IcebergColumn(f.name, to_spec(f.field_type), f.required, f.doc)
        for f in table.schema().fields
        if f.name not in KAFKA_NAMES
    ]


def create_stream_table(
    catalog: Any,
    identifier: str,
    spec: StreamSpec,
    columns: list[IcebergColumn],
    format_version: int,
) -> None:
    """The table: the event's columns (key columns required, the rest optional), then the
    Kafka columns; partitioned as the spec says."""
    everything = [*columns, *KAFKA_COLUMNS]
    nested = itertools.count(len(everything) + 1)
    fields = [
        NestedField(
            i, c.name, to_iceberg(c.type, nested), required=c.name in spec.key_columns, doc=c.doc
        )
        for i, c in enumerate(everything, start=1)
    ]
    ids = {c.name: i for i, c in enumerate(everything, start=1)}
    schema = Schema(*fields, identifier_field_ids=[ids[k] for k in spec.key_columns])
    catalog.create_table(
        identifier,
        schema=schema,
        partition_spec=_partition_spec(spec, schema),
        properties={
            "format-version": str(format_version),
            **MERGE_ON_READ,
            **WRITE_DEFAULTS,
            STREAM_PROPERTY: json.dumps(stream_dict(spec), sort_keys=True),
        },
    )
    logger.info("created stream table %s", identifier)


def _partition_spec(spec: StreamSpec, schema: Schema) -> PartitionSpec:
    p = spec.partition
    if p is None:
        return PartitionSpec()
    source = schema.find_field(p.column)
    transform = (
        BucketTransform(p.buckets) if p.transform == "bucket" else _TRANSFORMS[p.transform]()
    )
    return PartitionSpec(
        PartitionField(
            source_id=source.field_id,
            field_id=1000,
            transform=transform,
            name=f"{p.column}_{p.transform}",
        )
    )


def add_stream_columns(catalog: Any, identifier: str, columns: list[IcebergColumn]) -> None:
    """New fields of an inferred stream, as optional columns, in one commit."""
    table = catalog.load_table(identifier)
    with table.update_schema() as update:
        for c in columns:
            update.add_column(c.name, to_iceberg(c.type), doc=c.doc or "added by the mirror")
    logger.info("%s: added %s", identifier, ", ".join(f"{c.name} {c.type}" for c in columns))


def keep_write_defaults(catalog: Any, identifier: str) -> None:
    """Set the write defaults (``WRITE_DEFAULTS``) a stream table made before them lacks."""
    from cdcmirror.catalog.mirrored import set_properties

    have = catalog.load_table(identifier).properties
    missing = {k: v for k, v in WRITE_DEFAULTS.items() if have.get(k) != v}
    if missing:
        set_properties(catalog, identifier, missing)
        logger.info("set %s on stream table %s", ", ".join(sorted(missing)), identifier)
