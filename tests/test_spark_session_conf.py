"""The Spark session's settings, on their own and under spark-submit (no Spark started)."""

from __future__ import annotations

from pathlib import Path

from cdcmirror.config import load_config
from cdcmirror.spark.session import LAUNCH_KEYS, session_conf


def test_own_session_sets_master_jars_and_driver(tmp_path: Path) -> None:
    env = {"CDCMIRROR_SPARK__MASTER": "spark://h:7077", "CDCMIRROR_SPARK__JARS": "/j/a.jar"}
    conf = session_conf(load_config(environ=env, cwd=tmp_path), "app")
    assert conf["spark.master"] == "spark://h:7077"
    assert conf["spark.jars"] == "/j/a.jar"
    assert set(LAUNCH_KEYS) <= set(conf)


def test_under_spark_submit_the_launch_settings_are_its_own(tmp_path: Path) -> None:
    env = {
        "CDCMIRROR_SPARK__MASTER": "spark://h:7077",
        "CDCMIRROR_SPARK__CONF__SPARK.DRIVER.MEMORY": "8g",
        "CDCMIRROR_SPARK__CONF__SPARK.SQL.SHUFFLE.PARTITIONS": "16",
    }
    conf = session_conf(load_config(environ=env, cwd=tmp_path), "app", under_submit=True)
    assert not set(LAUNCH_KEYS) & set(conf), conf
    # the session's own settings stay: the catalog, the extensions, the user's SQL settings
    assert conf["spark.sql.shuffle.partitions"] == "16"
    assert conf["spark.sql.extensions"].endswith("IcebergSparkSessionExtensions")
    assert any(k.startswith("spark.sql.catalog.") for k in conf)
