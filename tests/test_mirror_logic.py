"""Pure parts of the mirror: carriers, the table spec, schema evolution, the SQL builders."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

import pytest

from cdcmirror.bootstrap.connector import converter_settings
from cdcmirror.bootstrap.plan import carrier_with_scale
from cdcmirror.config.settings import Kafka, KafkaFormat
from cdcmirror.exceptions import ConfigError
from cdcmirror.load.plan import summary
from cdcmirror.mirror.carriers import (
    CarrierError,
    carrier_of_field,
    convert_sql,
    decimal_text,
    iceberg_of_field,
    parse_carrier,
    wire_type,
)
from cdcmirror.mirror.envelope import checked_exprs, envelope_ddl
from cdcmirror.mirror.evolution import plan_evolution, row_fields
from cdcmirror.mirror.merge_sql import (
    BROADCAST_KEYS,
    BROADCAST_ROWS,
    broadcasts_keys,
    classify_sql,
    dedupe_sql,
    merge_sql,
    restore_sql,
)
from cdcmirror.mirror.positions import source_length
from cdcmirror.mirror.spec import MirrorTable, mirror_table
from cdcmirror.mirror.toast import placeholder_sql, toastable, unavailable_sql
from cdcmirror.table_properties import CARRIERS_PROPERTY, LOAD_PENDING, LOAD_PROPERTY
from support.tables import make_table

DECIMAL = "bytes org.apache.kafka.connect.data.Decimal"


def b64(n: int, size: int) -> str:
    return base64.b64encode(n.to_bytes(size, "big", signed=True)).decode()


@pytest.mark.parametrize(
    ("unscaled", "scale", "text"),
    [
        (0, 0, "0"),
        (-1, 2, "-0.01"),
        (12345, 3, "12.345"),
        (-(10**60) - 7, 10, "-1" + "0" * 50 + ".0000000007"),
    ],
)
def test_decimal_text_is_exact(unscaled: int, scale: int, text: str) -> None:
    assert decimal_text(b64(unscaled, 32), scale) == text


def test_wire_types_read_bytes_as_base64_text_and_ints_as_bigint() -> None:
    assert wire_type(parse_carrier(f"{DECIMAL}(2)")) == "string"
    assert wire_type(parse_carrier("int16")) == "bigint"
    assert wire_type(parse_carrier("array<int32>")) == "array<bigint>"
    assert wire_type(parse_carrier("struct io.debezium.data.VariableScaleDecimal")).startswith(
        "struct<scale"
    )


def test_a_pair_without_a_conversion_is_refused() -> None:
    with pytest.raises(CarrierError, match="cannot convert carrier int32 to Iceberg date"):
        convert_sql("w", parse_carrier("int32"), "date")


def test_only_variable_length_values_can_be_unchanged_toast() -> None:
    assert unavailable_sql("w", parse_carrier("string")) is not None
    assert unavailable_sql("w", parse_carrier("bytes")) is not None
    assert unavailable_sql("w", parse_carrier("int64")) is None
    assert unavailable_sql("w", parse_carrier(f"{DECIMAL}(2)")) is None
    assert unavailable_sql("w", parse_carrier("string io.debezium.time.ZonedTimestamp")) is None


def test_fields_of_an_event_schema_map_like_bootstrap() -> None:
    dec = {
        "type": "bytes",
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": {"scale": "2", "connect.decimal.precision": "10"},
    }
    assert carrier_of_field(dec) == f"{DECIMAL}(2)"
    assert iceberg_of_field(dec) == "decimal(10,2)"
    wide = {**dec, "parameters": {"scale": "2", "connect.decimal.precision": "50"}}
    assert iceberg_of_field(wide) == "string"
    assert (
        iceberg_of_field({"type": "int64", "name": "io.debezium.time.MicroTimestamp"})
        == "timestamp"
    )
    assert iceberg_of_field({"type": "array", "items": {"type": "int32"}}) == "list<int>"
    assert carrier_with_scale(DECIMAL, "money", None) == f"{DECIMAL}(2)"


def table(**kw: Any) -> MirrorTable:
    table = make_table(
        ("note", "string", "string"),
        ("qty", "int", "int32"),
        source="public.items",
        topic="p.public.items",
    )
    return replace(table, **kw)


def test_spec_from_table_properties_and_missing_carriers() -> None:
    props = {
        "cdcmirror.source": "postgresql:public.items",
        CARRIERS_PROPERTY: json.dumps({"id": "int64", "qty": "int32"}),
    }
    cols = [("id", "long"), ("qty", "int"), ("_cdc_op", "string")]
    spec = mirror_table("ns.items", cols, ("id",), props, "shop")
    assert spec is not None and spec.topic == "shop.public.items" and spec.names == ("id", "qty")
    assert mirror_table("ns.other", cols, ("id",), {}, "shop") is None
    with pytest.raises(ConfigError, match=r"no Debezium carrier recorded for column.*note"):
        mirror_table("ns.items", [*cols, ("note", "string")], ("id",), props, "shop")
    assert spec.dialect == "postgresql"
    maria = mirror_table(
        "ns.items", cols, ("id",), {**props, "cdcmirror.source": "mariadb:s.t"}, "s"
    )
    assert maria is not None and maria.dialect == "mysql"
    with pytest.raises(ConfigError, match=r"names no source flavor \(postgresql, mysql, mariadb"):
        mirror_table("ns.items", cols, ("id",), {**props, "cdcmirror.source": "public.t"}, "s")
    # where a Spark load's reads ended, which the consistent tag waits to pass
    assert spec.read_through is None and not spec.loading
    loaded = summary([0, 5, 5, -1, -1], 7, 3, [1, 9, 9])
    spec = mirror_table("ns.items", cols, ("id",), {**props, LOAD_PROPERTY: loaded}, "shop")
    assert spec is not None and spec.read_through == (1, 9, 9) and not spec.loading
    pending = mirror_table(
        "ns.items", cols, ("id",), {**props, LOAD_PROPERTY: LOAD_PENDING}, "shop"
    )
    assert pending is not None and pending.loading and pending.read_through is None


def test_evolution_adds_widens_and_refuses() -> None:
    fields = [
        {"field": "id", "type": "int64"},
        {"field": "note", "type": "string"},
        {"field": "qty", "type": "int64"},
        {"field": "extra", "type": "int16"},
    ]
    evo = plan_evolution(table(), fields)
    assert [c.name for c in evo.add] == ["extra"] and evo.widen == [("qty", "int", "long")]
    assert not evo.errors
    assert evo.evolved(table()).column("qty").carrier == "int64"
    bad = plan_evolution(table(), [{"field": "qty", "type": "string"}])
    assert bad.errors and "column qty" in bad.errors[0] and "int" in bad.errors[0]
    envelope = {"fields": [{"field": "before"}, {"field": "after", "fields": fields}]}
    assert row_fields(envelope) == fields


def test_the_source_part_of_a_position_per_dialect() -> None:
    """How many leading elements of a position are the source's (the guard's comparison runs
    on Spark in ``spark_tests/test_merge_sql_iceberg.py``)."""
    assert source_length("postgresql") == 3 and source_length("mysql") == 4


# The SQL tests below check what a statement reads or which branches it has: a cost, not a
# result. The rows each variant writes are compared with the full statement's on Spark
# (spark_tests/test_merge_sql_iceberg.py, test_direct_merge.py, test_toast_chain_sql.py).
def test_a_batch_without_placeholders_or_inserts_merges_without_those_branches() -> None:
    """No change carries an unchanged-TOAST placeholder: no stored value is read; no change
    inserts: no NOT MATCHED branch (both executed on Iceberg by the integration tests)."""
    plain = merge_sql(table(), "t", "c", soft=False, placeholders=False)
    assert "`note` = s.`note`" in plain and "t.`note`" not in plain and "_cdc_t_note" not in plain
    assert "NOT MATCHED" in plain
    updates = merge_sql(table(), "t", "c", soft=False, inserts=False)
    assert "NOT MATCHED" not in updates and "IF(s.`_cdc_t_note`, t.`note`, s.`note`)" in updates
    assert placeholder_sql(table()) == "(`_cdc_t_note`)"
    assert placeholder_sql(table(flavor="mariadb")) == "false"


def test_classification_cuts_the_stored_rows_to_the_batch_keys_when_broadcast() -> None:
    """``broadcast``: the table and its tombstones are each cut by a semi join with the
    batch's keys under a broadcast hint; without it, neither is."""
    cut = classify_sql(table(), "d", "tgt", "tomb", soft=False, broadcast=True)
    assert cut.count("/*+ BROADCAST(k) */") == 2
    assert "FROM tgt r LEFT SEMI JOIN (SELECT `id` FROM d) k ON r.`id` = k.`id`" in cut
    assert "FROM tomb r LEFT SEMI JOIN (SELECT `id` FROM d) k ON r.`id` = k.`id`" in cut
    whole = classify_sql(table(), "d", "tgt", "tomb", soft=False)
    assert "SEMI" not in whole and "BROADCAST" not in whole


