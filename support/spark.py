"""The local Spark the Spark tests and the integration tests share: a session built by
cdcmirror on the embedded catalog, in a fresh directory (no service needed)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from cdcmirror.config import Config, load_config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass
class SparkWorld:
    spark: SparkSession
    config: Config


@pytest.fixture(scope="session")
def spark_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkWorld]:
    """A local SparkSession built by cdcmirror, on the embedded catalog in a fresh directory."""
    from cdcmirror.spark.session import build_spark_session

    work = tmp_path_factory.mktemp("cdcmirror-home")
    config = load_config(environ={}, cwd=work)
    spark = build_spark_session(config, "cdcmirror-tests")
    try:
        yield SparkWorld(spark, config)
    finally:
        spark.stop()
