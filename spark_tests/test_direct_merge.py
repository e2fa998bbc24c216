"""A batch MERGEd without a classification (``mirror/direct_merge.py``) on real Iceberg
tables: the high-water mark as the snapshots record it (``mirror/high_water.py``,
``spark/iceberg.py``), and the direct MERGE's rows and counts against the
classified MERGE's."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cdcmirror.mirror.batch_aggregate import BatchAggregate
from cdcmirror.mirror.direct_merge import (
    COUNTED_KEYS,
    Counts,
    branches,
    counted,
    inferred_deletes,
    missed,
    summed,
    trusted,
)
from cdcmirror.mirror.high_water import summary
from cdcmirror.mirror.merge_sql import classify_sql, dedupe_sql, merge_sql
from cdcmirror.mirror.resume import BATCH_ID, QUERY_ID
from cdcmirror.mirror.stats import TableStats
from cdcmirror.spark.cdc.context import TableContext
from cdcmirror.spark.cdc.direct import observed_keys
from cdcmirror.spark.iceberg import (
    batch_commit_summary,
    merge_on_read,
    recorded_mark,
    scanned_mark,
    with_commit_props,
)
from cdcmirror.spark.tombstones import TombstoneTables
from support.iceberg_tables import ITEMS, direct_target
from support.spark import SparkWorld

N = 4  # MariaDB: phase, binlog file, position, row


def _store(spark: Any, target: str, rows: str) -> None:
    spark.sql(f"INSERT INTO {target} SELECT *, false FROM VALUES {rows}")


def test_the_mark_is_read_past_file_rewrites_and_lost_to_other_commits(
    spark_world: SparkWorld,
) -> None:
    spark = spark_world.spark
    target = "direct_it.marks"
    direct_target(spark, target)
    assert recorded_mark(spark, target) == []  # no snapshot: nothing stored
    assert merge_on_read(spark, target)
    # a commit that records no mark (the initial load, a re-load, another writer)
    _store(spark, target, "(1L, 'a', 'r', array(0L, 3L, 9L, 0L, -1L, -1L), current_timestamp())")
    assert recorded_mark(spark, target) is None
    _store(spark, target, "(2L, 'b', 'c', array(1L, 3L, 70L, 2L, 0L, 5L), current_timestamp())")
    assert scanned_mark(spark, target, N) == [1, 3, 70, 2]
    props = {QUERY_ID: "q", BATCH_ID: "7", **summary([1, 3, 80, 0])}
    row = "(3L, 'c', 'c', array(1L, 3L, 80L, 0L, 0L, 6L), current_timestamp())"
    with_commit_props(spark, props, lambda: _store(spark, target, row))
    assert recorded_mark(spark, target) == [1, 3, 80, 0]
    assert batch_commit_summary(spark, target, props, COUNTED_KEYS) == {"added-records": "1"}
    spark.sql(
        "CALL system.rewrite_data_files(table => 'direct_it.marks', "
        "options => map('rewrite-all', 'true'))"
    )
    newest = spark.sql(f"SELECT operation FROM {target}.snapshots ORDER BY committed_at DESC")
    assert newest.head(1)[0][0] == "replace"
    assert recorded_mark(spark, target) == [1, 3, 80, 0]  # a rewrite moves no position
    spark.sql(f"DELETE FROM {target} WHERE id = 1")  # not the mirror's: the mark is unknown
    assert recorded_mark(spark, target) is None
    assert batch_commit_summary(spark, target, {QUERY_ID: "q", BATCH_ID: "8"}, COUNTED_KEYS) == {}


STORED = (
    "(1L, 'one', 'c', array(1L, 1L, 50L, 0L, 0L, 1L), current_timestamp()), "
    "(2L, 'two', 'c', array(1L, 1L, 50L, 0L, 0L, 2L), current_timestamp()), "
    "(3L, 'three', 'u', array(1L, 1L, 90L, 0L, 0L, 3L), current_timestamp())"
)
# deduplicated: 1 updated; 3 older than what another writer stored since; 4 and 5 new
BATCH = (
    "SELECT * FROM VALUES "
    "(1L, 'one!', 'u', array(1L, 1L, 60L, 0L, 0L, 7L), current_timestamp()), "
    "(3L, 'three?', 'u', array(1L, 1L, 61L, 0L, 0L, 8L), current_timestamp()), "
    "(4L, 'four', 'c', array(1L, 1L, 62L, 0L, 0L, 9L), current_timestamp()), "
    "(5L, 'five', 'u', array(1L, 1L, 63L, 0L, 0L, 10L), current_timestamp()) "
    "AS s(id, name, _cdc_op, _cdc_position, _cdc_source_ts)"
)


def _rows(spark: Any, target: str) -> list[tuple[Any, ...]]:
    rows = spark.sql(f"SELECT id, name, _cdc_position FROM {target} ORDER BY id").collect()
    return [(r[0], r[1], list(r[2])) for r in rows]


def _direct(spark: Any, target: str, props: dict[str, str]) -> TableContext:
    """A direct batch into ``target`` whose commits carry ``props`` (the put-back too)."""
    table = replace(ITEMS, identifier=target)
    batch_id = int(props[BATCH_ID])
    return TableContext(
        spark,
        table,
        batch_id,
        TableStats(target),
        props,
        soft=False,
        fail_on_dead_letter=True,
        tombstones=TombstoneTables("direct_it"),
        raw=spark.range(0),
    )


def test_a_direct_merge_puts_back_what_a_foreign_commit_stored_newer(
    spark_world: SparkWorld,
) -> None:
    """The direct MERGE reads no stored position: a row another writer stored newer after
    the snapshot the batch read is overwritten, found after the MERGE and put back, so the
    rows are the classified MERGE's; counted from the MERGE's own commit."""
    from cdcmirror.spark.cdc.direct import dedupe_direct, merge_direct
    from cdcmirror.spark.iceberg import current_snapshot

    spark = spark_world.spark
    direct, classified = "direct_it.direct", "direct_it.classified"
    events = "SELECT *, 0 AS _cdc_partition, _cdc_position[5] AS _cdc_offset FROM direct_it_batch"
    spark.sql(BATCH).createOrReplaceTempView("direct_it_batch")
    for target in (direct, classified):
        direct_target(spark, target)
        _store(spark, target, STORED.rsplit(", (3L", 1)[0])  # 1 and 2
    read = current_snapshot(spark, direct)
    for target in (direct, classified):  # another writer, after the batch read the table
        _store(spark, target, "(3L" + STORED.rsplit(", (3L", 1)[1])
    props = {QUERY_ID: "q", BATCH_ID: "1"}
    d = _direct(spark, direct, props)
    dedupe_direct(d, spark.sql(events))
    summary = merge_direct(d, read, {}, matched=True, inserts=True)
    spark.sql(classify_sql(ITEMS, "direct_it_batch", classified, None, soft=False)).where(
        "_cdc_action IN ('insert', 'update', 'delete')"
    ).createOrReplaceTempView("direct_it_changes")
    spark.sql(merge_sql(ITEMS, classified, "direct_it_changes", soft=False))
    assert _rows(spark, direct) == _rows(spark, classified)
    assert [(r[0], r[1]) for r in _rows(spark, direct)] == [
        (1, "one!"),
        (2, "two"),
        (3, "three"),
        (4, "four"),
        (5, "five"),
    ]
    # the MERGE's commit (before the put-back): 1 and 3 updated, 4 and 5 inserted
    assert counted(summary, 4) == Counts(inserts=2, updates=2, duplicates=0)


# deduplicated: 1 deleted, 2 updated, 7 deleted before it was stored (its tombstone moved
# on), 8 inserted then deleted (a new tombstone), 4 inserted
DELETES = (
    "SELECT * FROM VALUES "
    "(1L, 'one!', 'u', array(1L, 1L, 91L, 0L, 0L, 7L), current_timestamp(), 0, 7L), "
    "(1L, NULL, 'd', array(1L, 1L, 92L, 0L, 0L, 8L), current_timestamp(), 0, 8L), "
    "(2L, 'two!', 'u', array(1L, 1L, 93L, 0L, 0L, 9L), current_timestamp(), 0, 9L), "
    "(7L, NULL, 'd', array(1L, 1L, 94L, 0L, 0L, 10L), current_timestamp(), 0, 10L), "
    "(8L, 'eight', 'c', array(1L, 1L, 95L, 0L, 0L, 11L), current_timestamp(), 0, 11L), "
    "(8L, NULL, 'd', array(1L, 1L, 96L, 0L, 0L, 12L), current_timestamp(), 0, 12L), "
    "(4L, 'four', 'c', array(1L, 1L, 97L, 0L, 0L, 13L), current_timestamp(), 0, 13L) "
    "AS s(id, name, _cdc_op, _cdc_position, _cdc_source_ts, _cdc_partition, _cdc_offset)"
)
TOMB = "(id BIGINT NOT NULL, _cdc_position ARRAY<BIGINT>, _cdc_source_ts TIMESTAMP)"


def _tombstones(spark: Any, name: str) -> list[tuple[Any, ...]]:
    """Each key's newest tombstone (a key deleted again has a row per delete)."""
    newest = f"SELECT id, max(_cdc_position) AS p FROM {name} GROUP BY id ORDER BY id"
    rows = spark.sql(newest).collect()
    return [(r[0], list(r[1])) for r in rows]


