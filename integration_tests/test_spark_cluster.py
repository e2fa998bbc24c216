"""The mirror on the stack's cluster profile (`cdcmirror stack up --cluster`): a real Spark
standalone master with two workers, executors in their own JVMs. The table equals the
source after a random workload, also when a worker is killed while the job runs."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from cdcmirror.stack import cluster
from cdcmirror.stack.control import Stack
from integration_tests import mirror_scenarios as sc
from integration_tests.conftest import SparkWorld
from integration_tests.mirror_env import continuous_mirror, run_mirror_process
from integration_tests.mirror_fixture import Mirrored
from integration_tests.test_mirror_postgresql import mirrored

ON_CLUSTER = {"CDCMIRROR_SPARK__MASTER": cluster.MASTER_URL}


@pytest.fixture(scope="module")
def spark_cluster(stack: Stack) -> Iterator[Stack]:
    stack.up_cluster()
    yield stack
    stack.down_cluster()  # two JVMs and their executors: not for the other modules


@pytest.fixture(scope="module")
def pg(spark_cluster: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    yield from mirrored(spark_world, "json", 500)


def finished_mirror_apps() -> int:
    state = cluster.master_state()
    assert state is not None, "the Spark master does not answer"
    return sum(1 for app in state.get("completedapps", []) if app["name"] == "cdcmirror-mirror")


def test_random_workload_mirrored_on_the_cluster(pg: Mirrored) -> None:
    pg.workload.run(1500)
    sc.settle(pg)
    before = finished_mirror_apps()
    done = run_mirror_process(pg.config_path, env=ON_CLUSTER)
    assert done.returncode == 0, done.stderr[-3000:]
    assert finished_mirror_apps() == before + 1, "the job did not run on the cluster"
    assert pg.assert_same() > 100


def test_a_worker_killed_mid_run_loses_nothing(spark_cluster: Stack, pg: Mirrored) -> None:
    worker = cluster.WORKERS[0]
    with continuous_mirror(pg.config_path, "1 second", ON_CLUSTER) as job:
        before = len(pg.snapshot_ids())
        pg.workload.run(300)
        deadline = time.monotonic() + 240
        while len(pg.snapshot_ids()) == before:  # the job applies batches on the cluster
            assert time.monotonic() < deadline, "no batch applied in 240 s"
            job.assert_alive()
            time.sleep(2)
            pg.spark.sql(f"REFRESH TABLE {pg.identifier}")
        pid = spark_cluster.pid(worker)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)  # its executor follows it (it watches its worker)
        applied = len(pg.snapshot_ids())
        pg.workload.run(600)
        sc.settle(pg)
        deadline = time.monotonic() + 240
        while len(pg.snapshot_ids()) == applied:  # batches on the other worker's executor
            assert time.monotonic() < deadline, "no batch applied after the kill in 240 s"
            job.assert_alive()
            time.sleep(2)
            pg.spark.sql(f"REFRESH TABLE {pg.identifier}")
        state = cluster.master_state()
        assert state is not None
        assert worker.ports[0] not in cluster.alive_worker_ports(state), "the worker lives"
        job.assert_alive()
    spark_cluster.up_cluster()  # the killed worker back
    done = run_mirror_process(pg.config_path, env=ON_CLUSTER)  # whatever the job had not yet
    assert done.returncode == 0, done.stderr[-3000:]
    assert pg.assert_same() > 100
