"""A batch the applier runs again in the job (an executor lost, ``spark/batches.py``)
after an event stream's append committed: the second run appends nothing twice (issue 67,
item 3). Local Spark and the embedded catalog; the Kafka records are made in the test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from cdcmirror.catalog import load_catalog
from cdcmirror.catalog.streams import create_stream_table
from cdcmirror.catalog.tables import ensure_namespace
from cdcmirror.cdc_columns import IcebergColumn
from cdcmirror.commands.streams import StreamAccess
from cdcmirror.mirror.evolution import Evolution
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.spark.cdc.batch import Applier, ApplierOptions, CatalogHooks
from cdcmirror.spark.streams.apply import StreamBatch, StreamTable
from cdcmirror.streams.spec import StreamSpec
from support.golden import KAFKA_SCHEMA
from support.spark import SparkWorld

NAMESPACE = "stream_retry"
TOPIC = "clicks_retry"


def _records(spark: Any, values: list[bytes]) -> Any:
    now = datetime.now(tz=UTC)
    rows: list[tuple[Any, ...]] = [(None, v, TOPIC, 0, i, now, 0, []) for i, v in enumerate(values)]
    return spark.createDataFrame(rows, KAFKA_SCHEMA)


def _no_cdc(table: MirrorTable, *_: Evolution) -> MirrorTable:
    raise AssertionError(f"no CDC table in this test: {table.identifier}")


@pytest.fixture
def lose_an_executor_once(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The stream's dead letters fail the first time as a lost executor's data does (after
    the append committed), then work."""
    calls: list[int] = []
    made = StreamBatch._dead_letters

    def flaky(self: StreamBatch, *args: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("org.apache.spark.shuffle.FetchFailedException: lost (test)")
        return made(self, *args)

    monkeypatch.setattr(StreamBatch, "_dead_letters", flaky)
    yield calls


def test_a_batch_run_again_appends_a_stream_once(
    spark_world: SparkWorld, lose_an_executor_once: list[int]
) -> None:
    spark, config = spark_world.spark, spark_world.config
    catalog = load_catalog(config)
    ensure_namespace(catalog, NAMESPACE)
    spec = StreamSpec(0, f"{NAMESPACE}.clicks", "json", "infer", topic=TOPIC)
    identifier = spec.identifier(NAMESPACE)
    if catalog.table_exists(identifier):
        catalog.drop_table(identifier)
    columns = [IcebergColumn("n", "long", False, None)]
    create_stream_table(catalog, identifier, spec, columns, 2)
    access = StreamAccess(catalog)
    stream = StreamTable(spec, identifier, tuple(columns))
    options = ApplierOptions(
        schemas=True,
        soft_deletes=False,
        fail_on_dead_letter=False,
        internal_namespace=f"{NAMESPACE}__cdcmirror",
    )
    hooks = CatalogHooks(lambda t: t, _no_cdc, access.evolve, access.reload)
    applier = Applier(spark, {}, options, hooks, {identifier: stream})
    values = [json.dumps({"n": 1}).encode(), json.dumps({"n": 2}).encode(), b"not json"]
    applier.process(_records(spark, values), 0)

    assert len(lose_an_executor_once) == 2, "the batch ran once more after the lost executor"
    got = sorted(r[0] for r in spark.sql(f"SELECT n FROM {identifier}").collect())
    assert got == [1, 2], "a stream's events are appended once, whatever runs again"
    appends = spark.sql(
        f"SELECT count(*) FROM {identifier}.snapshots WHERE operation = 'append'"
    ).head(1)[0][0]
    assert appends == 1, appends
    dead = spark.sql(
        f"SELECT count(*) FROM {NAMESPACE}__cdcmirror.dead_letter WHERE topic = '{TOPIC}'"
    ).head(1)[0][0]
    assert dead == 1, dead
