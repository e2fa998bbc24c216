"""The TOAST key-chain SQL (``mirror/toast_chain.py``) executed on the tests' Spark against
hand-built events: the value follows a chain of key changes back to the batch or the table."""

from __future__ import annotations

from typing import Any

import pytest

from cdcmirror.mirror.merge_sql import classify_sql, dedupe_sql
from cdcmirror.mirror.toast_chain import unknown_sql
from support.spark import SparkWorld
from support.tables import make_table

TABLE = make_table(
    ("note", "string", "string"),
    ("qty", "int", "int32"),
    source="public.items",
    topic="p.public.items",
)
EVENT_COLUMNS = (
    "id BIGINT, note STRING, qty INT, `_cdc_t_note` BOOLEAN, `_cdc_ok_id` BIGINT, _cdc_op STRING, "
    "_cdc_position ARRAY<BIGINT>, _cdc_source_ts TIMESTAMP, _cdc_partition INT, _cdc_offset BIGINT"
)
PLACEHOLDER = None  # the decoded value of a placeholder; the flag says it is one


@pytest.fixture(scope="module")
def spark(spark_world: SparkWorld) -> Any:
    return spark_world.spark


def position(offset: int) -> list[int]:
    return [1, 100 + offset, 100 + offset, 0, offset]


BEFORE_BATCH = -50  # the offset a stored row written before the batch has


def event(
    offset: int, op: str, key: int, note: str | None, old: int | None = None, qty: int = 0
) -> tuple[Any, ...]:
    placeholder = op in ("c", "u") and note is PLACEHOLDER
    return (key, note, qty, placeholder, old, op, position(offset), None, 0, offset)


Stored = dict[int, "str | tuple[str, int]"]


def run_chain(
    spark: Any,
    events: list[tuple[Any, ...]],
    stored: Stored,
    soft: bool = False,
    deleted: frozenset[int] = frozenset(),
) -> dict[int, Any]:
    """The walk's result per key, classified against the stored rows as the applier does:
    (value, still a placeholder, unknown). ``stored``: key -> value, or (value, offset of
    the event that wrote it); a stored row without an offset was written before the batch."""
    from cdcmirror.spark.cdc.classified import fill_key_chains

    spark.createDataFrame(events, EVENT_COLUMNS).createOrReplaceTempView("ev")
    rows = [(k, *(v if isinstance(v, tuple) else (v, BEFORE_BATCH))) for k, v in stored.items()]
    spark.createDataFrame(
        [(k, v, 0, position(o), None, k in deleted) for k, v, o in rows]
        or [(0, "unused", 0, [0], None, False)],
        "id BIGINT, note STRING, qty INT, _cdc_position ARRAY<BIGINT>, _cdc_source_ts TIMESTAMP, "
        "_cdc_deleted BOOLEAN",
    ).createOrReplaceTempView("stored")
    deduped = spark.sql(dedupe_sql(TABLE, "ev"))
    fill_key_chains(
        spark, TABLE, deduped, events="ev", target="stored", view="v", soft=soft, bounds={}
    ).createOrReplaceTempView("filled")
    classified = spark.sql(classify_sql(TABLE, "filled", "stored", None, soft))
    out = classified.selectExpr("id", "note", "`_cdc_t_note`", f"{unknown_sql(TABLE)} AS u")
    return {r.id: (r.note, r._cdc_t_note, r.u) for r in out.collect()}


def test_a_chain_of_key_changes_takes_the_first_keys_stored_value(spark: Any) -> None:
    events = [
        event(0, "d", 1, None),
        event(1, "c", 10, PLACEHOLDER, old=1),
        event(2, "u", 10, PLACEHOLDER, qty=5),
        event(3, "d", 10, None),
        event(4, "c", 11, PLACEHOLDER, old=10),
        event(5, "d", 11, None),
        event(6, "c", 12, PLACEHOLDER, old=11),
    ]
    out = run_chain(spark, events, {1: "stored-1"})
    assert out[12] == ("stored-1", False, False)


def test_a_value_written_in_the_batch_wins_over_the_stored_one(spark: Any) -> None:
    events = [
        event(0, "u", 3, "new-3"),
        event(1, "d", 3, None),
        event(2, "c", 12, PLACEHOLDER, old=3),
        event(3, "d", 12, None),
        event(4, "c", 13, PLACEHOLDER, old=12),
    ]
    assert run_chain(spark, events, {3: "stored-3"})[13] == ("new-3", False, False)


def test_a_value_from_before_the_old_keys_own_recreation_is_not_used(spark: Any) -> None:
    # key 5 had "old-5", was deleted, re-created from key 4 (stored "stored-4"), then re-keyed
    events = [
        event(0, "u", 5, "old-5"),
        event(1, "d", 5, None),
        event(2, "d", 4, None),
        event(3, "c", 5, PLACEHOLDER, old=4),
        event(4, "d", 5, None),
        event(5, "c", 6, PLACEHOLDER, old=5),
    ]
    assert run_chain(spark, events, {4: "stored-4", 5: "x"})[6] == ("stored-4", False, False)


