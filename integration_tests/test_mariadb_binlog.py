"""MariaDB server-wide binlog settings and history (own module: they touch every connector on
the server, so no connector of another module may be running while they change)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import closing

import pytest

from cdcmirror.stack.control import Stack
from support import mirror_scenarios as sc
from support import reconcile_scenarios as rc
from support import services
from support.bootstrap_env import run_cli
from support.mirror_env import mirror_rows, run_mirror_process
from support.mirror_fixture import Mirrored, bootstrap, maria_mirrored
from support.spark import SparkWorld

pytestmark = pytest.mark.serial  # see the marker in pyproject.toml


@pytest.fixture
def fresh(stack: Stack, mariadb: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    yield from maria_mirrored(spark_world, 100, signal=True)


def _set_global(statement: str) -> None:
    admin = services.maria_connect()
    try:
        with admin.cursor() as cur:
            cur.execute(statement)
    finally:
        admin.close()


def test_compressed_binlog_is_refused_and_reported(
    fresh: Mirrored, caplog: pytest.LogCaptureFixture
) -> None:
    """With log_bin_compress ON, MariaDB hands Debezium a placeholder instead of each
    compressed row event and the connector stays RUNNING: changes vanish
    (``source/binlog_settings.py``). bootstrap refuses such a server, check and reconcile exit
    2 naming the setting, the mirror logs it; once it is OFF, reconcile --deep finds the lost
    changes and repair heals them."""
    m = fresh
    sc.settle(m)
    m.mirror()
    m.assert_same()
    _set_global("SET GLOBAL log_bin_compress_min_len = 10")
    _set_global("SET GLOBAL log_bin_compress = ON")
    try:
        m.workload.run(30)
        sc.settle()  # a fixed wait: the marker row (sc.settle(m)) would be compressed and lost
        with caplog.at_level("INFO", logger="cdcmirror"):
            m.mirror()
        errors = " ".join(r.getMessage() for r in caplog.records if r.levelname == "ERROR")
        assert "log_bin_compress is ON" in errors, errors
        check = run_cli(m.config_path, "check")
        assert check.exit_code == 2 and "log_bin_compress is ON" in check.output, check.output
        again = run_cli(m.config_path, "bootstrap")
        assert again.exit_code == 2, again.output
        assert "log_bin_compress is ON" in again.output, again.output
        assert "Nothing was created" in again.output, again.output
        result = run_cli(m.config_path, "reconcile", "--output", "json", "--settle", "0")
        table = rc.only_table(json.loads(result.stdout))
        assert result.exit_code == 2, result.output
        assert "log_bin_compress is ON" in (table.get("error") or ""), table
    finally:
        _set_global("SET GLOBAL log_bin_compress = OFF")
    code, report = rc.reconcile(m, "--deep", "--settle", "5")
    deep = rc.only_table(report)["deep"]
    lost = len(deep["changed_keys"]) + len(deep["missing_keys"]) + len(deep["extra_keys"])
    assert code == 1 and lost > 0, deep  # the loss is real, and reconcile sees it
    rc.repair_report_until_in_sync(m, report, "compressed")


def test_a_reset_binlog_is_reported_and_its_changes_stop_the_mirror(
    fresh: Mirrored, caplog: pytest.LogCaptureFixture
) -> None:
    """RESET MASTER while the connector streams: the task fails, and restarted it resumes at
    a position of the old history (it then sat RUNNING streaming nothing, or decoded rows of
    the new history with stale table ids and failed: both seen), which check, reconcile and
    the mirror report (``mirror/binlog_history.py``). Once the connector's offsets are
    reset, a snapshot of the new history arrives at positions below the stored rows': the
    mirror stops before writing anything (``positions.went_backwards_sql``), where it used
    to skip them as old. The remedy it names (teardown, bootstrap) ends equal to the
    source."""
    m = fresh
    name = f"cdcmirror-{m.name}"
    client = services.connect_client()
    filler = services.unique("filler_db")
    with closing(services.maria_connect()) as conn, conn.cursor() as cur:
        # stored rows past 8 MB of binlog, so that the new history stays below them
        services.maria_database(cur, filler)
        cur.execute(f"CREATE TABLE {filler}.pad (id int PRIMARY KEY, pad longtext)")
        for i in range(8):
            cur.execute(f"INSERT INTO {filler}.pad VALUES (%s, REPEAT('x', 1048576))", (i,))
        cur.execute(f"DROP DATABASE {filler}")
        cur.execute(f"UPDATE {m.source.table} SET qty = IF(qty IS NULL, 1, NULL)")  # every row
    sc.settle(m)
    m.mirror()
    m.assert_same()
    before = mirror_rows(m.spark, m.identifier, m.columns(), m.source.dialect)
    _set_global("RESET MASTER")
    time.sleep(5)
    client.restart_failed(name)  # as the mirror's watch does; it may fail again
    time.sleep(5)
    check = run_cli(m.config_path, "check")
    assert check.exit_code == 2 and "RESET MASTER" in check.output, check.output
    result = run_cli(m.config_path, "reconcile", "--output", "json", "--settle", "0")
    assert result.exit_code == 2, result.output
    assert "RESET MASTER" in (rc.only_table(json.loads(result.stdout)).get("error") or "")
    with caplog.at_level("INFO", logger="cdcmirror"):
        m.mirror()
    errors = " ".join(r.getMessage() for r in caplog.records if r.levelname == "ERROR")
    assert "RESET MASTER" in errors, errors
    m.workload.run(20)
    # what Debezium advises for a lost position: forget the offsets, take a new snapshot
    client.stop(name)
    client.reset_offsets(name)
    client.resume(name)
    client.wait_running(name)
    sc.settle(m)
    stopped = run_mirror_process(m.config_path)
    assert stopped.returncode == 2, stopped.stderr[-3000:]
    assert "restarted source history" in stopped.stderr, stopped.stderr[-3000:]
    assert "cdcmirror teardown --yes --topics --checkpoint --tables" in stopped.stderr
    assert mirror_rows(m.spark, m.identifier, m.columns(), m.source.dialect) == before
    teardown = run_cli(m.config_path, "teardown", "--yes", "--topics", "--checkpoint", "--tables")
    assert teardown.exit_code == 0, teardown.output
    bootstrap(m.config_path)
    services.wait_topic_quiet(m.topic)
    m.mirror()
    m.assert_same()
