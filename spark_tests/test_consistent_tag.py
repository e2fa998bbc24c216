"""The consistent point as a reader finds it on a real Iceberg table (``spark/iceberg.py``,
``publish_point``): the tag and the property move in one metadata commit, the tagged
snapshot reads as it was while the head moves on, and the job's snapshot cap keeps it."""

from __future__ import annotations

import json
from typing import Any

from cdcmirror.mirror.consistent_point import Point
from cdcmirror.mirror.transaction_metadata import UNMARKED, change_ddl, changes_sql
from cdcmirror.spark.consistent import parsed_changes
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


def _change(op: str, lsn: int, tx: str | None, order: int, snapshot: str = "false") -> str:
    block = {"id": tx, "total_order": order, "data_collection_order": order} if tx else None
    return json.dumps(
        {
            "op": op,
            "source": {"lsn": lsn, "sequence": json.dumps(["100", str(lsn)]), "snapshot": snapshot},
            "transaction": block,
        }
    )


def test_the_batch_transaction_runs_as_the_proof_reads_them(spark_world: SparkWorld) -> None:
    """``transaction_metadata.changes_sql`` on PostgreSQL changes: runs of consecutive orders
    per transaction (its xid, the change's LSN cut off) with the newest position; a replayed
    change counted once; a snapshot read nowhere; a streamed change without a transaction
    under ``UNMARKED``."""
    from pyspark.sql import functions as F

    spark = spark_world.spark
    records = [
        ("m.s.t", 0, 0, _change("u", 120, "5:120", 1)),
        ("m.s.t", 0, 1, _change("u", 121, "5:121", 2)),
        ("m.s.t", 0, 2, _change("u", 121, "5:121", 2)),  # replayed
        ("m.s.t", 0, 3, _change("c", 130, "5:130", 4)),
        ("m.s.t", 0, 4, _change("r", 90, None, 0, snapshot="true")),
        ("m.s.u", 0, 0, _change("d", 125, "5:125", 1)),
        ("m.s.u", 0, 1, _change("c", 140, None, 0)),
    ]
    frame = spark.createDataFrame(records, "topic string, partition int, offset long, value string")
    frame = frame.withColumn(
        "e", F.from_json(F.expr("CAST(value AS STRING)"), change_ddl("postgresql", False))
    )
    frame.createOrReplaceTempView("_tx_changes")
    rows = spark.sql(changes_sql("_tx_changes", "postgresql", False)).collect()
    runs = sorted((r.topic, r.tx, r.lo, r.hi, tuple(r.newest)) for r in rows)
    assert runs == sorted(
        [
            ("m.s.t", "5", 1, 2, (1, 100, 121)),
            ("m.s.t", "5", 4, 4, (1, 100, 130)),
            ("m.s.u", "5", 1, 1, (1, 100, 125)),
            ("m.s.u", UNMARKED, 0, 0, (1, 100, 140)),
        ]
    )


def _envelope(op: str, lsn: int, after: dict[str, Any] | None, schemas: bool) -> str:
    """A Debezium envelope as the JSON converter writes it (compact, members in Debezium's
    order), with a schema part before the payload when ``schemas``."""
    payload = {
        "before": None,
        "after": after,
        "source": {"lsn": lsn, "sequence": json.dumps(["100", str(lsn)]), "snapshot": "false"},
        "transaction": {"id": f"5:{lsn}", "total_order": 1, "data_collection_order": 1},
        "op": op,
        "ts_ms": 1,
    }
    # a schema part that names a "source" member of its own, as a Connect parameter could
    schema = {"type": "struct", "parameters": {"source": "x"}, "fields": [{"field": "source"}]}
    value = {"schema": schema, "payload": payload} if schemas else payload
    return json.dumps(value, separators=(",", ":"))


def test_the_proof_parses_each_change_from_its_source_block(spark_world: SparkWorld) -> None:
    """``consistent.parsed_changes``: the source and transaction blocks and the op, parsed
    from the text after the envelope's last ``,"source":``, are those of the whole value:
    with and without the converter's schema, beside a row column named ``source`` (a
    string with quotes in it, and an object), and a value that is no envelope (parsed
    whole: no op, counted nowhere)."""
    from pyspark.sql import functions as F

    spark = spark_world.spark
    for schemas in (True, False):
        afters = [
            {"id": 1, "source": 'say ,"source":{"lsn":1}'},  # quotes escaped in the text
            {"id": 2, "source": {"lsn": 7, "op": "d"}},  # an object member of that name
            None,  # a delete's
        ]
        changes = enumerate(zip("cud", afters, strict=True))
        values = [_envelope(op, 200 + i, a, schemas) for i, (op, a) in changes]
        values.append('{"payload":{"op":"u"},"note":"no source block"}')  # no envelope
        values.append('{"op": "u", "source": {"lsn": 9}}')  # spaced: parsed whole
        records = [("m.s.t", 0, i, v) for i, v in enumerate(values)]
        frame = spark.createDataFrame(
            records, "topic string, partition int, offset long, value string"
        )
        texts = frame.withColumn("_text", F.col("value"))
        got = parsed_changes(texts, "postgresql", schemas)
        whole = texts.withColumn("e", F.from_json("_text", change_ddl("postgresql", schemas)))
        p = "e.payload" if schemas else "e"
        parts = [f"{p}.op", f"{p}.source.lsn", f"{p}.transaction.id"]
        rows = got.orderBy("offset").selectExpr(*parts).collect()
        expected = whole.orderBy("offset").selectExpr(*parts).collect()
        assert [tuple(r) for r in rows] == [tuple(r) for r in expected]
        assert [tuple(r) for r in rows[:3]] == [
            ("c", 200, "5:200"),
            ("u", 201, "5:201"),
            ("d", 202, "5:202"),
        ]
        # the first three parsed from their tails, not whole
        tails = got.orderBy("offset").selectExpr(f"_tail{p[1:]}.op").collect()
        assert [r[0] for r in tails[:3]] == ["c", "u", "d"]
