"""`cdcmirror mirror` against real PostgreSQL, Debezium, Kafka, Spark and Iceberg: the Iceberg
table equals the source, row by row, after every step."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from cdcmirror.bootstrap.connector import connector_name
from cdcmirror.commands.mirror import mirror
from cdcmirror.config import load_config
from cdcmirror.health.connector import failed
from cdcmirror.stack.control import Stack
from cdcmirror.stack.layout import REGISTRY
from support import mirror_scenarios as sc
from support import reconcile_scenarios as rc
from support import services
from support.bootstrap_env import run_cli
from support.fuzz_run import fuzzed_events_are_dead_lettered
from support.metrics_scenario import metrics_count_what_was_applied
from support.mirror_env import (
    continuous_mirror,
    run_mirror_process,
)
from support.mirror_fixture import Mirrored, bootstrap, make_config, mirrored
from support.spark import SparkWorld
from support.submit_scenario import submitted_mirror_is_the_same

STARTED = "streaming query"  # the job's line once its query runs (at INFO)
STARTED_LOGGED = {"CDCMIRROR_LOG_LEVEL": "INFO"}


def same_within(
    m: Mirrored,
    job: Any,
    seconds: float,
    context: Callable[[], str] | None = None,
    retry_on: tuple[type[Exception], ...] = (AssertionError,),
) -> None:
    """Until the mirror equals the source (the job must stay alive). A comparison that
    fails with ``retry_on`` (``Exception``: also one that cannot run yet, e.g. a column not
    there yet) is tried again until ``seconds`` have passed; then it fails, with
    ``context()`` if given."""
    deadline = time.monotonic() + seconds
    while True:
        job.assert_alive()
        try:
            m.assert_same()
            return
        except retry_on as exc:
            if time.monotonic() > deadline:
                if context is None:
                    raise
                raise AssertionError(f"not in sync: {context()}") from exc
        time.sleep(2)


@pytest.fixture(scope="module")
def pg(stack: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    yield from mirrored(spark_world, "json", 1000)


def test_random_workload_snapshot_and_stream(pg: Mirrored) -> None:
    rows = sc.workload_then_same(pg, 4000)
    assert rows > 100


def test_batch_line_reports_the_lag_at_commit(
    pg: Mirrored, caplog: pytest.LogCaptureFixture
) -> None:
    """The per-table batch line carries the delay from source commit to the Iceberg commit
    of the newest, the median and the oldest event of the batch."""
    pg.workload.run(200)
    time.sleep(3)  # the events are at least this old when the batch commits
    sc.settle(pg)
    with caplog.at_level("INFO", logger="cdcmirror.mirror"):
        pg.mirror()
    mine = sc.batch_lines(caplog, pg.identifier)
    assert mine, caplog.text
    for line in mine:
        newest, p50, most = line["lag_seconds"], line["lag_p50_seconds"], line["lag_max_seconds"]
        assert 3 <= newest <= p50 <= most < 900, line
    pg.assert_same()


def test_batch_line_counts_each_key_once(pg: Mirrored, caplog: pytest.LogCaptureFixture) -> None:
    """The batch line's counts follow the keys: several events on one key are one change and
    the rest duplicates; a key change is the old key's delete and the new key's insert."""
    sc.settle(pg)
    pg.mirror()
    table, w = pg.source.table, pg.workload
    new = w.next_id
    stored, rekeyed = w.ids[0], w.ids[1]
    with services.pg_connect() as conn:
        for i in range(3):
            conn.execute(f"INSERT INTO {table} (id, qty) VALUES (%s, 1)", (new + i,))
        for qty in (2, 3):
            conn.execute(f"UPDATE {table} SET qty = %s WHERE id = %s", (qty, new))
            conn.execute(f"UPDATE {table} SET qty = %s WHERE id = %s", (qty, stored))
        conn.execute(f"DELETE FROM {table} WHERE id = %s", (new + 1,))
        conn.execute(f"UPDATE {table} SET id = %s WHERE id = %s", (new + 3, rekeyed))
    w.ids.remove(rekeyed)
    w.ids += [new, new + 2, new + 3]
    w.next_id = new + 4
    sc.settle(pg)
    with caplog.at_level("INFO", logger="cdcmirror.mirror"):
        pg.mirror()
    mine = sc.batch_lines(caplog, pg.identifier)
    # newer than the table, no placeholder: MERGEd without a classification, its delete counted
    assert len(mine) == 1 and mine[0]["direct"], mine
    counts = {k: mine[0][k] for k in ("inserts", "updates", "deletes", "duplicates", "stale")}
    # 10 change events on 6 keys: new, new+2 and new+3 inserted, `stored` updated, `rekeyed`
    # deleted, new+1 inserted and deleted in the batch (never stored: no action counted)
    assert counts == {"inserts": 3, "updates": 1, "deletes": 1, "duplicates": 4, "stale": 0}
    # the phases that ran (a delete: tombstones too; its deletes of stored rows told by the
    # keys' first events, which the commit agrees with: not counted again), and the Spark jobs
    phases = mine[0]["phase_seconds"]
    # (the consistent tag is on by default: the table waits for the batch's proof, ``point``)
    assert set(phases) == {"decode", "dedupe_classify", "point", "merge", "tombstones"}, phases
    assert all(0 < phases[k] <= mine[0]["table_seconds"] for k in phases)
    assert mine[0]["merge_seconds"] == phases["merge"]
    # one job each: the decode (kept with its aggregate), the table's transaction runs for
    # the consistent tag's proof, the MERGE, the tombstones' append
    assert mine[0]["spark_jobs"] == 4, mine[0]
    pg.assert_same()


def test_a_batch_newer_than_the_table_goes_without_a_classification(
    pg: Mirrored, caplog: pytest.LogCaptureFixture
) -> None:
    """Inserts, updates and deletes newer than every stored position: MERGEd straight
    (``direct``), counted from the commits, and each deleted key entombed, a key deleted
    before it was ever stored too (a batch run again is older than the table's high-water
    mark: ``test_lost_checkpoint_resumes_from_the_offsets_the_table_records``)."""
    sc.settle(pg)
    pg.mirror()
    table, w = pg.source.table, pg.workload
    new, stored, gone = w.next_id, w.ids[:2], w.ids[2]
    with services.pg_connect() as conn:
        for i in range(4):
            conn.execute(f"INSERT INTO {table} (id, qty) VALUES (%s, 1)", (new + i,))
        for qty in (2, 3):
            conn.execute(f"UPDATE {table} SET qty = %s WHERE id = ANY(%s)", (qty, stored))
        conn.execute(f"UPDATE {table} SET qty = 4 WHERE id = %s", (new,))
        conn.execute(f"DELETE FROM {table} WHERE id = ANY(%s)", ([gone, new + 3],))
    w.ids = [i for i in w.ids if i != gone] + [new, new + 1, new + 2]
    w.next_id = new + 4
    sc.settle(pg)
    with caplog.at_level("INFO", logger="cdcmirror.mirror"):
        pg.mirror()
    mine = sc.batch_lines(caplog, pg.identifier)
    assert len(mine) == 1 and mine[0]["direct"], mine
    counts = {k: mine[0][k] for k in ("inserts", "updates", "deletes", "duplicates", "stale")}
    # 11 change events on 7 keys: 3 inserted, 2 updated, 1 deleted, 1 inserted and deleted
    # (its delete deletes nothing stored: not counted), 4 superseded in the batch
    newest = pg.spark.sql(f"SELECT summary FROM {pg.identifier}.snapshots ORDER BY committed_at")
    expected = {"inserts": 3, "updates": 2, "deletes": 1, "duplicates": 4, "stale": 0}
    assert counts == expected, newest.collect()[-1]
    # no count: told by the events
    phases = {"decode", "dedupe_classify", "point", "merge", "tombstones"}
    assert set(mine[0]["phase_seconds"]) == phases, mine[0]
    namespace, name = pg.identifier.rsplit(".", 1)
    tombs = pg.spark.sql(f"SELECT id FROM {namespace}__cdcmirror.{name}__deleted").collect()
    assert {gone, new + 3} <= {int(r.id) for r in tombs}, tombs
    pg.assert_same()


def test_a_batch_of_updates_runs_the_decode_and_the_merge_only(
    pg: Mirrored, caplog: pytest.LogCaptureFixture
) -> None:
    """Updates only, newer than the table: one Spark job for the decode, one for the
    MERGE (an inner join) and one for the transaction runs the consistent tag's proof reads.
    Spark's runtime bloom filter, which took the kept batch for a big table and filtered it
    with the keys of a second scan of the table, 8 Mbit of them, a job of its own, is off in
    the session (``session.py``)."""
    sc.settle(pg)
    pg.mirror()
    table, stored = pg.source.table, pg.workload.ids[:3]
    with services.pg_connect() as conn:
        conn.execute(f"UPDATE {table} SET qty = 7 WHERE id = ANY(%s)", (stored,))
    sc.settle(pg)
    with caplog.at_level("INFO", logger="cdcmirror.mirror"):
        pg.mirror()
    mine = sc.batch_lines(caplog, pg.identifier)
    assert len(mine) == 1 and mine[0]["direct"] and mine[0]["updates"] == 3, mine
    assert set(mine[0]["phase_seconds"]) == {"decode", "dedupe_classify", "point", "merge"}, mine[0]
    assert mine[0]["spark_jobs"] == 3, mine[0]
    pg.assert_same()


def test_a_running_job_counts_what_it_applied_refuses_a_second_and_stops_on_sigterm(
    pg: Mirrored,
) -> None:
    """One continuous job (starting one is most of such a test's time): its metrics are what
    it applied; meanwhile a second job on its tables is refused; given a backlog (batches
    back to back), SIGTERM ends it after the running batch, exit 0, the lease released, and
    the next start applies the rest."""
    job = metrics_count_what_was_applied(
        pg, lambda job: sc.second_job_is_refused_while(pg, job), behind=1500
    )
    assert "stopping after the current batch" in job.output
    assert not sc.lease_held(pg), "a stopped job leaves no lease"


def test_mirror_as_a_spark_submit_application(pg: Mirrored) -> None:
    submitted_mirror_is_the_same(pg)


@sc.WORKLOAD_BATCHES
def test_random_workload_with_key_change_chains_and_out_of_line_toast(
    stack: Stack, postgres: None, spark_world: SparkWorld, batch: int, operations: int
) -> None:
    """Operations with chains of key changes and updates that leave big incompressible
    (out-of-line TOAST) values alone, mirrored in one batch and in small batches (of 200
    events in CI, of 400 in `make test-full`)."""
    # the one batch is read by tasks of 700 events: a Kafka partition split across tasks
    settings: dict[str, object] = (
        {"max_events_per_batch": batch} if batch else {"events_per_task": 700}
    )
    for m in mirrored(spark_world, "json", 300, chains=True, mirror_settings=settings):
        with services.pg_connect() as conn:
            stored = conn.execute(
                f"SELECT count(*) FROM {m.source.table} "
                "WHERE length(note) > 2500 AND pg_column_size(note) > 2500"
            ).fetchone()
        assert stored and stored[0] > 0, "the workload made no uncompressed big value"
        sc.acceptance_run(m, operations, batch)


def test_unchanged_toast_values_are_kept(pg: Mirrored) -> None:
    toast_values_kept(pg)


def toast_values_kept(pg: Mirrored) -> None:
    with services.pg_connect() as conn:
        # md5 text is not compressible enough to stay inline: stored out of line (TOAST)
        conn.execute(
            f"UPDATE {pg.source.table} SET note = (SELECT string_agg(md5(random()::text), '') "
            "FROM generate_series(1, 400)), tags = ARRAY[(SELECT string_agg(md5(random()::text), "
            "'') FROM generate_series(1, 300))] WHERE id % 3 = 0"
        )
        toasted = conn.execute(
            f"SELECT count(*) FROM {pg.source.table} WHERE length(note) > 10000"
        ).fetchone()
    assert toasted and toasted[0] > 10
    sc.settle(pg)
    pg.mirror()
    pg.assert_same()
    with services.pg_connect() as conn:  # the TOASTed columns are left out of these events
        conn.execute(
            f"UPDATE {pg.source.table} SET qty = coalesce(qty, 0) / 2 + 1 WHERE id % 3 = 0"
        )
    sc.settle(pg)
    pg.mirror()
    pg.assert_same()
    placeholders = pg.spark.sql(
        f"SELECT count(*) FROM {pg.identifier} WHERE note LIKE '%debezium_unavailable%'"
    ).first()[0]
    assert placeholders == 0


def test_key_change_keeps_unchanged_toast_values(pg: Mirrored) -> None:
    """A key change is delete + create, and the create has placeholders for the unchanged
    TOASTed values: they come from the old key's stored row, or from its earlier events in
    the same batch."""
    key_change_keeps_toast_values(pg)


def key_change_keeps_toast_values(pg: Mirrored) -> None:
    with services.pg_connect() as conn:
        rows = conn.execute(
            f"SELECT id FROM {pg.source.table} WHERE length(note) > 10000 ORDER BY id LIMIT 6"
        ).fetchall()
        assert len(rows) == 6
        new_id = pg.workload.next_id
        for i, (old,) in enumerate(rows[:3]):  # stored rows only
            conn.execute(f"UPDATE {pg.source.table} SET id = %s WHERE id = %s", (new_id + i, old))
        for i, (old,) in enumerate(rows[3:], start=3):  # changed in the batch, then re-keyed
            conn.execute(f"UPDATE {pg.source.table} SET qty = 7 WHERE id = %s", (old,))
            conn.execute(f"UPDATE {pg.source.table} SET id = %s WHERE id = %s", (new_id + i, old))
    for i, (old,) in enumerate(rows):
        pg.workload.ids.remove(old)
        pg.workload.ids.append(new_id + i)
    pg.workload.next_id = new_id + len(rows)
    sc.settle(pg)
    pg.mirror()
    pg.assert_same()


def test_chained_key_changes_keep_unchanged_toast_values(pg: Mirrored) -> None:
    """Key chains inside one batch (A->B, update, B->C; A->B->C->D; A->B->A; a row inserted
    in the batch then re-keyed twice): the unchanged TOASTed values follow the chain back to
    the first key's value, in the batch or stored."""
    chained_key_changes_keep_toast_values(pg)


def _toast_text() -> str:
    return "(SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 400))"


def toasted_rows(pg: Mirrored, order: str, count: int) -> list[int]:
    """Give ``count`` rows (first by ``order``) big TOASTed values, mirror, return their ids."""
    table = pg.source.table
    first = f"SELECT id FROM {table} ORDER BY {order} LIMIT {count}"
    with services.pg_connect() as conn:
        conn.execute(
            f"UPDATE {table} SET note = {_toast_text()}, tags = ARRAY[{_toast_text()}] "
            f"WHERE id IN ({first})"
        )
    sc.settle(pg)
    pg.mirror()
    pg.assert_same()
    with services.pg_connect() as conn:
        return [r[0] for r in conn.execute(first)]


def chained_key_changes_keep_toast_values(pg: Mirrored) -> None:
    table = pg.source.table
    ids = toasted_rows(pg, "id", 8)
    with services.pg_connect() as conn:
        assert len(ids) == 8
        n = pg.workload.next_id
        moves: list[tuple[int, int]] = []

        def rekey(old: int, new: int) -> None:
            conn.execute(f"UPDATE {table} SET id = %s WHERE id = %s", (new, old))
            moves.append((old, new))

        def touch(i: int) -> None:  # the TOASTed columns are placeholders in this event
            conn.execute(f"UPDATE {table} SET qty = coalesce(qty, 0) / 2 + 1 WHERE id = %s", (i,))

        rekey(ids[0], n)  # A -> B, update, B -> C
        touch(n)
        rekey(n, n + 1)
        rekey(ids[1], n + 2)  # A -> B -> C -> D, updates between
        touch(n + 2)
        rekey(n + 2, n + 3)
        touch(n + 3)
        rekey(n + 3, n + 4)
        rekey(ids[2], n + 5)  # A -> B -> A
        touch(n + 5)
        rekey(n + 5, ids[2])
        touch(ids[3])  # an update, then A -> B -> C
        rekey(ids[3], n + 6)
        rekey(n + 6, n + 7)
        conn.execute(  # inserted in the batch with its value, then re-keyed twice
            f"INSERT INTO {table} (id, note, tags) VALUES (%s, {_toast_text()}, "
            f"ARRAY[{_toast_text()}])",
            (n + 8,),
        )
        pg.workload.ids.append(n + 8)
        rekey(n + 8, n + 9)
        touch(n + 9)
        rekey(n + 9, n + 10)
    for old, new in moves:
        pg.workload.ids.remove(old)
        pg.workload.ids.append(new)
    pg.workload.next_id = n + 11
    sc.settle(pg)
    pg.mirror()
    pg.assert_same()


def test_key_change_split_across_batches_keeps_unchanged_toast_values(pg: Mirrored) -> None:
    """A key change is delete(A), tombstone, create(B); batches of one event put the delete
    in one batch and the create in a later one. B's unchanged TOASTed values still come from
    A's row, for a single key change and for a chain A -> B -> C, across batches."""
    table = pg.source.table
    ids = toasted_rows(pg, "id DESC", 2)
    with services.pg_connect() as conn:
        n = pg.workload.next_id
        conn.execute(f"UPDATE {table} SET id = %s WHERE id = %s", (n, ids[0]))
        conn.execute(f"UPDATE {table} SET id = %s WHERE id = %s", (n + 1, ids[1]))
        conn.execute(f"UPDATE {table} SET id = %s WHERE id = %s", (n + 2, n + 1))
    for old, new in ((ids[0], n), (ids[1], n + 2)):
        pg.workload.ids.remove(old)
        pg.workload.ids.append(new)
    pg.workload.next_id = n + 3
    sc.settle(pg)
    os.environ["CDCMIRROR_MIRROR__MAX_EVENTS_PER_BATCH"] = "1"
    try:
        before = len(pg.snapshot_ids())
        pg.mirror()
        assert len(pg.snapshot_ids()) - before >= 3, "the key changes were not split up"
    finally:
        del os.environ["CDCMIRROR_MIRROR__MAX_EVENTS_PER_BATCH"]
    pg.assert_same()


def test_replayed_key_changes_keep_unchanged_toast_values(pg: Mirrored) -> None:
    """Batches that run again over key changes already applied: X -> Y mirrored, then the
    checkpoint lost, so the next batch holds X -> Y again and the new Y -> Z, whose TOASTed
    values only Y's stored row still has; then a crash after the Iceberg commit of Z -> W,
    whose re-run finds W stored and X, Y, Z gone. Every value is kept, nothing is
    dead-lettered."""
    table = pg.source.table
    (x,) = toasted_rows(pg, "id", 1)
    dead = f"SELECT count(*) FROM {pg.dead_letter} WHERE topic = '{pg.topic}'"
    dead_before = pg.spark.sql(dead).first()[0]
    y, z, w = (pg.workload.next_id + i for i in range(3))
    pg.workload.next_id += 3

    def rekey(old: int, new: int) -> None:
        with services.pg_connect() as conn:
            conn.execute(f"UPDATE {table} SET id = %s WHERE id = %s", (new, old))
        pg.workload.ids.remove(old)
        pg.workload.ids.append(new)
        sc.settle(pg)

    rekey(x, y)
    pg.mirror()
    pg.assert_same()
    rekey(y, z)
    shutil.rmtree(pg.config.path("mirror", "checkpoint_location"))
    pg.mirror()
    pg.assert_same()
    rekey(z, w)
    crashed = run_mirror_process(pg.config_path, {"CDCMIRROR_FAULT": "after-commit"})
    assert crashed.returncode == 86, crashed.stderr[-3000:]
    pg.mirror()
    pg.assert_same()
    assert pg.spark.sql(dead).first()[0] == dead_before


def test_toast_value_known_nowhere_is_dead_lettered_not_null(pg: Mirrored) -> None:
    """The mirror lost a row behind its back, then the source re-keys it: the new key's
    unchanged TOAST values are known nowhere. The event is dead-lettered with the reason
    (no NULL written), reconcile --deep lists the key, a full update heals it."""
    table = pg.source.table
    (old,) = toasted_rows(pg, "id", 1)  # its values out of line, whatever ran before
    pg.spark.sql(f"DELETE FROM {pg.identifier} WHERE id = {old}")
    new = pg.workload.next_id
    pg.workload.next_id += 1
    with services.pg_connect() as conn:
        conn.execute(f"UPDATE {table} SET id = %s WHERE id = %s", (new, old))
    pg.workload.ids.remove(old)
    pg.workload.ids.append(new)
    sc.settle(pg)
    pg.mirror()
    stored = pg.spark.sql(f"SELECT count(*) FROM {pg.identifier} WHERE id = {new}").first()[0]
    assert stored == 0, "a row with unknown TOAST values was written"
    errors = [
        r.error
        for r in pg.spark.sql(
            f"SELECT error FROM {pg.dead_letter} WHERE topic = '{pg.topic}' "
            "AND error LIKE '%unchanged TOAST%'"
        ).collect()
    ]
    assert len(errors) == 1 and "note" in errors[0], errors
    code, report = rc.reconcile(pg, "--deep", "--settle", "5")
    assert code == 1 and rc.only_table(report)["deep"]["missing_keys"] == [{"id": str(new)}]
    with services.pg_connect() as conn:  # a full row: every value in the event
        conn.execute(
            f"UPDATE {table} SET note = note || '.', tags = tags || ARRAY['x'] WHERE id = %s",
            (new,),
        )
    sc.settle(pg)
    pg.mirror()
    pg.assert_same()


def test_add_column_mid_stream(pg: Mirrored) -> None:
    add_column_mid_stream(pg)


def add_column_mid_stream(pg: Mirrored) -> None:
    pg.workload.run(100)
    with services.pg_connect() as conn:
        conn.execute(f"ALTER TABLE {pg.source.table} ADD COLUMN extra numeric(10,2)")
        conn.execute(f"UPDATE {pg.source.table} SET extra = id / 7.0 WHERE id % 2 = 0")
    pg.workload.run(200)
    sc.settle(pg)
    pg.mirror()
    pg.extra_columns.append("extra")
    pg.assert_same()
    kind = pg.spark.sql(f"SELECT typeof(extra) FROM {pg.identifier} LIMIT 1").first()[0]
    assert kind == "decimal(10,2)"


def test_decimal_precision_increase_mid_stream(pg: Mirrored) -> None:
    """numeric(10,2) -> numeric(20,2) at the source: the Iceberg column widens to
    decimal(20,2) and values past the old precision arrive whole (not NULL, not dead)."""
    assert "extra" in pg.extra_columns, "runs after test_add_column_mid_stream"
    with services.pg_connect() as conn:
        conn.execute(f"ALTER TABLE {pg.source.table} ALTER COLUMN extra TYPE numeric(20,2)")
        conn.execute(
            f"UPDATE {pg.source.table} SET extra = 123456789012345678.91 + id WHERE id % 5 = 0"
        )
    pg.workload.run(50)
    sc.settle(pg)
    pg.mirror()
    kind = pg.spark.sql(f"SELECT typeof(extra) FROM {pg.identifier} LIMIT 1").first()[0]
    assert kind == "decimal(20,2)"
    pg.assert_same()


def test_new_column_on_a_multi_partition_topic(
    stack: Stack, postgres: None, spark_world: SparkWorld
) -> None:
    """A 3-partition topic; in one batch the only event with a new column sits in the
    partition with the lowest offsets, older-schema events in the others have higher ones.
    Evolution looks at every schema of the batch: the column is added, its value kept."""
    fixture = mirrored(spark_world, "json", 300, partitions=3)
    m = next(fixture)
    try:
        sc.settle(m)
        m.mirror()
        where = services.partition_of_keys(m.topic)
        assert len(set(where.values())) == 3, where
        counts = {p: sum(1 for q in where.values() if q == p) for p in set(where.values())}
        low = min(counts, key=lambda p: counts[p])
        alive = set(m.workload.ids)
        target = min(i for i, p in where.items() if p == low and i in alive)
        others = [i for i, p in where.items() if p != low]
        with services.pg_connect() as conn:
            for _ in range(3):  # the other partitions run far ahead in offsets
                conn.execute(
                    f"UPDATE {m.source.table} SET qty = coalesce(qty, 0) / 2 + 1 "
                    f"WHERE id = ANY(%s)",
                    (others,),
                )
            conn.execute(f"ALTER TABLE {m.source.table} ADD COLUMN extra2 integer")
            conn.execute(f"UPDATE {m.source.table} SET extra2 = 42 WHERE id = %s", (target,))
        sc.settle(m)
        m.mirror()
        m.extra_columns.append("extra2")
        m.assert_same()
        got = m.spark.sql(f"SELECT extra2 FROM {m.identifier} WHERE id = {target}").first()
        assert got is not None and got[0] == 42
    finally:
        fixture.close()


@pytest.mark.parametrize("fmt", ["json", "avro"])
def test_batches_read_once_meet_a_new_column(
    stack: Stack,
    postgres: None,
    spark_world: SparkWorld,
    caplog: pytest.LogCaptureFixture,
    fmt: str,
) -> None:
    """Batches of 60 events of one table: after the job's first, each is read from Kafka
    once by its decode (no first look) while its row schemas (Avro: schema ids) are ones the
    job applied (kept in the checkpoint from run to run). The batch whose events carry a new
    column writes nothing that way and is applied the usual way: the column is added, every
    value kept."""
    fixture = mirrored(spark_world, fmt, 150, mirror_settings={"max_events_per_batch": 60})
    m = next(fixture)
    try:
        sc.settle(m)
        m.mirror()
        m.workload.run(100)
        with services.pg_connect() as conn:
            conn.execute(f"ALTER TABLE {m.source.table} ADD COLUMN extra5 integer")
            conn.execute(f"UPDATE {m.source.table} SET extra5 = id * 3 WHERE id % 2 = 0")
        m.workload.run(100)
        sc.settle(m)
        with caplog.at_level(logging.INFO, logger="cdcmirror"):
            m.mirror()
        lines = [r.getMessage() for r in caplog.records]
        once = [x for x in lines if "read once, no first look" in x]
        assert len(once) >= 2, lines
        # the first run's schemas are kept in the checkpoint: this run's first batch too
        assert "read once, no first look" in next(x for x in lines if " done in " in x)
        assert any("of a new row schema; read again with a first look" in x for x in lines)
        tables = [json.loads(x.split(" ", 2)[2]) for x in lines if x.startswith("mirror batch {")]
        assert all(t["events"] <= 60 for t in tables) and sum(t["events"] for t in tables) > 200
        m.extra_columns.append("extra5")
        m.assert_same()
    finally:
        fixture.close()


# CI runs this on MariaDB; here a crash after the commit is also the last step of
# test_replayed_key_changes_keep_unchanged_toast_values. `make test-full` runs it.
@pytest.mark.full
def test_crash_after_commit_before_checkpoint(pg: Mirrored) -> None:
    sc.crash_after_commit_then_restart(pg, 300)


def test_lost_checkpoint_resumes_from_the_offsets_the_table_records(
    pg: Mirrored, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("INFO", logger="cdcmirror"):
        sc.lost_checkpoint_resumes_from_table_offsets(pg, lambda: caplog.text)


def test_crash_mid_merge(pg: Mirrored) -> None:
    sc.crash_mid_merge_then_restart(pg, 2000)


def test_connector_replay_changes_nothing(pg: Mirrored) -> None:
    # PostgreSQL's slot will not go back before what it confirmed, so the replay is the
    # strongest one: offsets forgotten, the whole table read again by a new snapshot.
    sc.replay_changes_nothing(pg, f"cdcmirror-{pg.name}", [])


def test_truncate_empties_the_table(pg: Mirrored) -> None:
    with services.pg_connect() as conn:
        conn.execute(f"TRUNCATE {pg.source.table}")
    pg.workload.ids.clear()
    pg.workload.run(150)
    sc.settle(pg)
    pg.mirror()
    assert pg.assert_same() > 0


def test_replayed_truncate_does_not_move_the_truncate_mark_back(pg: Mirrored) -> None:
    """TRUNCATE, inserts, TRUNCATE again; then Debezium-style replays of the first TRUNCATE
    and of the inserts between the two: the mark stays at the second TRUNCATE, so the rows it
    removed do not come back."""
    import json

    def truncate_then_insert() -> None:
        with services.pg_connect() as conn:
            conn.execute(f"TRUNCATE {pg.source.table}")
        pg.workload.ids.clear()
        pg.workload.run(40)

    def op(value: bytes | None) -> str | None:
        return json.loads(value)["payload"]["op"] if value else None

    truncate_then_insert()
    sc.settle(pg)
    pg.mirror()
    first = len(services.all_records(pg.topic))
    truncate_then_insert()
    sc.settle(pg)
    pg.mirror()
    mark = pg.spark.sql(f"SHOW TBLPROPERTIES {pg.identifier} ('cdcmirror.truncated-at')")
    second_mark = mark.first()[1]
    records = services.all_records(pg.topic)
    t1 = max(i for i, (_, v) in enumerate(records[:first]) if op(v) == "t")
    t2 = next(i for i, (_, v) in enumerate(records) if i > t1 and op(v) == "t")
    replay = [r for r in records[t1:t2] if op(r[1]) in ("t", "c")]
    assert len(replay) > 10 and op(replay[0][1]) == "t"
    producer = Producer({"bootstrap.servers": services.KAFKA})
    for key, value in replay:
        producer.produce(pg.topic, key=key, value=value)
    producer.flush(10)
    pg.mirror()
    mark = pg.spark.sql(f"SHOW TBLPROPERTIES {pg.identifier} ('cdcmirror.truncated-at')")
    assert mark.first()[1] == second_mark
    pg.assert_same()


def test_poison_message_goes_to_dead_letter(pg: Mirrored) -> None:
    sc.poison_goes_to_dead_letter(pg)


def test_malformed_events_never_wedge_the_job_or_become_a_guess(pg: Mirrored) -> None:
    sc.malformed_events_never_wedge_or_guess(pg)


def test_fuzzed_json_events_are_dead_lettered_and_the_rest_applies(pg: Mirrored) -> None:
    """``fuzz_events.py``: bad JSON events (with schemas) among a live workload's."""
    kinds = fuzzed_events_are_dead_lettered(pg, "json", 11)
    assert len(kinds) > 10, kinds


def test_mirror_started_before_the_first_event_waits_for_the_topic(
    stack: Stack, postgres: None, spark_world: SparkWorld
) -> None:
    """An empty source table has no topic until its first change. The continuous mirror
    started right after bootstrap neither creates that topic itself (with the broker's
    defaults, racing Debezium for it) nor dies on it: it waits, then mirrors the rows."""
    world = mirrored(spark_world, "json", 0)
    m = next(world)
    try:
        with continuous_mirror(m.config_path, extra_env=STARTED_LOGGED) as job:
            job.wait_for(STARTED)
            time.sleep(6)  # three triggers (2 s) with no topic
            job.assert_alive()
            m.workload.run(60)
            same_within(m, job, 180, lambda: "the rows never arrived")
    finally:
        world.close()


def test_key_widened_then_hard_deletes_still_recorded(
    stack: Stack, postgres: None, spark_world: SparkWorld
) -> None:
    """integer key -> bigint at the source after hard deletes made the tombstone table:
    deleting a key past the int range is recorded (tombstones widen with the table) and a
    replay of its insert does not bring it back."""
    schema = services.unique("mir_pgkey")
    table = f"{schema}.t"
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {table} (id integer PRIMARY KEY, v text)")
        conn.execute(f"INSERT INTO {table} SELECT g, 'v' || g FROM generate_series(1, 5) g")
        services.publish_schema(conn, schema)
    config = make_config(
        spark_world.config.base_dir, schema, "postgresql", f"{schema}.*", services.TEST_DATABASE
    )
    spark = spark_world.spark

    def mirrored_rows() -> list[tuple[int, str]]:
        rows = spark.sql(f"SELECT id, v FROM {schema}_mirror.t ORDER BY id").collect()
        return [(int(r.id), r.v) for r in rows]

    try:
        bootstrap(config)
        with services.pg_connect() as conn:
            conn.execute(f"DELETE FROM {table} WHERE id = 1")  # the tombstone table: int key
        services.wait_published(schema)
        mirror_config(config)
        assert mirrored_rows() == [(i, f"v{i}") for i in range(2, 6)]
        with services.pg_connect() as conn:
            conn.execute(f"ALTER TABLE {table} ALTER COLUMN id TYPE bigint")
            conn.execute(f"INSERT INTO {table} VALUES (3000000000, 'big'), (3000000001, 'b2')")
            conn.execute(f"DELETE FROM {table} WHERE id = 3000000000")
        services.wait_published(schema)
        mirror_config(config)
        assert mirrored_rows() == [(i, f"v{i}") for i in range(2, 6)] + [(3000000001, "b2")]
        tomb = spark.sql(
            f"SELECT id FROM {schema}_mirror__cdcmirror.t__deleted ORDER BY id"
        ).collect()
        assert [int(r.id) for r in tomb] == [1, 3000000000]
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")


def test_unchanged_toast_values_of_every_toastable_type_are_kept(
    stack: Stack, postgres: None, spark_world: SparkWorld
) -> None:
    """integer[], bigint[], uuid[] and hstore values stored out of line, then an UPDATE of
    another column: Debezium sends a per-type placeholder for each (numbers, a name-based
    UUID, a one-entry map); the mirror keeps the stored values and never writes those."""
    schema = services.unique("mir_pgtoast")
    table = f"{schema}.t"
    big_ints = "(SELECT array_agg((random() * 2000000000)::int) FROM generate_series(1, 3000))"
    big_longs = "(SELECT array_agg((random() * 9e18)::bigint) FROM generate_series(1, 2000))"
    uuids = "(SELECT array_agg(gen_random_uuid()) FROM generate_series(1, 1000))"
    pairs = (
        "(SELECT hstore(array_agg(md5(random()::text)), array_agg(md5(random()::text))) "
        "FROM generate_series(1, 400))"
    )
    with services.pg_connect() as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS hstore SCHEMA public")
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(
            f"CREATE TABLE {table} (id bigint PRIMARY KEY, ia integer[], ba bigint[], "
            "ua uuid[], h public.hstore, q integer)"
        )
        services.publish_schema(conn, schema)
    config = make_config(
        spark_world.config.base_dir, schema, "postgresql", f"{schema}.*", services.TEST_DATABASE
    )
    columns = ["ia", "ba", "ua", "h", "q"]

    def source() -> dict[int, tuple[object, ...]]:
        with services.pg_connect() as conn:
            rows = conn.execute(
                f"SELECT id, ia, ba, ua::text[], hstore_to_json(h)::text, q FROM {table}"
            ).fetchall()
        return {
            int(r[0]): (r[1], r[2], r[3], json.loads(r[4]) if r[4] else None, r[5]) for r in rows
        }

    def mirrored() -> dict[int, tuple[object, ...]]:
        rows = spark_world.spark.sql(
            f"SELECT id, {', '.join(columns)} FROM {schema}_mirror.t"
        ).collect()
        return {int(r.id): (r.ia, r.ba, r.ua, dict(r.h) if r.h else None, r.q) for r in rows}

    try:
        bootstrap(config)
        with services.pg_connect() as conn:
            for i in range(1, 6):
                values = f"%s, {big_ints}, {big_longs}, {uuids}, {pairs}, 0"
                conn.execute(f"INSERT INTO {table} VALUES ({values})", (i,))
            stored = conn.execute(
                f"SELECT count(*) FROM {table} WHERE pg_column_size(ia) > 4000 AND "
                "pg_column_size(ba) > 4000 AND pg_column_size(ua) > 4000 AND "
                "pg_column_size(h) > 4000"
            ).fetchone()
        assert stored is not None and stored[0] == 5, "the values must be stored out of line"
        services.wait_published(schema)
        mirror_config(config)
        assert mirrored() == source()
        with services.pg_connect() as conn:  # the TOASTed columns are left out of these
            conn.execute(f"UPDATE {table} SET q = q + 1")
            conn.execute(f"UPDATE {table} SET q = q + 1 WHERE id <= 2")
        services.wait_published(schema)
        mirror_config(config)
        assert mirrored() == source()
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")


def mirror_config(config: Path) -> None:
    os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
    mirror(load_config(config), available_now=True)


@pytest.fixture(scope="module")
def pg_schemaless(stack: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    yield from mirrored(spark_world, "json-schemaless", 1000)


def test_json_without_schemas_same_workload(pg_schemaless: Mirrored) -> None:
    sc.workload_then_same(pg_schemaless, 1500)
    sc.poison_goes_to_dead_letter(pg_schemaless)


@pytest.mark.full
def test_fuzzed_schemaless_events_are_dead_lettered_and_the_rest_applies(
    pg_schemaless: Mirrored,
) -> None:
    kinds = fuzzed_events_are_dead_lettered(pg_schemaless, "json-schemaless", 12)
    assert len(kinds) > 10, kinds


def test_dead_letter_fail_mode_stops_at_the_event(pg_schemaless: Mirrored) -> None:
    sc.dead_letter_fail_stops_naming_the_offset(pg_schemaless)


def test_json_without_schemas_running_job_follows_a_widened_column(
    pg_schemaless: Mirrored, caplog: pytest.LogCaptureFixture
) -> None:
    """integer -> bigint at the source and `cdcmirror bootstrap` widening the Iceberg column
    while the job runs: values past the int range then arrive whole in the running job,
    never wrapped to another number."""
    m = pg_schemaless
    with continuous_mirror(m.config_path, extra_env=STARTED_LOGGED) as job:
        job.wait_for(STARTED)  # it runs, and decodes with the int column
        with services.pg_connect() as conn:
            conn.execute(f"ALTER TABLE {m.source.table} ALTER COLUMN qty TYPE bigint")
        bootstrap(m.config_path)
        with services.pg_connect() as conn:
            conn.execute(f"UPDATE {m.source.table} SET qty = 3000000000 + id WHERE id % 4 = 0")
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            job.assert_alive()
            big = m.spark.sql(
                f"SELECT count(*) FROM {m.identifier} WHERE qty > 2147483647"
            ).first()[0]
            if big:
                break
            time.sleep(3)
            m.spark.sql(f"REFRESH TABLE {m.identifier}")
        same_within(m, job, 120)
    kind = m.spark.sql(f"SELECT typeof(qty) FROM {m.identifier} LIMIT 1").first()[0]
    assert kind == "bigint"
    # the job kept the field names it applied with the widened column: a next run reads
    # its first batch once in them, without a guess from its first records
    m.workload.run(40)
    sc.settle(m)
    lines = mirror_lines(m, caplog)
    assert [x for x in lines if " done in " in x and "(read once" in x], lines
    assert not [x for x in lines if FIRST_RECORDS in x], lines
    m.assert_same()


FIRST_RECORDS = "in the row schemas of its first records"


def mirror_lines(m: Mirrored, caplog: pytest.LogCaptureFixture) -> list[str]:
    """The job's log lines of one ``m.mirror()`` run."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="cdcmirror"):
        m.mirror()
    return [r.getMessage() for r in caplog.records]


def test_json_without_schemas_batches_are_read_once_in_known_field_names(
    pg_schemaless: Mirrored, caplog: pytest.LogCaptureFixture
) -> None:
    """Schemaless JSON: once the job applied events of a table's field names (kept in the
    checkpoint), its batches of events with those names are read from Kafka once by their
    decode, without a first look; the table equals the source."""
    m = pg_schemaless
    m.workload.run(20)
    sc.settle(m)
    m.mirror()  # applies those events: learns their field names
    m.workload.run(150)
    sc.settle(m)
    lines = mirror_lines(m, caplog)
    tables = [json.loads(x.split(" ", 2)[2]) for x in lines if x.startswith("mirror batch {")]
    assert sum(t["events"] for t in tables if t["table"] == m.identifier) > 150, lines
    assert not [x for x in lines if "a first look at its records" in x], lines
    # in the names the checkpoint kept, not in those of its first records
    assert not [x for x in lines if FIRST_RECORDS in x], lines
    m.assert_same()


def test_json_without_schemas_stopped_table_events_are_replayed(
    pg_schemaless: Mirrored,
) -> None:
    """A new source column stops the table (JSON without schemas does not say its type):
    every change meanwhile, deletes too, is dead-lettered. After `cdcmirror bootstrap` adds
    the column, `replay-dead-letters` applies them through the guarded path: the table
    equals the source, and only the dead letters that still fail (the earlier poison) stay."""
    m = pg_schemaless
    sc.settle(pg_schemaless)
    m.mirror()
    dead = f"SELECT error FROM {m.dead_letter} WHERE table_name = '{m.identifier}'"
    poison = len(m.spark.sql(dead).collect())
    with services.pg_connect() as conn:
        conn.execute(f"ALTER TABLE {m.source.table} ADD COLUMN extra3 text")
        conn.execute(f"UPDATE {m.source.table} SET extra3 = 'x' || id WHERE id % 3 = 0")
    m.workload.run(150)
    sc.settle(pg_schemaless)
    m.mirror()
    m.spark.sql(f"REFRESH TABLE {m.dead_letter}")
    stopped = [r.error for r in m.spark.sql(dead).collect() if "table stopped" in r.error]
    assert len(stopped) > 150, len(stopped)
    bootstrap(m.config_path)
    replayed = run_cli(m.config_path, "replay-dead-letters", "--table", "items")
    assert replayed.exit_code == (1 if poison else 0), replayed.output
    assert f"{len(stopped) + poison} dead letter(s) replayed" in replayed.output
    assert f"{poison} still failing" in replayed.output, replayed.output
    m.extra_columns.append("extra3")
    m.assert_same()
    m.spark.sql(f"REFRESH TABLE {m.dead_letter}")
    left = [r.error for r in m.spark.sql(dead).collect()]
    assert len(left) == poison and not any("table stopped" in e for e in left), left


@pytest.fixture(scope="module")
def pg_avro(stack: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    yield from mirrored(spark_world, "avro", 1000)


def test_avro_same_workload(pg_avro: Mirrored) -> None:
    """Avro in the Confluent wire format through the stack's Apicurio Registry: the same
    workload, TOAST, a new column (a new schema id) and poison values."""
    sc.workload_then_same(pg_avro, 1500)
    assert sc.newest_value(pg_avro.topic)[0] == 0  # magic byte: the Confluent wire format
    toast_values_kept(pg_avro)
    key_change_keeps_toast_values(pg_avro)  # the old key's header is the same with Avro
    add_column_mid_stream(pg_avro)
    sc.avro_poison_goes_to_dead_letter(pg_avro)


@pytest.mark.full
def test_fuzzed_avro_events_are_dead_lettered_and_the_rest_applies(pg_avro: Mirrored) -> None:
    kinds = fuzzed_events_are_dead_lettered(pg_avro, "avro", 13)
    assert len(kinds) == 5, kinds


@pytest.mark.serial  # it kills the shared registry
def test_connector_failed_while_the_registry_was_down_is_restarted_by_the_mirror(
    pg_avro: Mirrored,
) -> None:
    """The schema registry is down when the source's schema changes: Debezium cannot register
    the new schema and its task FAILS, so no change reaches Kafka and no batch runs. Once
    the registry is back, the continuous mirror's connector watch restarts the task (nothing
    else here does) and the rows written meanwhile arrive."""
    m = pg_avro
    connect = services.connect_client()
    name = connector_name(m.name)
    stack = Stack()
    watch = {"CDCMIRROR_MIRROR__CONNECTOR_CHECK_SECONDS": "2"}
    m.workload.run(20)
    sc.settle(pg_avro)
    m.mirror()
    with continuous_mirror(m.config_path, extra_env=watch) as job:
        pid = stack.pid(REGISTRY)
        assert pid is not None, "the stack's registry is not running"
        os.kill(pid, signal.SIGKILL)
        with services.pg_connect() as conn:
            conn.execute(f"ALTER TABLE {m.source.table} ADD COLUMN watched text")
            conn.execute(f"UPDATE {m.source.table} SET watched = 'w' || id WHERE id % 3 = 0")
        m.extra_columns.append("watched")
        deadline = time.monotonic() + 120
        while not failed(connect.status(name)):
            job.assert_alive()
            assert time.monotonic() < deadline, f"the task never failed: {connect.status(name)}"
            time.sleep(1)
        time.sleep(5)  # the watch sees the failure (and may restart it once, in vain)
        stack.up()  # the registry is back
        # the new column too: it came with the failed event
        same_within(m, job, 240, lambda: str(connect.status(name)), (Exception,))
    assert "restarted what FAILED" in job.output, job.output[-3000:]
    assert not failed(connect.status(name))


def test_avro_registry_unreachable_stops_with_its_address(pg_avro: Mirrored) -> None:
    pg_avro.workload.run(30)
    sc.settle(pg_avro)
    before = pg_avro.snapshot_ids()
    bad = "http://127.0.0.1:9/apis/ccompat/v7"
    result = run_cli(
        pg_avro.config_path,
        "mirror",
        "--available-now",
        env={"CDCMIRROR_KAFKA__SCHEMA_REGISTRY_URL": bad},
    )
    assert result.exit_code == 2, result.output
    assert "the schema registry at http://127.0.0.1:9/apis/ccompat/v7 is not reachable" in (
        result.output
    )
    assert pg_avro.snapshot_ids() == before  # nothing applied, nothing skipped:
    pg_avro.mirror()  # the same events apply once the registry is back
    pg_avro.assert_same()


def test_an_event_schema_that_changes_a_column_type_dead_letters_only_its_events(
    pg: Mirrored,
) -> None:
    """A JSON event whose schema says qty is a string (the Iceberg column is int), among real
    events of the same batch: its events are dead-lettered with the reason, the others apply
    (the table does not stop for the batch)."""
    pg.workload.run(50)
    sc.settle(pg)
    pg.mirror()
    real = newest_real_change(pg.topic)
    forged = json.loads(json.dumps(real))
    for part in forged["schema"]["fields"]:
        for f in part.get("fields", []) if part["field"] in ("before", "after") else []:
            if f["field"] == "qty":
                f["type"] = "string"
    forged["payload"]["after"]["qty"] = "12"
    value = json.dumps(forged, separators=(",", ":")).encode()
    only_it_is_dead_lettered(pg, b'{"id": 0}', value, "its schema cannot be applied: column qty")


def newest_real_change(topic: str) -> dict[str, Any]:
    """The newest create or update of the topic that is a Debezium event (the topic also
    holds the fuzzed and poison values of earlier tests)."""
    for _, value in reversed(services.all_records(topic)):
        try:
            event = json.loads(value or b"")
        except ValueError:
            continue
        if not isinstance(event, dict) or not isinstance(event.get("schema"), dict):
            continue
        payload = event.get("payload")
        if not isinstance(payload, dict) or payload.get("op") not in ("c", "u"):
            continue
        if isinstance(payload.get("after"), dict) and isinstance(payload.get("source"), dict):
            return event
    raise AssertionError(f"no Debezium create or update in {topic}")


def only_it_is_dead_lettered(m: Mirrored, key: bytes, value: bytes, reason: str) -> None:
    """``value`` produced between two slices of the workload: after one mirror run it alone
    is in the dead-letter table, with ``reason``; the table equals its source."""
    producer = Producer({"bootstrap.servers": services.KAFKA})
    m.workload.run(20)
    producer.produce(m.topic, key=key, value=value)
    producer.flush(10)
    m.workload.run(20)
    sc.settle(m)
    m.mirror()
    rows = m.spark.sql(
        f"SELECT value, error FROM {m.dead_letter} WHERE topic = '{m.topic}'"
    ).collect()
    errors = [r.error for r in rows if bytes(r.value) == value]
    assert len(errors) == 1, [r.error[:200] for r in rows]
    assert reason in errors[0], errors[0]
    assert not any("table stopped" in r.error for r in rows), [r.error[:200] for r in rows]
    m.assert_same()


def _with_string_qty(schema: Any) -> Any:
    """The Avro schema (parsed JSON) with the row's qty field made a string."""
    if isinstance(schema, dict):
        if schema.get("name") == "qty" and "type" in schema:
            optional = isinstance(schema["type"], list)
            return {**schema, "type": ["null", "string"] if optional else "string"}
        return {k: _with_string_qty(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_with_string_qty(v) for v in schema]
    return schema


def test_an_avro_schema_that_changes_a_column_type_dead_letters_only_its_events(
    pg_avro: Mirrored,
) -> None:
    """A registered Avro schema whose qty is a string (the Iceberg column is int), one event
    framed with it among real events of the same batch: that event is dead-lettered with
    the reason, the others apply."""
    import io
    import urllib.request

    import fastavro

    m = pg_avro
    m.workload.run(30)
    sc.settle(m)
    m.mirror()
    real = sc.newest_value(m.topic)
    registry = load_config(m.config_path).kafka.schema_registry_url
    with urllib.request.urlopen(f"{registry}/schemas/ids/{int.from_bytes(real[1:5])}") as r:
        text = json.loads(r.read())["schema"]
    record: dict[str, Any] = fastavro.schemaless_reader(  # type: ignore[assignment]
        io.BytesIO(real[5:]), fastavro.parse_schema(json.loads(text))
    )
    changed = _with_string_qty(json.loads(text))
    subject = services.unique("cdcmirror-type-change")
    request = urllib.request.Request(
        f"{registry}/subjects/{subject}/versions",
        data=json.dumps({"schema": json.dumps(changed)}).encode(),
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
        method="POST",
    )
    with urllib.request.urlopen(request) as r:
        new_id = int(json.loads(r.read())["id"])
    for row in ("before", "after"):
        if isinstance(record.get(row), dict):
            record[row]["qty"] = "12"
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(changed), record)
    value = b"\x00" + new_id.to_bytes(4, "big") + body.getvalue()
    only_it_is_dead_lettered(m, b"\x00", value, "its schema cannot be applied: column qty")
