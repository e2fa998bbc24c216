"""Building the local file system's jar (``cdcmirror/jvm/local_fs.py``), without Spark:
a stale or missing build is not used; without a JDK nothing is built and the reason said.
(The build itself and the classes at work: ``spark_tests/test_local_fs.py``.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from cdcmirror.jvm import local_fs


def test_a_jar_built_from_other_sources_is_not_used(tmp_path: Path) -> None:
    directory = tmp_path / "local-fs"
    directory.mkdir()
    (directory / local_fs.JAR_NAME).write_bytes(b"PK")
    assert local_fs.built_jar(tmp_path) is None  # no marker
    (directory / local_fs.MARKER).write_text("an older build\n")
    assert local_fs.built_jar(tmp_path) is None
    hadoop = local_fs._hadoop_jar()
    assert hadoop is not None, "pyspark ships hadoop-client-api"
    (directory / local_fs.MARKER).write_text(local_fs.fingerprint(hadoop) + "\n")
    assert local_fs.built_jar(tmp_path) == directory / local_fs.JAR_NAME


def test_without_a_jdk_nothing_is_built_and_the_reason_is_said(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from cdcmirror.jvm import java_parts

    monkeypatch.setattr(java_parts, "_javac", lambda: None)
    said: list[str] = []
    assert local_fs.build_jar(tmp_path, said.append) is None
    assert not (tmp_path / "local-fs").exists()
    assert said and "javac" in said[0] and "openjdk-17-jdk-headless" in said[0], said
