"""Avro events in the Confluent wire format: a Debezium envelope's schema, a row of it, and
the framing (magic byte, schema id) the registry's serializer writes."""

from __future__ import annotations

import io
import struct
from typing import Any

from fastavro import parse_schema, schemaless_writer

from cdcmirror.mirror.avro import (
    plain_schema,
)


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


BLOCK = {
    "type": "record",
    "name": "block",
    "namespace": "event",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "total_order", "type": "long"},
        {"name": "data_collection_order", "type": "long"},
    ],
}
"""The transaction block of a change (``provide.transaction.metadata``), as Debezium's Avro
converter writes its schema."""
