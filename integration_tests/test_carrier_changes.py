"""A column's encoding changed at the source while a writer runs (issue 67, item 1): a
timestamp's precision raised from milliseconds to microseconds and a wide decimal's scale
raised, so that Debezium's events of one batch carry the column in both encodings. Each
event is decoded with its own row schema's carrier and the table equals the source, on
PostgreSQL and MariaDB (JSON with schemas, and Avro), against the real services."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cdcmirror.commands.mirror import mirror
from cdcmirror.config import load_config
from cdcmirror.stack.control import Stack
from support import services
from support.bootstrap_env import run_cli
from support.mirror_fixture import make_config
from support.spark import SparkWorld

START = datetime(2026, 3, 1, 12, 0, 0)
DDL = {
    "postgresql": (
        "CREATE TABLE {t} (id bigint PRIMARY KEY, at timestamp(3), wide numeric(50,2))",
        "ALTER TABLE {t} ALTER COLUMN at TYPE timestamp(6), ALTER COLUMN wide TYPE numeric(50,4)",
    ),
    "mysql": (
        "CREATE TABLE {t} (id bigint PRIMARY KEY, at datetime(3), wide decimal(50,2))",
        "ALTER TABLE {t} MODIFY at datetime(6), MODIFY wide decimal(50,4)",
    ),
}


@dataclass
class Changed:
    dialect: str
    table: str  # at the source
    identifier: str  # in Iceberg
    topic: str
    config: Path
    connect: Callable[[], Any]


class Writer(threading.Thread):
    """Inserts and updates rows until stopped; after ``fine`` is set, with microseconds and
    four decimal places, before it with milliseconds and two."""

    def __init__(self, changed: Changed, seed: int) -> None:
        super().__init__(daemon=True)
        self.changed, self.rnd = changed, random.Random(seed)
        self.fine, self.stop = threading.Event(), threading.Event()
        self.error: Exception | None = None
        self.ids: list[int] = []
        self.writes = 0

    def _values(self) -> tuple[datetime, Decimal]:
        fine = self.fine.is_set()
        micros = self.rnd.randrange(10**12)
        if not fine:
            micros -= micros % 1000
        digits = self.rnd.randrange(-(10**12), 10**12)
        return START + timedelta(microseconds=micros), Decimal(digits).scaleb(-4 if fine else -2)

    def run(self) -> None:
        conn = self.changed.connect()
        try:
            while not self.stop.is_set():
                cur = conn.cursor()
                at, wide = self._values()
                if len(self.ids) < 20 or self.rnd.random() < 0.5:
                    self.ids.append(len(self.ids) + 1)
                    sql = f"INSERT INTO {self.changed.table} VALUES (%s, %s, %s)"
                    cur.execute(sql, (self.ids[-1], at, wide))
                else:
                    sql = f"UPDATE {self.changed.table} SET at = %s, wide = %s WHERE id = %s"
                    cur.execute(sql, (at, wide, self.rnd.choice(self.ids)))
                self.writes += 1
                time.sleep(0.01)
        except Exception as exc:  # reported by the test
            self.error = exc
        finally:
            conn.close()


def _changed(dialect: str, world: SparkWorld, kafka_format: str = "json") -> Iterator[Changed]:
    name = services.unique(f"carriers_{'pg' if dialect == 'postgresql' else 'maria'}")
    if dialect == "postgresql":
        connect: Callable[[], Any] = services.pg_connect
        with services.pg_connect() as conn:
            conn.execute(f"CREATE SCHEMA {name}")
            conn.execute(DDL[dialect][0].format(t=f"{name}.t"))
            services.publish_schema(conn, name)
        table, url_db = f"{name}.t", services.TEST_DATABASE
    else:
        admin = services.maria_connect()
        with admin.cursor() as cur:
            services.maria_database(cur, name)
        admin.close()
        table, url_db = f"{name}.t", name

        def connect() -> Any:
            return services.maria_connect(name)

        with connect().cursor() as cur:
            cur.execute(DDL[dialect][0].format(t=table))
    config = make_config(
        world.config.base_dir, name, dialect, f"{name}.*", url_db, kafka_format=kafka_format
    )
    result = run_cli(config, "bootstrap")
    assert result.exit_code == 0, result.output
    topic = f"{name}.{table}"
    try:
        yield Changed(dialect, table, f"{name}_mirror.t", topic, config, connect)
    finally:
        services.connect_client().delete(f"cdcmirror-{name}")
        if dialect == "postgresql":
            services.drop_published_schema(name, f"cdcmirror-{name}")
        else:
            admin = services.maria_connect()
            with admin.cursor() as cur:
                cur.execute(f"DROP DATABASE {name}")
            admin.close()


def _mirror(changed: Changed) -> None:
    import os

    os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
    mirror(load_config(changed.config), available_now=True)


def _source_rows(changed: Changed) -> dict[int, tuple[datetime, Decimal]]:
    conn = changed.connect()
    try:
        cur = conn.cursor()
        cur.execute(f"SELECT id, at, wide FROM {changed.table}")
        return {int(r[0]): (r[1], Decimal(r[2])) for r in cur.fetchall()}
    finally:
        conn.close()


def _mirror_rows(spark: Any, changed: Changed) -> dict[int, tuple[datetime, Decimal]]:
    rows = spark.sql(f"SELECT id, at, wide FROM {changed.identifier}").collect()
    return {int(r.id): (r.at, Decimal(r.wide)) for r in rows}


@pytest.fixture(scope="module")
def pg_json(stack: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Changed]:
    yield from _changed("postgresql", spark_world)


@pytest.fixture(scope="module")
def maria_json(stack: Stack, mariadb: None, spark_world: SparkWorld) -> Iterator[Changed]:
    yield from _changed("mysql", spark_world)


@pytest.fixture(scope="module")
def maria_avro(stack: Stack, mariadb: None, spark_world: SparkWorld) -> Iterator[Changed]:
    yield from _changed("mysql", spark_world, "avro")


def _precision_raised_while_writing(changed: Changed, spark: Any) -> None:
    """The writer runs, the mirror is not running: the next batch holds events of both
    encodings of ``at`` and ``wide``, which the mirror applies in one batch."""
    _mirror(changed)
    writer = Writer(changed, seed=67)
    writer.start()
    try:
        time.sleep(2)
        conn = changed.connect()
        try:
            conn.cursor().execute(DDL[changed.dialect][1].format(t=changed.table))
        finally:
            conn.close()
        writer.fine.set()
        time.sleep(2)
    finally:
        writer.stop.set()
        writer.join()
    assert writer.error is None, writer.error
    assert writer.writes > 100, writer.writes
    services.wait_topic_quiet(changed.topic)
    _mirror(changed)
    source = _source_rows(changed)
    assert any(at.microsecond % 1000 for at, _ in source.values()), "no microseconds written"
    assert _mirror_rows(spark, changed) == source


def test_postgresql_precision_raised_while_writing(
    pg_json: Changed, spark_world: SparkWorld
) -> None:
    _precision_raised_while_writing(pg_json, spark_world.spark)


def test_mariadb_precision_raised_while_writing(
    maria_json: Changed, spark_world: SparkWorld
) -> None:
    _precision_raised_while_writing(maria_json, spark_world.spark)


def test_mariadb_avro_precision_raised_while_writing(
    maria_avro: Changed, spark_world: SparkWorld
) -> None:
    _precision_raised_while_writing(maria_avro, spark_world.spark)


@pytest.fixture(scope="module")
def pg_schemaless(stack: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Changed]:
    yield from _changed("postgresql", spark_world, "json-schemaless")


def test_without_schemas_a_changed_encoding_is_drift(
    pg_schemaless: Changed, spark_world: SparkWorld
) -> None:
    """JSON without schemas: the events do not say their encoding, so bootstrap reports the
    change as drift (exit 1) and keeps the carrier the events before it need."""
    import json

    from cdcmirror.catalog import load_catalog
    from cdcmirror.table_properties import CARRIERS_PROPERTY

    changed = pg_schemaless

    def carriers() -> dict[str, str]:
        table = load_catalog(load_config(changed.config)).load_table(changed.identifier)
        return dict(json.loads(table.properties[CARRIERS_PROPERTY]))

    before = carriers()
    with services.pg_connect() as conn:
        conn.execute(DDL["postgresql"][1].format(t=changed.table))
    again = run_cli(changed.config, "bootstrap")
    assert again.exit_code == 1, again.output
    assert "column at: its events change from int64 io.debezium.time.Timestamp" in again.output
    assert carriers() == before
