"""A CDC table's Avro envelope built straight from the record (``mirror/avro_envelope.py``)
against the same events read through the JSON converter's text (``spark/avro_frames.py``):
real Spark, a wide range of types and values, every decoded column, position and error the
same either way; a schema with a field that would read differently goes through the text."""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cdcmirror.mirror.avro_envelope import ENVELOPE, AvroEnvelope
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.spark.avro_frames import AvroFrames
from cdcmirror.spark.cdc.decode import AvroReads, decode_events, register_functions
from support.avro_events import BLOCK, decimal_type, framed, optional
from support.golden import KAFKA_SCHEMA
from support.spark import SparkWorld
from support.tables import make_table

MOOD = {"type": "enum", "name": "Mood", "symbols": ["happy", "sad"]}
# (field, Avro type, carrier, Iceberg type, a random value)
FIELDS: list[tuple[str, Any, str, str, Any]] = [
    ("i32", optional("int"), "int32", "int", lambda r: r.randint(-(2**31), 2**31 - 1)),
    ("small", optional({"type": "int", "connect.type": "int16"}), "int16", "int", None),
    ("flag", optional("boolean"), "boolean", "boolean", lambda r: r.random() < 0.5),
    ("ratio", optional("float"), "float32", "float", None),
    ("big", optional("double"), "float64", "double", None),
    ("name", optional("string"), "string", "string", None),
    ("mood", optional(MOOD), "string", "string", lambda r: r.choice(["happy", "sad"])),
    (
        "price",
        optional(decimal_type(38, 10)),
        "bytes org.apache.kafka.connect.data.Decimal(10)",
        "decimal(38,10)",
        None,
    ),
    (
        "cents",
        optional(decimal_type(5, 2)),
        "bytes org.apache.kafka.connect.data.Decimal(2)",
        "decimal(5,2)",
        None,
    ),
    (
        "wide",
        optional(decimal_type(50, 10)),
        "bytes org.apache.kafka.connect.data.Decimal(10)",
        "string",
        None,
    ),
    (  # its text is read back by a Python function: the base64 text must be the converter's
        "huge",
        optional(decimal_type(150, 10)),
        "bytes org.apache.kafka.connect.data.Decimal(10)",
        "string",
        None,
    ),
    (
        "unbounded",
        optional(
            {
                "type": "record",
                "name": "VariableScaleDecimal",
                "namespace": "io.debezium.data",
                "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
            }
        ),
        "struct io.debezium.data.VariableScaleDecimal",
        "string",
        lambda r: {
            "scale": r.choice([0, 3, 40]),
            "value": r.choice([0, -12345, 10**120]).to_bytes(64, "big", signed=True),
        },
    ),
    (
        "attrs",
        optional({"type": "map", "values": optional("string")}),
        "map<string,string>",
        "map<string,string>",
        lambda r: {r.choice(["a", "ü", ""]): r.choice(["x", None, "\n"]) for _ in range(2)},
    ),
    ("data", optional("bytes"), "bytes", "binary", None),
    (
        "born",
        optional({"type": "int", "connect.name": "io.debezium.time.Date"}),
        "int32 io.debezium.time.Date",
        "date",
        lambda r: r.randint(-719162, 2932896),
    ),
    (
        "seen",
        optional({"type": "long", "connect.name": "io.debezium.time.MicroTimestamp"}),
        "int64 io.debezium.time.MicroTimestamp",
        "timestamp",
        lambda r: r.randint(-62135596800000000, 253402300799999999),
    ),
    (
        "zoned",
        optional({"type": "string", "connect.name": "io.debezium.time.ZonedTimestamp"}),
        "string io.debezium.time.ZonedTimestamp",
        "timestamptz",
        lambda r: f"20{r.randint(10, 40)}-0{r.randint(1, 9)}-1{r.randint(0, 9)}T01:02:03.5Z",
    ),
    (
        "tags",
        optional({"type": "array", "items": optional("string")}),
        "array<string>",
        "list<string>",
        lambda r: [r.choice(["a", "", 'ü"\\', None]) for _ in range(r.randint(0, 4))],
    ),
    (
        "nums",
        optional({"type": "array", "items": "int"}),
        "array<int32>",
        "list<int>",
        lambda r: [r.randint(-5, 5) for _ in range(r.randint(0, 3))],
    ),
    (
        "floats",
        optional({"type": "array", "items": "float"}),
        "array<float32>",
        "list<float>",
        lambda r: [r.choice([0.1, -0.0, math.inf, 3.4028234663852886e38]) for _ in range(2)],
    ),
]

SPECIAL_DOUBLES = [0.0, -0.0, 0.1, 1e308, -1e-308, math.inf, -math.inf, math.nan, 1 / 3]
SPECIAL_FLOATS = [0.1, -0.0, 1.1, 3.4028234663852886e38, 1e-45, math.inf, math.nan, 16777217.0]
TEXTS = ["", 'a"b\\c\nd\te', "Grüße, 世界 \U0001f600", "\u0000\u001f", "x" * 300, "__debezium"]