def test_keys_are_broadcast_only_by_a_batch_small_beside_a_large_table() -> None:
    assert broadcasts_keys(100, BROADCAST_ROWS) and broadcasts_keys(BROADCAST_KEYS, 10**9)
    assert not broadcasts_keys(100, BROADCAST_ROWS - 1)  # the shuffle is as cheap
    assert not broadcasts_keys(BROADCAST_KEYS + 1, 10**9)  # too many keys to broadcast


def test_the_unguarded_merge_reads_no_stored_position() -> None:
    """``guarded`` False (``spark/iceberg.py``): no clause reads ``t._cdc_position``;
    the restore after a foreign commit compares it, over the snapshot the MERGE was made on."""
    assert "t._cdc_position" in merge_sql(table(), "t", "c", soft=False)
    assert "t._cdc_position" not in merge_sql(table(), "t", "c", soft=False, guarded=False)
    restore = restore_sql(table(), "tgt", 42, "c")
    assert "FROM tgt VERSION AS OF 42 p JOIN c e" in restore and "t._cdc_position" in restore


def test_a_direct_merge_reads_no_stored_position_and_takes_the_branches_it_needs() -> None:
    """``direct_merge_sql``: unguarded unless told; without inserts no NOT MATCHED branch,
    without matched no MATCHED one; the put-back of a direct batch takes its deletes from
    their operation."""
    from cdcmirror.mirror.direct_merge import direct_merge_sql

    both = direct_merge_sql(table(), "t", "c", soft=False)
    assert "t._cdc_position" not in both and "WHEN MATCHED" in both and "NOT MATCHED" in both
    assert "NOT MATCHED" not in direct_merge_sql(table(), "t", "c", False, inserts=False)
    creates = direct_merge_sql(table(), "t", "c", False, matched=False)
    assert "WHEN MATCHED" not in creates and "NOT MATCHED AND s._cdc_op <> 'd'" in creates
    guarded = direct_merge_sql(table(), "t", "c", False, matched=False, guarded=True)
    assert "WHEN MATCHED" not in guarded
    assert "t._cdc_position" in direct_merge_sql(table(), "t", "c", False, guarded=True)
    restore = restore_sql(table(), "tgt", 42, "c", classified=False)
    assert "IF(e._cdc_op = 'd', 'delete', 'upsert') AS _cdc_batch_action" in restore


