"""The pure parts of bootstrap: desired tables, plans, connector config."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cdcmirror.bootstrap.connector import include_list, plan_connector, same_config
from cdcmirror.bootstrap.plan import ExistingTable, desired_table, plan_table, with_history
from cdcmirror.bootstrap.report import BootstrapResult, ConnectorResult, result_json, result_text
from cdcmirror.config import load_config
from cdcmirror.exceptions import ConfigError, SourceError, UnsupportedTypeError
from cdcmirror.source.connection import source_url
from cdcmirror.source.type_parsing import parse_postgresql_type as pg
from cdcmirror.source_model import SourceCatalog, SourceColumn, SourceTable


def _table(*cols: tuple[str, str], key: tuple[str, ...] = ("id",)) -> SourceTable:
    columns = tuple(SourceColumn(n, pg(t), nullable=n not in key) for n, t in cols)
    return SourceTable("public", "Orders", columns, key, "primary key" if key else "none")


def _catalog(*tables: SourceTable, published: frozenset[str] | None = None) -> SourceCatalog:
    return SourceCatalog("postgresql", "postgresql", "15", "shop", "cdc", tables, (), published)


ORDERS = _table(("id", "bigint"), ("amount", "numeric(10,2)"), ("note", "text"))


def _existing(desired_cols: dict[str, tuple[str, bool]], key: tuple[str, ...]) -> ExistingTable:
    d = desired_table(_catalog(ORDERS), ORDERS, "ns")
    cols = {c.name: (c.type, c.required) for c in d.columns}
    cols.update(desired_cols)
    return ExistingTable(cols, key, dict(d.properties))


def test_desired_table_has_source_columns_then_cdc_columns() -> None:
    d = desired_table(_catalog(ORDERS), ORDERS, "shop_mirror")
    assert d.identifier == "shop_mirror.orders"
    assert [(c.name, c.type, c.required) for c in d.columns] == [
        ("id", "long", True),
        ("amount", "decimal(10,2)", False),
        ("note", "string", False),
        ("_cdc_op", "string", False),
        ("_cdc_position", "list<long>", False),
        ("_cdc_source_ts", "timestamptz", False),
        ("_cdc_deleted", "boolean", False),
    ]
    assert d.columns[1].doc == "source type: numeric(10,2)"
    assert d.mode == "upsert" and d.properties["write.merge.mode"] == "merge-on-read"


def test_every_unmappable_column_is_named_at_once() -> None:
    t = _table(("id", "int"), ("a", "box"), ("b", "tsquery"))
    with pytest.raises(UnsupportedTypeError) as err:
        desired_table(_catalog(t), t, "ns")
    assert "public.Orders.a: type box" in str(err.value)
    assert "public.Orders.b: type tsquery" in str(err.value)


def test_float_key_and_cdc_prefix_are_refused() -> None:
    t = _table(("x", "double precision"), key=("x",))
    with pytest.raises(UnsupportedTypeError, match="floating point"):
        desired_table(_catalog(t), t, "ns")
    t2 = _table(("id", "int"), ("_cdc_op", "text"))
    with pytest.raises(UnsupportedTypeError, match="starts with '_cdc_'"):
        desired_table(_catalog(t2), t2, "ns")
    t3 = _table(("id", "int"), ("_CDC_rn", "text"), ("_Partition", "int"), ("_rn", "int"))
    with pytest.raises(UnsupportedTypeError) as err:
        desired_table(_catalog(t3), t3, "ns")
    assert "Orders._CDC_rn: the column's name starts with '_cdc_'" in str(err.value)
    assert "Orders._Partition: the column's name is the name of an Iceberg" in str(err.value)
    assert "Orders._rn:" not in str(err.value)


def test_bucket_partition_defaults_to_first_key_column() -> None:
    d = desired_table(_catalog(ORDERS), ORDERS, "ns", partition="bucket(16)")
    assert (d.partition.buckets, d.partition.column) == (16, "id")  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="lacks"):
        desired_table(_catalog(ORDERS), ORDERS, "ns", partition="bucket(4, nope)")
    with pytest.raises(ConfigError, match="bucket"):
        desired_table(_catalog(ORDERS), ORDERS, "ns", partition="days(ts)")


def test_keyless_table_is_append_only() -> None:
    t = _table(("ts", "timestamptz"), ("msg", "text"), key=())
    d = desired_table(_catalog(t), t, "ns", partition="bucket(8)")
    assert d.mode == "append" and d.key == () and d.partition is None
    assert not any(c.required for c in d.columns)


def test_plan_create_unchanged_add_widen_relax() -> None:
    d = desired_table(_catalog(ORDERS), ORDERS, "ns")
    assert plan_table(d, None).action == "create"
    assert plan_table(d, _existing({}, ("id",))).action == "unchanged"

    existing = _existing({"amount": ("decimal(8,2)", True)}, ("id",))
    del existing.columns["note"]
    plan = plan_table(d, existing)
    assert plan.action == "alter" and not plan.drift
    assert plan.changes() == [
        "add column note string",
        "widen amount decimal(8,2) -> decimal(10,2)",
        "make amount optional",
    ]


def test_plan_drift_is_reported_never_applied() -> None:
    d = desired_table(_catalog(ORDERS), ORDERS, "ns")
    existing = _existing({"amount": ("double", False), "gone": ("int", False)}, ("note",))
    plan = plan_table(d, existing)
    assert plan.action == "unchanged"
    assert any("amount" in m and "not an allowed widening" in m for m in plan.drift)
    assert any("gone is no longer in the source" in m for m in plan.drift)
    assert any("identifier fields are (note)" in m for m in plan.drift)


def test_changed_properties_are_set() -> None:
    d = desired_table(_catalog(ORDERS), ORDERS, "ns")
    existing = _existing({}, ("id",))
    existing.properties["write.merge.mode"] = "copy-on-write"
    plan = plan_table(d, existing)
    assert plan.action == "alter"
    assert plan.set_properties == {"write.merge.mode": "merge-on-read"}


def test_connector_config_for_discovered_tables(tmp_path: Path) -> None:
    config = load_config(
        environ={"CDCMIRROR_SOURCE__PASSWORD": "pw-secret", "CDCMIRROR_SOURCE__NAME": "shop"},
        cwd=tmp_path,
    )
    catalog = _catalog(ORDERS, published=frozenset({"public.Orders"}))
    plan = plan_connector(config, catalog, tmp_path / "s.properties", source_url(config.source))
    assert plan.name == "cdcmirror-shop"
    assert plan.config["table.include.list"] == r"public\.Orders"
    assert plan.config["database.password"] == f"${{file:{tmp_path}/s.properties:password}}"
    assert plan.config["slot.name"] == "cdcmirror_shop"
    assert plan.config["interval.handling.mode"] == "string"
    assert "pw-secret" not in str(plan.config)
    assert same_config({**plan.config, "name": "cdcmirror-shop"}, plan.config, "cdcmirror-shop")
    assert not same_config(None, plan.config, "cdcmirror-shop")


def test_connector_refuses_unpublished_tables(tmp_path: Path) -> None:
    config = load_config(environ={}, cwd=tmp_path)
    with pytest.raises(SourceError, match=r"ADD TABLES IN SCHEMA public"):
        catalog = _catalog(ORDERS, published=frozenset())
        plan_connector(config, catalog, tmp_path / "s", source_url(config.source))


def test_include_list_escapes_regex() -> None:
    assert include_list(["db.a_b", "db.c-d"]) == r"db\.a_b,db\.c\-d"


def test_table_name_collision_is_a_config_error(tmp_path: Path) -> None:
    from cdcmirror.bootstrap.desired import desired_tables as _desired

    a = ORDERS
    b = replace(ORDERS, schema="sales")
    with pytest.raises(ConfigError, match=r"\{schema\}__\{table\}"):
        _desired(load_config(environ={}, cwd=tmp_path), _catalog(a, b))


def test_tables_are_written_zstd_compressed_and_older_ones_are_changed() -> None:
    """Iceberg's Java writer reads a table without a codec as gzip: every table says zstd,
    and a table bootstrap made before gets it on the next bootstrap."""
    d = desired_table(_catalog(ORDERS), ORDERS, "ns")
    assert d.properties["write.parquet.compression-codec"] == "zstd"
    existing = _existing({}, ("id",))
    del existing.properties["write.parquet.compression-codec"]
    plan = plan_table(d, existing)
    assert plan.action == "alter"
    assert plan.set_properties == {"write.parquet.compression-codec": "zstd"}


def test_a_changed_encoding_is_drift_for_events_without_schemas() -> None:
    """JSON without schemas cannot tell the events of a column's old encoding from its new
    one (issue 67, item 1): ``timestamp(3)`` -> ``timestamp(6)`` keeps the Iceberg type but
    changes the events' unit from milliseconds to microseconds."""
    from cdcmirror.bootstrap.plan import carrier_drift

    before = _table(("id", "bigint"), ("at", "timestamp(3)"))
    after = _table(("id", "bigint"), ("at", "timestamp(6)"))
    old = desired_table(_catalog(before), before, "ns")
    new = desired_table(_catalog(after), after, "ns")
    existing = ExistingTable(
        {c.name: (c.type, c.required) for c in old.columns}, ("id",), dict(old.properties)
    )
    assert plan_table(new, existing).set_properties, "the carriers property changes"
    drift = carrier_drift(new, existing)
    assert len(drift) == 1 and drift[0].startswith("column at: its events change from "), drift
    assert "io.debezium.time.Timestamp to int64 io.debezium.time.MicroTimestamp" in drift[0]
    assert carrier_drift(old, existing) == [] and carrier_drift(new, None) == []


