"""Tombstones pruned by age (``mirror/tombstone_pruning.py``, ``spark/maintenance/prune.py``):
on real Iceberg tables, the pruning raises the mark and removes what it covers, and the
classification marks a change at or below it whose key is neither stored nor entombed
``pruned`` (never an insert); on a live mirror, `cdcmirror maintain` prunes aged tombstones
and a Debezium-style replay of the deleted rows' inserts brings none of them back: they go
to the dead-letter table with the reason."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from confluent_kafka import Producer

from cdcmirror.commands.job_tables import internal_namespace
from cdcmirror.mirror.batch_aggregate import BatchAggregate
from cdcmirror.mirror.direct_merge import goes_direct
from cdcmirror.mirror.merge_sql import classify_sql
from cdcmirror.mirror.positions import source_length
from cdcmirror.mirror.tombstone_pruning import PRUNED_BELOW
from cdcmirror.spark.cdc.direct import batch_mark
from cdcmirror.spark.iceberg import current_snapshot
from cdcmirror.spark.maintenance.prune import prune_tombstones
from cdcmirror.spark.rows import one_row
from cdcmirror.spark.tombstones import entombed
from cdcmirror.stack.control import Stack
from support import mirror_scenarios as sc
from support import services
from support.bootstrap_env import run_cli
from support.iceberg_tables import ITEMS, items_target, tombstones_table
from support.mirror_fixture import Mirrored, mirrored
from support.spark import SparkWorld

N = source_length(ITEMS.dialect)


def _classify(spark: Any, target: str, tombstones: str, rows: dict[int, tuple[str, int]]) -> Any:
    """Each key's action for a batch of ``rows`` (key: operation, position's third element)."""
    values = ", ".join(
        f"({i}, 'b', '{op}', array(1L, 1L, {at}L, 0L, 0L, {i}L), current_timestamp())"
        for i, (op, at) in rows.items()
    )
    spark.sql(
        f"SELECT * FROM VALUES {values} AS s(id, name, _cdc_op, _cdc_position, _cdc_source_ts)"
    ).createOrReplaceTempView("prune_it_batch")
    known = entombed(spark, tombstones)
    sql = classify_sql(
        ITEMS, "prune_it_batch", target, known.stored, False, pruned_below=known.pruned_below
    )
    return {r.id: r._cdc_action for r in spark.sql(sql).collect()}, known


def test_pruning_raises_the_mark_and_older_changes_of_unknown_keys_are_not_inserted(
    spark_world: SparkWorld,
) -> None:
    spark = spark_world.spark
    target, tombstones = "merge_it.pruned", "merge_it.pruned__deleted"
    items_target(spark, target)
    tombstones_table(spark, tombstones)
    spark.sql(  # keys 1 and 2 stored at 5
        f"INSERT INTO {target} SELECT id, 'stored', 'c', array(1, 1, 5, 0, 0, id), "
        "current_timestamp(), false FROM range(1, 3)"
    )
    spark.sql(  # 3 and 5 deleted 10 days ago (at 10 and 15), 4 an hour ago (at 40)
        f"INSERT INTO {tombstones} VALUES "
        "(3, array(1, 1, 10, 0, 0, 3), current_timestamp() - INTERVAL 10 DAYS), "
        "(5, array(1, 1, 15, 0, 0, 5), current_timestamp() - INTERVAL 10 DAYS), "
        "(4, array(1, 1, 40, 0, 0, 4), current_timestamp() - INTERVAL 1 HOURS)"
    )
    batch = {
        1: ("u", 12),  # stored older: an update, mark or not
        3: ("c", 8),  # older than its pruned tombstone: a replay, left out
        6: ("c", 12),  # never stored, at or below the mark: cannot be told
        7: ("c", 20),  # above the mark: an insert
        4: ("c", 30),  # its kept tombstone is newer: stale
        8: ("d", 5),  # a delete of a key not stored: absent, as before
    }
    before, known = _classify(spark, target, tombstones, batch)
    assert known.pruned_below is None
    assert before == {1: "update", 3: "stale", 6: "insert", 7: "insert", 4: "stale", 8: "absent"}
    week = datetime.now(tz=UTC).replace(tzinfo=None) - timedelta(days=7)
    assert prune_tombstones(spark, tombstones, week, N) == 2
    kept = spark.sql(f"SELECT id FROM {tombstones}").collect()
    assert [r.id for r in kept] == [4]
    after, known = _classify(spark, target, tombstones, batch)
    assert known.pruned_below == [1, 1, 15, 0]
    assert known.stored is not None and "VERSION AS OF" in known.stored
    assert after == {**before, 3: "pruned", 6: "pruned"}
    # a later pruning that finds only older tombstones leaves the mark where it was
    old = "TIMESTAMP '2000-01-01'"
    spark.sql(f"INSERT INTO {tombstones} VALUES (9, array(1, 1, 2, 0, 0, 9), {old})")
    assert prune_tombstones(spark, tombstones, week, N) == 1
    mark = one_row(spark.sql(f"SHOW TBLPROPERTIES {tombstones} ('{PRUNED_BELOW}')"))[1]
    assert json.loads(mark) == [1, 1, 15, 0]
    # every tombstone pruned: the table holds none, and the mark still keeps 3 and 6 out
    spark.sql(f"UPDATE {tombstones} SET _cdc_source_ts = {old}")
    assert prune_tombstones(spark, tombstones, week, N) == 1
    emptied, known = _classify(spark, target, tombstones, batch)
    assert known.stored is None and known.pruned_below == [1, 1, 40, 0]
    assert emptied == {**after, 4: "pruned", 7: "pruned"}
    # the table's high-water mark, scanned from its rows (its commits record none), is
    # raised to the pruned mark: a batch at 20 is not newer than every tombstone there was
    agg = BatchAggregate(applied=1)
    read = current_snapshot(spark, target)
    assert batch_mark(spark, ITEMS, target, tombstones, read, agg, False) == [1, 1, 40, 0]
    late = replace(agg, oldest_position=[1, 1, 20, 0])
    assert not goes_direct(late, False, [1, 1, 40, 0])


@pytest.fixture(scope="module")
def pg(stack: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    yield from mirrored(spark_world, "json", 100)


def test_maintain_prunes_aged_tombstones_and_a_replay_of_deleted_rows_stays_out(
    pg: Mirrored,
) -> None:
    spark = pg.spark
    pg.mirror()
    gone = sorted(pg.workload.ids)[:8]
    with services.pg_connect() as conn:
        conn.execute(f"DELETE FROM {pg.source.table} WHERE id = ANY(%s)", (gone,))
    pg.workload.ids = [i for i in pg.workload.ids if i not in gone]
    sc.settle(pg)
    pg.mirror()
    pg.assert_same()
    tombstones = f"{internal_namespace(pg.config)}.items__deleted"
    entombed_ids = {int(r.id) for r in spark.sql(f"SELECT id FROM {tombstones}").collect()}
    assert set(gone) <= entombed_ids
    # the deletes made ten days ago: older than the default retention (168 hours)
    spark.sql(f"UPDATE {tombstones} SET _cdc_source_ts = _cdc_source_ts - INTERVAL 10 DAYS")
    # the table named: it and its tombstone table maintained, not the dead letters
    result = run_cli(pg.config_path, "--output", "json", "maintain", "--table", "items")
    assert result.exit_code == 0, result.output
    report = {r["table"]: r for r in json.loads(result.stdout)}
    assert sorted(report) == sorted([pg.identifier, tombstones]), report
    assert report[tombstones]["tombstones_pruned"] >= len(gone), report[tombstones]
    assert spark.sql(f"SELECT count(*) FROM {tombstones}").first()[0] == 0
    # Debezium-style replay: the deleted keys' earlier events sent again
    records = services.all_records(pg.topic)

    def key_of(key: bytes | None) -> int | None:
        return int(json.loads(key)["payload"]["id"]) if key else None

    def op(value: bytes | None) -> str | None:
        return json.loads(value)["payload"]["op"] if value else None

    replay = [(k, v) for k, v in records if key_of(k) in gone and op(v) in ("r", "c", "u")]
    assert {key_of(k) for k, _ in replay} == set(gone)
    producer = Producer({"bootstrap.servers": services.KAFKA})
    for key, value in replay:
        producer.produce(pg.topic, key=key, value=value)
    producer.flush(10)
    pg.mirror()
    pg.assert_same()  # none of the deleted rows came back
    dead = spark.sql(
        f"SELECT key, error FROM {pg.dead_letter} WHERE error LIKE 'older than the tombstones%'"
    ).collect()
    assert {key_of(bytes(r.key)) for r in dead} == set(gone), dead
    # a full run: every table, the mirror's own too; nothing left to prune
    result = run_cli(pg.config_path, "--output", "json", "maintain")
    assert result.exit_code == 0, result.output
    report = {r["table"]: r for r in json.loads(result.stdout)}
    assert {pg.identifier, tombstones, pg.dead_letter} <= set(report), report
    assert report[tombstones]["tombstones_pruned"] == 0, report[tombstones]
