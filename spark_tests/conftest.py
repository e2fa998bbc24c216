"""The local Spark tests: the mirror's own SQL, decode and apply run by a local Spark on the
embedded Iceberg catalog. No database, Kafka or Connect is needed (`make spark`)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "spark_tests" in str(item.fspath):
            item.add_marker(pytest.mark.spark)
