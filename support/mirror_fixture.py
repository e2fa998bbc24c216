"""One mirrored source per test module: a source table, bootstrap, and the mirror run
in-process (on the session's SparkSession and catalog) or as a separate process."""

from __future__ import annotations

import os
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdcmirror.commands.job_tables import internal_namespace
from cdcmirror.commands.mirror import mirror
from cdcmirror.config import Config, load_config
from support import services
from support.bootstrap_env import run_cli, write_config
from support.mirror_env import (
    Source,
    Workload,
    all_columns,
    assert_same,
    create_table_sql,
)
from support.spark import SparkWorld


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


PG_SEED = 20261121


def pg_source(schema: str) -> Source:
    return Source("postgresql", f"{schema}.items", services.pg_connect)


def prepare_schema(schema: str, signal: bool = False) -> None:
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(create_table_sql("postgresql", f"{schema}.items"))
        if signal:
            services.pg_signal_table(conn, schema)
        services.publish_schema(conn, schema)


def mirrored(
    world: SparkWorld,
    kafka_format: str,
    snapshot_ops: int,
    signal: bool = False,
    partitions: int = 0,
    chains: bool = False,
    mirror_settings: dict[str, object] | None = None,
) -> Generator[Mirrored]:
    schema = services.unique("mir_pg")
    prepare_schema(schema, signal)
    if partitions:  # made before the connector, which then writes into it
        services.create_topic(f"{schema}.{schema}.items", partitions)
    source = pg_source(schema)
    workload = Workload(source, PG_SEED, chains=chains)
    workload.run(snapshot_ops)  # these rows arrive through the initial snapshot
    config = make_config(
        world.config.base_dir,
        schema,
        "postgresql",
        f"{schema}.*",
        services.TEST_DATABASE,
        kafka_format=kafka_format,
        source={"signal_table": f"{schema}.cdcmirror_signal"} if signal else {},
        mirror=mirror_settings or {},
    )
    bootstrap(config)
    try:
        yield Mirrored(schema, source, config, world.spark, workload, [])
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")


MARIA_SEED = 1121  # the MariaDB workloads' seed


def maria_mirrored(
    world: SparkWorld,
    snapshot_ops: int,
    signal: bool = True,  # Debezium's signal table: also what sc.settle waits on
    kafka_format: str = "json",
    chains: bool = False,
    mirror_settings: dict[str, object] | None = None,
    extra: dict[str, str] | None = None,
    kafka: dict[str, str] | None = None,
) -> Generator[Mirrored]:
    """``extra``: more columns (name -> type) the workload leaves NULL; ``kafka``: more
    ``[kafka]`` settings."""
    database = services.unique("mir_maria")
    admin = services.maria_connect()
    with admin.cursor() as cur:
        services.maria_database(cur, database)
        cur.execute(create_table_sql("mysql", f"{database}.items") + " CHARACTER SET utf8mb4")
        for name, ddl in (extra or {}).items():
            cur.execute(f"ALTER TABLE {database}.items ADD COLUMN {name} {ddl}")
        if signal:
            services.maria_signal_table(cur, database)
    source = Source("mysql", f"{database}.items", lambda: services.maria_connect(database))
    workload = Workload(source, MARIA_SEED, chains=chains)
    workload.run(snapshot_ops)
    config = make_config(
        world.config.base_dir,
        database,
        "mysql",
        f"{database}.*",
        database,
        kafka_format=kafka_format,
        mirror=mirror_settings or {},
        kafka=kafka or {},
    )
    bootstrap(config)
    try:
        yield Mirrored(database, source, config, world.spark, workload, list(extra or {}))
    finally:
        services.connect_client().delete(f"cdcmirror-{database}")
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE {database}")
        admin.close()
