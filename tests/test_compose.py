"""compose/ stays true: the Docker Compose file parses and pins the manifest's versions."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from cdcmirror.jvm.manifest import load_manifest

COMPOSE = Path(__file__).resolve().parents[1] / "compose" / "docker-compose.yml"


def test_compose_uses_the_manifest_versions() -> None:
    text = COMPOSE.read_text()
    versions = load_manifest().versions
    assert f"apache/kafka:{versions['kafka']}" in text
    assert f'DEBEZIUM_VERSION: "{versions["debezium"]}"' in text
    assert f'APICURIO_VERSION: "{versions["apicurio"]}"' in text
    assert f"apicurio/apicurio-registry-mem:{versions['apicurio']}" in text


def _compose_command() -> list[str] | None:
    """`docker compose` (v2 plugin) or `docker-compose` (v1), whichever the machine has."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def test_docker_compose_accepts_the_file() -> None:
    """Parses and validates the file; needs the client only, not a Docker engine
    (scripts/install-system-deps.sh installs it)."""
    command = _compose_command()
    assert command is not None, "no docker compose client: run scripts/install-system-deps.sh"
    result = subprocess.run(
        [*command, "-f", str(COMPOSE), "config", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_the_grafana_dashboard_asks_only_for_metrics_the_job_serves() -> None:
    """Every metric a panel of compose/grafana/dashboards/cdcmirror.json queries is one that
    ``cdcmirror.metrics`` exposes (a renamed metric would leave an empty panel)."""
    import json
    import re

    from prometheus_client import generate_latest

    from cdcmirror.metrics import MirrorMetrics
    from cdcmirror.mirror.stats import TableStats

    metrics = MirrorMetrics()
    stats = TableStats("db.t", events=1, inserts=1, table_seconds=1.0)
    stats.committed(2.0, 1_000_000, 1_000_000, 1_000_000)
    metrics.batch_done([stats], 1.0)
    metrics.batch_failed()
    served = set(re.findall(r"^(cdcmirror_\w+)", generate_latest(metrics.registry).decode(), re.M))
    dashboard = json.loads((COMPOSE.parent / "grafana/dashboards/cdcmirror.json").read_text())
    asked = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"cdcmirror_\w+", target["expr"])
    }
    assert len(asked) >= 8, asked
    assert asked <= served, asked - served
    assert "host.docker.internal:9464" in (COMPOSE.parent / "prometheus.yml").read_text()
    assert "./grafana/dashboards:/var/lib/grafana/dashboards" in COMPOSE.read_text()


def test_the_cluster_profile_matches_the_native_one() -> None:
    """compose's S3 store and REST catalog run the versions, bucket and credentials of
    `cdcmirror stack up --cluster` (cdcmirror/stack/s3.py, the manifest's Iceberg)."""
    from cdcmirror.stack import cluster, s3

    text = COMPOSE.read_text()
    assert f"versity/versitygw:{s3.VERSION}" in text
    assert f"apache/iceberg-rest-fixture:{load_manifest().versions['iceberg_rest']}" in text
    assert f"ROOT_ACCESS_KEY_ID: {s3.ACCESS_KEY}" in text
    assert f"ROOT_SECRET_ACCESS_KEY: {s3.SECRET_KEY}" in text
    assert f"CATALOG_WAREHOUSE: {cluster.REST_WAREHOUSE}" in text
    assert f"/data/{s3.BUCKET}" in text


def test_the_compose_cluster_job_runs_the_native_profile_settings() -> None:
    """compose's mirror job (cluster.toml) is a valid config with the native profile's
    catalog properties (compose service names for 127.0.0.1), the checkpoint on s3a://,
    the Spark master of the compose cluster; its image runs the pinned pyspark."""
    from cdcmirror.config import load_config
    from cdcmirror.config.catalog import pyiceberg_properties
    from cdcmirror.stack import cluster, s3

    config = load_config(COMPOSE.parent / "cluster.toml", environ={})
    native = {**s3.catalog_properties(), "type": "rest", "uri": cluster.REST_URL}
    mapped = {
        k: v.replace(s3.S3_URL, "http://s3:7070").replace(
            cluster.REST_URL, "http://rest-catalog:8181"
        )
        for k, v in native.items()
    }
    assert pyiceberg_properties(config) == mapped
    assert config.location("mirror", "checkpoint_location").startswith("s3a://warehouse/")
    assert config.spark.master == "spark://spark-master:7077"
    assert "spark-master" in COMPOSE.read_text()
    dockerfile = (COMPOSE.parent / "cdcmirror.Dockerfile").read_text()
    assert "cdcmirror jars resolve spark" in dockerfile