def test_a_direct_batch_with_deletes_writes_and_entombs_what_the_classified_one_does(
    spark_world: SparkWorld,
) -> None:
    """The deletes of a direct batch: the stored ones counted before the MERGE, every one
    entombed after it (a key never stored too), the counts the classification's."""
    from cdcmirror.mirror.merge_sql import tombstone_append_sql
    from cdcmirror.spark.cdc.direct import (
        dedupe_direct,
        entomb_direct,
        merge_direct,
        observed_keys,
        stored_deletes,
    )
    from cdcmirror.spark.iceberg import current_snapshot

    spark = spark_world.spark
    spark.sql(DELETES).createOrReplaceTempView("direct_it_deletes")
    tomb_row = "(7L, array(1L, 1L, 20L, 0L, 0L, 1L), current_timestamp())"
    for name in ("direct", "classified"):
        direct_target(spark, f"direct_it.{name}")
        _store(spark, f"direct_it.{name}", STORED)
        spark.sql(f"DROP TABLE IF EXISTS direct_it.{name}_tomb")
        spark.sql(f"CREATE TABLE direct_it.{name}_tomb {TOMB} USING iceberg")
        spark.sql(f"INSERT INTO direct_it.{name}_tomb VALUES {tomb_row}")
    props = {QUERY_ID: "q", BATCH_ID: "2"}

    batch = spark.table("direct_it_deletes")
    read = current_snapshot(spark, "direct_it.direct")
    d = _direct(spark, "direct_it.direct", props)
    seen = dedupe_direct(d, batch)
    summary = merge_direct(d, read, {}, matched=True, inserts=True)
    keys = observed_keys(seen)
    # key 7's first event is a delete, yet no row of it is stored: the keys' counts say 2
    # deletes of stored rows, the commit's positions 1; so they are counted on the snapshot
    assert keys == {"keys": 5, "deletes": 3, "updates": 1, "stored_deletes": 2, "unsure": 0}
    assert inferred_deletes(keys, summary) is None
    deleted = stored_deletes(d, read, {})
    entombed = entomb_direct(d, "direct_it.direct_tomb", None)  # counted by its commit
    assert (deleted, entombed) == (1, 3)
    assert counted(summary, 7, deleted, entombed) == Counts(1, 1, 2, 1)

    spark.sql(dedupe_sql(ITEMS, "direct_it_deletes")).createOrReplaceTempView("direct_it_dd")
    classify = classify_sql(ITEMS, "direct_it_dd", "direct_it.classified", None, soft=False)
    spark.sql(classify).createOrReplaceTempView("direct_it_cl")
    actions = {r[0]: r[1] for r in spark.sql("SELECT id, _cdc_action FROM direct_it_cl").collect()}
    assert actions == {1: "delete", 2: "update", 4: "insert", 7: "absent", 8: "absent"}
    effective = "SELECT * FROM direct_it_cl WHERE _cdc_action IN ('insert', 'update', 'delete')"
    spark.sql(effective).createOrReplaceTempView("direct_it_eff")
    spark.sql(merge_sql(ITEMS, "direct_it.classified", "direct_it_eff", soft=False))
    spark.sql(tombstone_append_sql(ITEMS, "direct_it.classified_tomb", "direct_it_cl"))
    assert _rows(spark, "direct_it.direct") == _rows(spark, "direct_it.classified")
    assert [r[0] for r in _rows(spark, "direct_it.direct")] == [2, 3, 4]
    direct_tomb = _tombstones(spark, "direct_it.direct_tomb")
    assert direct_tomb == _tombstones(spark, "direct_it.classified_tomb")
    assert [(i, p[2]) for i, p in direct_tomb] == [(1, 92), (7, 94), (8, 96)]


