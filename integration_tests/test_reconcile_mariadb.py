"""`cdcmirror reconcile` against a real MariaDB source mirrored through Debezium, Kafka,
Spark and Iceberg."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cdcmirror.stack.control import Stack
from integration_tests import reconcile_scenarios as rc
from integration_tests.conftest import SparkWorld
from integration_tests.mirror_fixture import Mirrored
from integration_tests.test_mirror_mariadb import maria_mirrored


@pytest.fixture(scope="module")
def maria(stack: Stack, mariadb: None, spark_world: SparkWorld) -> Iterator[Mirrored]:
    yield from maria_mirrored(spark_world, 500, signal=True)


def test_in_sync_after_a_mirrored_workload(maria: Mirrored) -> None:
    rc.in_sync_after_workload(maria, 1500, ["amount (double)", "ratio (float)"])


def test_lagging_reported_in_every_format(maria: Mirrored) -> None:
    rc.lagging_reported_in_every_format(maria)


def test_drift_found_with_its_keys_then_repaired(maria: Mirrored) -> None:
    keys_file = rc.drift_found_with_keys(maria)
    rc.repair_heals(maria, keys_file)
