"""One mirrored source per test module: a source table, bootstrap, and the mirror run
in-process (on the session's SparkSession and catalog) or as a separate process."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdcmirror.commands.job_tables import internal_namespace
from cdcmirror.commands.mirror import mirror
from cdcmirror.config import Config, load_config
from integration_tests import services
from integration_tests.bootstrap_env import run_cli, write_config
from integration_tests.mirror_env import Source, Workload, all_columns, assert_same


@dataclass
class Mirrored:
    name: str
    source: Source
    config_path: Path
    spark: Any
    workload: Workload
    extra_columns: list[str]

    @property
    def config(self) -> Config:
        return load_config(self.config_path, environ={})

    @property
    def identifier(self) -> str:
        return f"{self.name}_mirror.items"

    @property
    def topic(self) -> str:
        db = self.source.table.split(".")[0]
        return f"{self.name}.{db}.items"

    @property
    def dead_letter(self) -> str:
        return f"{internal_namespace(self.config)}.dead_letter"

    def columns(self) -> list[str]:
        return all_columns(self.source.dialect) + self.extra_columns

    def mirror(self) -> None:
        os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
        mirror(load_config(self.config_path), available_now=True)

    def assert_same(self) -> int:
        return assert_same(self.source, self.spark, self.identifier, self.columns())

    def snapshot_ids(self) -> list[int]:
        rows = self.spark.sql(
            f"SELECT snapshot_id FROM {self.identifier}.snapshots ORDER BY committed_at"
        ).collect()
        return [r[0] for r in rows]


def make_config(
    work: Path, name: str, dialect: str, include: str, url_db: str, **extra: Any
) -> Path:
    port = 5432 if dialect == "postgresql" else 3306
    scheme = "postgresql" if dialect == "postgresql" else "mysql"
    return write_config(
        work,
        filename=f"{name}.toml",
        source={
            "dialect": dialect,
            "url": f"{scheme}://cdc@127.0.0.1:{port}/{url_db}",
            "include": [include],
            "name": name,
            **extra.get("source", {}),
        },
        iceberg={"namespace": f"{name}_mirror", **extra.get("iceberg", {})},
        mirror={"checkpoint_location": f".cdcmirror/checkpoints/{name}", **extra.get("mirror", {})},
        kafka={"format": extra.get("kafka_format", "json"), **extra.get("kafka", {})},
        **{
            k: v
            for k, v in extra.items()
            if k not in ("mirror", "kafka_format", "kafka", "source", "iceberg")
        },
    )


def pg_config(work: Path, schema: str, **extra: Any) -> Path:
    """``make_config`` for every table of a PostgreSQL test schema."""
    return make_config(work, schema, "postgresql", f"{schema}.*", services.TEST_DATABASE, **extra)


def bootstrap(config: Path) -> None:
    result = run_cli(config, "bootstrap")
    assert result.exit_code == 0, result.output
