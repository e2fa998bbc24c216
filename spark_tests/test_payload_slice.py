"""A JSON-with-schemas event whose value starts with a schema part of its batch is parsed
from its payload only (``schema_parts.payload_text_sql``): the recorded Debezium events
(``fixtures/debezium/``) and values broken in every way near the cut decode to exactly
the rows, errors and flags of the parse of the whole value, on a local Spark."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from cdcmirror.mirror.envelope import UTF8
from cdcmirror.mirror.evolution import NEW_SCHEMA, distinct_schemas_sql
from cdcmirror.mirror.schema_parts import (
    PAYLOAD_MARK,
    known_schema_sql,
    part_column,
    payload_text_sql,
    utf8_sql,
)
from cdcmirror.spark.cdc.decode import decode_events, register_functions, with_utf8_check
from support.golden import FIXTURES, kafka_records, recorded_table
from support.spark import SparkWorld

JSON_FIXTURES = [FIXTURES / "postgresql-json.json", FIXTURES / "mysql-json.json"]


def both_ways(spark: Any, data: dict[str, Any], records: list[dict[str, Any]]) -> Any:
    """The batch's schema parts, and its rows decoded from whole values and from payloads."""
    register_functions(spark)
    table = recorded_table(data["table"])
    events = with_utf8_check(kafka_records(spark, records).where("value IS NOT NULL"))
    found = events.selectExpr(f"explode({distinct_schemas_sql('json')})").collect()
    parts = sorted(str(r[0]) for r in found)

    def rows(cut: list[str] | None) -> list[str]:
        out = decode_events(events, table, True, False, parts=cut).orderBy("_cdc_offset")
        return [repr(r.asDict(recursive=True)) for r in out.collect()]

    return parts, rows(None), rows(parts)


def broken(value: str, part: str) -> list[str]:
    """``value`` (a schema part, the payload mark, the payload, ``}``) broken near the cut."""
    payload = value[len(part) + len(PAYLOAD_MARK) : -1]
    parsed = json.loads(payload)
    row = parsed.get("after") or parsed.get("before") or parsed  # a truncate has no row
    row[next(iter(k for k in row if k != "op"))] = {"a": "row"}  # where a value belongs
    misfit = json.dumps(parsed, separators=(",", ":"))
    head = part + PAYLOAD_MARK
    return [
        value[:-7],  # cut short
        value + "x",  # junk after the object
        value + " ",  # white space after it
        value[:-1] + ',"extra":1}',  # a member after the payload
        value[:-1] + ',"payload":{"op":"d"}}',  # a second payload
        head + '"text"}',  # a payload that is no object
        head + "}",  # no payload at all
        head + misfit + "}",  # a value that does not fit its column
        head + payload + " }",  # white space before the closing brace
        '{"x":1,' + value[1:],  # a part of two members: parsed whole
    ]


@pytest.mark.parametrize("path", JSON_FIXTURES, ids=lambda p: p.stem)
def test_recorded_events_decode_the_same_from_their_payload(
    spark_world: SparkWorld, path: Path
) -> None:
    data = json.loads(path.read_text())
    parts, whole, cut = both_ways(spark_world.spark, data, data["records"])
    sql = payload_text_sql(parts)
    assert parts and sql.count(" WHEN ") == len(parts), parts  # every part is cut
    assert cut == whole
    assert all("'_cdc_error': None" in r for r in cut)


@pytest.mark.parametrize("path", JSON_FIXTURES, ids=lambda p: p.stem)
def test_broken_values_decode_the_same_from_their_payload(
    spark_world: SparkWorld, path: Path
) -> None:
    data = json.loads(path.read_text())
    records: list[dict[str, Any]] = []
    values = [r for r in data["records"] if r["value"] is not None]
    for r in values:
        value = base64.b64decode(r["value"]).decode("utf-8")
        part = value[: value.index(PAYLOAD_MARK)]
        for text in [value, *broken(value, part)]:
            encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
            records.append({**r, "value": encoded, "offset": len(records)})
    parts, whole, cut = both_ways(spark_world.spark, data, records)
    assert 1 <= payload_text_sql(parts).count(" WHEN ") < len(parts)  # not every part cut
    assert cut == whole
    errors = sum("'_cdc_error': None" not in r for r in cut)
    assert errors >= 4 * len(values), errors  # the broken ones are refused, both ways


