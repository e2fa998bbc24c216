"""Avro in the Confluent wire format -> the JSON converter's text and field schemas. Pure.

The envelope schema below has the shape Apicurio's converter registered for a Debezium 3.5
PostgreSQL table (seen in the registry): Decimal as bytes with ``connect.parameters``,
VariableScaleDecimal as a record, Debezium time types as annotated ints and longs, ``after``
as a reference to the ``Value`` record that ``before`` defines, an enum-like union in
``source``.
"""

from __future__ import annotations

import io
import re
import struct
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer

from cdcmirror.bootstrap.connector import converter_settings
from cdcmirror.clients.registry import SchemaRegistry
from cdcmirror.config.settings import Kafka
from cdcmirror.exceptions import ServiceUnavailableError
from cdcmirror.mirror.avro import (
    AvroDecodeError,
    connect_schema,
    plain_schema,
)
from cdcmirror.mirror.carriers import carrier_of_field, iceberg_of_field
from cdcmirror.mirror.evolution import plan_evolution, row_fields
from cdcmirror.mirror.spec import MirrorColumn, MirrorTable


def decimal_type(precision: int, scale: int) -> dict[str, Any]:
    return {
        "type": "bytes",
        "scale": scale,
        "precision": precision,
        "connect.version": 1,
        "connect.parameters": {"scale": str(scale), "connect.decimal.precision": str(precision)},
        "connect.name": "org.apache.kafka.connect.data.Decimal",
        "logicalType": "decimal",
    }


def optional(t: Any) -> list[Any]:
    return ["null", t]


VALUE = {
    "type": "record",
    "name": "Value",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": optional("string"), "default": None},
        {"name": "small", "type": optional({"type": "int", "connect.type": "int16"})},
        {"name": "price", "type": optional(decimal_type(38, 10)), "default": None},
        {"name": "wide", "type": optional(decimal_type(50, 10)), "default": None},
        {"name": "ratio", "type": optional("float"), "default": None},
        {
            "name": "born",
            "type": optional({"type": "int", "connect.name": "io.debezium.time.Date"}),
        },
        {
            "name": "seen_at",
            "type": optional({"type": "long", "connect.name": "io.debezium.time.MicroTimestamp"}),
        },
        {"name": "data", "type": optional("bytes"), "default": None},
        {"name": "tags", "type": optional({"type": "array", "items": optional("string")})},
        {
            "name": "unbounded",
            "type": optional(
                {
                    "type": "record",
                    "name": "VariableScaleDecimal",
                    "namespace": "io.debezium.data",
                    "fields": [
                        {"name": "scale", "type": "int"},
                        {"name": "value", "type": "bytes"},
                    ],
                    "connect.name": "io.debezium.data.VariableScaleDecimal",
                }
            ),
        },
    ],
    "connect.name": "src.s.items.Value",
}

ENVELOPE = {
    "type": "record",
    "name": "Envelope",
    "namespace": "src.s.items",
    "fields": [
        {"name": "before", "type": optional(VALUE), "default": None},
        {"name": "after", "type": optional("Value"), "default": None},
        {
            "name": "source",
            "type": {
                "type": "record",
                "name": "Source",
                "namespace": "io.debezium.connector.postgresql",
                "fields": [
                    {"name": "ts_ms", "type": "long"},
                    {
                        "name": "snapshot",
                        "type": [
                            {"type": "string", "connect.name": "io.debezium.data.Enum"},
                            "null",
                        ],
                        "default": "false",
                    },
                    {"name": "sequence", "type": optional("string"), "default": None},
                    {"name": "lsn", "type": optional("long"), "default": None},
                ],
            },
        },
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": optional("long"), "default": None},
    ],
    "connect.name": "src.s.items.Envelope",
}

