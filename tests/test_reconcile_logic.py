"""Reconcile's pure parts: canonical row text, verdicts, key differences, reports, and the
checkpoint's committed offsets."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cdcmirror.checkpoint_store import CheckpointFiles
from cdcmirror.mirror.checkpoint import (
    behind,
    committed_offsets,
    holds_batches,
    parse_offsets_file,
)
from cdcmirror.reconcile.canonical import family, row_shape
from cdcmirror.reconcile.compare import (
    DeepResult,
    KeyRows,
    TableCheck,
    diff_keys,
    drifted_buckets,
    exit_code,
    in_both,
    position_text,
)
from cdcmirror.reconcile.report import result_json, result_markdown, result_text
from cdcmirror.source.type_parsing import parse_mysql_type, parse_postgresql_type
from cdcmirror.source_model import SourceType

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("dialect", "text", "iceberg", "expected"),
    [
        ("postgresql", "integer", "int", "int"),
        ("postgresql", "numeric(38,10)", "decimal(38,10)", "decimal"),
        ("postgresql", "numeric(50,10)", "string", "text"),
        ("postgresql", "character(4)", "string", "bpchar"),
        ("postgresql", "timestamp with time zone", "timestamptz", "micros"),
        ("postgresql", "double precision", "double", "float"),
        ("postgresql", "text[]", "list<string>", "array"),
        ("postgresql", "money", "decimal(19,2)", "decimal"),
        ("postgresql", "interval", "string", "interval"),
        ("postgresql", "bit(1)", "boolean", "bool"),
        ("postgresql", "bit(8)", "binary", "bits"),
        ("postgresql", "hstore", "map<string,string>", "map"),
        ("postgresql", "geometry", "binary", None),
        ("mysql", "tinyint(1)", "boolean", "bool"),
        ("mysql", "tinyint(4)", "int", "int"),
        ("mysql", "bigint(20) unsigned", "decimal(20,0)", "int"),
        ("mysql", "datetime(6)", "timestamp", "micros"),
        ("mysql", "float", "float", "float"),
        ("mysql", "bit(10)", "binary", "bits"),
        ("mysql", "point", "binary", "geometry"),
    ],
)
def test_family_of_each_type(dialect: str, text: str, iceberg: str, expected: str | None) -> None:
    parse = parse_postgresql_type if dialect == "postgresql" else parse_mysql_type
    assert family(dialect, parse(text), iceberg) == expected


def test_row_shape_skips_unhashable_columns_and_keeps_the_key() -> None:
    shape = row_shape(
        "postgresql",
        [
            ("id", SourceType("bigint", "bigint"), "long"),
            ("shape", SourceType("geometry", "geometry"), "binary"),
            (
                "price",
                SourceType("numeric", "numeric(10,2)", precision=10, scale=2),
                "decimal(10,2)",
            ),
        ],
        ("id",),
    )
    assert [c.name for c in shape.key] == ["id"]
    assert [c.name for c in shape.columns] == ["id", "price"]
    assert shape.skipped == ("shape (geometry)",)
    assert shape.columns[1].scale == 2
    # the same hash function on every engine: first 32 bits of MD5 of the joined text
    for engine in ("postgresql", "mysql", "spark"):
        sql = shape.row_hash_sql(engine)
        assert "md5" in sql.lower() and "1, 8" in sql
    assert "% 64" in shape.bucket_sql("spark", 64)


def test_keyless_table_buckets_by_the_whole_row() -> None:
    shape = row_shape("mysql", [("a", SourceType("int", "int"), "int")], ())
    assert shape.key == () and shape.key_text_sql("mysql") == shape.key_text_sql("mysql")
    assert "`a`" in shape.bucket_sql("mysql", 8)


def test_drifted_buckets_compare_count_and_checksum() -> None:
    source = {0: (10, 100), 1: (5, 50), 2: (1, 7)}
    mirror = {0: (10, 100), 1: (5, 51), 3: (1, 9)}
    assert drifted_buckets(source, mirror) == [1, 2, 3]
    assert drifted_buckets(source, dict(source)) == []


def test_diff_keys_sorts_changed_missing_extra_and_truncates() -> None:
    source: KeyRows = {"1": (("1",), 10), "2": (("2",), 20), "3": (("3",), 30)}
    mirror: KeyRows = {"1": (("1",), 10), "2": (("2",), 21), "4": (("4",), 40)}
    changed, missing, extra, truncated = diff_keys(("id",), source, mirror, 10)
    assert (changed, missing, extra, truncated) == (
        [{"id": "2"}],
        [{"id": "3"}],
        [{"id": "4"}],
        False,
    )
    assert diff_keys(("id",), source, mirror, 1)[3] is True


def test_in_both_drops_keys_seen_once() -> None:
    assert in_both([{"id": "1"}, {"id": "2"}], [{"id": "2"}, {"id": "3"}]) == [{"id": "2"}]


def check(**kw: object) -> TableCheck:
    base = TableCheck("ns.t", "public.t", "postgresql", "shop.public.t")
    for k, v in kw.items():
        setattr(base, k, v)
    return base


def test_status_in_sync_drift_lagging_error() -> None:
    assert check(source_rows=3, mirror_rows=3, caught_up=True).status == "in sync"
    assert check(source_rows=3, mirror_rows=2, caught_up=True).status == "drift"
    assert check(source_rows=3, mirror_rows=2, caught_up=False).status == "lagging"
    assert check(source_rows=3, mirror_rows=3, caught_up=False).status == "lagging"
    deep = DeepResult(8, [1], changed=[{"id": "1"}])
    assert check(source_rows=3, mirror_rows=3, caught_up=True, deep=deep).status == "drift"
    assert check(error="boom").status == "error"


def test_exit_codes() -> None:
    ok = check(source_rows=1, mirror_rows=1, caught_up=True)
    bad = check(source_rows=1, mirror_rows=0, caught_up=True)
    assert exit_code([ok]) == 0
    assert exit_code([ok, bad]) == 1
    assert exit_code([bad, check(error="x")]) == 2


def test_lag_is_zero_when_caught_up() -> None:
    ts = NOW - timedelta(seconds=30)
    assert check(caught_up=True, source_ts=ts).lag_seconds(NOW) == 0
    assert check(caught_up=False, source_ts=ts).lag_seconds(NOW) == 30


def test_position_text() -> None:
    assert position_text("postgresql", [1, 7, (1 << 32) + 0x1CAF2108, 0, 5]) == "1/1CAF2108"
    assert position_text("mariadb", [1, 3, 1234, 2, 0, 9]) == "binlog #3 pos 1234 row 2"
    assert position_text("postgresql", None) == "-"


def test_reports_name_the_table_and_the_keys() -> None:
    good = check(
        source_rows=1000, mirror_rows=1000, caught_up=True, snapshot_id=7, snapshot_time=NOW
    )
    bad = check(
        identifier="ns.u",
        source_rows=10,
        mirror_rows=9,
        caught_up=True,
        deep=DeepResult(8, [2], missing=[{"id": "5"}], skipped_columns=["f (real)"]),
    )
    text = result_text([good, bad], NOW)
    assert (
        "1,000" in text and "ns.u (drift)" in text and "missing from the mirror (1): (id=5)" in text
    )
    assert "not compared (no canonical text): f (real)" in text
    data = result_json([good, bad], NOW)
    assert data["in_sync"] is False and data["version"] == 1
    assert data["tables"][1]["deep"]["missing_keys"] == [{"id": "5"}]
    json.dumps(data)  # serialisable as is
    markdown = result_markdown([good, bad], NOW, "shop -> shop_mirror")
    assert markdown.startswith("# cdcmirror reconcile: shop -> shop_mirror")
    assert "| ns.u | drift |" in markdown
    assert "all tables in sync" in result_text([good], NOW)


def test_checkpoint_offsets_of_the_newest_committed_batch(tmp_path: Path) -> None:
    logs = CheckpointFiles(str(tmp_path / "ck"), {})
    assert committed_offsets(logs) == {} and not holds_batches(logs) and not logs.exists()
    tmp_path = tmp_path / "ck"
    tmp_path.mkdir()
    (tmp_path / "offsets").mkdir()
    (tmp_path / "commits").mkdir()
    for batch, offset in ((0, 5), (1, 9), (2, 12)):
        (tmp_path / "offsets" / str(batch)).write_text(
            f'v1\n{{"batchWatermarkMs":0}}\n{{"t":{{"0":{offset}}}}}\n'
        )
    for batch in (0, 1):  # batch 2 was planned but not committed
        (tmp_path / "commits" / str(batch)).write_text("v1\n{}\n")
    assert committed_offsets(logs) == {"t": {0: 9}} and holds_batches(logs) and logs.exists()
    logs.remove()
    assert not tmp_path.exists()
    assert behind({0: 9}, {0: 12}) == 3
    assert parse_offsets_file('v1\n{}\n{"a":{"0":1,"1":2}}') == {"a": {0: 1, 1: 2}}
