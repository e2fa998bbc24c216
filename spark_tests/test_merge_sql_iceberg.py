"""The applier's MERGE text (``mirror/merge_sql.py``) executed by Spark on Iceberg tables,
for the cases a single batch cannot produce on its own (concurrent writers)."""

from __future__ import annotations

from typing import Any

import pytest

from cdcmirror.mirror.merge_sql import merge_sql
from cdcmirror.table_properties import MERGE_ON_READ
from support.iceberg_tables import ITEMS, create_history, items_target, tombstones_table
from support.spark import SparkWorld
from support.tables import NAME, make_table

CHANGES = (
    "SELECT * FROM VALUES {rows} "
    "AS s(id, name, _cdc_op, _cdc_position, _cdc_source_ts, _cdc_action)"
)


@pytest.mark.parametrize("soft", [False, True])
def test_the_guard_compares_the_source_part_and_a_delete_removes_or_marks(
    spark_world: SparkWorld, soft: bool
) -> None:
    """The MERGE's guard compares the source part of the positions only: a change whose
    source part equals the stored row's is not applied, whatever its Kafka offset (the same
    change read again at another offset); a newer one is. A delete removes the row (hard) or
    keeps it marked ``_cdc_deleted`` with its values (soft)."""
    spark = spark_world.spark
    target = f"merge_it.guard_{int(soft)}"
    items_target(spark, target)
    spark.sql(
        f"INSERT INTO {target} SELECT id, 'old', 'r', array(1, 1, 50, 0, 0, id), "
        "current_timestamp(), false FROM range(1, 4)"
    )
    rows = (
        "(1, 'replayed', 'u', array(1, 1, 50, 0, 3, 99), current_timestamp(), 'update'), "
        "(2, 'newer', 'u', array(1, 1, 51, 0, 0, 7), current_timestamp(), 'update'), "
        "(3, NULL, 'd', array(1, 1, 52, 0, 0, 8), current_timestamp(), 'delete')"
    )
    spark.sql(CHANGES.format(rows=rows)).createOrReplaceTempView("merge_it_guard")
    spark.sql(merge_sql(ITEMS, target, "merge_it_guard", soft=soft))
    query = f"SELECT id, name, _cdc_deleted FROM {target} ORDER BY id"
    got = [tuple(r) for r in spark.sql(query).collect()]
    kept = [(3, "old", True)] if soft else []
    assert got == [(1, "old", False), (2, "newer", False), *kept]


def test_an_update_whose_row_a_concurrent_writer_deleted_is_not_inserted(
    spark_world: SparkWorld,
) -> None:
    """Classified as `update` (the row was stored), deleted by another writer before this
    MERGE: the row must stay deleted, not come back through the insert branch. A row
    classified `insert` is inserted."""
    spark = spark_world.spark
    target = "merge_it.items"
    items_target(spark, target)
    rows = (
        "(1, 'resurrected', 'u', array(1, 1, 50, 0, 0, 7), current_timestamp(), 'update'), "
        "(2, 'new', 'c', array(1, 1, 60, 0, 0, 8), current_timestamp(), 'insert')"
    )
    spark.sql(CHANGES.format(rows=rows)).createOrReplaceTempView("merge_it_changes")
    spark.sql(merge_sql(ITEMS, target, "merge_it_changes", soft=False))
    got = [tuple(r) for r in spark.sql(f"SELECT id, name FROM {target} ORDER BY id").collect()]
    assert got == [(2, "new")]


