"""Avro in the Confluent wire format decoded by Spark's own reader (``spark/avro_frames.py``)
into the JSON converter's text: real Spark, values framed as the Apicurio converter does."""

from __future__ import annotations

import base64
import json
from decimal import Decimal
from typing import Any

from cdcmirror.mirror.avro import NOT_UTF8
from cdcmirror.spark.avro_frames import AvroFrames
from support.avro_events import ENVELOPE, EVENT, ROW, framed
from support.spark import SparkWorld


def b64(data: object) -> str:
    assert isinstance(data, bytes), data
    return base64.b64encode(data).decode()


def decoded(world: SparkWorld, values: list[bytes | None], schemas: dict[int, str]) -> list[Any]:
    df = world.spark.createDataFrame([(v,) for v in values], "value BINARY")
    frames = AvroFrames()
    out = frames.decode(frames.with_ids(df), schemas).select(
        "value", "_cdc_json", "_cdc_decode_error"
    )
    rows = {bytes(r.value) if r.value is not None else None: r for r in out.collect()}
    return [rows[v] for v in values]


def test_decodes_to_the_json_converter_text(spark_world: SparkWorld) -> None:
    [row] = decoded(spark_world, [framed(42, EVENT)], {42: json.dumps(ENVELOPE)})
    assert row._cdc_decode_error is None
    event = json.loads(row._cdc_json)
    after = event["after"]
    assert event["op"] == "c" and event["before"] is None
    assert event["source"] == {"ts_ms": 1, "snapshot": "false", "sequence": '["1","2"]', "lsn": 2}
    # bytes and decimals as base64 of the bytes written, as the JSON converter carries them
    assert after["price"] == b64(ROW["price"])
    assert after["wide"] == b64(ROW["wide"])
    assert after["data"] == b64(b"\x00\xff\x10")
    unbounded = ROW["unbounded"]
    assert isinstance(unbounded, dict)
    assert after["unbounded"] == {"scale": 3, "value": b64(unbounded["value"])}
    # Debezium's time types stay the plain numbers they are
    assert (after["born"], after["seen_at"]) == (-719162, 253402300799999999)
    assert after["name"] == ROW["name"] and after["tags"] == ["a", None, ""]
    assert after["small"] == -32768 and after["ratio"] == 0.5
    unscaled = int.from_bytes(base64.b64decode(after["price"]), "big", signed=True)
    assert Decimal(f"{unscaled}E-10") == Decimal("9999999999999999999999999999.9999999999")


def test_undecodable_values_say_why(spark_world: SparkWorld) -> None:
    good = framed(1, EVENT)
    cases: dict[bytes | None, str | None] = {
        good: None,
        None: None,  # a tombstone stays a tombstone
        b'{"op": "c"}': "not Avro in the Confluent wire format",
        b"\x00\x00\x00\x00\x09" + good[5:]: "schema id 9 is not in the schema registry",
        framed(70000, EVENT): "schema id 70000 is not in the schema registry",  # 4 id bytes
        b"\x01\x00\x00\x00\x01" + good[5:]: "not Avro in the Confluent wire format",
        b"\x00\x00": "not Avro in the Confluent wire format",
        good[:-4]: "the Avro body does not match schema id 1",
        good[:12]: "the Avro body does not match schema id 1",
        b"\x00\x00\x00\x00\x02" + good[5:]: "schema id 2 is not a usable Avro schema",
        b"\x00\x00\x00\x00\x03" + good[5:]: "schema id 3 is not a usable Avro schema",
    }
    schemas = {1: json.dumps(ENVELOPE), 2: '{"type": "no-such-type"}', 3: '"long"'}
    rows = decoded(spark_world, list(cases), schemas)
    for (value, expected), row in zip(cases.items(), rows, strict=True):
        if expected is None:
            assert row._cdc_decode_error is None, (value, row)
            assert (row._cdc_json is None) == (value is None), (value, row)
        else:
            assert row._cdc_json is None and expected in (row._cdc_decode_error or ""), (value, row)


def test_a_string_in_a_record_named_by_its_full_name_is_checked(spark_world: SparkWorld) -> None:
    """A schema that refers to a record by its full name (``shop.v1.Tag``): the strings of
    the records of that type are UTF-8-checked too, so a bad one is a dead letter, not a
    value written with U+FFFD."""
    tag = {
        "type": "record",
        "name": "Tag",
        "namespace": "shop.v1",
        "fields": [{"name": "label", "type": "string"}],
    }
    schema = {"type": "record", "name": "Event", "namespace": "shop.v1", "fields": [
        {"name": "first", "type": tag},
        {"name": "more", "type": {"type": "array", "items": "shop.v1.Tag"}},
    ]}  # fmt: skip
    good = framed(5, {"first": {"label": "a"}, "more": [{"label": "ü"}]}, schema)
    bad = framed(5, {"first": {"label": "a"}, "more": [{"label": "XXXX"}]}, schema)
    bad = bad.replace(b"XXXX", b"\xff\xfe\xfd\xfc")
    ok, broken = decoded(spark_world, [good, bad], {5: json.dumps(schema)})
    assert ok._cdc_decode_error is None and json.loads(ok._cdc_json)["more"] == [{"label": "ü"}]
    assert NOT_UTF8 in (broken._cdc_decode_error or ""), broken  # a dead letter
