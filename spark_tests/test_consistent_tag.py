"""The consistent point as a reader finds it on a real Iceberg table (``spark/iceberg.py``,
``publish_point``): the tag and the property move in one metadata commit, the tagged
snapshot reads as it was while the head moves on, and the job's snapshot cap keeps it."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from cdcmirror.mirror.consistent_point import Point
from cdcmirror.mirror.reload_mark import IN_RELOAD, ReloadMark
from cdcmirror.mirror.spec import MirrorColumn, MirrorTable
from cdcmirror.mirror.transaction_metadata import UNMARKED
from cdcmirror.spark.cdc.decode import decode_events, register_functions, with_utf8_check
from cdcmirror.spark.consistent import table_runs
from cdcmirror.spark.iceberg import iceberg_table, publish_point, published_point
from cdcmirror.spark.maintenance.expiry import cap_table, snapshot_count
from cdcmirror.spark.rows import first_value
from support.spark import SparkWorld

TAG = "cdc_consistent"


def _snapshot_ids(spark: Any, target: str) -> list[int]:
    rows = spark.sql(f"SELECT snapshot_id FROM {target}.snapshots ORDER BY committed_at").collect()
    return [int(r.snapshot_id) for r in rows]


def _metadata_versions(spark: Any, target: str) -> int:
    return int(first_value(spark.sql(f"SELECT count(*) FROM {target}.metadata_log_entries")))


def test_the_tag_and_its_point_move_together_and_outlive_the_cap(spark_world: SparkWorld) -> None:
    spark = spark_world.spark
    target = "consistent_it.ledger"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS consistent_it")
    spark.sql(f"DROP TABLE IF EXISTS {target}")
    spark.sql(f"CREATE TABLE {target} (id bigint, amount bigint) USING iceberg")
    assert published_point(spark, target, TAG) is None
    spark.sql(f"INSERT INTO {target} VALUES (1, 100)")
    first = Point("7", 3, 1_000, (1, 20, 30)).text()
    snap = _snapshot_ids(spark, target)[-1]
    before = _metadata_versions(spark, target)
    publish_point(spark, target, TAG, snap, first)
    assert _metadata_versions(spark, target) == before + 1  # one commit: tag and property
    assert published_point(spark, target, TAG) == (snap, first)
    # the head moves on; the tag reads the table as it was
    for i in range(2, 6):
        spark.sql(f"INSERT INTO {target} VALUES ({i}, {i * 100})")
    tagged = spark.sql(f"SELECT * FROM {target} VERSION AS OF '{TAG}'").collect()
    assert [(r.id, r.amount) for r in tagged] == [(1, 100)]
    assert first_value(spark.sql(f"SELECT count(*) FROM {target}")) == 5
    # the job's cap expires old snapshots, never the tagged one
    assert cap_table(spark, target, 1) > 0
    assert snap in _snapshot_ids(spark, target) and snapshot_count(spark, target) == 2
    # moved forward: the same table, a new point
    second = Point("9", 5, 2_000, (1, 40, 50)).text()
    head = _snapshot_ids(spark, target)[-1]
    publish_point(spark, target, TAG, head, second)
    assert published_point(spark, target, TAG) == (head, second)
    refs = dict(iceberg_table(spark, target).refs())
    assert set(refs) == {"main", TAG}
    assert first_value(spark.sql(f"SELECT count(*) FROM {target} VERSION AS OF '{TAG}'")) == 5


def _change(
    op: str, lsn: int, tx: str | None, order: int, snapshot: str = "false", key: int = 1
) -> str:
    block = {"id": tx, "total_order": order, "data_collection_order": order} if tx else None
    row = {"id": key, "note": f"at {lsn}"}
    source = {
        "lsn": lsn,
        "sequence": json.dumps(["100", str(lsn)]),
        "snapshot": snapshot,
        "ts_ms": 1,
        "txId": int(tx.split(":")[0]) if tx else 1,
    }
    envelope = {
        "before": row if op == "d" else None,
        "after": None if op == "d" else row,
        "source": source,
        "transaction": block,
        "op": op,
        "ts_ms": 1,
    }
    return json.dumps(envelope)


KAFKA = "topic string, partition int, offset long, value binary, "
KAFKA += "headers array<struct<key: string, value: binary>>"
TABLE = MirrorTable(
    "n.t", "m.s.t", "postgresql", "s.t", ("id",), "upsert",
    (MirrorColumn("id", "long", "int64"), MirrorColumn("note", "string", "string")),
)  # fmt: skip


@pytest.mark.parametrize("reloaded", [False, True])
def test_the_proof_counts_the_transactions_of_the_decoded_events(
    spark_world: SparkWorld, reloaded: bool
) -> None:
    """``decode_events(transactions=True)`` then ``consistent.table_runs``: runs of
    consecutive orders per transaction (its xid, the change's LSN cut off) with the newest
    position; a change sent twice counted once; a snapshot read nowhere; a streamed change
    without a transaction under ``UNMARKED``; a change a re-load's rows hold (whose position
    is the re-load's phase) counted as streamed; a value that is no envelope, or a change
    without its source block (a dead letter), nowhere."""
    spark = spark_world.spark
    register_functions(spark)
    values = [
        _change("u", 120, "5:120", 1),
        _change("u", 121, "5:121", 2, key=2),
        _change("u", 121, "5:121", 2, key=2),  # sent again
        _change("c", 130, "5:130", 4, key=3),
        _change("r", 90, None, 0, snapshot="true", key=4),
        _change("d", 140, "6:140", 1, key=5),
        _change("c", 150, None, 0, key=6),
        '{"note": "no envelope"}',
        '{"op": "u", "after": {"id": 9}, "transaction": {"id": "5:1", "data_collection_order": 3}}',
    ]
    records: list[tuple[Any, ...]] = [("m.s.t", 0, i, v.encode(), []) for i, v in enumerate(values)]
    frame = spark.createDataFrame(records, KAFKA)
    # the re-load's rows hold transaction 5 (below xmin): its changes are in the re-load phase
    table = replace(TABLE, reloaded=ReloadMark(6, 7, (), 1_000)) if reloaded else TABLE
    decoded = decode_events(with_utf8_check(frame), table, False, False, transactions=True)
    phases = [r[0] for r in decoded.orderBy("_cdc_offset").selectExpr("_cdc_position[0]").collect()]
    assert phases[:2] == ([IN_RELOAD, IN_RELOAD] if reloaded else [1, 1])
    runs = table_runs(decoded, table)
    assert sorted((r.topic, r.tx, r.lo, r.hi, r.newest) for r in runs) == sorted(
        [
            ("m.s.t", "5", 1, 2, (1, 100, 121)),
            ("m.s.t", "5", 4, 4, (1, 100, 130)),
            ("m.s.t", "6", 1, 1, (1, 100, 140)),
            ("m.s.t", UNMARKED, 0, 0, (1, 100, 150)),
        ]
    )
    # without the tag no transaction is read
    plain = decode_events(with_utf8_check(frame), table, False, False)
    assert plain.where("_cdc_tx IS NOT NULL").count() == 0


def test_the_transaction_block_is_read_with_and_without_the_schema(
    spark_world: SparkWorld,
) -> None:
    """JSON with schemas: the transaction block is read from the payload, as without."""
    spark = spark_world.spark
    register_functions(spark)
    for schemas in (True, False):
        payload = json.loads(_change("u", 120, "5:120", 3))
        value = {"schema": {"type": "struct"}, "payload": payload} if schemas else payload
        frame = spark.createDataFrame([("m.s.t", 0, 0, json.dumps(value).encode(), [])], KAFKA)
        decoded = decode_events(with_utf8_check(frame), TABLE, schemas, False, transactions=True)
        row = decoded.selectExpr("_cdc_tx.id", "_cdc_tx.order", "_cdc_tx.streamed", "_cdc_error")
        assert tuple(row.collect()[0]) == ("5", 3, True, None)
