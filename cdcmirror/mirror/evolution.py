"""Schema evolution from the events themselves, before a table's MERGE. Pure.

The newest event of a table in a batch carries the field schemas of its row (JSON with
schemas; Avro through the registry). A field the table lacks becomes a new column; a field
whose carrier changed is either an allowed widening (int -> long, float -> double, decimal
precision up) or a change the mirror must not make, which stops that table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdcmirror.bootstrap.plan import is_widening
from cdcmirror.cdc_columns import PREFIX
from cdcmirror.mirror.carriers import carrier_of_field, iceberg_of_field
from cdcmirror.mirror.spec import MirrorColumn, MirrorTable


@dataclass
class Evolution:
    add: list[MirrorColumn] = field(default_factory=list)
    widen: list[tuple[str, str, str]] = field(default_factory=list)  # (column, old, new)
    carriers: dict[str, str] = field(default_factory=dict)  # column -> new carrier
    errors: list[str] = field(default_factory=list)

    @property
    def changes(self) -> bool:
        return bool(self.add or self.widen or self.carriers)

    def evolved(self, table: MirrorTable) -> MirrorTable:
        """The table as it is after these changes."""
        widened = {name: new for name, _, new in self.widen}
        cols = tuple(
            MirrorColumn(
                c.name, widened.get(c.name, c.iceberg), self.carriers.get(c.name, c.carrier)
            )
            for c in table.columns
        )
        return table.with_columns(cols + tuple(self.add))


def row_fields(envelope_schema: Any) -> list[dict[str, Any]] | None:
    """The field schemas of ``after`` (else ``before``) in a Connect JSON envelope schema;
    None when there are none or the schema is malformed (its event is then judged by the
    decoder: dead-lettered when its payload cannot be applied).

    >>> row_fields({"fields": [{"field": "after", "fields": [{"field": "id"}]}]})
    [{'field': 'id'}]
    >>> row_fields("not a schema"), row_fields({"fields": "x"}), row_fields({"fields": [1]})
    (None, None, None)
    """
    if not isinstance(envelope_schema, dict):
        return None
    listed = envelope_schema.get("fields")
    if not isinstance(listed, list):
        return None
    fields = {f.get("field"): f for f in listed if isinstance(f, dict)}
    for name in ("after", "before"):
        row = fields.get(name)
        inner = row.get("fields") if isinstance(row, dict) else None
        if isinstance(inner, list) and inner:
            if not all(isinstance(f, dict) and isinstance(f.get("field"), str) for f in inner):
                return None
            return list(inner)
    return None


def plan_evolution(table: MirrorTable, fields: list[dict[str, Any]]) -> Evolution:
    evo = Evolution()
    known = {c.name: c for c in table.columns}
    for f in fields:
        name = str(f.get("field"))
        carrier = carrier_of_field(f)
        iceberg = iceberg_of_field(f)
        if name.startswith(PREFIX):
            evo.errors.append(f"source column {name} starts with {PREFIX!r}, cdcmirror's prefix")
            continue
        col = known.get(name)
        if col is None:
            if iceberg is None:
                evo.errors.append(
                    f"new column {name}: its events carry {carrier}, which has no Iceberg type"
                )
            else:
                evo.add.append(MirrorColumn(name, iceberg, carrier))
            continue
        if carrier == col.carrier:
            # a decimal's carrier holds only its scale: a precision increase shows in the type
            if iceberg is not None and is_widening(col.iceberg, iceberg):
                evo.widen.append((name, col.iceberg, iceberg))
            continue
        if iceberg == col.iceberg:
            evo.carriers[name] = carrier
        elif iceberg is not None and is_widening(col.iceberg, iceberg):
            evo.widen.append((name, col.iceberg, iceberg))
            evo.carriers[name] = carrier
        else:
            evo.errors.append(
                f"column {name}: the events now carry {carrier} (Iceberg {iceberg or 'none'}) "
                f"but the Iceberg column is {col.iceberg}; {col.iceberg} -> "
                f"{iceberg or carrier} is not an allowed widening"
            )
    return evo


def unknown_names(table: MirrorTable, names: list[str]) -> list[str]:
    """Fields of a schemaless event that the table has no column for."""
    known = set(table.names)
    return [n for n in names if n not in known]
