"""The TOAST key-chain SQL (``mirror/toast_chain.py``) executed on the tests' Spark against
hand-built events: the value follows a chain of key changes back to the batch or the table."""

from __future__ import annotations

from typing import Any

import pytest

from cdcmirror.mirror.merge_sql import dedupe_sql
from cdcmirror.mirror.spec import MirrorColumn, MirrorTable
from cdcmirror.mirror.toast_chain import unknown_sql
from integration_tests.conftest import SparkWorld

TABLE = MirrorTable(
    identifier="ns.items",
    topic="p.public.items",
    flavor="postgresql",
    source="public.items",
    key=("id",),
    mode="upsert",
    columns=(
        MirrorColumn("id", "long", "int64"),
        MirrorColumn("note", "string", "string"),
        MirrorColumn("qty", "int", "int32"),
    ),
)
EVENT_COLUMNS = (
    "id BIGINT, note STRING, qty INT, `_t_note` BOOLEAN, `_ok_id` BIGINT, _cdc_op STRING, "
    "_cdc_position ARRAY<BIGINT>, _cdc_source_ts TIMESTAMP, _partition INT, _offset BIGINT"
)
PLACEHOLDER = None  # the decoded value of a placeholder; the flag says it is one


@pytest.fixture(scope="module")
def spark(spark_world: SparkWorld) -> Any:
    return spark_world.spark


def event(
    offset: int, op: str, key: int, note: str | None, old: int | None = None, qty: int = 0
) -> tuple[Any, ...]:
    placeholder = op in ("c", "u") and note is PLACEHOLDER
    return (key, note, qty, placeholder, old, op, [1, 100 + offset, 100 + offset, 0, offset],
            None, 0, offset)  # fmt: skip


def run_chain(spark: Any, events: list[tuple[Any, ...]], stored: dict[int, str]) -> dict[int, Any]:
    from cdcmirror.spark.key_chains import fill_key_chains

    spark.createDataFrame(events, EVENT_COLUMNS).createOrReplaceTempView("ev")
    spark.createDataFrame(
        list(stored.items()) or [(0, "unused")], "id BIGINT, note STRING"
    ).createOrReplaceTempView("stored")
    deduped = spark.sql(dedupe_sql(TABLE, "ev"))
    filled = fill_key_chains(spark, TABLE, deduped, "ev", "stored", "v")
    filled = filled.withColumn("_action", filled["_cdc_op"])  # no stored key is reused here
    rows = filled.selectExpr(
        "id", "note", "`_t_note`", f"{unknown_sql(TABLE).replace('insert', 'c')} AS unknown"
    ).collect()
    return {r.id: (r.note, r._t_note, r.unknown) for r in rows}


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