def _value(name: str, r: random.Random, make: Any) -> Any:
    if r.random() < 0.15:
        return None
    if make is not None:
        return make(r)
    if name == "small":
        return r.choice([-32768, 32767, 0])
    if name == "ratio":
        return r.choice(SPECIAL_FLOATS)
    if name == "big":
        return r.choice(SPECIAL_DOUBLES)
    if name == "name":
        return r.choice(TEXTS)
    if name in ("price", "wide", "cents", "huge"):
        digits = {"price": 38, "wide": 50, "cents": 5, "huge": 150}[name]
        unscaled = r.choice([0, -1, 1, 10**digits - 1, -(10**digits) + 1, r.randint(-999, 999)])
        size = max(1, (unscaled.bit_length() + 8) // 8)
        return unscaled.to_bytes(size, "big", signed=True)
    return bytes(r.getrandbits(8) for _ in range(r.choice([0, 1, 57, 58, 200])))  # data


def _envelope(fields: list[tuple[str, Any, str, str, Any]]) -> dict[str, Any]:
    value = {
        "type": "record",
        "name": "Value",
        "fields": [{"name": "id", "type": "long"}]
        + [{"name": n, "type": t, "default": None} for n, t, *_ in fields],
    }
    source = {
        "type": "record",
        "name": "Source",
        "namespace": "io.debezium.connector.postgresql",
        "fields": [
            {"name": "ts_ms", "type": "long"},
            {"name": "snapshot", "type": [{"type": "string"}, "null"]},
            {"name": "sequence", "type": optional("string")},
            {"name": "lsn", "type": optional("long")},
            {"name": "txId", "type": optional("long")},
        ],
    }
    return {
        "type": "record",
        "name": "Envelope",
        "namespace": "src.s.items",
        "fields": [
            {"name": "before", "type": optional(value), "default": None},
            {"name": "after", "type": optional("Value"), "default": None},
            {"name": "source", "type": source},
            {"name": "transaction", "type": optional(BLOCK), "default": None},
            {"name": "op", "type": "string"},
            {"name": "ts_ms", "type": optional("long"), "default": None},
        ],
    }


def _table(fields: list[tuple[str, Any, str, str, Any]]) -> MirrorTable:
    return make_table(*((n, iceberg, carrier) for n, _, carrier, iceberg, _ in fields))


def _events(fields: list[tuple[str, Any, str, str, Any]], n: int, seed: int) -> list[Any]:
    r = random.Random(seed)
    schema = _envelope(fields)
    out: list[Any] = []
    for i in range(n):
        row = {"id": r.randint(1, 50), **{f: _value(f, r, make) for f, _, _, _, make in fields}}
        op = r.choice(["c", "u", "d", "r"])
        event = {
            "before": row if op == "d" else None,
            "after": None if op == "d" else row,
            "source": {
                "ts_ms": 1_700_000_000_000 + i,
                "snapshot": "true" if op == "r" else "false",
                "sequence": f'["{100 + i}","{200 + i}"]',
                "lsn": 200 + i,
                "txId": 7,
            },
            "transaction": None
            if op == "r"
            else {"id": f"7:{200 + i}", "total_order": i, "data_collection_order": i},
            "op": op,
            "ts_ms": 1_700_000_000_000 + i,
        }
        ts = datetime.fromtimestamp(1_700_000_000 + i, tz=UTC)
        out.append((None, framed(5, event, schema), "src.s.items", 0, i, ts, 0, []))
    return out


@dataclass(frozen=True)
class _Schemas:
    """The writer schemas of a batch read once, by id (``mirror.avro.WriterSchemas``)."""

    texts: dict[int, str]

    def schemas(self, ids: list[int]) -> dict[int, str]:
        return {i: self.texts[i] for i in ids if i in self.texts}

    def latest_id(self, subject: str) -> int | None:
        return max(self.texts)


def _decoded(
    world: SparkWorld,
    fields: list[Any],
    direct: bool,
    n: int = 400,
    transactions: bool = False,
    once: bool = False,
) -> list[Any]:
    """The decode's rows (and whether each envelope was built from its record);
    ``transactions``: with each change's transaction (the consistent tag's decode); ``once``:
    as a batch read once in known schemas is decoded (the bodies read by the decode)."""
    return _decoded_frame(world, fields, direct, n, transactions, once)[1]


def _decoded_frame(
    world: SparkWorld, fields: list[Any], direct: bool, n: int, transactions: bool, once: bool
) -> tuple[Any, list[Any]]:
    """:func:`_decoded`'s frame, and its rows."""
    spark = world.spark
    register_functions(spark)
    table = _table(fields)
    records = spark.createDataFrame(_events(fields, n, seed=len(fields)), KAFKA_SCHEMA)
    frames = AvroFrames()
    schemas = {5: json.dumps(_envelope(fields))}
    envelope = AvroEnvelope(table, transactions) if direct else None
    if once:
        reads = AvroReads(frames, _Schemas(schemas))
        decoded = decode_events(
            frames.with_ids(records), table, False, reads, ["5"], transactions=transactions
        )
        built = [
            r[0]
            for r in frames.decode(frames.with_ids(records), schemas, envelope=envelope)
            .select(ENVELOPE)
            .collect()
        ]
    else:
        events = frames.decode(frames.with_ids(records), schemas, envelope=envelope)
        built = [] if not direct else [r[0] for r in events.select(ENVELOPE).collect()]
        decoded = decode_events(events, table, False, True, transactions=transactions)
    out = decoded.orderBy("_cdc_offset").collect()
    flags = built or [None] * len(out)
    return decoded, [
        ({k: repr(v) for k, v in row.asDict(recursive=True).items()}, b is not None)
        for row, b in zip(out, flags, strict=True)
    ]


def _same(built: list[Any], through_text: list[Any]) -> None:
    """Every row's every column the same (the first differences named)."""
    assert len(built) == len(through_text)
    diff = [
        (i, k, a[k], b.get(k))
        for i, ((a, _), (b, _)) in enumerate(zip(built, through_text, strict=True))
        for k in a
        if a[k] != b.get(k)
    ]
    assert not diff, diff[:5]


def test_an_envelope_built_from_its_record_decodes_as_its_json_text(
    spark_world: SparkWorld,
) -> None:
    through_text = _decoded(spark_world, FIELDS, direct=False)
    built = _decoded(spark_world, FIELDS, direct=True)
    assert all(b for _, b in built), "every envelope was to be built from its record"
    _same(built, through_text)
    _same(_decoded(spark_world, FIELDS, direct=True, once=True), through_text)
    errors = [t for t, _ in built if t["_cdc_error"] != "None"]
    assert len(errors) < len(built) // 4, errors[:3]  # mostly values, not dead letters


def test_the_transaction_block_built_from_its_record_decodes_as_its_json_text(
    spark_world: SparkWorld,
) -> None:
    """With the consistent tag the envelope carries each change's transaction, built from
    the record as the JSON text reads it; a snapshot read names none."""
    through_text = _decoded(spark_world, FIELDS[:3], direct=False, n=60, transactions=True)
    built = _decoded(spark_world, FIELDS[:3], direct=True, n=60, transactions=True)
    assert all(b for _, b in built)
    _same(built, through_text)
    _same(_decoded(spark_world, FIELDS[:3], True, 60, True, once=True), through_text)
    reads = {"'id': None, 'order': None, 'streamed': False"}
    for row, _ in built:
        tx = row["_cdc_tx"]
        assert ("'id': '7'" in tx and "'streamed': True" in tx) != (row["_cdc_op"] == "'r'"), tx
        assert row["_cdc_op"] != "'r'" or tx.strip("{}") in reads, tx


def test_a_batch_read_once_whose_envelopes_are_built_decodes_in_generated_code(
    spark_world: SparkWorld,
) -> None:
    """No ``from_json`` and no lambda in the plan: Spark compiles every projection of the
    decode into its stage's generated code, none writes its rows out for the next to read.
    With a field that goes through the text, the parse is there (and its projection is not);
    so is the parse of a key change's header where the table has a TOASTable column."""

    def interpreted(fields: list[Any]) -> list[str]:
        frame, _ = _decoded_frame(spark_world, fields, True, 30, True, True)
        plan = frame._jdf.queryExecution().executedPlan().toString().splitlines()
        return [line.strip() for line in plan if line.strip(" +-:").startswith("Project")]

    numbers = FIELDS[:5]
    assert all(f[2] != "string" for f in numbers)
    assert interpreted(numbers) == []
    odd = ("ratio_d", optional("float"), "float32", "double", lambda r: r.choice(SPECIAL_FLOATS))
    assert interpreted([*numbers, odd]), "the text's parse was to be in the plan"
    header = interpreted(FIELDS[:6])  # a text column: a key change's header is parsed
    assert len(header) == 1 and "_cdc_old_key" in header[0], header


def test_a_field_that_would_read_differently_goes_through_the_text(
    spark_world: SparkWorld,
) -> None:
    """A float into a double column (its JSON text is its shortest decimal, another double),
    a long into a text column: the schema's envelopes are not built; the decode is the same."""
    for odd in [
        ("ratio_d", optional("float"), "float32", "double", lambda r: r.choice(SPECIAL_FLOATS)),
        ("count_text", optional("long"), "string", "string", lambda r: r.randint(-9, 9)),
    ]:
        fields = [*FIELDS[:3], odd]
        through_text = _decoded(spark_world, fields, direct=False, n=60)
        built = _decoded(spark_world, fields, direct=True, n=60)
        assert not any(b for _, b in built), odd[0]
        _same(built, through_text)
