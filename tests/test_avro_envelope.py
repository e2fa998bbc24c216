"""Which Avro envelopes a CDC table's decode builds from the record (``avro_envelope.py``):
the fit decisions. Pure; the SQL runs on Spark in ``spark_tests/test_avro_envelope.py``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cdcmirror.mirror.avro import plain_schema
from cdcmirror.mirror.avro_envelope import AvroEnvelope
from cdcmirror.mirror.spec import MirrorTable
from support.avro_events import BLOCK, ENVELOPE, VALUE, optional
from support.tables import make_table


def table(*columns: tuple[str, str, str]) -> MirrorTable:
    return make_table(*columns)


def envelope_with(field: dict[str, Any]) -> str:
    value = {**VALUE, "fields": [{"name": "id", "type": "long"}, field]}
    top: list[dict[str, Any]] = ENVELOPE["fields"]  # type: ignore[assignment]
    fields = [{**f, "type": optional(value)} if f["name"] == "before" else f for f in top]
    return json.dumps(plain_schema({**ENVELOPE, "fields": fields}))


def test_the_recorded_shape_is_built_for_the_columns_whose_types_fit() -> None:
    fitting = table(
        ("name", "string", "string"),
        ("small", "int", "int16"),
        ("price", "decimal(38,10)", "bytes org.apache.kafka.connect.data.Decimal(10)"),
        ("ratio", "float", "float32"),
        ("born", "date", "int32 io.debezium.time.Date"),
        ("data", "binary", "bytes"),
        ("tags", "list<string>", "array<string>"),
        ("absent", "string", "string"),  # a column the schema lacks: NULL, as the text reads it
    )
    sql = AvroEnvelope(fitting).sql(json.dumps(plain_schema(ENVELOPE)), "r")
    assert sql is not None
    assert "CAST(r.after.`small` AS BIGINT)" in sql and "'absent', NULL" in sql
    assert "translate(base64(r.after.`price`)" in sql and "transform(r.after.`tags`" in sql
    assert sql.startswith("CAST(named_struct('before', IF(r.before IS NULL, NULL,")


@pytest.mark.parametrize(
    "field,column",
    [
        (
            {"name": "v", "type": optional({"type": "map", "values": "long"})},
            ("v", "string", "map<string>"),
        ),
        ({"name": "v", "type": ["null", "long", "string"]}, ("v", "string", "string")),
        ({"name": "v", "type": "long"}, ("v", "string", "string")),  # a number into text
        ({"name": "v", "type": "float"}, ("v", "double", "float32")),  # its text is another double
        ({"name": "v", "type": "string"}, ("v", "long", "int64")),
        ({"name": "ID", "type": "long"}, ("v", "string", "string")),  # id and ID: one name to Spark
    ],
)
def test_a_field_that_would_read_otherwise_leaves_the_schema_to_the_text(
    field: dict[str, Any], column: tuple[str, str, str]
) -> None:
    assert AvroEnvelope(table(column)).sql(envelope_with(field), "r") is None


def test_a_schema_that_is_no_record_is_not_built() -> None:
    assert AvroEnvelope(table()).sql('"long"', "r") is None


def test_the_transaction_block_is_built_when_the_consistent_tag_reads_it() -> None:
    """With the tag the envelope carries the change's transaction (``envelope.TRANSACTION_DDL``),
    from the record's block when it has one, NULL when the connector writes none."""
    top: list[dict[str, Any]] = ENVELOPE["fields"]  # type: ignore[assignment]
    with_block = {**ENVELOPE, "fields": [*top, {"name": "transaction", "type": optional(BLOCK)}]}
    envelope = AvroEnvelope(table(), transactions=True)
    built = envelope.sql(json.dumps(plain_schema(with_block)), "r")
    assert built is not None and built.endswith(f"AS {envelope.ddl})")
    block = (
        "'transaction', IF(r.transaction IS NULL, NULL, named_struct('id', r.transaction.`id`, "
        "'data_collection_order', CAST(r.transaction.`data_collection_order` AS BIGINT)))"
    )
    assert block in built
    assert "transaction STRUCT<id STRING" in envelope.ddl
    without = envelope.sql(json.dumps(plain_schema(ENVELOPE)), "r")
    assert without is not None and "'transaction', NULL" in without
    # without the tag, no block is read
    plain = AvroEnvelope(table()).sql(json.dumps(plain_schema(with_block)), "r")
    assert plain is not None and "transaction" not in plain