@pytest.mark.parametrize("path", JSON_FIXTURES, ids=lambda p: p.stem)
def test_values_checked_for_utf8_after_their_schema_part(
    spark_world: SparkWorld, path: Path
) -> None:
    """``schema_parts.utf8_sql``: a value that starts with a schema part of its batch is checked
    for UTF-8 after that part; bytes that are not UTF-8 put in the part, the payload mark,
    right after it, inside the payload and at its end get the verdicts of checking the
    whole value, and the decode with either check gives the same rows and errors."""
    spark = spark_world.spark
    register_functions(spark)
    data = json.loads(path.read_text())
    table = recorded_table(data["table"])
    records: list[dict[str, Any]] = []
    for r in data["records"]:
        if r["value"] is None:
            records.append({**r, "offset": len(records)})
            continue
        raw = base64.b64decode(r["value"])
        head = raw.index(PAYLOAD_MARK.encode()) + len(PAYLOAD_MARK)
        for bad in (b"", b"\xff", b"\xc3", b"\xed\xa0\x80"):
            for at in (1, head - 3, head, head + 5, len(raw) - 1):
                value = base64.b64encode(raw[:at] + bad + raw[at:]).decode("ascii")
                records.append({**r, "value": value, "offset": len(records)})
    events = kafka_records(spark, records)
    found = with_utf8_check(events).selectExpr(f"explode({distinct_schemas_sql('json')})")
    parts = sorted(str(r[0]) for r in found.collect())
    assert parts

    def checked(cut: list[str] | None) -> tuple[list[Any], list[str]]:
        frame = with_utf8_check(events, cut)
        verdicts = [tuple(r) for r in frame.orderBy("offset").select("offset", UTF8).collect()]
        out = decode_events(frame, table, True, False, parts=parts).orderBy("_cdc_offset")
        return verdicts, [repr(r.asDict(recursive=True)) for r in out.collect()]

    whole, cut = checked(None), checked(parts)
    assert " THEN is_valid_utf8(CAST(substring(value, " in utf8_sql(parts)
    assert cut == whole
    refused = sum(1 for _, ok in whole[0] if not ok)
    values = sum(1 for r in data["records"] if r["value"] is not None)
    assert refused == 3 * 5 * values, refused  # every value with a bad byte, wherever it is
    assert sum("not UTF-8" in r for r in cut[1]) == refused


@pytest.mark.parametrize("path", JSON_FIXTURES, ids=lambda p: p.stem)
def test_known_schemas_read_from_the_part_column(spark_world: SparkWorld, path: Path) -> None:
    """``schema_parts``: a batch read once in known schema parts marks each event whose part
    is none of them (``evolution.NEW_SCHEMA``), and no other; reading the column of the part
    each value starts with (computed once) gives the rows and errors of comparing the value
    with each part, and a part column computed for other parts is never read as theirs."""
    spark = spark_world.spark
    register_functions(spark)
    data = json.loads(path.read_text())
    table = recorded_table(data["table"])
    records: list[dict[str, Any]] = []
    new: set[int] = set()
    for r in data["records"]:
        if r["value"] is None:
            continue
        records.append({**r, "offset": len(records)})
        value = base64.b64decode(r["value"]).decode("utf-8")
        assert value.startswith('{"schema":{')
        spaced = '{"schema": ' + value[len('{"schema":') :]  # a part the job never applied
        new.add(len(records))
        encoded = base64.b64encode(spaced.encode("utf-8")).decode("ascii")
        records.append({**r, "value": encoded, "offset": len(records)})
    events = kafka_records(spark, records)
    found = with_utf8_check(events).selectExpr(f"explode({distinct_schemas_sql('json')})")
    parts = sorted(str(r[0]) for r in found.collect())
    known = sorted(p for p in parts if not p.startswith('{"schema": '))
    assert known and len(parts) == 2 * len(known)
    assert part_column(known) in known_schema_sql(known, known)

    def decoded(frame: Any, cut: list[str] | None) -> list[str]:
        out = decode_events(frame, table, True, False, known, cut).orderBy("_cdc_offset")
        return [repr(r.asDict(recursive=True)) for r in out.collect()]

    once = with_utf8_check(events, known)
    assert part_column(known) in once.columns
    by_column = decoded(once, known)
    by_value = decoded(with_utf8_check(events), None)  # each value compared with each part
    other = with_utf8_check(events, parts)  # a part column of other parts
    assert part_column(parts) in other.columns and part_column(parts) != part_column(known)
    assert by_column == by_value == decoded(other, known)
    marked = {i for i, row in enumerate(by_column) if NEW_SCHEMA in row}
    assert marked == new
