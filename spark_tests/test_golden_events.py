"""The recorded Debezium events (``fixtures/debezium/``, made by ``record_golden.py`` from a
real connector) decoded on a local Spark by the mirror's own decoding SQL: every value is
what the source held after the statement, the TOAST value left out is flagged (never
written as the placeholder), a key change carries its old key, and the positions order the
events as the source committed them. No Kafka, Connect or database is needed to run it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cdcmirror.spark.avro_frames import AvroFrames
from cdcmirror.spark.cdc.decode import decode_events, register_functions, with_utf8_check
from support.golden import FIXTURES, kafka_records, recorded_table, text
from support.spark import SparkWorld


def decoded(spark: Any, data: dict[str, Any]) -> list[Any]:
    table = recorded_table(data["table"])
    avro = data["format"] == "avro"
    events = kafka_records(spark, data["records"]).where("value IS NOT NULL")
    if avro:
        frames = AvroFrames()
        schemas = {int(k): v for k, v in data["schemas"].items()}
        events = frames.decode(frames.with_ids(events), schemas)
    else:
        events = with_utf8_check(events)
    out = decode_events(events, table, data["format"] == "json", avro)
    return list(out.orderBy("_cdc_offset").collect())


def assert_row(found: Any, expected: dict[str, str | None], unchanged: list[str]) -> None:
    for column, value in expected.items():
        if column in unchanged:  # the placeholder: flagged, never a value
            assert found[f"_cdc_t_{column}"] is True, (column, found)
        else:
            assert text(found[column]) == value, (column, found[column], value)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.stem)
def test_recorded_events_decode_to_what_the_source_held(
    spark_world: SparkWorld, path: Path
) -> None:
    data = json.loads(path.read_text())
    register_functions(spark_world.spark)
    rows = decoded(spark_world.spark, data)
    assert [r._cdc_error for r in rows] == [None] * len(rows), [r._cdc_error for r in rows]
    snapshot = [r for r in rows if r._cdc_op == "r"]
    stream = [r for r in rows if r._cdc_op != "r"]
    assert sorted(str(r.id) for r in snapshot) == sorted(data["snapshot"])
    for r in snapshot:
        assert_row(r, data["snapshot"][str(r.id)], [])
    expected = data["expected"]
    assert [r._cdc_op for r in stream] == [e["op"] for e in expected]
    for r, e in zip(stream, expected, strict=True):
        if e["op"] in ("c", "u"):
            assert_row(r, e["row"], e.get("unchanged", []))
        if e["op"] == "d":
            assert r.id == e["key"]
        if e.get("old_key") is not None and data["dialect"] == "postgresql":
            assert r["_cdc_ok_id"] == e["old_key"]  # the header: TOAST values follow the key
    positions = [list(r._cdc_position) for r in rows]
    assert positions == sorted(positions) and len({tuple(p) for p in positions}) == len(rows)


def test_the_golden_events_cover_every_format_of_both_dialects() -> None:
    """A recording that lost a case would pass the test above by having nothing to check."""
    found = {p.stem for p in FIXTURES.glob("*.json")}
    assert found >= {
        "postgresql-json",
        "postgresql-json-schemaless",
        "postgresql-avro",
        "mysql-json",
        "mysql-avro",
    }
