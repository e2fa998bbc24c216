"""`cdcmirror reconcile` against a real PostgreSQL source mirrored through Debezium, Kafka,
Spark and Iceberg."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cdcmirror.stack.control import Stack
from support import reconcile_scenarios as rc
from support.mirror_fixture import Mirrored, mirrored
from support.spark import SparkWorld


@pytest.fixture(scope="module")
def pg(stack: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    yield from mirrored(spark_world, "json", 500, signal=True)


def test_in_sync_after_a_mirrored_workload(pg: Mirrored) -> None:
    rc.in_sync_after_workload(pg, 1500, [])  # every column compared: floats, arrays


def test_lagging_reported_in_every_format(pg: Mirrored) -> None:
    rc.lagging_reported_in_every_format(pg)


def test_no_false_drift_while_a_workload_runs(pg: Mirrored) -> None:
    rc.no_false_drift_while_workload_runs(pg, 1500)


def test_drift_found_with_its_keys_then_repaired(pg: Mirrored) -> None:
    keys_file = rc.drift_found_with_keys(pg)
    rc.repair_heals(pg, keys_file)