def test_toast_columns_and_dedupe_only_for_postgresql() -> None:
    assert toastable(table()) == ["note"]
    assert toastable(table(flavor="mariadb")) == []
    assert "_cdc_f_note" in dedupe_sql(table(), "events")
    assert "_cdc_kc.p AS _cdc_okpos" in dedupe_sql(table(), "events")
    assert "_cdc_kc" not in dedupe_sql(table(flavor="mariadb"), "events")
    assert "tb._cdc_position" in classify_sql(table(), "d", "t", "tomb", soft=False)
    assert "payload STRUCT<" in envelope_ddl(table(), schemas=True)
    assert not envelope_ddl(table(), schemas=False).startswith("payload")
    assert checked_exprs(table())[-1].endswith("AS _cdc_error")


def test_schemaless_format_turns_converter_schemas_off() -> None:
    def kafka(fmt: KafkaFormat) -> Kafka:
        return Kafka(bootstrap_servers="k:9092", format=fmt, schema_registry_url="")

    assert converter_settings(kafka("json")) == {}
    assert converter_settings(kafka("json-schemaless"))["key.converter.schemas.enable"] == "false"


def test_postgresql_position_orders_by_last_commit_then_lsn() -> None:
    from cdcmirror.dialects.postgresql import first_of_sequence_sql
    from cdcmirror.mirror.positions import position_sql

    sql = position_sql("postgresql", "e")
    # phase, then source.sequence's last commit (the change's LSN when it is null), then LSN
    # (the first item's SQL runs on Spark in spark_tests/test_sequence_sql.py)
    first = first_of_sequence_sql("e.source.sequence")
    assert sql.index(first) < sql.index("coalesce(e.source.lsn")
    assert f"coalesce(CAST({first} AS BIGINT), coalesce(" in sql
    assert sql.endswith("CAST(partition AS BIGINT), offset)")
