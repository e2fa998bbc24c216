"""One batch whose events carry one column in several encodings (issue 67, item 1): a
timestamp's precision changed at the source (milliseconds, then microseconds), Kafka
Connect's own time types (``time.precision.mode = connect``) and a wide decimal whose scale
changed, all applied by the mirror's batch code (``spark/cdc/batch.py``) on a local Spark.
Each event is decoded with the carriers of its own row schema: every value is the source's,
whichever schema the batch saw last. JSON with schemas, built here as Debezium's MariaDB
connector writes it."""

from __future__ import annotations

import base64
import json
from datetime import UTC, date, datetime
from typing import Any

import pytest

from cdcmirror.mirror.carriers import DECIMAL_NAME
from cdcmirror.mirror.evolution import Evolution
from cdcmirror.mirror.spec import MirrorColumn, MirrorTable
from cdcmirror.spark.cdc.batch import Applier, ApplierOptions, CatalogHooks
from support.golden import KAFKA_SCHEMA
from support.iceberg_tables import create_mirrored
from support.spark import SparkWorld
from support.tables import make_table

NAMESPACE = "carrier_variants"
TOPIC = "variants.db.t"

# the table as bootstrap made it, with the carriers of the source's first column types
TABLE = make_table(
    MirrorColumn("at", "timestamp", "int64 io.debezium.time.Timestamp"),
    MirrorColumn("clk", "long", "int64 io.debezium.time.MicroTime"),
    MirrorColumn("d", "date", "int32 io.debezium.time.Date"),
    MirrorColumn("wide", "string", f"bytes {DECIMAL_NAME}(2)"),
    identifier=f"{NAMESPACE}.t",
    flavor="mariadb",
    source="db.t",
    topic=TOPIC,
    key_columns=(MirrorColumn("id", "int", "int32"),),
)


def _decimal(scale: int) -> dict[str, Any]:
    parameters = {"scale": str(scale), "connect.decimal.precision": "50"}
    return {"type": "bytes", "name": DECIMAL_NAME, "parameters": parameters}


ENCODINGS: dict[str, dict[str, dict[str, Any]]] = {
    "debezium-ms": {
        "at": {"type": "int64", "name": "io.debezium.time.Timestamp"},
        "clk": {"type": "int64", "name": "io.debezium.time.MicroTime"},
        "d": {"type": "int32", "name": "io.debezium.time.Date"},
        "wide": _decimal(2),
    },
    "debezium-micros": {
        "at": {"type": "int64", "name": "io.debezium.time.MicroTimestamp"},
        "clk": {"type": "int64", "name": "io.debezium.time.MicroTime"},
        "d": {"type": "int32", "name": "io.debezium.time.Date"},
        "wide": _decimal(4),
    },
    "connect": {
        "at": {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp"},
        "clk": {"type": "int32", "name": "org.apache.kafka.connect.data.Time"},
        "d": {"type": "int32", "name": "org.apache.kafka.connect.data.Date"},
        "wide": _decimal(2),
    },
}


def _schema(encoding: str) -> dict[str, Any]:
    row = [{"type": "int32", "optional": False, "field": "id"}]
    row += [{**spec, "optional": True, "field": name} for name, spec in ENCODINGS[encoding].items()]
    source = [
        {"type": "string", "field": "file"},
        {"type": "int64", "field": "pos"},
        {"type": "int32", "field": "row"},
        {"type": "string", "optional": True, "field": "snapshot"},
        {"type": "int64", "field": "ts_ms"},
    ]
    return {
        "type": "struct",
        "fields": [
            {"type": "struct", "fields": row, "optional": True, "field": "before"},
            {"type": "struct", "fields": row, "optional": True, "field": "after"},
            {"type": "struct", "fields": source, "optional": False, "field": "source"},
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ],
        "optional": False,
        "name": "variants.db.t.Envelope",
    }


def _unscaled(digits: int) -> str:
    return base64.b64encode(digits.to_bytes(8, "big", signed=True).lstrip(b"\0") or b"\0").decode()


def _event(encoding: str, op: str, pos: int, row: dict[str, Any]) -> bytes:
    payload = {
        "before": None,
        "after": row,
        "source": {"file": "mysql-bin.000003", "pos": pos, "row": 0, "snapshot": "false"},
        "op": op,
        "ts_ms": 1700000000000 + pos,
    }
    payload["source"]["ts_ms"] = payload["ts_ms"]  # type: ignore[index]
    value = {"schema": _schema(encoding), "payload": payload}
    return json.dumps(value, separators=(",", ":")).encode()


# (encoding, op, id, at, clk, d, wide unscaled); the values wanted follow in WANTED
EVENTS = [
    ("debezium-ms", "c", 1, 1700000000123, 3723004005, 19675, 12345),
    ("debezium-micros", "c", 2, 1700000000123456, 3723004005, 19676, 1234567),
    ("connect", "c", 3, 1700000000999, 3723004, 19677, 42),
    ("debezium-micros", "u", 1, 1700000001000001, 86399999999, 19678, 10001),
    ("debezium-ms", "c", 4, 1700000002005, 0, 0, -5),
]
WANTED = {
    1: (datetime(2023, 11, 14, 22, 13, 21, 1), 86399999999, date(2023, 11, 17), "1.0001"),
    2: (datetime(2023, 11, 14, 22, 13, 20, 123456), 3723004005, date(2023, 11, 15), "123.4567"),
    3: (datetime(2023, 11, 14, 22, 13, 20, 999000), 3723004000, date(2023, 11, 16), "0.42"),
    4: (datetime(2023, 11, 14, 22, 13, 22, 5000), 0, date(1970, 1, 1), "-0.05"),
}


def _records(spark: Any, events: list[tuple[str, str, int, int, int, int, int]]) -> Any:
    rows: list[tuple[Any, ...]] = []
    for event in events:
        encoding, op, key, at, clk, d, wide = event
        row = {"id": key, "at": at, "clk": clk, "d": d, "wide": _unscaled(wide)}
        offset = EVENTS.index(event)  # its place in the source's history
        value = _event(encoding, op, 1000 + 10 * offset, row)
        rows.append((None, value, TOPIC, 0, offset, datetime.now(tz=UTC), 0, []))
    return spark.createDataFrame(rows, KAFKA_SCHEMA)


def _evolve(table: MirrorTable, evolution: Evolution) -> MirrorTable:
    """What the job's catalog does (``commands/mirror.CatalogAccess.evolve``)."""
    return evolution.evolved(table)


@pytest.mark.parametrize("per_event", [False, True], ids=["one-batch", "an-event-a-batch"])
def test_each_event_is_decoded_with_its_own_schemas_carriers(
    spark_world: SparkWorld, per_event: bool
) -> None:
    spark = spark_world.spark
    create_mirrored(spark, TABLE)
    options = ApplierOptions(
        schemas=True,
        soft_deletes=False,
        fail_on_dead_letter=True,  # a value that does not convert fails the test
        internal_namespace=f"{NAMESPACE}__cdcmirror",
    )
    applier = Applier(spark, {TOPIC: TABLE}, options, CatalogHooks(lambda t: t, _evolve))
    batches = [[e] for e in EVENTS] if per_event else [EVENTS]
    for batch_id, events in enumerate(batches):
        applier.process(_records(spark, events), batch_id)
    rows = spark.sql(f"SELECT id, at, clk, d, wide FROM {TABLE.identifier}").collect()
    got = {r.id: (r.at, r.clk, r.d, r.wide) for r in rows}
    assert got == WANTED
    assert applier.tables[TOPIC].columns == TABLE.columns, "the recorded carriers stay"
