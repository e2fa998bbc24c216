"""Hadoop's local file system without a process per file, for a local Spark.

Without Hadoop's native library (pyspark ships none), Hadoop runs ``chmod`` in a new process
for every local file and directory it creates and ``readlink`` for every rename through
FileContext: 5-10 ms each on a small host, about 7 files per Iceberg commit (data, delete,
manifests, manifest list, metadata, each with its checksum file) and 4 more per micro-batch
in Spark's streaming checkpoint. The classes in ``java/io/cdcmirror/hadoop`` set the same
permissions with one system call. ``cdcmirror jars resolve`` compiles them with the JDK's
``javac`` into the jar cache (:func:`build_jar`); a Spark session on ``local`` masters uses
the jar when it is there (:func:`spark_conf`). Without a JDK nothing is built, and Spark
uses Hadoop's own classes: the same files, only slower."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from cdcmirror import paths
from cdcmirror.jvm.pyspark_jars import pyspark_jars_dir

SOURCES = Path(__file__).parent / "java"
JAR_NAME = "cdcmirror-local-fs.jar"
MARKER = ".built"
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


def _sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def fingerprint(hadoop_jar: Path) -> str:
    """What the built jar depends on: the sources and the Hadoop jar's name."""
    digest = hashlib.sha256(hadoop_jar.name.encode())
    for source in _sources():
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def _jar_dir(root: Path | None) -> Path:
    return (root or paths.jars_dir()) / "local-fs"


def built_jar(root: Path | None = None) -> Path | None:
    """The jar, when it was built from these sources for this pyspark's Hadoop."""
    hadoop = _hadoop_jar()
    directory = _jar_dir(root)
    marker, jar = directory / MARKER, directory / JAR_NAME
    if hadoop is None or not (jar.is_file() and marker.is_file()):
        return None
    return jar if marker.read_text().strip() == fingerprint(hadoop) else None


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def build_jar(
    root: Path | None = None, progress: Callable[[str], None] | None = None
) -> Path | None:
    """Compile the sources into the jar cache unless built already; None (and a line to
    ``progress`` saying why) without a JDK or pyspark's Hadoop jar."""
    say = progress or (lambda _line: None)
    hadoop, javac = _hadoop_jar(), _javac()
    if hadoop is None or javac is None:
        missing = "javac (a JDK: openjdk-17-jdk-headless)" if hadoop else "pyspark's Hadoop jar"
        say(f"local-fs: not built, no {missing}; Spark creates local files the slower way")
        return None
    jar = built_jar(root)
    if jar is not None:
        say(f"local-fs: cached {jar}")
        return jar
    directory = _jar_dir(root)
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        classes = Path(tmp) / "classes"
        command = [javac, "--release", "17", "-nowarn", "-cp", str(hadoop), "-d", str(classes)]
        done = subprocess.run(
            [*command, *map(str, _sources())], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            say(f"local-fs: not built, javac failed: {done.stderr.strip()[-500:]}")
            return None
        staged = Path(tmp) / JAR_NAME
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as out:
            for path in sorted(classes.rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
        os.replace(staged, directory / JAR_NAME)
    (directory / MARKER).write_text(fingerprint(hadoop) + "\n")
    say(f"local-fs: built {directory / JAR_NAME}")
    return directory / JAR_NAME


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
