"""`cdcmirror mirror` against real MariaDB, Debezium, Kafka, Spark and Iceberg: the Iceberg
table equals the source, row by row, after every step."""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from cdcmirror.bootstrap.connector import CAPTURED_DDL_ONLY
from cdcmirror.commands.mirror import mirror
from cdcmirror.config import load_config
from cdcmirror.stack.control import Stack
from support import mirror_scenarios as sc
from support import reconcile_scenarios as rc
from support import services
from support.bootstrap_env import run_cli
from support.fuzz_run import fuzzed_events_are_dead_lettered
from support.mirror_env import run_mirror_process
from support.mirror_fixture import Mirrored, bootstrap, make_config, maria_mirrored
from support.spark import SparkWorld

SEED = 1121


@pytest.fixture(scope="module")
def maria(stack: Stack, mariadb: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    yield from maria_mirrored(spark_world, 1000)


def _connector_states(name: str) -> list[str]:
    status = services.connect_client().status(name)
    return [status["connector"]["state"]] + [t["state"] for t in status["tasks"]]


def test_a_table_debezium_cannot_parse_outside_include_does_not_stop_it(
    stack: Stack, mariadb: None, spark_world: SparkWorld
) -> None:
    """An INET6 column (Debezium's DDL parser cannot read it) in another database of the same
    server, there before the snapshot and created while streaming, visible to the connector's
    user: the connector keeps running and the mirrored table stays equal to the source."""
    other = services.unique("other_db")
    admin = services.maria_connect()
    with admin.cursor() as cur:
        services.maria_database(cur, other)
        cur.execute(f"CREATE TABLE {other}.addrs (id int PRIMARY KEY, addr inet6)")
    mirrored = maria_mirrored(spark_world, 100)
    m = next(mirrored)
    try:
        sc.workload_then_same(m, 200)
        with admin.cursor() as cur:
            cur.execute(f"CREATE TABLE {other}.addrs2 (id int PRIMARY KEY, addr inet6)")
            cur.execute(f"INSERT INTO {other}.addrs2 VALUES (1, '::1')")
            cur.execute(f"ALTER TABLE {other}.addrs ADD COLUMN addr2 inet6")
        sc.workload_then_same(m, 200)
        assert set(_connector_states(f"cdcmirror-{m.name}")) == {"RUNNING"}
        failed_connector_is_reported(m, admin)
    finally:
        mirrored.close()
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE {other}")
        admin.close()


def test_bootstrap_refuses_a_table_an_old_connector_has_no_ddl_for(
    stack: Stack, mariadb: None, spark_world: SparkWorld
) -> None:
    """A connector registered keeping only its captured tables' DDL (as cdcmirror did
    before) has no schema for a table added to the source later and would fail at its first
    change: bootstrap refuses to add it (exit 2), naming it and what to do, and leaves the
    connector as it was. (Connectors registered now keep every table's DDL: a table added
    mid-run joins, ``test_consistent_tag.py``.)"""
    mirrored = maria_mirrored(spark_world, 10)
    m = next(mirrored)
    name = f"cdcmirror-{m.name}"
    client = services.connect_client()
    admin = services.maria_connect()
    try:
        old = {**client.config(name), CAPTURED_DDL_ONLY: "true"}
        client.put(name, old, validate=False)
        client.wait_running(name)
        with admin.cursor() as cur:
            cur.execute(f"CREATE TABLE {m.name}.added (id int PRIMARY KEY, v int)")
            cur.execute(f"INSERT INTO {m.name}.added VALUES (1, 1)")
        refused = run_cli(m.config_path, "bootstrap")
        assert refused.exit_code == 2, refused.output
        assert f"cannot start capturing {m.name}.added" in refused.output, refused.output
        assert "cdcmirror teardown --yes --topics --checkpoint --tables" in refused.output
        after = client.config(name)
        assert after["table.include.list"] == old["table.include.list"]
        assert after[CAPTURED_DDL_ONLY] == "true"
        client.wait_running(name)  # fails with the trace if its task failed
    finally:
        mirrored.close()
        admin.close()


def failed_connector_is_reported(m: Mirrored, admin: Any) -> None:
    """A mirrored table gets a column Debezium cannot parse: its task FAILS at the next row
    event. `check` and `reconcile` exit 2 and `mirror` logs it, naming the connector, the
    state and the cause."""
    name = f"cdcmirror-{m.name}"
    with admin.cursor() as cur:
        cur.execute(f"ALTER TABLE {m.source.table} ADD COLUMN addr inet6")
        cur.execute(f"UPDATE {m.source.table} SET addr = '::1' WHERE id % 2 = 0")
    deadline = time.monotonic() + 60
    while "FAILED" not in _connector_states(name) and time.monotonic() < deadline:
        time.sleep(1)
    assert "FAILED" in _connector_states(name)
    check = run_cli(m.config_path, "check")
    assert check.exit_code == 2, check.output
    assert f"connector '{name}': task 0 is FAILED" in check.output, check.output
    assert "restart?includeTasks=true" in check.output
    code, report = _reconcile_json(m)
    assert code == 2 and report["tables"][0]["status"] == "error", report
    assert f"connector '{name}'" in report["tables"][0]["error"]
    job = run_mirror_process(m.config_path)  # its log is on stderr
    assert job.returncode == 0, job.stderr[-3000:]
    assert f"connector '{name}': task 0 is FAILED" in job.stderr, job.stderr[-3000:]


def _reconcile_json(m: Mirrored) -> tuple[int, dict[str, Any]]:
    result = run_cli(m.config_path, "reconcile", "--output", "json", "--settle", "0")
    return result.exit_code, json.loads(result.stdout)


def test_tinyint1_key_keeps_every_key_and_a_non_boolean_value_is_dead_lettered(
    stack: Stack, mariadb: None, spark_world: SparkWorld
) -> None:
    """tinyint(1) is MySQL's BOOLEAN, but a key of that type holds 0..127: mapped to int it
    keeps every row. A non-key tinyint(1) holding 7 is not guessed as true: dead-lettered."""
    database = services.unique("mir_tiny")
    admin = services.maria_connect()
    with admin.cursor() as cur:
        services.maria_database(cur, database)
        cur.execute(f"CREATE TABLE {database}.flags (k tinyint(1) PRIMARY KEY, f tinyint(1))")
        cur.execute(f"INSERT INTO {database}.flags VALUES (0, 0), (1, 1), (2, 1), (3, 0)")
        services.maria_signal_table(cur, database)  # what settling waits on
    config = make_config(spark_world.config.base_dir, database, "mysql", f"{database}.*", database)
    try:
        bootstrap(config)
        services.wait_published_maria(database, database)
        mirror_once(config)
        table = f"{database}_mirror.flags"
        rows = spark_world.spark.sql(f"SELECT k, f FROM {table} ORDER BY k").collect()
        assert [tuple(r) for r in rows] == [(0, False), (1, True), (2, True), (3, False)]
        with admin.cursor() as cur:
            cur.execute(f"INSERT INTO {database}.flags VALUES (4, 7)")
        services.wait_published_maria(database, database)
        mirror_once(config)
        assert spark_world.spark.sql(f"SELECT * FROM {table} WHERE k = 4").count() == 0
        dead = spark_world.spark.sql(
            f"SELECT error FROM {database}_mirror__cdcmirror.dead_letter"
        ).collect()
        assert len(dead) == 1 and "column f: value does not convert" in dead[0].error, dead
    finally:
        services.connect_client().delete(f"cdcmirror-{database}")
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE {database}")
        admin.close()


def mirror_once(config: Path) -> None:
    os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
    mirror(load_config(config), available_now=True)


def test_fixed_binary_values_ending_in_zero_bytes_stay_whole(
    stack: Stack, mariadb: None, spark_world: SparkWorld
) -> None:
    """The binlog drops trailing zero bytes of BINARY(n) values; snapshot and streamed
    values must come out whole (Debezium pads BINARY to its length, DBZ-254)."""
    values = [
        b"\x01\x02" + b"\x00" * 6,
        b"\x00" * 8,
        b"\xff" * 7 + b"\x00",
        b"\x00\x10\x00\x00\x00\x00\x00\x07",
        b"abcdefgh",
    ]
    for m in maria_mirrored(spark_world, 30, extra={"bin": "binary(8)"}):
        sc.settle(m)  # the snapshot is over: the updates below are streamed
        conn = m.source.connect()
        with conn.cursor() as cur:
            cur.execute(f"SELECT id FROM {m.source.table} ORDER BY id")
            ids = [r[0] for r in cur.fetchall()]
            for i, key in enumerate(ids):  # streamed
                cur.execute(
                    f"UPDATE {m.source.table} SET bin = %s WHERE id = %s",
                    (values[i % len(values)], key),
                )
        conn.close()
        services.wait_topic_quiet(m.topic)
        m.mirror()
        m.assert_same()
        stored = m.spark.sql(f"SELECT count(*) FROM {m.identifier} WHERE length(bin) = 8")
        assert stored.first()[0] == len(ids) > 5


def test_random_workload_snapshot_and_stream(maria: Mirrored) -> None:
    assert sc.workload_then_same(maria, 4000) > 100


@sc.WORKLOAD_BATCHES
def test_random_workload_with_key_change_chains_and_big_values(
    stack: Stack, mariadb: None, spark_world: SparkWorld, batch: int, operations: int
) -> None:
    """Operations with chains of key changes and updates that leave big values alone,
    mirrored in one batch and in small batches (of 200 events in CI, of 400 in
    `make test-full`)."""
    # the one batch is read by tasks of 700 events: a Kafka partition split across tasks
    settings: dict[str, object] = (
        {"max_events_per_batch": batch} if batch else {"events_per_task": 700}
    )
    for m in maria_mirrored(spark_world, 300, chains=True, mirror_settings=settings):
        sc.acceptance_run(m, operations, batch)


def test_add_column_mid_stream(maria: Mirrored) -> None:
    add_column_mid_stream(maria)


def add_column_mid_stream(maria: Mirrored) -> None:
    maria.workload.run(100)
    conn = services.maria_connect()
    with conn.cursor() as cur:
        cur.execute(f"ALTER TABLE {maria.source.table} ADD COLUMN extra bigint")
        cur.execute(f"UPDATE {maria.source.table} SET extra = id * 1000000007 WHERE id % 2 = 0")
    conn.close()
    maria.workload.run(200)
    sc.settle(maria)
    maria.mirror()
    maria.extra_columns.append("extra")
    maria.assert_same()


def test_crash_after_commit_before_checkpoint(maria: Mirrored) -> None:
    sc.crash_after_commit_then_restart(maria, 300)


# The two below go through the Kafka offsets and the Iceberg commit, not the source's
# positions: CI runs them on PostgreSQL (and the chaos run kills the mirror on both sources);
# `make test-full` runs them here too.
@pytest.mark.full
def test_lost_checkpoint_resumes_from_the_offsets_the_table_records(
    maria: Mirrored, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("INFO", logger="cdcmirror"):
        sc.lost_checkpoint_resumes_from_table_offsets(maria, lambda: caplog.text)


@pytest.mark.full
def test_crash_mid_merge(maria: Mirrored) -> None:
    sc.crash_mid_merge_then_restart(maria, 2000)


def test_connector_replay_from_older_offsets_changes_nothing(maria: Mirrored) -> None:
    replay_from_older_offsets(maria)


def replay_from_older_offsets(maria: Mirrored) -> None:
    client = services.connect_client()
    name = f"cdcmirror-{maria.name}"
    older = client.offsets(name)  # where the connector is now ...
    maria.workload.run(300)  # ... then more changes, mirrored
    sc.settle(maria)
    maria.mirror()
    maria.assert_same()
    before = maria.snapshot_ids()
    sc.replay_changes_nothing(maria, name, older)  # back to the older binlog position
    assert maria.snapshot_ids() == before, "replayed events must not commit anything"


def test_poison_message_goes_to_dead_letter(maria: Mirrored) -> None:
    sc.poison_goes_to_dead_letter(maria)


def test_fuzzed_json_events_are_dead_lettered_and_the_rest_applies(maria: Mirrored) -> None:
    """``fuzz_events.py`` on MariaDB's envelope (binlog file and position)."""
    kinds = fuzzed_events_are_dead_lettered(maria, "json", 14)
    assert len(kinds) > 10, kinds


@pytest.fixture(scope="module")
def maria_schemaless(stack: Stack, mariadb: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    yield from maria_mirrored(spark_world, 1000, kafka_format="json-schemaless")


@pytest.mark.full
def test_json_without_schemas_same_workload(maria_schemaless: Mirrored) -> None:
    sc.workload_then_same(maria_schemaless, 4000)
    sc.poison_goes_to_dead_letter(maria_schemaless)


@pytest.fixture(scope="module")
def maria_avro(stack: Stack, mariadb: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    yield from maria_mirrored(spark_world, 1000, kafka_format="avro")


@pytest.mark.full
def test_avro_same_workload(maria_avro: Mirrored) -> None:
    """Avro in the Confluent wire format through the stack's Apicurio Registry: the same
    workload, a new column (a new schema id), a replay, poison values."""
    sc.workload_then_same(maria_avro, 1500)
    assert sc.newest_value(maria_avro.topic)[0] == 0  # magic byte: the Confluent wire format
    add_column_mid_stream(maria_avro)
    replay_from_older_offsets(maria_avro)
    sc.avro_poison_goes_to_dead_letter(maria_avro)


def _v4_uuid(rnd: random.Random, zeros: int = 0, leading: int = 0) -> uuid.UUID:
    """A random version-4 UUID (MariaDB takes RFC 4122 ones) whose last ``zeros`` bytes and
    first ``leading`` bytes are zero (the others are not)."""
    value = rnd.getrandbits(128) | 1 << 127 | 1
    value = value & ~(0xF << 76) | 4 << 76  # version 4
    value = value & ~(0x3 << 62) | 0x2 << 62  # RFC 4122 variant
    value &= ~((1 << (8 * zeros)) - 1)
    value &= (1 << (128 - 8 * leading)) - 1
    return uuid.UUID(int=value)


def test_uuid_values_ending_in_zero_bytes_are_mirrored_exactly(
    stack: Stack, mariadb: None, spark_world: SparkWorld
) -> None:
    """Issue 67, item 7: MariaDB drops a UUID's trailing zero bytes from the binlog, and
    Debezium's own converter puts them in front. bootstrap registers cdcmirror's converter
    (``jvm/java/mariadb-uuid``), which puts them back at the end: UUIDs ending in one to
    fifteen zero bytes, beginning with zero bytes, all zero, and MariaDB's own (version 1)
    arrive exactly as the source holds them, inserted, updated and deleted, with no repair.
    Before, every streamed value ending in a zero byte was wrong until `repair` ran."""
    rnd = random.Random(SEED)
    fixture = maria_mirrored(spark_world, 40, signal=True, extra={"u": "UUID"})
    m = next(fixture)
    try:
        connector = services.connect_client().config(f"cdcmirror-{m.name}")
        assert connector["cdcmirror_uuid.type"] == "io.cdcmirror.debezium.MariaDbUuidConverter"
        sc.settle(m)  # the snapshot is over: the changes below are streamed, not snapshotted
        ids = sorted(m.workload.ids)
        values = [_v4_uuid(rnd, zeros) for zeros in (1, 2, 3, 8, 15)]
        values += [_v4_uuid(rnd, leading=2), _v4_uuid(rnd, 1, leading=1), uuid.UUID(int=0)]
        with closing(services.maria_connect(m.name)) as conn, conn.cursor() as cur:
            for i, value in zip(ids, values, strict=False):
                cur.execute("UPDATE items SET u = %s WHERE id = %s", (str(value), i))
            cur.execute("UPDATE items SET u = UUID() WHERE id = %s", (ids[len(values)],))
            for n, value in enumerate(values[:3]):
                cur.execute("INSERT INTO items (id, u) VALUES (%s, %s)", (10**9 + n, str(value)))
            cur.execute("DELETE FROM items WHERE id = %s", (ids[0],))
        sc.settle(m)
        m.mirror()
        source = _uuids(m, "u IS NOT NULL")
        assert len(source) == len(values) + 3, source
        assert _mirrored_uuids(m) == source
        m.assert_same()
        code, report = rc.reconcile(m, "--deep", "--settle", "0")
        assert code == 0, rc.only_table(report)
        # a connector that reads the UUID column without the converter stops the mirror
        client = services.connect_client()
        name = f"cdcmirror-{m.name}"
        plain = {k: v for k, v in connector.items() if not k.startswith(("converters", "cdcm"))}
        client.put(name, plain)
        refused = run_cli(m.config_path, "mirror", "--available-now")
        assert refused.exit_code == 2, refused.output
        assert "without cdcmirror's MariaDB UUID converter" in refused.output, refused.output
        again = run_cli(m.config_path, "bootstrap")
        assert again.exit_code == 0 and "cdcmirror_uuid" in json.dumps(client.config(name))
    finally:
        fixture.close()


def _uuids(m: Mirrored, where: str) -> dict[int, str]:
    with closing(services.maria_connect(m.name)) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT id, CAST(u AS CHAR) FROM items WHERE {where}")
        return {int(i): str(u) for i, u in cur.fetchall()}


def _mirrored_uuids(m: Mirrored) -> dict[int, str]:
    rows = m.spark.sql(
        f"SELECT id, u FROM {m.identifier} WHERE u IS NOT NULL AND NOT _cdc_deleted"
    ).collect()
    return {int(r.id): str(r.u) for r in rows}
