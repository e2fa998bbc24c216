"""History (``mirror.history``) against real PostgreSQL and MariaDB, Debezium, Kafka, Spark and
Iceberg. A random workload (inserts, updates, deletes, key changes, chains of key changes
with unchanged TOAST values between them on PostgreSQL, multi-statement and interleaved
transactions) and a TRUNCATE; the source's rows and position recorded at moments between
its transactions. After the mirror ran (in many small batches, then one big one, then a
batch run again after a crash, then a replay of the whole topic), the table rebuilt from
the history as of each recorded moment equals the source's rows at that moment, row by
row; every key's versions chain; the current ones are the mirrored table; ``reconcile
--deep`` agrees, and sees a history that no longer does."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from cdcmirror.mirror.positions import reread_sql
from cdcmirror.spark.rows import first_value
from cdcmirror.stack.control import Stack
from support import mirror_scenarios as sc
from support.bootstrap_env import run_cli
from support.history_check import (
    Moment,
    as_of_rows,
    assert_chains,
    position_now,
    versions,
)
from support.mirror_env import assert_rows_equal, run_mirror_process, source_rows
from support.mirror_fixture import Mirrored, maria_mirrored, mirrored
from support.reconcile_scenarios import mirror_until_in_sync
from support.spark import SparkWorld

HISTORY: dict[str, object] = {"history": ["*.items"]}
NOW = {"postgresql": (2**62,), "mysql": (2**31, 0)}  # a moment after every change


# The longest runs of the suite (PostgreSQL's about 8 minutes, MariaDB's 4): outside CI
# (`make test-full`); CI runs spark_tests/test_history_apply.py, both dialects' history
# made from recorded events and re-reads on real Spark and Iceberg
@pytest.fixture(
    scope="module",
    params=[pytest.param(d, marks=pytest.mark.full) for d in ("postgresql", "mariadb")],
)
def hist(
    request: pytest.FixtureRequest, stack: Stack, spark_world: SparkWorld
) -> Iterator[Mirrored]:
    if request.param == "postgresql":
        request.getfixturevalue("postgres")
        yield from mirrored(
            spark_world, "json", 300, chains=True, signal=True, mirror_settings=HISTORY
        )
    else:
        request.getfixturevalue("mariadb")
        yield from maria_mirrored(spark_world, 300, chains=True, mirror_settings=HISTORY)


@contextmanager
def _batches_of(events: int) -> Iterator[None]:
    key = "CDCMIRROR_MIRROR__MAX_EVENTS_PER_BATCH"
    os.environ[key] = str(events)
    try:
        yield
    finally:
        os.environ.pop(key, None)


def _history(m: Mirrored) -> str:
    return m.identifier + "__history"


def _moment(m: Mirrored, moments: list[Moment], operations: int) -> None:
    m.workload.run(operations)
    moments.append(Moment(position_now(m.source), source_rows(m.source, m.columns())))


def _truncate(m: Mirrored) -> None:
    conn = m.source.connect()
    try:
        cur = conn.cursor()
        cur.execute(f"TRUNCATE TABLE {m.source.table}")
        conn.commit()
    finally:
        conn.close()
    m.workload.ids.clear()


def _check(m: Mirrored, moments: list[Moment], drifted: frozenset[int] = frozenset()) -> None:
    """The mirror equals the source; the history chains, its current versions are the
    mirror's rows, and as of each moment it holds what the source held (but for the keys
    whose versions a test changed behind the mirror's back: ``drifted``)."""
    rows = m.assert_same()
    spark, columns, dialect = m.spark, m.columns(), m.source.dialect
    keys = assert_chains(versions(spark, _history(m)))
    assert keys >= rows
    current = as_of_rows(spark, _history(m), columns, dialect, NOW[dialect])
    assert_rows_equal("current versions", columns, source_rows(m.source, columns), current)
    for i, moment in enumerate(moments):
        got = as_of_rows(spark, _history(m), columns, dialect, moment.position)
        want = {k: v for k, v in moment.rows.items() if k not in drifted}
        got = {k: v for k, v in got.items() if k not in drifted}
        assert_rows_equal(f"as of moment {i} {moment.position}", columns, want, got)


def _reconcile(m: Mirrored) -> dict[str, object]:
    result = run_cli(m.config_path, "reconcile", "--deep", "--output", "json")
    assert result.stdout.lstrip().startswith("{"), result.output[-3000:]
    report = json.loads(result.stdout)
    (table,) = report["tables"]
    assert isinstance(table, dict)
    history = table["history"]
    assert isinstance(history, dict)
    return {"exit": result.exit_code, **history}


