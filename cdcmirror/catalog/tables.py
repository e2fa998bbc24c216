"""Create and evolve mirrored Iceberg tables through pyiceberg, from a bootstrap plan."""

from __future__ import annotations

import itertools
import logging
from typing import Any

from pyiceberg.exceptions import NamespaceAlreadyExistsError, NoSuchTableError
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortField, SortOrder
from pyiceberg.transforms import BucketTransform, IdentityTransform
from pyiceberg.types import NestedField

from cdcmirror.bootstrap.plan import DesiredTable, ExistingTable, TablePlan
from cdcmirror.catalog.types import to_iceberg, to_spec

logger = logging.getLogger(__name__)


def read_existing(catalog: Any, identifier: str) -> ExistingTable | None:
    """The table as plain data, or None when the catalog has no such table."""
    try:
        table = catalog.load_table(identifier)
    except NoSuchTableError:
        return None
    schema = table.schema()
    columns = {f.name: (to_spec(f.field_type), f.required) for f in schema.fields}
    identifier_fields = tuple(schema.find_column_name(i) or "" for i in schema.identifier_field_ids)
    return ExistingTable(columns, identifier_fields, dict(table.properties))


def build_schema(desired: DesiredTable) -> Schema:
    """The Iceberg schema of a desired table; identifier fields = the key."""
    nested_ids = itertools.count(len(desired.columns) + 1)
    fields = [
        NestedField(i, c.name, to_iceberg(c.type, nested_ids), required=c.required, doc=c.doc)
        for i, c in enumerate(desired.columns, start=1)
    ]
    ids = {c.name: i for i, c in enumerate(desired.columns, start=1)}
    return Schema(*fields, identifier_field_ids=[ids[k] for k in desired.key])


def _partition_spec(desired: DesiredTable, schema: Schema) -> PartitionSpec:
    if desired.partition is None:
        return PartitionSpec()
    source = schema.find_field(desired.partition.column)
    return PartitionSpec(
        PartitionField(
            source_id=source.field_id,
            field_id=1000,
            transform=BucketTransform(desired.partition.buckets),
            name=f"{desired.partition.column}_bucket",
        )
    )


def _sort_order(desired: DesiredTable, schema: Schema) -> SortOrder:
    if not desired.sort:
        return UNSORTED_SORT_ORDER
    fields = [
        SortField(source_id=schema.find_field(c).field_id, transform=IdentityTransform())
        for c in desired.sort
    ]
    return SortOrder(*fields)


def ensure_namespace(catalog: Any, namespace: str) -> None:
    try:
        catalog.create_namespace(namespace)
        logger.info("created namespace %s", namespace)
    except NamespaceAlreadyExistsError:
        pass


def apply_plan(catalog: Any, plan: TablePlan, format_version: int) -> None:
    """Make the catalog's table what the plan says; drift is left untouched."""
    desired = plan.desired
    if plan.action == "create":
        schema = build_schema(desired)
        catalog.create_table(
            desired.identifier,
            schema=schema,
            partition_spec=_partition_spec(desired, schema),
            sort_order=_sort_order(desired, schema),
            properties={"format-version": str(format_version), **desired.properties},
        )
        logger.info("created %s", desired.identifier)
        return
    if plan.action != "alter":
        return
    table = catalog.load_table(desired.identifier)
    with table.transaction() as tx:
        if plan.add or plan.widen or plan.relax:
            with tx.update_schema() as update:
                for col in plan.add:
                    update.add_column(col.name, to_iceberg(col.type), doc=col.doc)
                for name, _, new in plan.widen:
                    update.update_column(name, field_type=to_iceberg(new))
                for name in plan.relax:
                    update.update_column(name, required=False)
        if plan.set_properties:
            tx.set_properties(plan.set_properties)
    logger.info("altered %s: %s", desired.identifier, "; ".join(plan.changes()))
