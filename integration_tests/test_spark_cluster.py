"""The mirror on the stack's cluster profile (`cdcmirror stack up --cluster`): a real Spark
standalone master with two workers, executors in their own JVMs, and Iceberg's REST catalog
server. The table equals the source after a random workload, also when a worker is killed
while the job runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from cdcmirror.catalog_properties import spark_catalog_conf
from cdcmirror.config import load_config
from cdcmirror.stack import cluster, s3
from cdcmirror.stack.control import Stack
from integration_tests import mirror_scenarios as sc
from integration_tests import services
from integration_tests.conftest import SparkWorld
from integration_tests.mirror_env import Workload, continuous_mirror, run_mirror_process
from integration_tests.mirror_fixture import Mirrored, bootstrap, make_config
from integration_tests.test_mirror_postgresql import SEED, mirrored, pg_source, prepare_schema

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


@pytest.fixture(scope="module")
def pg_rest(spark_cluster: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    """A PostgreSQL table mirrored into the REST catalog; the test session's Spark reads it
    as the catalog ``rest`` (added at run time)."""
    schema = services.unique("rest_pg")
    prepare_schema(schema)
    source = pg_source(schema)
    workload = Workload(source, SEED)
    workload.run(300)
    catalog = {"type": "rest", "uri": cluster.REST_URL, **s3.catalog_properties()}
    config = make_config(
        spark_world.config.base_dir,
        schema,
        "postgresql",
        f"{schema}.*",
        services.TEST_DATABASE,
        iceberg={"catalog": catalog},
    )
    spark = spark_world.spark
    for key, value in spark_catalog_conf(load_config(config, environ={}), "rest").items():
        spark.conf.set(key, value)
    bootstrap(config)
    try:
        yield RestMirrored(schema, source, config, spark, workload, [])
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")


class RestMirrored(Mirrored):
    @property
    def identifier(self) -> str:
        return f"rest.{self.name}_mirror.items"


def test_rest_catalog_and_s3_serve_bootstrap_mirror_and_reconcile(pg_rest: Mirrored) -> None:
    """Bootstrap created the table in the REST catalog, on the S3 store; the mirror on the
    cluster fills it from the snapshot and a workload; `reconcile --deep` reads it through the
    REST catalog."""
    pg_rest.workload.run(800)
    sc.settle(pg_rest)
    before = finished_mirror_apps()
    done = run_mirror_process(pg_rest.config_path, env=ON_CLUSTER)
    assert done.returncode == 0, done.stderr[-3000:]
    assert finished_mirror_apps() == before + 1, "the job did not run on the cluster"
    assert pg_rest.assert_same() > 100
    # in a process of its own: this session's Spark has the embedded catalog as `cdcmirror`
    cli = [sys.executable, "-m", "cdcmirror.cli", "--config", str(pg_rest.config_path)]
    deep = subprocess.run(
        [*cli, "reconcile", "--deep", "--settle", "5"],
        env={**os.environ, "CDCMIRROR_SOURCE__PASSWORD": services.CDC_PASSWORD},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert deep.returncode == 0, deep.stdout[-3000:] + deep.stderr[-3000:]
    assert "all tables in sync" in deep.stdout, deep.stdout[-3000:]
    files = pg_rest.spark.sql(f"SELECT file_path FROM {pg_rest.identifier}.files").collect()
    assert files and all(f[0].startswith(cluster.REST_WAREHOUSE) for f in files), files[:3]
