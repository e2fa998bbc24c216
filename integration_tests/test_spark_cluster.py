"""Every command on the stack's cluster profile (`cdcmirror stack up --cluster`): a real
Spark standalone master with two workers (executors in their own JVMs), Iceberg's REST
catalog server, tables on the S3 store and the streaming checkpoint on s3a://. The table
equals the source after a random workload on both dialects, also when a worker is killed
while the continuous job runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cdcmirror.checkpoint_store import SCHEMAS_FILE, checkpoint_files
from cdcmirror.config import load_config
from cdcmirror.config.catalog import spark_catalog_conf
from cdcmirror.jvm.manifest import load_manifest
from cdcmirror.jvm.resolve import group_jars
from cdcmirror.mirror.checkpoint import holds_batches
from cdcmirror.stack import cluster, s3
from cdcmirror.stack.control import Stack
from cdcmirror.table_properties import POINT_PROPERTY
from support import mirror_scenarios as sc
from support import services
from support.mirror_env import (
    Source,
    Workload,
    causes,
    continuous_mirror,
    create_table_sql,
    run_mirror_process,
)
from support.mirror_fixture import (
    PG_SEED,
    Mirrored,
    bootstrap,
    make_config,
    pg_source,
    prepare_schema,
)
from support.spark import SparkWorld

pytestmark = pytest.mark.serial  # see the marker in pyproject.toml

ON_CLUSTER = {"CDCMIRROR_SPARK__MASTER": cluster.MASTER_URL}


@pytest.fixture(scope="module")
def spark_cluster(stack: Stack) -> Iterator[Stack]:
    stack.up_cluster()
    yield stack
    stack.down_cluster()  # two JVMs and their executors: not for the other modules


@pytest.fixture(scope="module")
def pg(spark_cluster: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    """The continuous job on the whole profile: REST catalog, S3, checkpoint on s3a://."""
    yield from pg_on_profile(spark_world, 500)


def finished_mirror_apps() -> int:
    state = cluster.master_state()
    assert state is not None, "the Spark master does not answer"
    return sum(1 for app in state.get("completedapps", []) if app["name"] == "cdcmirror-mirror")


@pytest.mark.full
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


def rest_config(world: SparkWorld, name: str, dialect: str, include: str, db: str) -> Path:
    """The profile's settings: tables in the REST catalog on S3, the checkpoint on s3a://
    (its S3A settings come from the catalog's s3.* properties); the test session's Spark
    reads the tables as the catalog ``rest`` (added at run time)."""
    catalog = {"type": "rest", "uri": cluster.REST_URL, **s3.catalog_properties()}
    signal = {"signal_table": f"{name}.cdcmirror_signal"} if dialect == "postgresql" else {}
    config = make_config(
        world.config.base_dir,
        name,
        dialect,
        include,
        db,
        iceberg={"catalog": catalog},
        mirror={"checkpoint_location": f"s3a://{s3.BUCKET}/checkpoints/{name}"},
        source=signal,
    )
    for key, value in spark_catalog_conf(load_config(config, environ={}), "rest").items():
        world.spark.conf.set(key, value)
    return config


class RestMirrored(Mirrored):
    @property
    def identifier(self) -> str:
        return f"rest.{self.name}_mirror.items"


def pg_on_profile(world: SparkWorld, snapshot_ops: int) -> Iterator[Mirrored]:
    """``items`` under the random workload, and ``notes``, a table that stays idle: the
    consistent tag moves on both."""
    schema = services.unique("rest_pg")
    prepare_schema(schema, signal=True)
    with services.pg_connect() as conn:
        conn.execute(f"CREATE TABLE {schema}.notes (id int PRIMARY KEY, note text)")
        conn.execute(f"INSERT INTO {schema}.notes VALUES (1, 'a'), (2, 'b')")
        conn.execute(f"GRANT SELECT ON {schema}.notes TO cdc")
    source = pg_source(schema)
    workload = Workload(source, PG_SEED)
    workload.run(snapshot_ops)
    config = rest_config(world, schema, "postgresql", f"{schema}.*", services.TEST_DATABASE)
    bootstrap(config)
    try:
        yield RestMirrored(schema, source, config, world.spark, workload, [])
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")