def test_the_batch_key_range_bounds_the_read_and_changes_no_result(
    spark_world: SparkWorld,
) -> None:
    """Classification and MERGE with the batch's key range (``key_range.py``): the same
    actions and rows as without it, and the bound reaches Iceberg's scan of the table."""
    from cdcmirror.mirror.key_range import bounds_exprs, bounds_of
    from cdcmirror.mirror.merge_sql import classify_sql

    spark = spark_world.spark
    target = "merge_it.items"
    items_target(spark, target)
    for low in (1, 1000, 5000):  # three appends: three files with disjoint key ranges
        spark.sql(
            f"INSERT INTO {target} SELECT id, 'old', 'r', array(0, 0, 0, 0, id), "
            f"current_timestamp(), false FROM range({low}, {low + 100})"
        )
    rows = (
        "(1001, 'changed', 'u', array(1, 1, 50, 0, 0, 7), current_timestamp()), "
        "(1050, NULL, 'd', array(1, 1, 51, 0, 0, 8), current_timestamp()), "
        "(1200, 'new', 'c', array(1, 1, 52, 0, 0, 9), current_timestamp())"
    )
    spark.sql(
        f"SELECT * FROM VALUES {rows} AS s(id, name, _cdc_op, _cdc_position, _cdc_source_ts)"
    ).createOrReplaceTempView("merge_it_batch")
    agg = spark.sql(f"SELECT {', '.join(bounds_exprs(ITEMS))} FROM merge_it_batch").head(1)[0]
    bounds = bounds_of(ITEMS, agg.asDict())
    assert bounds == {"id": (1001, 1200)}
    bounded = classify_sql(ITEMS, "merge_it_batch", target, None, False, bounds)
    whole = classify_sql(ITEMS, "merge_it_batch", target, None, False)

    def actions(sql: str) -> list[tuple[object, ...]]:
        query = f"SELECT id, _cdc_action FROM ({sql}) ORDER BY id"
        return [tuple(r) for r in spark.sql(query).collect()]

    assert actions(bounded) == [(1001, "update"), (1050, "delete"), (1200, "insert")]
    assert actions(whole) == actions(bounded)
    cut = classify_sql(ITEMS, "merge_it_batch", target, None, False, bounds, broadcast=True)
    assert actions(cut) == actions(bounded)
    cut_plan = spark.sql(f"EXPLAIN {cut}").head(1)[0][0]
    assert "BroadcastHashJoin" in cut_plan and "LeftSemi" in cut_plan, cut_plan
    plan = spark.sql(f"EXPLAIN {bounded}").head(1)[0][0]
    scans = [line for line in plan.splitlines() if "BatchScan" in line and "items" in line]
    assert scans and all("1001" in s and "1200" in s for s in scans), plan  # pushed down
    spark.sql(bounded).createOrReplaceTempView("merge_it_changes")
    spark.sql(merge_sql(ITEMS, target, "merge_it_changes", soft=False, bounds=bounds))
    got = {r.id: r.name for r in spark.sql(f"SELECT id, name FROM {target}").collect()}
    assert len(got) == 300 and got[1001] == "changed" and 1050 not in got
    assert got[1200] == "new" and got[1000] == "old" and got[5099] == "old"


