"""An Avro event stream's values as written, through both of its reads
(``streams/avro_direct.py``): a schema whose fields are the columns' own types is read
straight into the columns, any other (here: one with a nested record and a map) through
the JSON converter's text. Real Spark and Iceberg, no Kafka: the batch is Kafka-shaped rows
of values framed as the Confluent wire format, the registry client's cache holds the
schemas. Every value must come back as the Python value written (a float as its 32 bits);
a string that is not UTF-8 is a dead letter in either read, never a changed value."""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Iterator
from typing import Any

import fastavro
import pytest

from cdcmirror.clients.registry import SchemaRegistry
from cdcmirror.iceberg_types import spark_type
from cdcmirror.mirror.avro import NOT_UTF8, plain_schema
from cdcmirror.mirror.stats import TableStats
from cdcmirror.spark.avro_frames import AvroFrames
from cdcmirror.spark.streams.apply import StreamBatch, StreamTable
from cdcmirror.streams.avro_direct import direct_fields
from cdcmirror.streams.schema import KAFKA_COLUMNS, columns_of_avro
from cdcmirror.streams.spec import StreamSpec
from support.spark import SparkWorld

TOPIC = "avro.values"
FLAT: list[dict[str, Any]] = [
    {"name": "i", "type": "int"},
    {"name": "l", "type": "long"},
    {"name": "f", "type": "float"},
    {"name": "d", "type": "double"},
    {"name": "b", "type": "boolean"},
    {"name": "s", "type": "string"},
    {"name": "e", "type": {"type": "enum", "name": "Colour", "symbols": ["RED", "GREEN"]}},
    {"name": "by", "type": "bytes"},
    {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
    {"name": "ls", "type": {"type": "array", "items": "long"}},
    {"name": "ss", "type": {"type": "array", "items": "string"}},
    {"name": "os", "type": ["null", "string"], "default": None},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
]
DIRECT = {"type": "record", "name": "Values", "fields": FLAT}
NESTED = {
    "type": "record",
    "name": "Values",
    "fields": [
        *FLAT,
        {"name": "inner", "type": ["null", {"type": "record", "name": "In", "fields": [
            {"name": "x", "type": "long"}]}], "default": None},
        {"name": "tags", "type": ["null", {"type": "map", "values": "long"}], "default": None},
    ],
}  # fmt: skip
IDS = {DIRECT["name"]: 11}


def event(n: int, s: str = "") -> dict[str, Any]:
    return {
        "i": -(2**31) + n,
        "l": 2**62 + n,
        "f": 1.1 * n,
        "d": 1e300 / (n + 1),
        "b": n % 2 == 0,
        "s": s or f"näme {n} 名",
        "e": "GREEN" if n % 2 else "RED",
        "by": bytes([0, 255, n % 256]),
        "fx": bytes([n % 256, 1, 2, 3]),
        "ls": [n, -n, 2**63 - 1],
        "ss": ["a", "", f"ü{n}"],
        "os": None if n % 3 == 0 else f"o{n}",
        "at": 1_764_000_000_000 + n,
    }


def framed(schema_id: int, schema: dict[str, Any], value: dict[str, Any]) -> bytes:
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), value)
    return b"\x00" + schema_id.to_bytes(4, "big") + body.getvalue()


def not_utf8(schema_id: int, schema: dict[str, Any]) -> bytes:
    """An event whose string ``s`` holds bytes that are not UTF-8 (the writer would refuse
    them: a placeholder of the same length is replaced in the body)."""
    value = framed(schema_id, schema, event(0, "XXXX"))
    return value.replace(b"XXXX", b"\xff\xfe\xfd\xfc")


# the stream's read: as a batch after the applier's first look, or read once from Kafka
# knowing both schema ids, or knowing only the first (the write stops at the second's
# first event and runs again after a pass over the ids)
READS = {"usual": (False, ()), "once": (True, (11, 12)), "once-new-id": (True, (11,))}


def kafka_batch(spark: Any, values: list[bytes]) -> Any:
    """``values`` as Kafka rows of partition 0 of the topic, at offsets 0, 1, ..."""
    rows = [(TOPIC, 0, offset, None, v, None) for offset, v in enumerate(values)]
    return spark.createDataFrame(
        rows,
        "topic STRING, partition INT, offset BIGINT, key BINARY, value BINARY, "
        "headers ARRAY<STRUCT<key: STRING, value: BINARY>>",
    ).selectExpr("*", "current_timestamp() AS timestamp")