def test_an_empty_direct_batch_observes_nothing_and_changes_nothing(
    spark_world: SparkWorld,
) -> None:
    """A direct batch whose every event went elsewhere (dead letters) MERGEs an empty source:
    its keys are observed as none, or not observed at all (Spark 4.1 may hand over a row of
    no columns, and then the caller counts them), and the table is as it was."""
    from cdcmirror.spark.cdc.direct import dedupe_direct, merge_direct
    from cdcmirror.spark.iceberg import current_snapshot

    spark = spark_world.spark
    direct_target(spark, "direct_it.empty")
    _store(spark, "direct_it.empty", STORED)
    before = _rows(spark, "direct_it.empty")
    batch = spark.sql(DELETES).where("false")
    read = current_snapshot(spark, "direct_it.empty")
    d = _direct(spark, "direct_it.empty", {QUERY_ID: "q", BATCH_ID: "3"})
    seen = dedupe_direct(d, batch)
    merge_direct(d, read, {}, matched=True, inserts=True)
    observed = observed_keys(seen, wait=2.0)
    assert observed is None or (observed and not any(observed.values())), observed
    assert _rows(spark, "direct_it.empty") == before


def test_a_direct_batchs_deletes_are_told_by_its_keys_first_events(
    spark_world: SparkWorld,
) -> None:
    """Without a key whose first event misleads, the keys' counts taken on the MERGE's own
    job agree with its commit and give the deletes of stored rows that the count against the
    stored rows gives; a snapshot read among the changes leaves them unknown."""
    from cdcmirror.spark.cdc.direct import (
        dedupe_direct,
        merge_direct,
        observed_keys,
        stored_deletes,
    )
    from cdcmirror.spark.iceberg import current_snapshot

    spark = spark_world.spark
    target = "direct_it.told"
    spark.sql(DELETES).where("id <> 7").createOrReplaceTempView("direct_it_told")
    direct_target(spark, target)
    _store(spark, target, STORED)
    props = {QUERY_ID: "q", BATCH_ID: "3"}

    read = current_snapshot(spark, target)
    d = _direct(spark, target, props)
    seen = dedupe_direct(d, spark.table("direct_it_told"))
    summary = merge_direct(d, read, {}, matched=True, inserts=True)
    keys = observed_keys(seen)
    assert keys == {"keys": 4, "deletes": 2, "updates": 1, "stored_deletes": 1, "unsure": 0}
    assert inferred_deletes(keys, summary) == stored_deletes(d, read, {}) == 1
    assert counted(summary, 6, 1, 2) == Counts(inserts=1, updates=1, duplicates=2, deletes=1)
    assert [r[0] for r in _rows(spark, target)] == [2, 3, 4]

    snapshot_read = "(5L, 'five', 'r', array(1L, 1L, 98L, 0L, 0L, 14L), current_timestamp(), 0, "
    snapshot_read += "14L)"
    columns = DELETES.rsplit(" AS s", 1)[1]
    spark.sql(f"SELECT * FROM VALUES {snapshot_read} AS s{columns}").createOrReplaceTempView(
        "direct_it_read"
    )
    read = current_snapshot(spark, target)
    d = _direct(spark, target, {**props, BATCH_ID: "4"})
    seen = dedupe_direct(d, spark.table("direct_it_read"))
    summary = merge_direct(d, read, {}, matched=True, inserts=True)
    keys = observed_keys(seen)
    assert keys is not None and keys["unsure"] == 1
    assert inferred_deletes(keys, summary) is None


