"""Build the SparkSession cdcmirror runs on: cached jars, Iceberg extensions, the catalog."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from cdcmirror.config import Config
from cdcmirror.config.catalog import (
    CATALOG_NAME,
    ensure_embedded_catalog_dirs,
    pyiceberg_properties,
    spark_catalog_conf,
)
from cdcmirror.config.s3a import HADOOP_PREFIX, s3a_settings
from cdcmirror.jvm import class_archive, local_fs
from cdcmirror.jvm.manifest import load_manifest
from cdcmirror.jvm.pyspark_jars import artifact_name, pyspark_jar_names
from cdcmirror.jvm.resolve import group_jars

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)


def spark_jars(config: Config) -> list[str]:
    """The jars for ``spark.jars``: ``spark.jars`` from config (cluster users), else the cache.

    Jars pyspark already ships are left out so one class never comes from two jars.
    """
    configured: list[str] = list(config.spark.jars)
    if configured:
        return configured
    shipped = pyspark_jar_names()
    return [
        str(p)
        for p in group_jars(load_manifest().groups["spark"])
        if artifact_name(p.name) not in shipped
    ]


LAUNCH_KEYS = ("spark.master", "spark.jars", "spark.driver.memory", "spark.driver.extraJavaOptions")
"""Settings that only count when the JVM starts: under spark-submit they are its options."""


def submitted(environ: Mapping[str, str] | None = None) -> bool:
    """True when spark-submit started this Python driver (it hands the running JVM over in
    ``PYSPARK_GATEWAY_PORT``).

    >>> submitted({"PYSPARK_GATEWAY_PORT": "40123"}), submitted({})
    (True, False)
    """
    return "PYSPARK_GATEWAY_PORT" in (os.environ if environ is None else environ)


def session_conf(config: Config, app_name: str, under_submit: bool = False) -> dict[str, str]:
    """Every setting of the session, as plain strings (unit-testable without Spark).
    ``under_submit``: spark-submit started the JVM, so master, jars and driver settings
    are its own (``--master``, ``--jars``, ``--driver-memory``), not these."""
    state = config.state_dir
    conf = {
        "spark.app.name": app_name,
        "spark.master": config.spark.master,
        # under spark-submit its --jars count, and the cache need not exist on this host
        "spark.jars": "" if under_submit else ",".join(spark_jars(config)),
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.defaultCatalog": CATALOG_NAME,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        # The decoder checks each converted value itself (a value that does not convert is
        # NULL, and the event goes to the dead-letter table) instead of failing the batch.
        "spark.sql.ansi.enabled": "false",
        # Constraint inference over the decoder's wide projections grows without bound
        # (minutes of planning per batch); the mirror's filters gain nothing from it.
        "spark.sql.constraintPropagation.enabled": "false",
        "spark.ui.enabled": "false",
        # Each micro-batch runs the same queries again: their generated classes are reused
        # from this cache (default 100 entries, which a batch's ~50 classes per table evict,
        # so every batch compiled them anew, a large part of a small batch).
        "spark.sql.codegen.cache.maxEntries": "2000",
        # HotSpot never compiles a method past 8,000 bytes of bytecode: the decoder's wide
        # projections ran interpreted in whole-stage code. Past this size Spark runs the
        # plan without it instead, which decodes faster than the interpreted method.
        "spark.sql.codegen.hugeMethodLimit": "8000",
        # Spark's runtime bloom filter took a batch's kept rows (no size known) for a big
        # table and, in a MERGE of updates, filtered them with the keys of a second scan of
        # the target: a Spark job of its own and 8 Mbit built, shipped and read per batch
        # and table. Off: 2 jobs instead of 3 (figures: benchmarks/RESULTS.md).
        "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
        "spark.driver.memory": "4g",
        "spark.sql.warehouse.dir": str(state / "spark-warehouse"),
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={state}",
    }
    conf.update(spark_catalog_conf(config))
    # local files without a process each (jvm/local_fs.py)
    built = None if under_submit else local_fs.built_jar()
    fast = local_fs.spark_conf(config.spark.master, built)
    conf.update(fast)
    user = {str(k): str(v) for k, v in dict(config.spark.conf).items()}
    # the checkpoint on S3 (s3a://) reaches the store the catalog's s3.* properties name
    s3a = s3a_settings(pyiceberg_properties(config), user)
    conf.update({HADOOP_PREFIX + k: v for k, v in s3a.items()})
    conf.update(user)
    if fast:  # on the JVM's class path: spark-submit reads spark.jars through it
        path = conf.get("spark.driver.extraClassPath")
        conf["spark.driver.extraClassPath"] = os.pathsep.join(filter(None, (str(built), path)))
    if under_submit:
        for key in LAUNCH_KEYS:
            conf.pop(key, None)
    elif class_archive.JAVA_OPTIONS not in user:
        # the classes of Spark, Iceberg and Kafka mapped from the archive install made
        archived = class_archive.java_options(conf)
        if archived:
            conf[class_archive.JAVA_OPTIONS] += f" {archived}"
    return conf


def build_spark_session(config: Config, app_name: str = "cdcmirror") -> SparkSession:
    """A SparkSession with the cached jars and the configured Iceberg catalog."""
    from pyspark.sql import SparkSession

    ensure_embedded_catalog_dirs(config)
    # Python workers (the Avro decoder, decimals wider than 38 digits) import cdcmirror:
    # run them on this interpreter, which has it, not on whatever `python3` is on PATH
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder
    under_submit = submitted()
    if under_submit:
        logger.info("started by spark-submit: master, jars and driver settings are its own")
    for key, value in session_conf(config, app_name, under_submit).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
