"""Hadoop's local file system without a process per file, for a local Spark.

Without Hadoop's native library (pyspark ships none), Hadoop runs ``chmod`` in a new process
for every local file and directory it creates and ``readlink`` for every rename through
FileContext: a process each, about 7 files per Iceberg commit (data, delete,
manifests, manifest list, metadata, each with its checksum file) and 4 more per micro-batch
in Spark's streaming checkpoint. The classes in ``java/local-fs/io/cdcmirror/hadoop`` set the same
permissions with one system call. ``cdcmirror jars resolve`` compiles them with the JDK's
``javac`` into the jar cache (:func:`build_jar`); a Spark session on ``local`` masters uses
the jar when it is there (:func:`spark_conf`). Without a JDK nothing is built, and Spark
uses Hadoop's own classes: the same files, only slower."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from cdcmirror import paths
from cdcmirror.jvm.java_parts import JavaPart
from cdcmirror.jvm.pyspark_jars import pyspark_jars_dir

JAR_NAME = "cdcmirror-local-fs.jar"
FILE_IMPL = "io.cdcmirror.hadoop.NoForkLocalFileSystem"  # FileSystem (Iceberg's files)
CONTEXT_IMPL = "io.cdcmirror.hadoop.NoForkLocalFs"  # FileContext (the streaming checkpoint)
_LOCAL_MASTER = re.compile(r"local(\[[^\]]*\])?")


def _hadoop_jar() -> Path | None:
    """pyspark's ``hadoop-client-api`` jar, the classes the sources compile against."""
    jars = pyspark_jars_dir()
    if jars is None:
        return None
    found = sorted(jars.glob("hadoop-client-api-*.jar"))
    return found[-1] if found else None


def part(root: Path | None = None) -> JavaPart:
    """The jar's build (``java_parts``), in ``root``'s ``local-fs`` (the jar cache's)."""
    return JavaPart(
        "local-fs",
        JAR_NAME,
        lambda: [jar] if (jar := _hadoop_jar()) else None,
        lambda: (root or paths.jars_dir()) / "local-fs",
        "Spark creates local files the slower way",
    )


MARKER = part().marker_name


def fingerprint(hadoop_jar: Path) -> str:
    """What the built jar depends on: the sources and the Hadoop jar's name."""
    return part().fingerprint([hadoop_jar])


def built_jar(root: Path | None = None) -> Path | None:
    """The jar, when it was built from these sources for this pyspark's Hadoop."""
    return part(root).built()


def build_jar(
    root: Path | None = None, progress: Callable[[str], None] | None = None
) -> Path | None:
    """Compile the sources into the jar cache unless built already; None (and a line to
    ``progress`` saying why) without a JDK or pyspark's Hadoop jar."""
    return part(root).build(progress)


def spark_conf(master: str, jar: Path | None) -> dict[str, str]:
    """The settings that make a Spark session on ``master`` use the jar's file systems for
    ``file:`` paths: none unless the master is ``local`` (one JVM) and the jar is built.

    >>> spark_conf("local[2]", Path("/c/x.jar"))["spark.hadoop.fs.file.impl"]
    'io.cdcmirror.hadoop.NoForkLocalFileSystem'
    >>> spark_conf("spark://h:7077", Path("/c/x.jar")), spark_conf("local", None)
    ({}, {})
    """
    if jar is None or not _LOCAL_MASTER.fullmatch(master.strip()):
        return {}
    return {
        "spark.hadoop.fs.file.impl": FILE_IMPL,
        "spark.hadoop.fs.AbstractFileSystem.file.impl": CONTEXT_IMPL,
    }