@pytest.mark.parametrize("soft", [False, True], ids=["hard-deletes", "soft-deletes"])
def test_repair_deletes_several_extra_rows_each_only_at_its_read_position(
    spark_world: SparkWorld, soft: bool
) -> None:
    """`repair` removes keys only the mirror has, each while it still has the position read
    before (``MirrorTables.delete_unchanged``). With more than one key, Iceberg refused the
    filter (it cannot push an array literal inside an OR) and repair crashed. It deletes as
    the mirror does (issue 67, item 6): hard, with a tombstone at the row's position (an
    older change of the key read again must not bring it back); soft, the row kept and
    marked deleted. The table's history (issue 71) ends the removed keys' current versions,
    deleted, at the position repair read before it found them missing, and keeps the
    version of the key changed since."""
    from dataclasses import replace

    from cdcmirror.reconcile.canonical import CanonicalColumn, RowShape
    from cdcmirror.spark.reconcile_side import MirrorTables
    from cdcmirror.spark.tombstones import TombstoneTables

    spark = spark_world.spark
    target = f"merge_it.extras_{'soft' if soft else 'hard'}"
    graves = TombstoneTables("merge_it__cdcmirror")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS merge_it__cdcmirror")
    spark.sql(f"DROP TABLE IF EXISTS {graves.identifier_of(target)}")
    items_target(spark, target)
    spark.sql(
        f"INSERT INTO {target} VALUES "
        "(1, 'a', 'c', array(1, 1, 10, 0, 0, 1), current_timestamp(), false), "
        "(2, 'b', 'c', array(1, 1, 20, 0, 0, 2), current_timestamp(), false), "
        "(3, 'c', 'c', array(1, 1, 30, 0, 0, 3), current_timestamp(), false), "
        "(4, 'd', 'c', array(1, 1, 40, 0, 0, 4), current_timestamp(), false)"
    )
    key = CanonicalColumn("id", "integer")
    shape = RowShape(key=(key,), columns=(key,), skipped=())
    mirror = MirrorTables(spark)
    read = mirror.positions(target, shape, "id IN (1, 2, 3)")
    assert sorted(read) == ["1", "2", "3"], read
    table = create_history(spark, replace(ITEMS, identifier=target), target + "__history")
    spark.sql(
        f"INSERT INTO {table.history} SELECT id, name, _cdc_position, NULL, _cdc_source_ts, "
        f"NULL, _cdc_op, true, false FROM {target}"
    )
    # the mirror applied a change to 3 since the read (its history too): it stays
    spark.sql(f"UPDATE {target} SET _cdc_position = array(1, 1, 31, 0, 0, 9) WHERE id = 3")
    spark.sql(f"UPDATE {table.history} SET _cdc_valid_from = array(1, 1, 31, 0, 0, 9) WHERE id = 3")
    missing_since = [1, 1, 50, 0, -1, -1], 1_700_000_000_000_000
    mirror.delete_unchanged(table, shape, read, soft, graves, missing_since)
    history = spark.sql(
        f"SELECT id, _cdc_valid_to, _cdc_is_current, _cdc_deleted FROM {table.history} ORDER BY id"
    ).collect()
    ended = [1, 1, 50, 0, -1, -1]
    assert [(r[0], r[1] and list(r[1]), r[2], r[3]) for r in history] == [
        (1, ended, False, True),
        (2, ended, False, True),
        (3, None, True, False),
        (4, None, True, False),
    ]
    live = f"SELECT id FROM {target} WHERE NOT _cdc_deleted ORDER BY id"
    assert [r[0] for r in spark.sql(live).collect()] == [3, 4]
    stored = spark.sql(f"SELECT id, _cdc_op, _cdc_position FROM {target} ORDER BY id").collect()
    tombstones = f"SELECT id, _cdc_position FROM {graves.identifier_of(target)} ORDER BY id"
    if soft:  # every row kept, the removed ones marked deleted at their own position
        assert [(r[0], r[1], list(r[2])) for r in stored][:2] == [
            (1, "d", [1, 1, 10, 0, 0, 1]),
            (2, "d", [1, 1, 20, 0, 0, 2]),
        ]
        assert not spark.catalog.tableExists(graves.identifier_of(target))
    else:
        assert [r[0] for r in stored] == [3, 4]
        assert [(r[0], list(r[1])) for r in spark.sql(tombstones).collect()] == [
            (1, [1, 1, 10, 0, 0, 1]),
            (2, [1, 1, 20, 0, 0, 2]),
        ]


def test_repair_finds_text_keys_with_backslashes_and_quotes_in_the_mirror(
    spark_world: SparkWorld,
) -> None:
    """``repair.plan.key_filter("spark", …)`` and ``MirrorTables.delete_unchanged`` over
    text keys: Spark reads a backslash in a string literal as an escape and ``'it''s'`` as
    two literals (``its``), so a key with either must be written as ``sql_text.sql_string``
    writes it, or repair never finds (and never removes) the mirror's extra row."""
    from cdcmirror.reconcile.canonical import CanonicalColumn, RowShape
    from cdcmirror.reconcile.repair import key_filter
    from cdcmirror.spark.reconcile_side import MirrorTables
    from cdcmirror.spark.tombstones import TombstoneTables

    spark = spark_world.spark
    target = "merge_it.text_keys"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS merge_it")
    spark.sql(f"DROP TABLE IF EXISTS {target}")
    spark.sql(
        f"CREATE TABLE {target} (name STRING, _cdc_op STRING, _cdc_position ARRAY<BIGINT>, "
        "_cdc_deleted BOOLEAN) USING iceberg TBLPROPERTIES ('format-version'='2')"
    )
    names = ["C:\\new", "it's", "plain", "a\\'b"]
    spark.createDataFrame(
        [(n, "c", [1, i], False) for i, n in enumerate(names)],
        "name STRING, _cdc_op STRING, _cdc_position ARRAY<BIGINT>, _cdc_deleted BOOLEAN",
    ).writeTo(target).append()
    key = CanonicalColumn("name", "text")
    shape = RowShape(key=(key,), columns=(key,), skipped=())
    wanted = [n for n in names if n != "plain"]
    mirror = MirrorTables(spark)
    found = mirror.positions(
        target, shape, key_filter("spark", shape, [{"name": n} for n in wanted])
    )
    assert sorted(found) == sorted(wanted)
    table = make_table(
        identifier=target,
        flavor="mariadb",
        source="db.t",
        topic="t",
        key=("name",),
        key_columns=(NAME,),
    )
    positions = {n: [1, names.index(n)] for n in wanted}
    graves = TombstoneTables("merge_it__cdcmirror")
    mirror.delete_unchanged(table, shape, positions, True, graves, ([1, 9], 0))
    live = f"SELECT name FROM {target} WHERE NOT _cdc_deleted"
    assert [r[0] for r in spark.sql(live).collect()] == ["plain"]