def test_a_key_changed_back_finds_its_own_earlier_value(spark: Any) -> None:
    events = [
        event(0, "d", 1, None),
        event(1, "c", 9, PLACEHOLDER, old=1),
        event(2, "u", 9, PLACEHOLDER, qty=2),
        event(3, "d", 9, None),
        event(4, "c", 1, PLACEHOLDER, old=9),
    ]
    assert run_chain(spark, events, {1: "stored-1"})[1] == ("stored-1", False, False)


def test_a_value_known_nowhere_stays_flagged_as_unknown(spark: Any) -> None:
    events = [
        event(0, "d", 7, None),
        event(1, "c", 14, PLACEHOLDER, old=7),
        event(2, "d", 14, None),
        event(3, "c", 15, PLACEHOLDER, old=14),
    ]
    assert run_chain(spark, events, {})[15] == (None, True, True)


def test_a_replayed_key_change_takes_its_own_stored_row(spark: Any) -> None:
    # the batch ran before (crash after the Iceberg commit): key 1 is gone, key 2 is stored
    events = [event(0, "d", 1, None), event(1, "c", 2, PLACEHOLDER, old=1)]
    assert run_chain(spark, events, {2: ("made-from-1", 1)})[2] == ("made-from-1", False, False)


def test_a_replay_spanning_an_applied_key_change_reads_the_middle_keys_stored_row(
    spark: Any,
) -> None:
    # 1 -> 2 was applied (a lost checkpoint replays it), 2 -> 3 is new: only key 2's stored
    # row, written by the create at offset 1, still holds the value
    events = [
        event(0, "d", 1, None),
        event(1, "c", 2, PLACEHOLDER, old=1),
        event(2, "d", 2, None),
        event(3, "c", 3, PLACEHOLDER, old=2),
    ]
    assert run_chain(spark, events, {2: ("via-2", 1)})[3] == ("via-2", False, False)


def test_a_newer_value_in_the_batch_wins_over_the_middle_keys_stored_row(spark: Any) -> None:
    events = [
        event(0, "d", 1, None),
        event(1, "c", 2, PLACEHOLDER, old=1),
        event(2, "u", 2, "updated-in-batch"),
        event(3, "d", 2, None),
        event(4, "c", 3, PLACEHOLDER, old=2),
    ]
    assert run_chain(spark, events, {2: ("via-2", 1)})[3] == ("updated-in-batch", False, False)


def test_a_newer_stored_row_wins_over_an_older_value_in_the_batch(spark: Any) -> None:
    # the update at offset 2 was applied already; the batch's real value of key 2 is older
    events = [
        event(0, "u", 2, "old-2"),
        event(1, "u", 2, PLACEHOLDER, qty=1),
        event(2, "u", 2, PLACEHOLDER, qty=2),
        event(3, "d", 2, None),
        event(4, "c", 3, PLACEHOLDER, old=2),
    ]
    out = run_chain(spark, events, {2: ("old-2-applied", 2)})
    assert out[3] == ("old-2-applied", False, False)


def test_the_stored_row_of_a_later_life_of_the_old_key_is_not_read(spark: Any) -> None:
    # key 1 was re-keyed to 2 and then inserted again (stored, from offset 5): its stored
    # row is another row; key 2's value cannot be known
    events = [event(0, "d", 1, None), event(1, "c", 2, PLACEHOLDER, old=1)]
    assert run_chain(spark, events, {1: ("another-row", 5)})[2] == (None, True, True)


def test_a_soft_deleted_stored_row_holds_no_value(spark: Any) -> None:
    events = [event(0, "d", 1, None), event(1, "c", 2, PLACEHOLDER, old=1)]
    out = run_chain(spark, events, {1: "deleted-1"}, soft=True, deleted=frozenset({1}))
    assert out[2] == (None, True, True)


def test_a_batch_without_placeholders_is_deduplicated_without_fills(spark: Any) -> None:
    """A direct batch carries no placeholder (``direct_merge.could_go_direct``), so its dedupe
    leaves the fills and the key-change columns out (``dedupe_sql(placeholders=False)``): on
    random batches of every operation, key changes among them, it keeps the same newest
    event per key, with the same values and first operation, as the full dedupe."""
    import random

    from cdcmirror.cdc_columns import FIRST_OP

    rng = random.Random(17)
    kept = ["id", "note", "qty", "_cdc_op", "_cdc_position", "_cdc_partition", "_cdc_offset"]
    for _ in range(5):
        events = []
        for offset in rng.sample(range(400), 120):  # out of offset order, as a batch may be
            op = rng.choice("cuudr")
            note = None if op == "d" else rng.choice(["a", "b", ""])
            old = rng.randrange(20) if op == "c" and rng.random() < 0.3 else None
            events.append(event(offset, op, rng.randrange(20), note, old, rng.randrange(9)))
        spark.createDataFrame(events, EVENT_COLUMNS).createOrReplaceTempView("ev_plain")
        columns = ", ".join([*kept, FIRST_OP])
        full = f"SELECT {columns} FROM ({dedupe_sql(TABLE, 'ev_plain', first_op=True)})"
        lean = dedupe_sql(TABLE, "ev_plain", first_op=True, placeholders=False)
        assert "_cdc_f_" not in lean and "_cdc_kc" not in lean  # the fills left out
        lean_rows = sorted(spark.sql(f"SELECT {columns} FROM ({lean})").collect())
        assert lean_rows == sorted(spark.sql(full).collect())
        assert len(lean_rows) == len({e[0] for e in events})  # a row per key
