"""Java classes of the session's JVM by their fully qualified names.

Not ``spark.sparkContext._jvm.<package>.<Class>``: Py4J resolves each part of that path
with a class lookup, and a part that is a package is a lookup that fails, through every jar
on the class path and once more for each of PySpark's star imports: 8 % of a small batch's
work in a py-spy profile (``benchmarks/RESULTS.md``, 2026-12-02). A class named here is
found by one lookup, when a member is first used.
"""

from __future__ import annotations

from typing import Any

from cdcmirror.catalog_properties import CATALOG_NAME


def java_class(spark: Any, name: str) -> Any:
    """The Java class ``name`` (e.g. ``java.util.HashMap``) of ``spark``'s JVM: its static
    members, and its constructors by calling it."""
    from py4j.java_gateway import JavaClass

    return JavaClass(name, spark.sparkContext._gateway._gateway_client)


def iceberg_table(spark: Any, target: str) -> Any:
    """The Iceberg table ``target`` (its Spark name) as the session's catalog has it now
    (Java)."""
    spark_util = java_class(spark, "org.apache.iceberg.spark.Spark3Util")
    return spark_util.loadIcebergTable(spark._jsparkSession, f"{CATALOG_NAME}.{target}")