@pytest.fixture(scope="module", params=sorted(READS))
def batch(
    spark_world: SparkWorld, request: pytest.FixtureRequest
) -> Iterator[tuple[Any, StreamTable, StreamBatch, bool]]:
    spark = spark_world.spark
    single_pass, known = READS[request.param]
    name = f"avro_values.t_{request.param.replace('-', '_')}"
    columns = tuple(columns_of_avro(json.dumps(NESTED), "test"))
    ddl = ", ".join(f"`{c.name}` {spark_type(c.type)}" for c in (*columns, *KAFKA_COLUMNS))
    spark.sql("CREATE NAMESPACE IF NOT EXISTS avro_values")
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} ({ddl}) USING iceberg")
    spec = StreamSpec(0, name, "avro", f"{TOPIC}-value", topic=TOPIC)
    table = StreamTable(spec, name, columns, avro_ids=known)
    registry = SchemaRegistry("http://127.0.0.1:1", timeout=1, retries=())
    registry._cache.update({11: json.dumps(DIRECT), 12: json.dumps(NESTED)})
    nested = {"inner": {"x": 5}, "tags": {"k": 1}}
    values = [framed(11, DIRECT, event(n)) for n in range(40)]
    values += [framed(12, NESTED, {**event(n), **nested}) for n in range(40, 80)]
    values += [not_utf8(11, DIRECT), not_utf8(12, {**NESTED})]
    kafka = kafka_batch(spark, values)
    stream = StreamBatch(spark, table, lambda t, _: t, AvroFrames(), registry)
    yield kafka, table, stream, single_pass
    spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_the_flat_schema_is_read_straight_and_the_nested_one_through_json() -> None:
    columns = columns_of_avro(json.dumps(NESTED), "test")
    assert direct_fields(json.dumps(plain_schema(DIRECT)), columns) is not None
    assert direct_fields(json.dumps(plain_schema(NESTED)), columns) is None


def test_every_value_comes_back_as_written(
    spark_world: SparkWorld, batch: tuple[Any, StreamTable, StreamBatch, bool]
) -> None:
    kafka, table, stream, single_pass = batch
    stats = TableStats(table.identifier, events=0)
    last = kafka.count() - 1
    parts = {TOPIC: ({0: 0}, {0: last})}
    done, dead = stream.apply(kafka, "q", 1, parts, stats, single_pass)
    assert done.avro_ids == (11, 12)
    names = [c.name for c in table.columns if c.name not in ("inner", "tags")]
    rows = spark_world.spark.sql(f"SELECT * FROM {table.identifier}").collect()
    got = {r._kafka_offset: r for r in rows}
    assert sorted(got) == list(range(80))
    for n in range(80):
        row, want = got[n], event(n)
        for name in names:
            value = row[name]
            expected = want[name]
            if name == "f":
                expected = struct.unpack("f", struct.pack("f", expected))[0]
            if isinstance(value, bytearray):
                value = bytes(value)
            assert value == expected, (n, name, value, expected)
    assert all(json.loads(got[n].inner) == {"x": 5} for n in range(40, 80))
    assert all(got[n].inner is None for n in range(40))
    assert dead is not None
    reasons = {r.offset: r.error for r in dead.collect()}
    assert reasons == {80: f"Avro: {NOT_UTF8}", 81: f"Avro: {NOT_UTF8}"}, reasons
    assert stats.inserts == 80 and stats.dead_lettered == 2


def test_an_older_schema_with_narrower_numbers_is_read_straight_and_widened(
    spark_world: SparkWorld,
) -> None:
    """An older writer's ``int`` into the table's ``long`` column and its ``float`` into a
    ``double`` column: read straight, each value as written."""
    spark = spark_world.spark
    narrow = {
        "type": "record",
        "name": "Values",
        "fields": [
            {"name": "l", "type": "int"},
            {"name": "d", "type": "float"},
            {"name": "ls", "type": {"type": "array", "items": "int"}},
        ],
    }
    columns = tuple(columns_of_avro(json.dumps(NESTED), "test"))
    assert direct_fields(json.dumps(narrow), columns) == ["l", "d", "ls"]
    name = "avro_values.t_narrow"
    ddl = ", ".join(f"`{c.name}` {spark_type(c.type)}" for c in (*columns, *KAFKA_COLUMNS))
    spark.sql("CREATE NAMESPACE IF NOT EXISTS avro_values")
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} ({ddl}) USING iceberg")
    registry = SchemaRegistry("http://127.0.0.1:1", timeout=1, retries=())
    registry._cache.update({13: json.dumps(narrow)})
    table = StreamTable(StreamSpec(0, name, "avro", f"{TOPIC}-value", topic=TOPIC), name, columns)
    written = [{"l": -(2**31) + n, "d": 0.1 * n, "ls": [n, 2**31 - 1]} for n in range(10)]
    kafka = kafka_batch(spark, [framed(13, narrow, e) for e in written])
    stream = StreamBatch(spark, table, lambda t, _: t, AvroFrames(), registry)
    stats = TableStats(name, events=0)
    stream.apply(kafka, "q", 1, {TOPIC: ({0: 0}, {0: 9})}, stats)
    got = {r._kafka_offset: r for r in spark.sql(f"SELECT * FROM {name}").collect()}
    assert stats.inserts == 10 and sorted(got) == list(range(10))
    for n, e in enumerate(written):
        assert got[n].l == e["l"] and got[n].ls == e["ls"], (got[n], e)
        assert got[n].d == struct.unpack("f", struct.pack("f", e["d"]))[0], (got[n], e)
        assert got[n].s is None
    spark.sql(f"DROP TABLE IF EXISTS {name}")