ROW = {
    "id": 7,
    "name": "Grüße, 世界 \U0001f600",
    "small": -32768,
    "price": (10**38 - 1).to_bytes(17, "big", signed=True),  # max decimal(38, 10), unscaled
    "wide": (-(10**49)).to_bytes(21, "big", signed=True),
    "ratio": 0.5,
    "born": -719162,  # 0001-01-01
    "seen_at": 253402300799999999,  # 9999-12-31 23:59:59.999999
    "data": b"\x00\xff\x10",
    "tags": ["a", None, ""],
    "unbounded": {"scale": 3, "value": (-12345).to_bytes(2, "big", signed=True)},
}
EVENT = {
    "before": None,
    "after": ROW,
    "source": {"ts_ms": 1, "snapshot": "false", "sequence": '["1","2"]', "lsn": 2},
    "op": "c",
    "ts_ms": 3,
}


def framed(sid: int, record: dict[str, Any], schema: dict[str, Any] = ENVELOPE) -> bytes:
    body = io.BytesIO()
    schemaless_writer(body, parse_schema(plain_schema(schema)), record)
    return b"\x00" + struct.pack(">I", sid) + body.getvalue()


def test_connect_schema_drives_evolution_like_the_json_converter() -> None:
    fields = row_fields(connect_schema(ENVELOPE))
    assert fields is not None
    by_name = {f["field"]: f for f in fields}
    assert carrier_of_field(by_name["price"]) == ("bytes org.apache.kafka.connect.data.Decimal(10)")
    assert iceberg_of_field(by_name["price"]) == "decimal(38,10)"
    assert carrier_of_field(by_name["small"]) == "int16"
    assert carrier_of_field(by_name["born"]) == "int32 io.debezium.time.Date"
    assert carrier_of_field(by_name["tags"]) == "array<string>"
    assert by_name["id"]["optional"] is False and by_name["name"]["optional"] is True
    table = MirrorTable(
        identifier="ns.items",
        topic="src.s.items",
        flavor="postgresql",
        source="s.items",
        key=("id",),
        mode="upsert",
        columns=(MirrorColumn("id", "long", "int64"), MirrorColumn("name", "string", "string")),
    )
    evo = plan_evolution(table, fields)
    added = {c.name: c.iceberg for c in evo.add}
    assert added["price"] == "decimal(38,10)" and added["born"] == "date"
    assert not evo.errors or all("wide" in e or "unbounded" in e for e in evo.errors)


def test_a_schema_the_mirror_cannot_map_is_an_error() -> None:
    both = {"type": "record", "name": "R", "fields": [{"name": "x", "type": ["string", "long"]}]}
    with pytest.raises(AvroDecodeError, match="not an optional value"):
        connect_schema(both)
    with pytest.raises(AvroDecodeError, match="undefined type 'Nope'"):
        connect_schema({"type": "record", "name": "R", "fields": [{"name": "x", "type": "Nope"}]})


def test_registry_unreachable_names_the_url() -> None:
    registry = SchemaRegistry("http://127.0.0.1:1/apis/ccompat/v7", timeout=2)
    with pytest.raises(ServiceUnavailableError, match=re.escape("127.0.0.1:1/apis/ccompat/v7")):
        registry.schemas([1])


def _avro(registry: str) -> Kafka:
    return Kafka(bootstrap_servers="k:9092", format="avro", schema_registry_url=registry)


def test_avro_connector_settings_write_the_confluent_wire_format() -> None:
    s = converter_settings(_avro("http://127.0.0.1:8081/apis/ccompat/v7/"))
    for side in ("key", "value"):
        assert s[f"{side}.converter"] == "io.apicurio.registry.utils.converter.AvroConverter"
        assert s[f"{side}.converter.apicurio.registry.as-confluent"] == "true"
        assert s[f"{side}.converter.apicurio.registry.headers.enabled"] == "false"
    confluent = converter_settings(_avro("https://sr.example:8081"))
    assert confluent["value.converter"] == "io.confluent.connect.avro.AvroConverter"
