"""Debezium's transaction metadata as the proof reads it (``mirror/transaction_metadata.py``)
and the ledger kept between batches (``checkpoint_store.ConsistentLedgers``, a local
checkpoint)."""

from __future__ import annotations

import json
from pathlib import Path

from cdcmirror.checkpoint_store import CheckpointFiles, ConsistentLedgers
from cdcmirror.mirror.consistent_point import Applied, Batch, Ledger, Point, TxEnd, advance
from cdcmirror.mirror.transaction_metadata import (
    UNMARKED,
    ChangeRun,
    batch_of,
    parse_marker,
    past_point,
)

TOPICS = {"m.db.a": "db.a", "m.db.b": "db.b"}
MIRRORED = frozenset(TOPICS.values())


def _record(status: str, tx: str, schemas: bool, **counts: int) -> str:
    body: dict[str, object] = {"status": status, "id": tx, "ts_ms": 77}
    if status == "END":
        body["event_count"] = sum(counts.values())
        body["data_collections"] = [
            {"data_collection": f"db.{t}", "event_count": n} for t, n in counts.items()
        ]
    return json.dumps({"schema": {"type": "struct"}, "payload": body} if schemas else body)


def test_a_mariadb_gtid_names_a_transaction_whole_and_runs_of_one_table_add_up() -> None:
    gtid = "0-1-42"
    runs = [
        ChangeRun("m.db.a", gtid, 1, 2, (1, 3, 100, 0)),
        ChangeRun("m.db.a", gtid, 4, 4, (1, 3, 100, 2)),  # order 3 not read yet
        ChangeRun("m.db.b", gtid, 1, 1, (1, 3, 100, 1)),
        ChangeRun("m.other.t", gtid, 1, 1, (1, 3, 100, 5)),  # not mirrored by this job
    ]
    markers = [(5, _record("BEGIN", gtid, True)), (6, _record("END", gtid, True, a=4, b=1))]
    batch = batch_of(runs, TOPICS, markers, "mysql", True, 7)
    assert batch.begins == (gtid,)
    assert batch.ends == (TxEnd(gtid, 6, 77, (("db.a", 4), ("db.b", 1))),)
    assert batch.applied[(gtid, "db.a")] == Applied(((1, 2), (4, 4)), (1, 3, 100, 2))
    assert set(batch.applied) == {(gtid, "db.a"), (gtid, "db.b")}
    step = advance(Ledger(), batch, MIRRORED)
    assert (
        not step.moved and step.waiting == f"transaction {gtid}: 3 of 4 change(s) of db.a applied"
    )
    assert step.ledger.next_offset == 7
    late = batch_of([ChangeRun("m.db.a", gtid, 3, 3, (1, 3, 100, 1))], TOPICS, [], "mysql", True)
    step = advance(step.ledger, late, MIRRORED)
    assert step.moved and step.ledger.point == Point(gtid, 6, 77, (1, 3, 100, 2))
    assert step.ledger.next_offset == 7  # nothing more read from the transaction topic


def test_postgresql_names_a_transaction_by_its_xid_in_changes_and_end_alike() -> None:
    runs = [ChangeRun("m.db.a", "771", 1, 1, (1, 50, 60))]  # the SQL cut the change's LSN off
    markers = [(0, _record("BEGIN", "771:55", False)), (1, _record("END", "771:99", False, a=1))]
    step = advance(
        Ledger(),
        batch_of(runs, TOPICS, markers, "postgresql", False, 2),
        frozenset(TOPICS.values()),
    )
    assert step.moved and step.ledger.point is not None and step.ledger.point.tx == "771"


def test_a_change_without_transaction_metadata_holds_the_point_and_rereads_the_records() -> None:
    runs = [ChangeRun("m.db.b", UNMARKED, 0, 0, (1, 5, 5))]
    markers = [(3, _record("BEGIN", "9", False)), (4, _record("END", "9", False, a=1))]
    ledger = Ledger(next_offset=3)
    step = advance(
        ledger, batch_of(runs, TOPICS, markers, "mysql", False, 5), frozenset(TOPICS.values())
    )
    assert not step.moved and step.waiting == "changes of db.b carry no transaction metadata"
    assert step.ledger.next_offset == 3  # the next batch reads the BEGIN and the END again


def test_a_held_ledger_never_moves() -> None:
    held = Ledger(held="db.a: 1 dead letter(s)")
    batch = Batch(
        ("1",), (TxEnd("1", 0, 0, (("db.a", 1),)),), {("1", "db.a"): Applied(((1, 1),), (1, 2))}
    )
    step = advance(held, batch, frozenset({"db.a"}))
    assert not step.moved and step.waiting == "db.a: 1 dead letter(s)"


def test_records_that_are_not_markers_are_left_out() -> None:
    assert parse_marker(None, False) is None
    assert parse_marker("not json", False) is None
    assert parse_marker('{"status": "END"}', False) is None  # no id
    assert parse_marker('{"payload": {"status": "OTHER", "id": "1"}}', True) is None


def test_a_snapshot_past_the_point_is_never_tagged() -> None:
    assert past_point([1, 10, 11], (1, 10, 10))
    assert not past_point([1, 10, 10], (1, 10, 10)) and not past_point([], (1, 10, 10))


def test_the_ledger_of_the_batch_before_is_found_and_old_ones_go(tmp_path: Path) -> None:
    store = ConsistentLedgers(CheckpointFiles(str(tmp_path / "checkpoint"), {}))
    assert store.before(0) is None
    for batch_id in range(8):
        store.save(batch_id, Ledger(next_offset=batch_id * 10))
    found = store.before(7)  # a batch 7 run again starts from batch 6's ledger
    assert found is not None and found.next_offset == 60
    kept = sorted((tmp_path / "checkpoint" / ConsistentLedgers.DIRECTORY).iterdir())
    assert [p.name for p in kept] == [f"{i}.json" for i in range(3, 8)]
    assert store.before(100) == Ledger(next_offset=70)
