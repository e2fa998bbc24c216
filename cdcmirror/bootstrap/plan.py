"""What bootstrap wants each Iceberg table to be, and what must change to get there. Pure.

``desired_table`` turns a discovered source table into the Iceberg table it maps to;
``plan_table`` compares that with the table the catalog has (as plain data) and lists the
changes bootstrap may make by itself (create, add column, allowed widening, relax NOT NULL,
table properties) and the drift it must not touch.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from cdcmirror.cdc_columns import CDC_COLUMNS, IcebergColumn, name_problem
from cdcmirror.exceptions import ConfigError, UnsupportedTypeError
from cdcmirror.iceberg_types import is_widening, normalize_type
from cdcmirror.mirror.carriers import CarrierError, convert_sql, parse_carrier
from cdcmirror.source_model import SourceCatalog, SourceTable
from cdcmirror.table_properties import (
    CARRIERS_PROPERTY,
    HISTORY_OF_PROPERTY,
    HISTORY_PROPERTY,
    KEY_PROPERTY,
    MERGE_ON_READ,
    MODE_PROPERTY,
    SOURCE_PROPERTY,
    WRITE_DEFAULTS,
)
from cdcmirror.typemap import DECIMAL, MappingOptions, map_column

MONEY_SCALE = 2  # money.fraction.digits in the PostgreSQL connector


def carrier_with_scale(carrier: str, type_name: str, scale: int | None) -> str:
    """A fixed-scale Decimal carrier records its scale (``...Decimal(3)``): decimal text
    columns (precision above 38) have no Iceberg scale to take it from.

    >>> carrier_with_scale("bytes org.apache.kafka.connect.data.Decimal", "numeric", 3)
    'bytes org.apache.kafka.connect.data.Decimal(3)'
    >>> carrier_with_scale("int32", "integer", None)
    'int32'
    """
    if carrier != DECIMAL:
        return carrier
    if type_name == "money":
        scale = MONEY_SCALE
    return f"{carrier}({scale or 0})"


@dataclass(frozen=True)
class ColumnMapping:
    source: str
    source_type: str
    iceberg_type: str
    carrier: str
    required: bool
    domain: str | None = None


@dataclass(frozen=True)
class Partition:
    buckets: int
    column: str


@dataclass(frozen=True)
class DesiredTable:
    source: SourceTable
    namespace: str
    name: str
    columns: tuple[IcebergColumn, ...]
    mappings: tuple[ColumnMapping, ...]
    key: tuple[str, ...]
    mode: str  # "upsert" (a key identifies rows) or "append"
    partition: Partition | None
    properties: dict[str, str]
    sort: tuple[str, ...] = ()  # the columns its rows are written sorted by

    @property
    def identifier(self) -> str:
        return f"{self.namespace}.{self.name}"


@dataclass(frozen=True)
class ExistingTable:
    """An Iceberg table as the catalog has it, as plain data."""

    columns: dict[str, tuple[str, bool]]  # name -> (Iceberg type, required)
    identifier_fields: tuple[str, ...]
    properties: dict[str, str]


@dataclass
class TablePlan:
    desired: DesiredTable
    action: str  # "create", "alter" or "unchanged"
    add: list[IcebergColumn] = field(default_factory=list)
    widen: list[tuple[str, str, str]] = field(default_factory=list)  # (column, from, to)
    relax: list[str] = field(default_factory=list)  # columns that become optional
    set_properties: dict[str, str] = field(default_factory=dict)
    drift: list[str] = field(default_factory=list)

    def changes(self) -> list[str]:
        out = [f"add column {c.name} {c.type}" for c in self.add]
        out += [f"widen {c} {a} -> {b}" for c, a, b in self.widen]
        out += [f"make {c} optional" for c in self.relax]
        out += [f"set {k}={v}" for k, v in sorted(self.set_properties.items())]
        return out


def iceberg_table_name(template: str, schema: str, table: str) -> str:
    """The Iceberg table name of a source table (``iceberg.table_name``).

    >>> iceberg_table_name("{table}", "public", "Orders")
    'orders'
    >>> iceberg_table_name("{schema}__{table}", "sales", "orders")
    'sales__orders'
    """
    try:
        name = template.format(schema=schema, table=table)
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(
            f"iceberg.table_name {template!r} may use only {{schema}} and {{table}}"
        ) from exc
    return name.lower()


_BUCKET = re.compile(r"^bucket\(\s*(\d+)\s*(?:,\s*([^)\s]+)\s*)?\)$")


def parse_partition(text: str) -> tuple[int, str | None] | None:
    """``iceberg.partition``: empty for none, ``bucket(N)`` on the first key column, or
    ``bucket(N, column)``.

    >>> parse_partition("bucket(16)")
    (16, None)
    >>> parse_partition("bucket(8, tenant)")
    (8, 'tenant')
    >>> parse_partition("") is None
    True
    """
    text = text.strip()
    if not text or text == "none":
        return None
    match = _BUCKET.match(text)
    if match is None or int(match[1]) < 1:
        raise ConfigError(
            f"iceberg.partition {text!r}: write bucket(N) or bucket(N, column), or leave it "
            "empty for unpartitioned tables"
        )
    return int(match[1]), match[2]


def _doc(source_type: str, domain: str | None, comment: str | None) -> str:
    doc = f"source type: {source_type}"
    if domain:
        doc += f" (domain {domain})"
    return f"{doc}; {comment}" if comment else doc


def lossless_for_keys(options: MappingOptions | None) -> MappingOptions:
    """The mapping options for a key column: never a lossy mapping (tinyint(1) as boolean
    would merge the keys 1, 2, 3 into one row)."""
    return replace(options or MappingOptions(), tinyint1_as_boolean=False)


def desired_table(
    catalog: SourceCatalog,
    table: SourceTable,
    namespace: str,
    name_template: str = "{table}",
    options: MappingOptions | None = None,
    partition: str = "",
) -> DesiredTable:
    """The Iceberg table a source table maps to. Raises for every column without a mapping."""
    columns, mappings, carriers = _map_columns(catalog, table, options)
    columns.extend(CDC_COLUMNS)
    spec = _partition(table, columns, partition)
    mode = "upsert" if table.key else "append"
    properties = {
        **MERGE_ON_READ,
        **WRITE_DEFAULTS,
        SOURCE_PROPERTY: f"{catalog.flavor}:{table.qualified}",
        KEY_PROPERTY: table.key_source,
        MODE_PROPERTY: mode,
        CARRIERS_PROPERTY: json.dumps(carriers, separators=(",", ":")),
    }
    return DesiredTable(
        source=table,
        namespace=namespace,
        name=iceberg_table_name(name_template, table.schema, table.name),
        columns=tuple(columns),
        mappings=tuple(mappings),
        key=table.key,
        mode=mode,
        partition=spec,
        properties=properties,
    )


def with_history(desired: DesiredTable, suffix: str) -> tuple[DesiredTable, DesiredTable]:
    """A keyed mirrored table that names its history table, and that history table
    (``mirror/history.py``): the source columns, then the version's; no identifier fields
    (a key has a row per version); written sorted by the key, so that the versions of one
    key are read from few files (a table "as of" a moment reads every file anyway).

    >>> from cdcmirror.source_model import SourceTable
    >>> src = SourceTable("s", "t", (), ("id",))
    >>> d = DesiredTable(src, "ns", "t", (IcebergColumn("id", "int", True), *CDC_COLUMNS), (),
    ...     ("id",), "upsert", None, {})
    >>> mirrored, history = with_history(d, "__history")
    >>> mirrored.properties, history.identifier, history.key, history.sort
    ({'cdcmirror.history': 'ns.t__history'}, 'ns.t__history', (), ('id',))
    >>> [c.name for c in history.columns][:3], history.columns[0].required
    (['id', '_cdc_valid_from', '_cdc_valid_to'], False)
    """
    from cdcmirror.mirror.history import HISTORY_COLUMNS

    if not desired.key:
        raise ConfigError(
            f"{desired.source.qualified} has no key, and mirror.history keeps versions of keyed "
            "tables only (a keyless table's mirror keeps every event already); leave it out "
            "of mirror.history"
        )
    name = desired.name + suffix
    cdc = {c.name for c in CDC_COLUMNS}
    columns = [replace(c, required=False) for c in desired.columns if c.name not in cdc]
    history = replace(
        desired,
        name=name,
        columns=(*columns, *HISTORY_COLUMNS),
        key=(),
        mode="history",
        partition=None,
        properties={
            **MERGE_ON_READ,
            **WRITE_DEFAULTS,
            HISTORY_OF_PROPERTY: desired.identifier,
        },
        sort=desired.key,
    )
    mirrored = replace(
        desired, properties={**desired.properties, HISTORY_PROPERTY: history.identifier}
    )
    return mirrored, history


def _map_columns(
    catalog: SourceCatalog, table: SourceTable, options: MappingOptions | None
) -> tuple[list[IcebergColumn], list[ColumnMapping], dict[str, str]]:
    """Each source column's Iceberg column, mapping and carrier; raises for every column
    without a mapping and for a key Iceberg cannot use as identifier."""
    columns: list[IcebergColumn] = []
    mappings: list[ColumnMapping] = []
    carriers: dict[str, str] = {}
    errors: list[str] = []
    for col in table.columns:
        problem = name_problem(col.name)
        if problem:
            errors.append(
                f"{table.qualified}.{col.name}: the column's name {problem}, which a mirrored "
                "table cannot have; rename the column or leave the table out"
            )
            continue
        required = col.name in table.key
        try:
            m = map_column(
                catalog.dialect,
                f"{table.qualified}.{col.name}",
                col.type,
                lossless_for_keys(options) if required else options,
            )
        except UnsupportedTypeError as exc:
            errors.append(str(exc))
            continue
        columns.append(
            IcebergColumn(
                col.name, m.iceberg, required, _doc(col.type.text, col.type.domain, col.comment)
            )
        )
        mappings.append(
            ColumnMapping(col.name, col.type.text, m.iceberg, m.carrier, required, col.type.domain)
        )
        carriers[col.name] = carrier_with_scale(m.carrier, col.type.name, col.type.scale)
    if errors:
        raise UnsupportedTypeError("\n".join(errors))
    bad_keys = [c.name for c in columns if c.required and c.type in ("float", "double")]
    if bad_keys or any(c.required and "<" in c.type for c in columns):
        raise UnsupportedTypeError(
            f"{table.qualified}: key column(s) {', '.join(bad_keys) or 'of a nested type'} "
            "cannot identify Iceberg rows (floating point and nested types are not allowed "
            "as identifier fields); use another key or leave the table out"
        )
    return columns, mappings, carriers


def _partition(
    table: SourceTable, columns: list[IcebergColumn], partition: str
) -> Partition | None:
    """The bucket partition ``iceberg.partition`` asks for (keyed tables only)."""
    parsed = parse_partition(partition)
    if parsed is None or not table.key:
        return None
    buckets, column = parsed
    column = column or table.key[0]
    if column not in {c.name for c in columns}:
        raise ConfigError(
            f"iceberg.partition names column {column!r}, which {table.qualified} lacks"
        )
    return Partition(buckets, column)


def plan_table(desired: DesiredTable, existing: ExistingTable | None) -> TablePlan:
    """What bootstrap does to one table; ``existing=None`` when the catalog has no table."""
    if existing is None:
        return TablePlan(desired, "create")
    plan = TablePlan(desired, "unchanged")
    seen = set()
    for col in desired.columns:
        seen.add(col.name)
        if col.name not in existing.columns:
            if col.required:
                plan.drift.append(
                    f"key column {col.name} is new at the source; an Iceberg identifier "
                    "column cannot be added to a table with rows"
                )
            else:
                plan.add.append(col)
            continue
        old_type, old_required = existing.columns[col.name]
        old_type = normalize_type(old_type)
        if old_type != col.type:
            if is_widening(old_type, col.type):
                plan.widen.append((col.name, old_type, col.type))
            else:
                plan.drift.append(
                    f"column {col.name}: the source type now maps to {col.type}, the Iceberg "
                    f"column is {old_type}, and {old_type} -> {col.type} is not an allowed "
                    "widening"
                )
        if old_required and not col.required:
            plan.relax.append(col.name)
        elif col.required and not old_required:
            plan.drift.append(f"column {col.name} is now part of the key but optional in Iceberg")
    for name in existing.columns:
        if name not in seen:
            plan.drift.append(
                f"column {name} is no longer in the source; kept in Iceberg (new rows get NULL)"
            )
    if tuple(sorted(existing.identifier_fields)) != tuple(sorted(desired.key)):
        plan.drift.append(
            f"the source key is ({', '.join(desired.key) or 'none'}) but the Iceberg "
            f"identifier fields are ({', '.join(existing.identifier_fields) or 'none'})"
        )
    for key, value in desired.properties.items():
        if existing.properties.get(key) != value:
            plan.set_properties[key] = value
    if plan.add or plan.widen or plan.relax or plan.set_properties:
        plan.action = "alter"
    return plan


def carrier_drift(desired: DesiredTable, existing: ExistingTable | None) -> list[str]:
    """The columns whose events change encoding (their carrier) so that one value on the
    wire means another (milliseconds -> microseconds, a decimal's scale), for a connector
    that writes JSON without schemas: its events do not say which encoding each carries, and
    events from before and after the change can share a batch (DESIGN.md rule 8), so the
    mirror cannot decode both right. A widening (int32 -> int64) reads every value alike."""
    if existing is None:
        return []
    try:
        before = json.loads(existing.properties.get(CARRIERS_PROPERTY) or "{}")
        after = json.loads(desired.properties.get(CARRIERS_PROPERTY) or "{}")
    except ValueError:
        return []
    types = {c.name: c.type for c in desired.columns}
    return [
        f"column {name}: its events change from {before[name]} to {after[name]}, and JSON "
        "without schemas does not say which events carry which; set kafka.format to "
        '"json" or "avro" (the events then carry their own encoding), or drop the table and '
        "bootstrap it again from a fresh snapshot"
        for name in sorted(after)
        if name in before and not _reads_alike(before[name], after[name], types.get(name, ""))
    ]


def _reads_alike(old: str, new: str, iceberg: str) -> bool:
    """Both carriers turn every wire value into the same ``iceberg`` value."""
    if old == new:
        return True
    try:
        a = convert_sql("w", parse_carrier(old), iceberg)
        b = convert_sql("w", parse_carrier(new), iceberg)
    except CarrierError:
        return False
    return a == b


DRIFT_ADVICE = (
    "cdcmirror changes nothing it cannot change safely. To follow the source, drop the "
    "Iceberg table and run `cdcmirror bootstrap` again, then re-snapshot the table; or change "
    "the source back"
)