@pytest.mark.parametrize("broadcast", [False, True])
def test_changes_of_a_restarted_source_history_are_told_from_replays(
    spark_world: SparkWorld, broadcast: bool
) -> None:
    """``_cdc_backwards`` (``positions.went_backwards_sql``): a change older by source position
    but committed later than the stored row or tombstone comes from a restarted history; a
    replay (older in both) and a re-snapshot of the same history (a read whose binlog
    position is past the stored row) are only stale."""
    from cdcmirror.mirror.merge_sql import classify_sql

    spark = spark_world.spark
    target, tombstones = "merge_it.history", "merge_it.history_deleted"
    items_target(spark, target)
    tombstones_table(spark, tombstones)
    at = "TIMESTAMP '2026-01-01 10:00:00'"
    spark.sql(
        f"INSERT INTO {target} SELECT id, 'stored', 'u', array(1, 26, 9000, 0, 0, id), {at}, "
        "false FROM range(1, 6)"
    )
    spark.sql(f"INSERT INTO {tombstones} VALUES (6, array(1, 26, 9500, 0, 0, 6), {at})")
    before, after = "TIMESTAMP '2026-01-01 09:00:00'", "TIMESTAMP '2026-01-01 11:00:00'"
    rows = ", ".join(
        [
            f"(1, 'replay', 'u', array(1, 26, 8000, 0, 0, 10), {before})",
            f"(2, 'new history', 'u', array(1, 1, 300, 0, 0, 11), {after})",
            f"(3, 'newer', 'u', array(1, 26, 9100, 0, 0, 12), {after})",
            f"(4, 'new history read', 'r', array(0, 1, 400, 0, 0, 13), {after})",
            f"(5, 're-snapshot', 'r', array(0, 27, 100, 0, 0, 14), {after})",
            f"(6, 'new history insert', 'c', array(1, 1, 500, 0, 0, 15), {after})",
            f"(7, 'new key', 'c', array(1, 1, 600, 0, 0, 16), {after})",
        ]
    )
    spark.sql(
        f"SELECT * FROM VALUES {rows} AS s(id, name, _cdc_op, _cdc_position, _cdc_source_ts)"
    ).createOrReplaceTempView("merge_it_history")
    sql = classify_sql(ITEMS, "merge_it_history", target, tombstones, False, None, broadcast)
    got = {
        r.id: (r._cdc_action, r._cdc_backwards)
        for r in spark.sql(f"SELECT id, _cdc_action, _cdc_backwards FROM ({sql})").collect()
    }
    assert got == {
        1: ("stale", False),
        2: ("stale", True),
        3: ("update", False),
        4: ("stale", True),
        5: ("stale", False),
        6: ("stale", True),
        7: ("insert", False),
    }