def test_a_widening_reads_every_value_alike_and_is_no_carrier_drift() -> None:
    from cdcmirror.bootstrap.plan import carrier_drift

    before = _table(("id", "bigint"), ("qty", "integer"), ("price", "numeric(8,2)"))
    after = _table(("id", "bigint"), ("qty", "bigint"), ("price", "numeric(12,2)"))
    old = desired_table(_catalog(before), before, "ns")
    new = desired_table(_catalog(after), after, "ns")
    columns = {c.name: (c.type, c.required) for c in old.columns}
    existing = ExistingTable(columns, ("id",), dict(old.properties))
    assert plan_table(new, existing).widen and carrier_drift(new, existing) == []


def test_tables_added_to_a_registered_connector_are_named_with_their_load() -> None:
    """Bootstrap's text for tables a registered connector captures from now on: the repair
    that loads each (Debezium's re-read for a keyless table, Spark's re-load otherwise), and
    the JSON lists them; a connector created now lists none."""
    notes = replace(ORDERS, name="notes", key=(), key_source="none")
    kept = replace(ORDERS, name="kept")
    catalog = _catalog(ORDERS, notes, kept)
    orders, history = with_history(desired_table(catalog, ORDERS, "ns"), "__history")
    plans = [plan_table(d, None) for d in (orders, history)]
    plans += [plan_table(desired_table(catalog, t, "ns"), None) for t in (notes, kept)]
    added = ["public.Orders", "public.notes", "public.unplanned"]
    text = result_text(
        BootstrapResult(catalog, plans, ConnectorResult("c", "update", {}, added=added), False)
    )
    assert "2 table(s) added to the registered connector" in text, text
    assert "cdcmirror repair --table ns.orders --method snapshot" in text  # its history
    assert "cdcmirror repair --table ns.notes --method snapshot" in text  # keyless
    assert "ns.kept" not in text.split("added to the registered connector")[1]
    plain = replace(plans[2], desired=desired_table(catalog, kept, "ns"))
    result = BootstrapResult(
        catalog, [plain], ConnectorResult("c", "update", {}, added=["public.kept"]), False
    )
    assert "cdcmirror repair --table ns.kept --method reload" in result_text(result)
    assert result_json(result)["connector"]["added"] == ["public.kept"]
    created = BootstrapResult(catalog, plans, ConnectorResult("c", "create", {}), False)
    assert "added to the registered connector" not in result_text(created)