def _drift_repaired(m: Mirrored) -> frozenset[int]:
    """Changes the mirror and its history both missed (a row changed, a row never
    inserted, a row the source no longer has), found by ``reconcile --deep`` and repaired:
    the changed and missing rows, re-read by Debezium, make versions marked ``repair``; the
    extra row's version ends, deleted; the whole table read again makes none. Returns the
    keys whose versions were changed behind the mirror's back."""
    h, spark = _history(m), m.spark
    changed, missing, copied = (
        int(r[0]) for r in spark.sql(f"SELECT id FROM {m.identifier} ORDER BY id LIMIT 3").collect()
    )
    extra = 10**12
    for t, current in ((m.identifier, "true"), (h, "_cdc_is_current")):
        spark.sql(f"UPDATE {t} SET name = 'missed' WHERE id = {changed} AND {current}")
        spark.sql(
            f"INSERT INTO {t} SELECT {extra} AS id, * EXCEPT (id) FROM {t} "
            f"WHERE id = {copied} AND {current}"
        )
    spark.sql(f"DELETE FROM {m.identifier} WHERE id = {missing}")
    spark.sql(f"DELETE FROM {h} WHERE id = {missing}")
    found = run_cli(m.config_path, "reconcile", "--deep", "--settle", "5", "--output", "json")
    assert found.exit_code == 1, found.output[-3000:]
    report = m.config_path.parent / f"{m.name}-history-drift.json"
    report.write_text(found.stdout)
    done = run_cli(m.config_path, "repair", "--table", "items", "--keys-from", str(report))
    assert done.exit_code == 0 and "removed 1 row(s)" in done.stdout, done.output[-3000:]
    mirror_until_in_sync(m)
    by_key = {k: [v for v in versions(spark, h) if v["id"] == k] for k in (changed, missing)}
    for key, chain in by_key.items():
        assert chain[-1]["_cdc_op"] == "repair" and chain[-1]["_cdc_is_current"], (key, chain)
    assert len(by_key[missing]) == 1, by_key[missing]
    (ended,) = [v for v in versions(spark, h) if v["id"] == extra]
    assert ended["_cdc_deleted"] and not ended["_cdc_is_current"], ended
    assert list(ended["_cdc_valid_to"]) > list(ended["_cdc_valid_from"]), ended

    # the whole table read again, the mirror right: no version
    kept = versions(spark, h)
    again = run_cli(m.config_path, "repair", "--table", "items", "--method", "snapshot")
    assert again.exit_code == 0, again.output[-3000:]
    reread = f"SELECT count_if(NOT {reread_sql()}) FROM {m.identifier}"
    deadline = time.monotonic() + 300
    while first_value(spark.sql(reread)) and time.monotonic() < deadline:
        sc.settle(m)
        m.mirror()
    assert first_value(spark.sql(reread)) == 0, "the table was not read again"
    assert versions(spark, h) == kept
    return frozenset((changed, missing, extra))


def test_history_rebuilds_the_table_as_of_every_moment(hist: Mirrored) -> None:
    m = hist
    moments: list[Moment] = []
    for _ in range(3):
        _moment(m, moments, 150)
    sc.settle(m)
    with _batches_of(40):  # many small batches
        m.mirror()
    _check(m, moments)

    _moment(m, moments, 100)
    _truncate(m)
    _moment(m, moments, 120)
    _moment(m, moments, 120)
    sc.settle(m)
    with _batches_of(0):  # one big batch, the TRUNCATE in it
        m.mirror()
    _check(m, moments)
    deleted = m.spark.sql(f"SELECT count_if(_cdc_deleted) FROM {_history(m)}").first()
    assert deleted is not None and deleted[0] > 0

    # a batch run again after its commits, before the checkpoint recorded it
    _moment(m, moments, 100)
    sc.settle(m)
    crashed = run_mirror_process(m.config_path, {"CDCMIRROR_FAULT": "after-commit"})
    assert crashed.returncode == 86, crashed.stderr[-3000:]
    m.mirror()
    _check(m, moments)

    # the connector's offsets reset: a new snapshot and every change sent again
    before = versions(m.spark, _history(m))
    sc.replay_changes_nothing(m, f"cdcmirror-{m.name}", [])
    assert versions(m.spark, _history(m)) == before, "a replay changed the history"
    _check(m, moments)

    # compaction and expiry cover the history table, and change none of its versions
    done = run_cli(m.config_path, "--output", "json", "maintain")
    assert done.exit_code == 0, done.output[-3000:]
    assert _history(m) in [r["table"] for r in json.loads(done.stdout)]
    m.spark.sql(f"REFRESH TABLE {_history(m)}")
    assert versions(m.spark, _history(m)) == before
    _check(m, moments)

    drifted = _drift_repaired(m)
    _check(m, moments, drifted)

    agreed = _reconcile(m)
    assert agreed["problem"] is None and agreed["exit"] == 0, agreed
    assert agreed["broken_chains"] == 0 and agreed["differing"] == 0, agreed
    # a history that no longer agrees is seen
    m.spark.sql(
        f"UPDATE {_history(m)} SET _cdc_is_current = false "
        f"WHERE id = (SELECT min(id) FROM {_history(m)} WHERE _cdc_is_current)"
    )
    broken = _reconcile(m)
    assert broken["exit"] == 1 and broken["problem"], broken
    assert broken["current_versions"] == int(agreed["current_versions"]) - 1  # type: ignore[call-overload]

    # taken out of mirror.history: bootstrap leaves the history table as it stands, and the
    # job stops writing it
    off = run_cli(m.config_path, "bootstrap", env={"CDCMIRROR_MIRROR__HISTORY": ""})
    assert off.exit_code == 0, off.output[-3000:]
    kept = versions(m.spark, _history(m))
    m.workload.run(60)
    sc.settle(m)
    m.mirror()
    m.assert_same()
    assert versions(m.spark, _history(m)) == kept
