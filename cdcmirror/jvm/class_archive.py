"""A class-data archive for the Spark driver's JVM (HotSpot's application class-data
sharing): the classes a job loads (Spark's, Iceberg's, Kafka's), parsed, verified and laid
out once at install time, then mapped into every local session's JVM instead of being
read from the jars again. A job's start and first batch spend a large part of their time
loading classes (figures: benchmarks/RESULTS.md).

``cdcmirror jars resolve`` makes the archive (:func:`build`): a short Spark run of the kinds
of queries a batch makes (``spark/class_archive_run.py``), in a JVM started with
``-XX:ArchiveClassesAtExit``, which writes the archive as it exits. A session uses it
(:func:`java_options`) only when one was made for exactly its JVM: the archive's name
holds a digest of the Java runtime, pyspark's jars (the JVM's class path) and the session's
own jars. The JVM checks the archive again when it maps it and runs without it when they
do not match, so a stale archive costs the time it saves, never a wrong class.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from cdcmirror import paths
from cdcmirror.jvm.pyspark_jars import pyspark_jars_dir

JARS = "spark.jars"
CLASS_PATH = "spark.driver.extraClassPath"
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
# The JVM's own log would print CDS warnings (a class it cannot archive, an archive it cannot
# map) on standard output, where commands print their JSON: errors only, on standard error.
_QUIET = "-Xlog:disable -Xlog:all=error:stderr"


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else None
    if found is None or not found.exists():
        which = shutil.which("java")
        found = Path(which) if which else None
    return found.resolve() if found is not None else None


def archive_path(conf: Mapping[str, str], root: Path | None = None) -> Path | None:
    """Where the archive of a session with these settings is (whether made or not); None
    without a Java runtime or pyspark's jars."""
    java, jars = _java(), pyspark_jars_dir()
    if java is None or jars is None:
        return None
    stat = java.stat()
    facts = [
        str(java),
        stat.st_size,
        int(stat.st_mtime),
        str(jars),
        sorted(p.name for p in jars.glob("*.jar")),
        conf.get(JARS, ""),
        conf.get(CLASS_PATH, ""),
    ]
    digest = hashlib.sha256(json.dumps(facts).encode()).hexdigest()[:16]
    return (root or paths.jvm_dir()) / f"driver-{digest}.jsa"


def java_options(conf: Mapping[str, str], root: Path | None = None) -> str:
    """The driver JVM's options that map the session's archive, when it was made; ``""``
    otherwise.

    >>> java_options({JARS: "/nowhere/x.jar"}, Path("/nonexistent"))
    ''
    """
    path = archive_path(conf, root)
    if path is None or not path.is_file():
        return ""
    return f"-XX:SharedArchiveFile={path} -Xshare:auto {_QUIET}"


def build(
    conf: Mapping[str, str],
    progress: Callable[[str], None],
    root: Path | None = None,
    timeout: float = 600,
) -> Path | None:
    """Make the archive of a session with ``conf`` unless it is there; None (and a line to
    ``progress`` saying why) when it cannot be made. ``conf`` is the session's settings,
    its catalog in a directory of its own: the run writes a table there."""
    path = archive_path(conf, root)
    if path is None:
        progress("no class-data archive for Spark's driver: no Java runtime or pyspark")
        return None
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    own = f"{conf.get(JAVA_OPTIONS, '')} -XX:ArchiveClassesAtExit={part} {_QUIET}".strip()
    progress(f"making the class-data archive of Spark's driver JVM ({path.name})")
    run = subprocess.run(
        [sys.executable, "-m", "cdcmirror.spark.class_archive_run"],
        input=json.dumps({**conf, JAVA_OPTIONS: own}),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if run.returncode != 0 or not part.is_file() or part.stat().st_size == 0:
        part.unlink(missing_ok=True)
        tail = (run.stderr or run.stdout).strip().splitlines()[-3:]
        progress(f"no class-data archive for Spark's driver (jobs start slower): {tail}")
        return None
    part.replace(path)
    return path