def test_events_behind_a_truncate_of_another_history_are_counted(
    spark_world: SparkWorld,
) -> None:
    """``positions.behind_truncate_sql``: events older by position than the stored truncate
    mark but committed after it come from a restarted history (they would be dropped as
    truncated); a replay from before the truncate does not count."""
    from cdcmirror.mirror.positions import behind_truncate_sql

    spark = spark_world.spark
    mark_us = 1_767_261_600_000_000  # 2026-01-01 10:00:00 UTC
    rows = ", ".join(
        [
            "(array(1, 26, 8000, 0, 0, 1), timestamp_micros(1767258000000000L))",  # replay
            "(array(1, 1, 300, 0, 0, 2), timestamp_micros(1767265200000000L))",  # new history
            "(array(1, 26, 9900, 0, 0, 3), timestamp_micros(1767265200000000L))",  # after it
        ]
    )
    sql = behind_truncate_sql([1, 26, 9000, 0, 0, 7], mark_us, 4)
    got = spark.sql(
        f"SELECT {sql} FROM VALUES {rows} AS s(_cdc_position, _cdc_source_ts) "
        "CROSS JOIN (SELECT CAST(NULL AS STRING) AS _cdc_error)"
    ).head(1)[0][0]
    assert got == 1
    assert spark.sql("SELECT " + behind_truncate_sql([], None, 4)).head(1)[0][0] == 0


def test_a_merge_without_inserts_changes_what_the_full_merge_changes(
    spark_world: SparkWorld,
) -> None:
    """A batch with no ``insert`` change (and, with soft deletes, no delete) is MERGEd
    without a NOT MATCHED branch (``inserts=False``): the same rows as the full MERGE, an
    update of a row deleted meanwhile and a stale one change nothing, and the plan joins
    the table without keeping its side whole (no right outer join)."""
    spark = spark_world.spark
    rows = (
        "(1, 'changed', 'u', array(1, 1, 50, 0, 0, 7), current_timestamp(), 'update'), "
        "(2, NULL, 'd', array(1, 1, 51, 0, 0, 8), current_timestamp(), 'delete'), "
        "(3, 'stale', 'u', array(0, 0, 0, 0, 0), current_timestamp(), 'update'), "
        "(7, 'gone', 'u', array(1, 1, 52, 0, 0, 9), current_timestamp(), 'update')"
    )
    spark.sql(CHANGES.format(rows=rows)).createOrReplaceTempView("merge_it_changes")
    found = []
    for inserts in (True, False):
        target = f"merge_it.no_inserts_{int(inserts)}"
        items_target(spark, target)
        props = ", ".join(f"'{k}' = '{v}'" for k, v in MERGE_ON_READ.items())
        spark.sql(f"ALTER TABLE {target} SET TBLPROPERTIES ({props})")  # as mirror tables
        spark.sql(
            f"INSERT INTO {target} SELECT id, 'old', 'r', array(0, 0, 0, 0, id), "
            f"current_timestamp(), false FROM range(1, 6)"
        )
        sql = merge_sql(ITEMS, target, "merge_it_changes", soft=False, inserts=inserts)
        assert ("NOT MATCHED" in sql) is inserts
        spark.sql(sql)
        query = f"SELECT id, name FROM {target} ORDER BY id"
        found.append([tuple(r) for r in spark.sql(query).collect()])
        plan = spark.sql(f"EXPLAIN {sql}").head(1)[0][0]
        assert ("RightOuter" in plan) is inserts, plan  # the table's side kept whole, or not
    assert found[0] == found[1] == [(1, "changed"), (3, "old"), (4, "old"), (5, "old")]


GUARD_ROWS = (
    "(1, 'b1', 'u', array(1, 1, 50, 0, 0, 1), current_timestamp(), 'update'), "
    "(2, 'b2', 'u', array(1, 1, 50, 0, 0, 2), current_timestamp(), 'update'), "
    "(3, NULL, 'd', array(1, 1, 50, 0, 0, 3), current_timestamp(), 'delete'), "
    "(7, 'b7', 'c', array(1, 1, 50, 0, 0, 7), current_timestamp(), 'insert'), "
    "(8, 'b8', 'c', array(1, 1, 50, 0, 0, 8), current_timestamp(), 'insert')"
)
FOREIGN = (  # newer rows of the batch's keys 2, 3 and 8, and of a key it has not (5)
    "UPDATE {t} SET name = concat('f', id), _cdc_position = array(1, 1, 90, 0, 0, id) "
    "WHERE id IN (2, 3, 5)",
    "INSERT INTO {t} VALUES (8, 'f8', 'c', array(1, 1, 90, 0, 0, 8), current_timestamp(), false)",
)


