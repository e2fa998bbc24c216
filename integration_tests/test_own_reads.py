"""Batches of several CDC tables without the first look (``spark/cdc/records.py``): each
table reads its own topic's ranges of the batch from Kafka, once while its row schemas are
ones the job applied (or, in a job's first batch, those of its first records), after a
first look of its own when a new one turns up; the tables end equal to the source row by
row."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cdcmirror.commands.mirror import mirror
from cdcmirror.config import load_config
from cdcmirror.stack.control import Stack
from support import services
from support.mirror_env import (
    Source,
    Workload,
    all_columns,
    assert_same,
    create_table_sql,
)
from support.mirror_fixture import bootstrap, pg_config
from support.spark import SparkWorld

TABLES = ("a", "b")


# Avro's run in `make test-full` (CI time); CI reads Avro batches in test_mirror_postgresql's
# Avro tests and in test_golden_apply
@pytest.fixture(params=["json", pytest.param("avro", marks=pytest.mark.full)])
def two_tables(
    request: pytest.FixtureRequest, stack: Stack, postgres: None, spark_world: SparkWorld
) -> Iterator[tuple[str, str, dict[str, Workload]]]:
    schema = services.unique("own_pg")
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        for t in TABLES:
            conn.execute(create_table_sql("postgresql", f"{schema}.{t}"))
        services.publish_schema(conn, schema)
    workloads = {
        t: Workload(Source("postgresql", f"{schema}.{t}", services.pg_connect), 11 + i)
        for i, t in enumerate(TABLES)
    }
    for w in workloads.values():
        w.run(60)  # through the initial snapshot
    settings = {"max_events_per_batch": 90}
    config = pg_config(
        spark_world.config.base_dir, schema, kafka_format=request.param, mirror=settings
    )
    bootstrap(config)
    os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
    try:
        yield schema, str(config), workloads
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")


def test_each_table_reads_its_own_records(
    two_tables: tuple[str, str, dict[str, Workload]],
    spark_world: SparkWorld,
    caplog: pytest.LogCaptureFixture,
) -> None:
    schema, config, workloads = two_tables
    services.wait_published(schema)
    mirror(load_config(config), available_now=True)  # the job learns both tables' schemas
    for w in workloads.values():
        w.run(120)
    with services.pg_connect() as conn:  # a new row schema for b only, mid-stream
        conn.execute(f"ALTER TABLE {schema}.b ADD COLUMN extra5 integer")
        conn.execute(f"UPDATE {schema}.b SET extra5 = id * 3 WHERE id % 2 = 0")
    for w in workloads.values():
        w.run(120)
    services.wait_published(schema)
    with caplog.at_level(logging.INFO, logger="cdcmirror"):
        mirror(load_config(config), available_now=True)
    lines = [r.getMessage() for r in caplog.records]
    tables = [json.loads(x.split(" ", 2)[2]) for x in lines if x.startswith("mirror batch {")]
    by_batch: dict[int, set[str]] = {}
    for t in tables:
        if t["events"]:
            by_batch.setdefault(t["batch"], set()).add(t["table"].rsplit(".", 1)[1])
    both = {b for b, names in by_batch.items() if names == set(TABLES)}
    done = {int(x.split()[1]): x for x in lines if x.startswith("batch ") and " done in " in x}
    once = {b for b in both if "read once, no first look" in done[b]}
    assert len(once) >= 3, (by_batch, done)  # batches of both tables, no first look
    new = "of a new row schema; read again with a first look"
    assert any(f"{schema}_mirror.b: " in x and new in x for x in lines), lines
    assert all(t["events"] <= 90 for t in tables) and sum(t["events"] for t in tables) > 400
    spark = spark_world.spark
    for t, w in workloads.items():
        extra = ["extra5"] if t == "b" else []
        rows = assert_same(w.src, spark, f"{schema}_mirror.{t}", all_columns("postgresql") + extra)
        assert rows > 50
    got = spark.sql(f"SELECT count(*) FROM {schema}_mirror.b WHERE extra5 = id * 3").first()
    assert got is not None and got[0] > 0


def _mirror_logged(config: str, caplog: pytest.LogCaptureFixture) -> list[str]:
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="cdcmirror"):
        mirror(load_config(config), available_now=True)
    return [r.getMessage() for r in caplog.records]


def test_a_first_batch_is_read_in_the_schemas_of_its_first_records(
    two_tables: tuple[str, str, dict[str, Workload]],
    spark_world: SparkWorld,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The job's first batch, in row schemas it has not applied, is read once in those of
    each table's first records (``cdc/records.guess``); b's holds a second one (a
    column added before the job ran) and takes a first look. The next batch of both is
    read once in the schemas the first one taught the job."""
    schema, config, workloads = two_tables
    with services.pg_connect() as conn:
        conn.execute(f"ALTER TABLE {schema}.b ADD COLUMN extra5 integer")
        conn.execute(f"UPDATE {schema}.b SET extra5 = id * 3 WHERE id % 2 = 0")
    for w in workloads.values():
        w.run(60)
    services.wait_published(schema)
    text = Path(config).read_text("utf-8")
    one_batch = text.replace("max_events_per_batch = 90", "max_events_per_batch = 100000")
    assert one_batch != text
    Path(config).write_text(one_batch, "utf-8")
    lines = _mirror_logged(config, caplog)
    guessed = "read once in the row schemas of its first records"
    for t in TABLES:
        assert any(x.endswith(f".{t}: {guessed}") for x in lines), lines
    new = "of a new row schema; read again with a first look"
    looks = [x for x in lines if new in x]
    assert len(looks) == 1 and f"{schema}_mirror.b: " in looks[0], lines
    tables = [json.loads(x.split(" ", 2)[2]) for x in lines if x.startswith("mirror batch {")]
    assert {t["batch"] for t in tables if t["events"]} == {0}, tables
    for w in workloads.values():
        w.run(40)
    services.wait_published(schema)
    lines = _mirror_logged(config, caplog)
    assert not any(guessed in x or new in x for x in lines), lines
    done = [x for x in lines if x.startswith("batch ") and " done in " in x]
    assert done and all("read once, no first look" in x for x in done), done
    spark = spark_world.spark
    for t, w in workloads.items():
        extra = ["extra5"] if t == "b" else []
        rows = assert_same(w.src, spark, f"{schema}_mirror.{t}", all_columns("postgresql") + extra)
        assert rows > 50
