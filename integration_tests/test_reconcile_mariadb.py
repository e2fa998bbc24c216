"""`cdcmirror reconcile` against a real MariaDB source mirrored through Debezium, Kafka,
Spark and Iceberg."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from cdcmirror.stack.control import Stack
from support import mirror_scenarios as sc
from support import reconcile_scenarios as rc
from support import services
from support.bootstrap_env import run_cli
from support.mirror_fixture import Mirrored, maria_mirrored
from support.spark import SparkWorld


@pytest.fixture(scope="module")
def maria(stack: Stack, mariadb: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    yield from maria_mirrored(spark_world, 500, signal=True)


def test_in_sync_after_a_mirrored_workload(maria: Mirrored) -> None:
    rc.in_sync_after_workload(maria, 1500, [])  # every column compared, floats too


def test_lagging_reported_in_every_format(maria: Mirrored) -> None:
    rc.lagging_reported_in_every_format(maria)


def test_drift_found_with_its_keys_then_repaired(maria: Mirrored) -> None:
    keys_file = rc.drift_found_with_keys(maria)
    rc.repair_heals(maria, keys_file)


def test_a_removed_extra_row_stays_gone_when_its_insert_is_read_again(maria: Mirrored) -> None:
    """Issue 67, item 6: a row only the mirror has (its source delete never reached the
    binlog: ``sql_log_bin = 0``) is removed by `repair` as a delete, with a tombstone; when
    the connector then reads the binlog again from before the row's insert, the insert is
    older than the tombstone and the row does not come back. Before, repair deleted it with
    a plain DELETE and the replayed insert brought it back."""
    client, name = services.connect_client(), f"cdcmirror-{maria.name}"
    sc.settle(maria)
    maria.mirror()
    older = client.offsets(name)  # before the insert
    key = 10**11 + 7
    conn = maria.source.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"INSERT INTO {maria.source.table} (id, name) VALUES (%s, 'ghost')", (key,))
            cur.execute("SET SESSION sql_log_bin = 0")  # a delete the binlog never sees
            cur.execute(f"DELETE FROM {maria.source.table} WHERE id = %s", (key,))
    finally:
        conn.close()
    sc.settle(maria)
    maria.mirror()
    code, report = rc.reconcile(maria, "--deep", "--settle", "5")
    assert code == 1 and rc.only_table(report)["deep"]["extra_keys"] == [{"id": str(key)}]
    keys_file = maria.config_path.parent / f"{maria.name}-ghost.json"
    keys_file.write_text(json.dumps(report))
    result = run_cli(maria.config_path, "repair", "--table", "items", "--keys-from", str(keys_file))
    assert result.exit_code == 0 and "removed 1 row(s)" in result.stdout, result.output
    client.stop(name)
    try:
        client.alter_offsets(name, older)  # the insert of the key is read again
    finally:
        client.resume(name)
    client.wait_running(name)
    sc.settle(maria)
    maria.mirror()
    ghost = maria.spark.sql(f"SELECT count(*) FROM {maria.identifier} WHERE id = {key}")
    assert ghost.first()[0] == 0, "the replayed insert brought the removed row back"
    maria.assert_same()
