"""Schema evolution from the events themselves, before a table's MERGE. Pure.

Every distinct row schema among a table's events in the batch is looked at (JSON with
schemas: the envelope's ``schema``; Avro: the registry's schema of each id; JSON without
schemas: the field names), not only the newest event's: on a multi-partition topic an older
schema can be the newest of its partition, and ``from_json`` drops fields it does not know.
A field the table lacks becomes a new column; a field whose carrier changed is either an
allowed widening (int -> long, float -> double, decimal precision up), a narrower type
than the column already has (an event from before a widening: nothing to do), a new
encoding of the same Iceberg type, or a change the mirror must not make, which stops that
table.

The same Iceberg type can come in several encodings (DESIGN.md rule 8): a timestamp's
precision changed at the source turns ``io.debezium.time.Timestamp`` (milliseconds) into
``MicroTimestamp``; a time mode or a wide decimal's scale likewise. A batch can hold events
from before and after, so no one carrier of the column decodes them all: each event is
decoded with its own row schema's (:func:`schema_carriers`, ``envelope.Variants``), and the
table's recorded carrier is left as it is.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from cdcmirror.cdc_columns import name_problem
from cdcmirror.iceberg_types import is_widening
from cdcmirror.mirror.carriers import (
    CarrierError,
    carrier_of_field,
    convert_sql,
    iceberg_of_field,
    parse_carrier,
    wire_type,
)
from cdcmirror.mirror.envelope import UTF8
from cdcmirror.mirror.schema_parts import PAYLOAD_MARK
from cdcmirror.mirror.spec import MirrorColumn, MirrorTable
from cdcmirror.sql_text import sql_string


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
        problem = name_problem(name)
        if problem:
            evo.errors.append(f"new source column {name}: its name {problem}")
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
            continue  # another encoding of the same type: decoded per event (schema_carriers)
        if iceberg is not None and is_widening(col.iceberg, iceberg):
            evo.widen.append((name, col.iceberg, iceberg))
            evo.carriers[name] = carrier
        elif iceberg is not None and is_widening(iceberg, col.iceberg):
            continue  # an event from before a widening: its values fit the wider column
        else:
            evo.errors.append(
                f"column {name}: the events now carry {carrier} (Iceberg {iceberg or 'none'}) "
                f"but the Iceberg column is {col.iceberg}; {col.iceberg} -> "
                f"{iceberg or carrier} is not an allowed widening"
            )
    return evo


def schema_carriers(
    table: MirrorTable, fields: list[dict[str, Any]]
) -> tuple[dict[str, str], list[str]]:
    """The carriers of one row schema's fields that differ from the columns' recorded ones
    (its events decode with these), and why a field's carrier cannot be decoded into its
    column: it must read as the same JSON shape (``carriers.wire_type``: one ``from_json``
    schema serves every event of the batch) and convert to the column's Iceberg type.

    >>> from cdcmirror.mirror.carriers import DECIMAL_NAME
    >>> from cdcmirror.mirror.spec import MirrorColumn
    >>> t = _example(MirrorColumn("at", "timestamp", "int64 io.debezium.time.Timestamp"))
    >>> schema_carriers(t, [{"field": "at", "type": "int64",
    ...                      "name": "io.debezium.time.MicroTimestamp"}])
    ({'at': 'int64 io.debezium.time.MicroTimestamp'}, [])
    >>> schema_carriers(t, [{"field": "at", "type": "string"}])[1]
    ['column at: cannot convert carrier string to Iceberg timestamp']
    >>> wide = _example(MirrorColumn("n", "string", f"bytes {DECIMAL_NAME}(2)"))
    >>> schema_carriers(wide, [{"field": "n", "type": "struct",
    ...                         "name": "io.debezium.data.VariableScaleDecimal"}])[1]
    ... # doctest: +ELLIPSIS
    ['column n: the events now carry struct io.debezium.data.VariableScaleDecimal, which ...]
    """
    known = {c.name: c for c in table.columns}
    out: dict[str, str] = {}
    errors: list[str] = []
    for f in fields:
        col = known.get(str(f.get("field")))
        if col is None:
            continue
        carrier = carrier_of_field(f)
        if carrier == col.carrier:
            continue
        try:
            was, now = wire_type(parse_carrier(col.carrier)), wire_type(parse_carrier(carrier))
            convert_sql("w", parse_carrier(carrier), col.iceberg)
        except CarrierError as exc:
            errors.append(f"column {col.name}: {exc}")
            continue
        if was != now:
            errors.append(
                f"column {col.name}: the events now carry {carrier}, which reads as {now}, "
                f"while its other events ({col.carrier}) read as {was}; bootstrap the table "
                "again from a fresh snapshot"
            )
            continue
        out[col.name] = carrier
    return out, errors


def _example(*columns: MirrorColumn) -> MirrorTable:
    return MirrorTable("n.t", "s.t", "mysql", "t", (), "append", tuple(columns))


def unknown_names(table: MirrorTable, names: list[str]) -> list[str]:
    """Fields of a schemaless event that the table has no column for."""
    known = set(table.names)
    return [n for n in names if n not in known]


NEW_SCHEMA = "a row schema new to this job (read again after a first look)"
"""The ``_cdc_decode_error`` of an event whose schema the job does not know
(``schema_parts.known_schema_sql``): the batch is applied the usual way instead
(``spark/cdc/plan.py``), never dead-lettered."""


def known_ids_sql(ids: list[int]) -> str:
    """Per Avro event (``_cdc_schema_id`` read from its frame): its schema id is one of ``ids``,
    or it has none (an unframed value: a dead letter either way).

    >>> known_ids_sql([3, 1]), known_ids_sql([])
    ('(_cdc_schema_id IS NULL OR _cdc_schema_id IN (1, 3))', '(_cdc_schema_id IS NULL)')
    """
    listed = ", ".join(str(i) for i in sorted(ids))
    return (
        f"(_cdc_schema_id IS NULL OR _cdc_schema_id IN ({listed}))"
        if ids
        else "(_cdc_schema_id IS NULL)"
    )


def distinct_schemas_sql(kind: str, rows: str = "true") -> str:
    """Aggregate over a batch's Kafka rows (JSON: with the ``envelope.UTF8`` column): the
    distinct row schemas, as text or ids.

    ``rows``: a condition over the rows whose schemas count (the CDC topics'; a plain event
    stream's rows have none). ``kind``: ``avro`` (schema ids of the events that decode),
    ``json`` (the converter's
    ``{"schema":...`` part, which it writes before the payload), ``schemaless`` (the JSON
    list of the row's field names). A JSON value that is not UTF-8 has none: its names
    would hold U+FFFD where its bad bytes are (it is dead-lettered).
    """
    if kind == "avro":
        return (
            f"collect_set(IF({rows} AND _cdc_decode_error IS NULL AND _cdc_json IS NOT NULL, "
            "_cdc_schema_id, NULL))"
        )
    value = "CAST(value AS STRING)"
    text = f"IF({UTF8} AND {rows}, {value}, NULL)"  # else a dead letter, no schema
    if kind == "json":
        return f"collect_set(substring_index({text}, '{PAYLOAD_MARK}', 1))"
    return f"collect_set({names_sql(text)})"


def names_sql(text: str) -> str:
    """Per schemaless JSON event (``text``: its value as text): its row schema, the JSON list
    of its row's field names, sorted (NULL when it has no row: a truncate, or not UTF-8).

    >>> names_sql("v")  # doctest: +NORMALIZE_WHITESPACE
    "to_json(array_sort(json_object_keys(coalesce(get_json_object(v, '$.after'),
    get_json_object(v, '$.before')))))"
    """
    row = f"coalesce(get_json_object({text}, '$.after'), get_json_object({text}, '$.before'))"
    return f"to_json(array_sort(json_object_keys({row})))"


def known_names_sql(known: list[str]) -> str:
    """Per schemaless JSON Kafka row (with the ``envelope.UTF8`` column): its field names are
    one of the ``known`` lists, as ``distinct_schemas_sql`` collects them, or it has none (no
    row, or a value that is not UTF-8: a dead letter either way). One parse of the row per
    event, where a first look reads and caches the whole batch before its decode.

    >>> print(known_names_sql(['["a","id"]']))  # doctest: +NORMALIZE_WHITESPACE
    coalesce(to_json(array_sort(json_object_keys(coalesce(get_json_object(IF(_cdc_utf8,
    CAST(value AS STRING), NULL), '$.after'), get_json_object(IF(_cdc_utf8, CAST(value AS
    STRING), NULL), '$.before'))))) IN ('["a","id"]'), true)
    >>> known_names_sql([])
    'false'
    """
    if not known:
        return "false"
    listed = ", ".join(sql_string(k) for k in sorted(known))
    return f"coalesce({names_sql(f'IF({UTF8}, CAST(value AS STRING), NULL)')} IN ({listed}), true)"


def schema_key_sql(kind: str) -> str:
    """Per event (a Kafka row; Avro: after the frame is read): the key of its row schema,
    as ``schema_key`` gives it for an entry of ``distinct_schemas_sql`` (avro or json)."""
    if kind == "avro":
        return "CAST(_cdc_schema_id AS STRING)"
    if kind == "schemaless":
        return f"sha2({names_sql('CAST(value AS STRING)')}, 256)"
    return f"sha2(substring_index(CAST(value AS STRING), '{PAYLOAD_MARK}', 1), 256)"


def schema_key(kind: str, schema: Any) -> str:
    """The key of one entry of ``distinct_schemas_sql`` (the id, or the SHA-256 of the
    JSON schema part: no schema text in SQL).

    >>> schema_key("avro", 42), schema_key("json", "{}")[:12]
    ('42', '44136fa355b3')
    """
    if kind == "avro":
        return str(int(schema))
    return hashlib.sha256(str(schema).encode("utf-8")).hexdigest()


def json_schema_fields(schema_part: str) -> list[dict[str, Any]] | None:
    """The row fields of the ``{"schema":...`` part of a JSON-with-schemas event; None when
    it is not one (an undecodable event: the decoder dead-letters it).

    >>> json_schema_fields('{"schema":{"fields":[{"field":"after","fields":[{"field":"id"}]}]}')
    [{'field': 'id'}]
    >>> json_schema_fields('not json') is None
    True
    """
    try:
        value = json.loads(schema_part + "}")
    except ValueError:
        return None
    return row_fields(value.get("schema")) if isinstance(value, dict) else None


def field_names(names_json: str) -> list[str]:
    """The field names of a schemaless event (``distinct_schemas_sql("schemaless")``).

    >>> field_names('["a","b"]'), field_names("null")
    (['a', 'b'], [])
    """
    try:
        names = json.loads(names_json)
    except ValueError:
        return []
    return [str(n) for n in names] if isinstance(names, list) else []