def _guard_table(spark: Any, target: str) -> None:
    items_target(spark, target)
    spark.sql(
        f"INSERT INTO {target} SELECT id, 'old', 'r', array(0, 0, 0, 0, id), "
        "current_timestamp(), false FROM range(1, 7)"
    )


def _rows(spark: Any, target: str) -> list[tuple[object, ...]]:
    query = f"SELECT id, name, _cdc_position FROM {target} ORDER BY id"
    return [(r[0], r[1], list(r[2])) for r in spark.sql(query).collect()]


def _between(spark: Any, target: str, between: str, foreign: tuple[str, ...]) -> None:
    """What lands between a batch's classification and its MERGE: ``nothing``, a
    ``rewrite`` of every file, or the ``foreign`` commits."""
    if between == "rewrite":
        spark.sql(
            f"CALL cdcmirror.system.rewrite_data_files(table => '{target}', "
            "options => map('rewrite-all', 'true'))"
        )
    if between == "foreign":
        for statement in foreign:
            spark.sql(statement.format(t=target))


def _classified_then(
    spark: Any, tables: tuple[str, str], rows: str, between: str, foreign: tuple[str, ...]
) -> int | None:
    """The batch of ``rows`` as the view ``merge_it_batch``, both ``tables`` made; then
    ``between`` on both, and the guarded MERGE into the second (the reference). The snapshot
    of the first that the batch's classification would have read."""
    from cdcmirror.spark.iceberg import current_snapshot

    spark.sql(CHANGES.format(rows=rows)).createOrReplaceTempView("merge_it_batch")
    for t in tables:
        _guard_table(spark, t)
    read = current_snapshot(spark, tables[0]).id
    assert read is not None
    for t in tables:
        _between(spark, t, between, foreign)
    spark.sql(merge_sql(ITEMS, tables[1], "merge_it_batch", soft=False))
    return read


@pytest.mark.parametrize("between", ["nothing", "rewrite", "foreign"])
def test_the_unguarded_merge_ends_as_the_guarded_one(spark_world: SparkWorld, between: str) -> None:
    """The snapshot guard (``spark/cdc/context.put_back``): the batch classified on snapshot
    ``read``, then (``between``) nothing, a rewrite of every file, or a foreign commit of
    newer rows of three of its keys, then its MERGE without the guard. The rows end as the
    guarded MERGE leaves them on a copy that saw the same commits; only the foreign commit
    is found and put back."""
    from cdcmirror.mirror.merge_sql import restore_sql
    from cdcmirror.spark.iceberg import foreign_parent, with_commit_props

    spark = spark_world.spark
    target, reference = "merge_it.unguarded", "merge_it.guarded"
    props = {"cdcmirror.query-id": "q-guard", "cdcmirror.batch-id": "7"}
    read = _classified_then(spark, (target, reference), GUARD_ROWS, between, FOREIGN)
    unguarded = merge_sql(ITEMS, target, "merge_it_batch", soft=False, guarded=False)
    with_commit_props(spark, props, lambda: spark.sql(unguarded))
    parent = foreign_parent(spark, target, read, props)
    assert (parent is not None) == (between == "foreign")
    if parent is not None:
        spark.sql(restore_sql(ITEMS, target, parent, "merge_it_batch"))
    assert _rows(spark, target) == _rows(spark, reference)
    names = {r[0]: r[1] for r in _rows(spark, target)}
    if between == "foreign":  # the batch's older changes of 2, 3, 8 lost to the foreign rows
        assert names == {1: "b1", 2: "f2", 3: "f3", 4: "old", 5: "f5", 6: "old", 7: "b7", 8: "f8"}
    else:
        assert names == {1: "b1", 2: "b2", 4: "old", 5: "old", 6: "old", 7: "b7", 8: "b8"}


INSERT_ROWS = (
    "(7, 'b7', 'c', array(1, 1, 50, 0, 0, 7), current_timestamp(), 'insert'), "
    "(8, 'b8', 'c', array(1, 1, 50, 0, 0, 8), current_timestamp(), 'insert'), "
    "(9, 'b9', 'c', array(1, 1, 50, 0, 0, 9), current_timestamp(), 'insert')"
)
FOREIGN_INSERTS = (  # after the classification: key 8 stored newer than the batch, 9 older
    "INSERT INTO {t} VALUES (8, 'f8', 'c', array(1, 1, 90, 0, 0, 8), current_timestamp(), "
    "false), (9, 'f9', 'c', array(1, 1, 10, 0, 0, 9), current_timestamp(), false)",
)


