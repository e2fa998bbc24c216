"""The jars pyspark ships: where they are, and their artifact names (without versions)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def pyspark_jars_dir() -> Path | None:
    """pyspark's ``jars`` directory (found without importing pyspark), or None without it."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "jars"


def artifact_name(filename: str) -> str:
    """``kafka-clients-3.9.0.jar`` -> ``kafka-clients``.

    >>> artifact_name("iceberg-spark-runtime-4.0_2.13-1.11.0.jar")
    'iceberg-spark-runtime-4.0_2.13'
    """
    stem = filename.removesuffix(".jar")
    parts = stem.split("-")
    for i in range(len(parts) - 1, 0, -1):
        if parts[i][:1].isdigit():
            stem = "-".join(parts[:i])
            break
    return stem


def pyspark_jar_names() -> set[str]:
    """Artifact names of the jars pyspark itself ships."""
    jars = pyspark_jars_dir()
    return {artifact_name(p.name) for p in jars.glob("*.jar")} if jars else set()
