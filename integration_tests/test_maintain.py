"""`cdcmirror maintain` on real Iceberg tables: a table given 200 small MERGE commits ends
with at least 10x fewer data and delete files and the same rows; on a live mirror, while
the mirror keeps committing, no row is lost or duplicated."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from cdcmirror.stack.control import Stack
from support import maintain_env as me
from support import mirror_scenarios as sc
from support import reconcile_scenarios as rc
from support import services
from support.bootstrap_env import run_cli
from support.mirror_env import continuous_mirror
from support.mirror_fixture import Mirrored, mirrored
from support.spark import SparkWorld

COMMITS = 40  # small MERGEs of 45 rows before maintain: about 1 s each here


def maintain(config: Any, *args: str) -> list[dict[str, Any]]:
    result = run_cli(config, "--output", "json", "maintain", *args)
    assert result.exit_code == 0, result.output
    data: list[dict[str, Any]] = json.loads(result.stdout)
    return data


@pytest.fixture(scope="module")
def merged(postgres: None, spark_world: SparkWorld) -> Iterator[tuple[Any, str]]:
    schema = services.unique("maint_pg")
    config, identifier = me.bootstrapped_table(spark_world.config.base_dir, schema)
    me.load_then_small_merges(spark_world.spark, identifier, COMMITS)
    try:
        yield config, identifier
    finally:
        services.drop_published_schema(schema)


def test_maintain_cuts_files_tenfold_and_keeps_rows(
    merged: tuple[Any, str], spark_world: SparkWorld
) -> None:
    config, identifier = merged
    spark = spark_world.spark
    rows = me.table_rows(spark, identifier)
    assert len(rows) == me.ROWS + COMMITS * 5
    (report,) = maintain(config, "--table", "items")
    before, after = report["before"], report["after"]
    # Iceberg folds a data file's older position deletes into its new delete file, so the
    # small commits leave few delete files but one or more data files each
    assert before["files"] >= COMMITS and before["delete_files"] > 0, report
    assert before["files"] >= 10 * after["files"], report
    assert after["delete_files"] == 0, report
    assert after["snapshots"] < before["snapshots"], report
    assert me.table_rows(spark, identifier) == rows


# the job's own line after maintaining a table between batches (spark/maintenance/maintain.py)
MAINTAINED = re.compile(r"maintained \S+: (\d+) -> (\d+) data files, (\d+) -> (\d+) delete files")


def job_rewrote(log: str) -> bool:
    """Whether the job's own maintenance rewrote files (its 'replace' snapshot)."""
    return any(int(a) > int(b) or int(c) > int(d) for a, b, c, d in MAINTAINED.findall(log))


@pytest.fixture(scope="module")
def pg(stack: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    yield from mirrored(spark_world, "json", 300)


def test_maintain_while_the_mirror_commits_and_maintains_loses_nothing(pg: Mirrored) -> None:
    """`cdcmirror maintain` run again and again while the continuous job commits, and the job
    itself compacting between batches (``maintain.every_batches``: a 'replace' snapshot of
    its own, logged): nothing lost (one job for both, a job's start is most of the time)."""
    sc.workload_then_same(pg, 300)
    runs: list[dict[str, Any]] = []
    own = {"CDCMIRROR_MAINTAIN__EVERY_BATCHES": "2", "CDCMIRROR_LOG_LEVEL": "INFO"}
    with continuous_mirror(pg.config_path, "1 second", own) as job:
        committed = len(pg.snapshot_ids())
        pg.workload.run(100)
        deadline = time.monotonic() + 240
        while len(pg.snapshot_ids()) == committed:  # the job is up and committing
            job.assert_alive()
            assert time.monotonic() < deadline, "the continuous job applied nothing in 240 s"
            time.sleep(2)
        writer = threading.Thread(target=pg.workload.run, args=(1000,))
        writer.start()
        try:
            while writer.is_alive() or len(runs) < 2:
                runs += maintain(pg.config_path, "--table", "items")
        finally:
            writer.join()
        code, report = rc.reconcile(pg, "--settle", "180")  # the live job catches up
        assert code == 0, report
        runs += maintain(pg.config_path, "--table", "items")
        deadline = time.monotonic() + 300
        while not job_rewrote(job.log.read_text(errors="replace")):
            pg.workload.run(50)  # batches for the job to count
            job.assert_alive()
            assert time.monotonic() < deadline, "the job did not maintain the table in 300 s"
            time.sleep(3)
    assert sum(r["rewritten_data_files"] for r in runs) > 0, runs
    assert job_rewrote(job.output), job.output[-3000:]
    sc.settle(pg)
    pg.mirror()  # whatever the job had not applied when it stopped
    pg.assert_same()
