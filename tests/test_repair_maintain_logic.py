"""Pure parts of repair (keys from a report, the key filter, the signal) and maintain (the
report), and the commit-conflict retry."""

from __future__ import annotations

import json

import pytest

from cdcmirror.exceptions import ConfigError
from cdcmirror.maintain.report import result_json, result_text
from cdcmirror.maintain.run import FileCounts, TableMaintenance
from cdcmirror.reconcile.canonical import row_shape
from cdcmirror.reconcile.repair import key_filter, keys_from_report, snapshot_signal
from cdcmirror.source_model import SourceType
from cdcmirror.spark.iceberg import is_conflict, retry_on_conflict

INT = SourceType("bigint", "bigint")
TEXT = SourceType("text", "text")
DATE = SourceType("date", "date")


def report(deep: dict[str, object] | None) -> dict[str, object]:
    table: dict[str, object] = {"table": "ns.items"}
    if deep is not None:
        table["deep"] = deep
    return {"version": 1, "tables": [table]}


def test_keys_from_report() -> None:
    keys = keys_from_report(
        report(
            {
                "changed_keys": [{"id": "1"}],
                "missing_keys": [{"id": "2"}],
                "extra_keys": [{"id": "9"}],
                "keys_truncated": False,
            }
        ),
        "ns.items",
        "r.json",
    )
    assert keys.reread == [{"id": "1"}, {"id": "2"}] and keys.extra == [{"id": "9"}]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"x": 1}, "not a reconcile report"),
        (report(None), "no --deep result"),
        (report({"keys_truncated": True}), "only part of the drifted keys"),
        ({"tables": [{"table": "ns.other"}]}, "no entry for table ns.items"),
    ],
)
def test_keys_from_a_bad_report_say_what_to_do(data: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        keys_from_report(data, "ns.items", "r.json")


def test_key_filter_single_integer_key_uses_in() -> None:
    shape = row_shape("postgresql", [("id", INT, "long"), ("name", TEXT, "string")], ("id",))
    assert key_filter("postgresql", shape, [{"id": "1"}, {"id": "22"}]) == '"id" IN (1, 22)'
    assert key_filter("mysql", shape, [{"id": "3"}]) == "`id` IN (3)"


def test_key_filter_composite_text_and_dates_quote_values() -> None:
    shape = row_shape("mysql", [("k", TEXT, "string"), ("d", DATE, "date")], ("k", "d"))
    sql = key_filter("mysql", shape, [{"k": "it's \\ x", "d": "19000"}])
    assert "`k` = 'it''s \\\\ x'" in sql
    assert "DATEDIFF(`d`, '1970-01-01')" in sql and "= '19000'" in sql
    spark = key_filter("spark", shape, [{"k": "a", "d": "1"}])
    assert "unix_date(`d`)" in spark


def test_key_filter_refuses_keys_without_the_key_columns() -> None:
    shape = row_shape("postgresql", [("id", INT, "long")], ("id",))
    with pytest.raises(ConfigError, match="lack column"):
        key_filter("postgresql", shape, [{"other": "1"}])


def test_snapshot_signal_is_debeziums_execute_snapshot_data() -> None:
    data = json.loads(snapshot_signal("shop.orders", None))
    assert data == {"data-collections": ["shop.orders"], "type": "incremental"}
    assert "additional-conditions" in json.loads(snapshot_signal("shop.orders", "id IN (1)"))


def test_maintain_report_shows_before_after_and_the_cut() -> None:
    before = FileCounts(200, 2_000_000, 20, 100_000, 201)
    after = FileCounts(2, 1_500_000, 0, 0, 1)
    result = TableMaintenance("ns.t", before, after, rewritten_data_files=200)
    text = result_text([result])
    assert "220 data" not in text and "200 data (1.9 MB) + 20 delete" in text
    assert "(110.0x fewer files)" in text
    (data,) = result_json([result])
    assert data["before"]["files"] == 220 and data["after"]["files"] == 2
    assert data["tombstones_pruned"] == 0 and "tombstones" not in text
    pruned = TableMaintenance("ns__cdcmirror.t__deleted", after, after, tombstones_pruned=7)
    assert "; pruned 7 tombstones" in result_text([pruned])
    assert result_json([pruned])[0]["tombstones_pruned"] == 7


def test_retry_on_conflict_retries_conflicts_only() -> None:
    calls = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError(
                "org.apache.iceberg.exceptions.ValidationException: found new delete"
            )
        return "done"

    assert retry_on_conflict(flaky, "t", first_wait=0.0) == "done" and len(calls) == 3
    with pytest.raises(RuntimeError, match="boom"):
        retry_on_conflict(lambda: (_ for _ in ()).throw(RuntimeError("boom")), "t", first_wait=0)
    assert not is_conflict(ValueError("Table not found"))
