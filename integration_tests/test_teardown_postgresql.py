"""`cdcmirror teardown` and the warnings about a replication slot left behind, against real
PostgreSQL, Kafka Connect with Debezium, Kafka and Iceberg."""

from __future__ import annotations

import time

from cdcmirror.bootstrap.connector import connector_name, slot_name
from cdcmirror.catalog import load_catalog
from cdcmirror.stack.control import Stack
from cdcmirror.stack.health import topics_named
from support import mirror_scenarios as sc
from support import services
from support.bootstrap_env import run_cli
from support.mirror_fixture import mirrored
from support.spark import SparkWorld


def _slot(name: str) -> tuple[bool] | None:
    with services.pg_connect() as conn:
        row = conn.execute(
            "SELECT active FROM pg_replication_slots WHERE slot_name = %s", (name,)
        ).fetchone()
    return None if row is None else (bool(row[0]),)


def test_left_slot_is_warned_about_then_teardown_removes_everything(
    stack: Stack, postgres: None, spark_world: SparkWorld
) -> None:
    fixture = mirrored(spark_world, "json", 50)
    m = next(fixture)
    try:
        sc.workload_then_same(m, 50)
        connector, slot = connector_name(m.name), slot_name(m.name)
        assert _slot(slot) == (True,)
        services.connect_client().delete(connector)  # the old way to remove a mirror
        for _ in range(60):
            if _slot(slot) == (False,):
                break
            time.sleep(1)
        check = run_cli(m.config_path, "check")
        assert check.exit_code == 0, check.output
        assert f"replication slot {slot} is inactive and holds" in check.output, check.output
        assert "cdcmirror teardown" in check.output
        reconcile = run_cli(m.config_path, "reconcile", "--settle", "0")
        assert f"replication slot {slot} is inactive" in reconcile.output, reconcile.output

        # the heartbeat topic a connector of a Spark initial load writes to
        heartbeat = f"__debezium-heartbeat.{m.name}"
        services.create_topic(heartbeat, 1)
        dry = run_cli(m.config_path, "teardown", "--dry-run", "--topics", "--tables")
        assert dry.exit_code == 0, dry.output
        assert f"topic      {heartbeat}" in dry.output, dry.output
        assert f"slot       {slot}" in dry.output and f"{m.name}_mirror" in dry.output
        assert f"topic      {m.topic}" in dry.output
        refused = run_cli(m.config_path, "teardown")
        assert refused.exit_code == 2 and "--yes" in refused.output, refused.output
        assert _slot(slot) == (False,), "nothing may be removed without --yes"

        done = run_cli(m.config_path, "teardown", "--yes", "--topics", "--checkpoint", "--tables")
        assert done.exit_code == 0, done.output
        assert _slot(slot) is None
        assert topics_named(services.KAFKA, f"{m.name}.", [heartbeat]) == []
        namespaces = {".".join(n) for n in load_catalog(m.config).list_namespaces()}
        assert f"{m.name}_mirror" not in namespaces
        assert not m.config.path("mirror", "checkpoint_location").exists()
        again = run_cli(m.config_path, "teardown", "--dry-run")
        assert again.exit_code == 0 and "nothing" in again.output, again.output
    finally:
        fixture.close()