@pytest.fixture(scope="module")
def pg_rest(spark_cluster: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    yield from pg_on_profile(spark_world, 300)


@pytest.fixture(scope="module")
def maria_rest(spark_cluster: Stack, mariadb: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    database = services.unique("rest_maria")
    admin = services.maria_connect()
    with admin.cursor() as cur:
        services.maria_database(cur, database)
        cur.execute(create_table_sql("mysql", f"{database}.items") + " CHARACTER SET utf8mb4")
    source = Source("mysql", f"{database}.items", lambda: services.maria_connect(database))
    workload = Workload(source, PG_SEED)
    workload.run(300)
    config = rest_config(spark_world, database, "mysql", f"{database}.*", database)
    bootstrap(config)
    try:
        yield RestMirrored(database, source, config, spark_world.spark, workload, [])
    finally:
        services.connect_client().delete(f"cdcmirror-{database}")
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE {database}")
        admin.close()


def cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A cdcmirror command in its own process, its Spark on the cluster (this session's
    Spark has the embedded catalog as ``cdcmirror``)."""
    command = [sys.executable, "-m", "cdcmirror.cli", "--config", str(config), *args]
    env = {**os.environ, "CDCMIRROR_SOURCE__PASSWORD": services.CDC_PASSWORD, **ON_CLUSTER}
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


def mirror_on_cluster(m: Mirrored, env: dict[str, str] | None = None) -> str:
    """``mirror --available-now`` on the cluster, once Debezium has published the workload;
    returns its log."""
    sc.settle(m)
    before = finished_mirror_apps()
    done = run_mirror_process(m.config_path, env={**ON_CLUSTER, **(env or {})})
    assert done.returncode == 0, causes(done.stderr)
    assert finished_mirror_apps() == before + 1, "the job did not run on the cluster"
    return done.stderr


def deep_reconcile(m: Mirrored, settle: int) -> tuple[int, dict[str, Any]]:
    done = cli(m.config_path, "--output", "json", "reconcile", "--deep", "--settle", str(settle))
    assert done.returncode in (0, 1), causes(done.stderr) + done.stdout[-2000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, report


def items_report(report: dict[str, Any]) -> dict[str, Any]:
    """reconcile's report of the ``items`` table (the profile's sources have others)."""
    tables: list[dict[str, Any]] = report["tables"]
    (table,) = [t for t in tables if t["table"].endswith(".items")]
    return table


def assert_in_sync_on_s3(m: Mirrored, code: int, report: dict[str, Any]) -> None:
    """reconcile --deep (the checkpoint read from s3a://) found the table in sync, and every
    data file is on the S3 warehouse."""
    table = items_report(report)
    assert code == 0 and table["status"] == "in sync", json.dumps(table, indent=1)
    assert table["events_behind"] == 0 and table["deep"]["drifted_buckets"] == [], table
    files = m.spark.sql(f"SELECT file_path FROM {m.identifier}.files").collect()
    assert files and all(f[0].startswith(cluster.REST_WAREHOUSE) for f in files), files[:3]


def test_rest_catalog_s3_and_a_checkpoint_on_s3a(pg_rest: Mirrored) -> None:
    """Bootstrap into the REST catalog on S3; mirror on the Spark cluster with the checkpoint
    on s3a://; reconcile --deep (the checkpoint read from S3) in sync; every data file on S3.
    The reduced run of ``test_every_command_on_the_cluster_profile`` (CI)."""
    m = pg_rest
    for part in cluster.CLUSTER_PARTS:  # the REST catalog too (Iceberg's own binds all)
        for port in part.ports:
            found = services.listening_addresses(port)
            assert found and found <= services.LOOPBACK, (part.name, port, found)
    m.workload.run(400)
    log = mirror_on_cluster(m, {"CDCMIRROR_LOG_LEVEL": "INFO"})
    assert m.assert_same() > 100
    assert "on 2 table(s) in one catalog commit" in log, log[-3000:]
    tagged = [
        m.spark.sql(
            f"SELECT snapshot_id FROM rest.{m.name}_mirror.{t}.refs WHERE name = 'cdc_consistent'"
        ).collect()
        for t in ("items", "notes")
    ]
    assert all(len(rows) == 1 for rows in tagged), tagged
    points = {
        m.spark.sql(f"SHOW TBLPROPERTIES rest.{m.name}_mirror.{t} ('{POINT_PROPERTY}')")
        .collect()[0]
        .value
        for t in ("items", "notes")
    }
    assert len(points) == 1 and "does not have" not in next(iter(points)), points
    checkpoint = checkpoint_files(m.config)
    assert checkpoint.location.startswith("s3a://") and holds_batches(checkpoint)
    assert not (m.config_path.parent / "s3a:").exists(), "the checkpoint was written locally"
    assert SCHEMAS_FILE in checkpoint.names(""), "the row schemas the job applied, kept on S3"
    assert_in_sync_on_s3(m, *deep_reconcile(m, 10))


@pytest.mark.full
def test_every_command_on_the_cluster_profile(pg_rest: Mirrored) -> None:
    """Bootstrap into the REST catalog on S3; mirror on the Spark cluster with the checkpoint
    on s3a://; maintain; drift found by reconcile --deep and healed by repair; a lost S3
    checkpoint resumes from the offsets the table records. Equal to the source throughout."""
    m = pg_rest
    m.workload.run(800)
    mirror_on_cluster(m)
    assert m.assert_same() > 100
    checkpoint = checkpoint_files(m.config)
    assert checkpoint.location.startswith("s3a://") and holds_batches(checkpoint)
    assert not (m.config_path.parent / "s3a:").exists(), "the checkpoint was written locally"

    done = cli(m.config_path, "--output", "json", "maintain", "--table", "items")
    assert done.returncode == 0, causes(done.stderr)
    # the table and its tombstone table (names without the catalog's)
    table = m.identifier.split(".", 1)[1]
    (maintained,) = [r for r in json.loads(done.stdout) if r["table"] == table]
    assert maintained["after"]["data_files"] <= maintained["before"]["data_files"], maintained
    assert maintained["after"]["delete_files"] == 0, maintained
    m.assert_same()

    (missing,) = m.spark.sql(f"SELECT id FROM {m.identifier} ORDER BY id LIMIT 1").collect()
    m.spark.sql(f"DELETE FROM {m.identifier} WHERE id = {missing.id}")
    code, report = deep_reconcile(m, 5)
    assert code == 1 and items_report(report)["deep"]["missing_keys"] == [
        {"id": str(missing.id)}
    ], report
    keys = m.config_path.parent / f"{m.name}-drift.json"
    keys.write_text(json.dumps(report))
    done = cli(m.config_path, "repair", "--table", "items", "--keys-from", str(keys))
    assert done.returncode == 0, causes(done.stderr) + done.stdout
    assert "Debezium re-reads 1 row(s)" in done.stdout, done.stdout
    deadline = time.monotonic() + 240
    while True:  # the re-read row arrives through Debezium's incremental snapshot
        mirror_on_cluster(m)
        code, report = deep_reconcile(m, 10)
        if code == 0 or time.monotonic() > deadline:
            break
    assert_in_sync_on_s3(m, code, report)
    m.assert_same()

    checkpoint.remove()
    assert not checkpoint.exists()
    m.workload.run(100)
    log = mirror_on_cluster(m)
    assert "resuming from the Kafka offsets their snapshots record" in log, log[-3000:]
    m.assert_same()
    plan = cli(m.config_path, "teardown", "--dry-run", "--checkpoint", "--tables")
    assert plan.returncode == 0 and checkpoint.location in plan.stdout, plan.stdout


@pytest.mark.full
def test_mariadb_on_the_cluster_profile(maria_rest: Mirrored) -> None:
    """The same profile for a MariaDB source: bootstrap, the random workload mirrored on the
    cluster, reconcile --deep in sync."""
    maria_rest.workload.run(800)
    mirror_on_cluster(maria_rest)
    assert maria_rest.assert_same() > 100
    assert_in_sync_on_s3(maria_rest, *deep_reconcile(maria_rest, 30))


def test_the_s3a_sdk_is_the_one_inside_iceberg_aws_bundle() -> None:
    """hadoop-aws runs on the AWS SDK that iceberg-aws-bundle carries; its transfer manager
    (fetched alone) must be of the same SDK release."""
    manifest = load_manifest()
    (bundle,) = [p for p in group_jars(manifest.groups["spark"]) if "iceberg-aws-bundle" in p.name]
    with zipfile.ZipFile(bundle) as jar:
        props = jar.read("META-INF/maven/software.amazon.awssdk/s3/pom.properties").decode()
    assert f"version={manifest.versions['aws_sdk']}" in props, props