@pytest.mark.parametrize("between", ["nothing", "rewrite", "foreign"])
def test_an_insert_only_merge_ends_as_the_guarded_one(
    spark_world: SparkWorld, between: str
) -> None:
    """A batch of inserts only is MERGEd without a MATCHED branch (``matched=False``: an anti
    join and an append). With nothing or a rewrite since the classification it inserts the
    rows; a foreign commit that stored two of its keys (one newer, one older than the batch)
    is found, and the guarded MERGE after it leaves the rows the guarded MERGE alone leaves."""
    from cdcmirror.spark.iceberg import foreign_parent, with_commit_props

    spark = spark_world.spark
    target, reference = "merge_it.inserts_only", "merge_it.inserts_guarded"
    props = {"cdcmirror.query-id": "q-inserts", "cdcmirror.batch-id": "3"}
    read = _classified_then(spark, (target, reference), INSERT_ROWS, between, FOREIGN_INSERTS)
    sql = merge_sql(ITEMS, target, "merge_it_batch", soft=False, guarded=False, matched=False)
    assert "WHEN MATCHED" not in sql
    plan = spark.sql(f"EXPLAIN {sql}").head(1)[0][0]
    assert "LeftAnti" in plan and "Outer" not in plan, plan
    with_commit_props(spark, props, lambda: spark.sql(sql))
    parent = foreign_parent(spark, target, read, props)
    assert (parent is not None) == (between == "foreign")
    if parent is not None:
        spark.sql(merge_sql(ITEMS, target, "merge_it_batch", soft=False))
    assert _rows(spark, target) == _rows(spark, reference)
    names = {r[0]: r[1] for r in _rows(spark, target)}
    assert names[7] == "b7" and names[9] == "b9"
    assert names[8] == ("f8" if between == "foreign" else "b8")