def test_a_change_its_first_event_misled_is_written_by_the_other_branch(
    spark_world: SparkWorld,
) -> None:
    """A batch without a create MERGEs without a NOT MATCHED branch, one of creates only
    without a MATCHED one; an update of a key not stored, or a create of a stored key (an
    earlier event of it was dead-lettered, say), shows as a row too few in the commit, and
    the other branch writes it, guarded, so the rows are what both branches write."""
    from cdcmirror.spark.cdc.direct import complete_direct, dedupe_direct, merge_direct
    from cdcmirror.spark.iceberg import current_snapshot

    spark = spark_world.spark
    target = "direct_it.misled"
    columns = DELETES.rsplit(" AS s", 1)[1]
    direct_target(spark, target)
    _store(spark, target, STORED)  # 1, 2 and 3
    after_updates = [(1, "b1", 51), (2, "two", 50), (3, "three", 90), (6, "b6", 51)]
    after_creates = [(1, "b1", 51), (2, "b2", 52), (3, "three", 90), (6, "b6", 51), (7, "b7", 52)]
    # an update of a key past every stored one: the table's side of the join is empty, which
    # Spark may prune with the batch's side, and the MERGE's own counts of the batch with it
    after_past = [*after_creates, (9, "b9", 53)]
    rounds = [
        ({1: "u", 6: "u"}, after_updates),
        ({2: "c", 7: "c"}, after_creates),
        ({9: "u"}, after_past),
    ]
    for batch, (ops, rows) in enumerate(rounds, start=1):
        at = 50 + batch
        values = ", ".join(
            f"({k}L, 'b{k}', '{op}', array(1L, 1L, {at}L, 0L, 0L, {k}L), current_timestamp(), "
            f"0, {k}L)"
            for k, op in ops.items()
        )
        view = f"direct_it_m{batch}"
        spark.sql(f"SELECT * FROM VALUES {values} AS s{columns}").createOrReplaceTempView(view)
        props = {QUERY_ID: "q", BATCH_ID: str(10 + batch)}
        read = current_snapshot(spark, target)
        d = _direct(spark, target, props)
        bounds = {"id": (min(ops), max(ops))}  # as the job does
        seen = dedupe_direct(d, spark.table(view))
        agg = BatchAggregate(applied=len(ops), creates=2 if batch == 2 else 0)
        matched, inserts = branches(agg)
        summary = merge_direct(d, read, bounds, matched, inserts)
        keys = trusted(observed_keys(seen), summary)
        assert int(summary.get("added-records", 0)) == len(ops) - 1, summary  # one left out
        assert missed(keys, summary, matched, inserts), (keys, summary)
        done = summed(summary, complete_direct(d, bounds, matched))
        # a MERGE that wrote nothing proves nothing of its counts (round 3)
        assert (keys is None) == (batch == 3), keys
        assert keys is None or not missed(keys, done, matched, inserts)
        assert [(r[0], r[1], r[2][2]) for r in _rows(spark, target)] == rows