def test_tombstones_are_appended_and_a_key_s_newest_counts(spark_world: SparkWorld) -> None:
    """The deletes a batch records are appended to the tombstones (no MERGE: no read of
    them), a key deleted again gets a second row, and the classification takes the newest of
    a key's tombstones: a replay older than it is stale, a change newer is not."""
    from cdcmirror.mirror.merge_sql import classify_sql, tombstone_append_sql

    spark = spark_world.spark
    target, tombstones = "merge_it.entombed", "merge_it.entombed_deleted"
    items_target(spark, target)
    tombstones_table(spark, tombstones)
    spark.sql(
        f"INSERT INTO {target} SELECT id, 'stored', 'c', array(1, 1, 20, 0, 0, id), "
        "current_timestamp(), false FROM range(1, 3)"
    )
    spark.sql(f"INSERT INTO {tombstones} VALUES (2, array(1, 1, 10, 0, 0, 2), current_timestamp())")

    def batch(view: str, at: int, ops: dict[int, str]) -> Any:
        rows = ", ".join(
            f"({i}, 'b', '{op}', array(1, 1, {at}, 0, 0, {i}), current_timestamp())"
            for i, op in ops.items()
        )
        spark.sql(
            f"SELECT * FROM VALUES {rows} AS s(id, name, _cdc_op, _cdc_position, _cdc_source_ts)"
        ).createOrReplaceTempView(view)
        return spark.sql(classify_sql(ITEMS, view, target, tombstones, False))

    classified = batch("merge_it_deletes", 30, {1: "d", 2: "d", 9: "d"})
    assert {r.id: r._cdc_action for r in classified.collect()} == {
        1: "delete",
        2: "delete",
        9: "absent",
    }
    # kept, as the applier keeps its classified changes (in parts, as a batch's are): the
    # append's plan is its own, and it writes one file
    kept = classified.repartition(3).localCheckpoint(eager=True)
    assert kept.rdd.getNumPartitions() == 3
    kept.createOrReplaceTempView("merge_it_classified")
    appended = tombstone_append_sql(ITEMS, tombstones, "merge_it_classified")
    plan = spark.sql(f"EXPLAIN {appended}").head(1)[0][0]
    assert "AppendData" in plan and "Join" not in plan and "WriteDelta" not in plan, plan
    spark.sql(appended)
    summary = spark.sql(
        f"SELECT summary FROM {tombstones}.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).head(1)[0][0]
    assert summary["added-data-files"] == "1" and summary["added-records"] == "3", summary
    stored = spark.sql(f"SELECT id, _cdc_position FROM {tombstones} ORDER BY id, _cdc_position")
    assert [(r.id, r._cdc_position[2]) for r in stored.collect()] == [
        (1, 30),
        (2, 10),
        (2, 30),
        (9, 30),
    ]
    spark.sql(f"DELETE FROM {target} WHERE id IN (1, 2)")  # as the batch's MERGE does
    # key 2's tombstones at 10 and 30: a create at 20 is a replay (stale), one at 40 is not
    replay = batch("merge_it_replay", 20, {2: "c", 9: "c"})
    assert {r.id: r._cdc_action for r in replay.collect()} == {2: "stale", 9: "stale"}
    later = batch("merge_it_later", 40, {2: "c"})
    assert [(r._cdc_action, r._cdc_stored_position[2]) for r in later.collect()] == [("insert", 30)]


def test_a_keyless_table_appends_each_change_once_per_source_position(
    spark_world: SparkWorld,
) -> None:
    """``append_merge_sql``: a change is appended once per source position, whatever its Kafka
    offset (sent again in the same batch, or in a later one, or the batch run again), two
    rows of one binlog event are two; reads are appended once per whole position, so two
    reads of one snapshot (one source part) are both kept, and a new snapshot's read is
    appended again (the documented limit)."""
    from cdcmirror.mirror.merge_sql import append_merge_sql
    from cdcmirror.spark.iceberg import current_snapshot, rows_added

    spark = spark_world.spark
    target = "merge_it.keyless"
    items_target(spark, target)
    log = make_table(
        NAME, identifier=target, flavor="mariadb", source="db.log", topic="t", key=(), mode="append"
    )
    first = (
        "(1, 'a', 'c', array(1, 1, 100, 0, 0, 10), current_timestamp(), NULL), "
        "(2, 'b', 'c', array(1, 1, 100, 1, 0, 11), current_timestamp(), NULL), "  # its row 1
        "(3, 'c', 'u', array(1, 1, 200, 0, 0, 12), current_timestamp(), NULL), "
        "(3, 'c', 'u', array(1, 1, 200, 0, 0, 13), current_timestamp(), NULL), "  # again
        "(4, 's1', 'r', array(0, 1, 50, 0, 0, 5), current_timestamp(), NULL), "
        "(5, 's2', 'r', array(0, 1, 50, 0, 0, 6), current_timestamp(), NULL)"  # same snapshot
    )
    later = (
        "(1, 'a', 'c', array(1, 1, 100, 0, 0, 40), current_timestamp(), NULL), "  # replayed
        "(4, 's1', 'r', array(0, 1, 60, 0, 0, 41), current_timestamp(), NULL), "  # re-snapshot
        "(6, 'd', 'd', array(1, 1, 300, 0, 0, 42), current_timestamp(), NULL)"
    )
    added = []  # what the batch line counts (``iceberg.rows_added``)
    for rows in (first, later, later):  # the second batch run twice
        spark.sql(CHANGES.format(rows=rows)).createOrReplaceTempView("merge_it_keyless")
        before = current_snapshot(spark, target).id
        spark.sql(append_merge_sql(log, target, "merge_it_keyless"))
        added.append(rows_added(spark, target, before))
    assert added == [5, 2, 0]
    query = f"SELECT id, name, _cdc_op, _cdc_deleted FROM {target} ORDER BY id, _cdc_position"
    got = [tuple(r) for r in spark.sql(query).collect()]
    assert got == [
        (1, "a", "c", False),
        (2, "b", "c", False),
        (3, "c", "u", False),
        (4, "s1", "r", False),
        (4, "s1", "r", False),
        (5, "s2", "r", False),
        (6, "d", "d", True),
    ]
