"""The Spark session's settings, on their own and under spark-submit (no Spark started)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cdcmirror.config import load_config
from cdcmirror.jvm import local_fs
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


@pytest.mark.parametrize(
    ("key", "default", "configured"),
    [
        # huge generated methods run without whole-stage code
        ("spark.sql.codegen.hugeMethodLimit", "8000", "65535"),
        # Spark took a micro-batch's kept rows (no size known) for a big table and built a
        # bloom filter of 8 Mbit from a second scan of the target to filter them with
        ("spark.sql.optimizer.runtime.bloomFilter.enabled", "false", "true"),
    ],
)
def test_the_session_s_own_defaults_unless_configured(
    tmp_path: Path, key: str, default: str, configured: str
) -> None:
    assert session_conf(load_config(environ={}, cwd=tmp_path / "none"), "app")[key] == default
    (tmp_path / "cdcmirror.toml").write_text(f'[spark.conf]\n"{key}" = "{configured}"\n')
    assert session_conf(load_config(environ={}, cwd=tmp_path), "app")[key] == configured


def test_s3a_settings_default_to_the_catalogs_s3_properties(tmp_path: Path) -> None:
    """The checkpoint on s3a:// reaches the store the catalog names; [spark.conf] wins."""
    (tmp_path / "cdcmirror.toml").write_text(
        '[iceberg.catalog]\ntype = "rest"\nuri = "http://c:8181"\n'
        '"s3.endpoint" = "http://s3:7070"\n"s3.access-key-id" = "k"\n'
        '"s3.secret-access-key" = "s"\n"s3.path-style-access" = "true"\n'
        '[spark.conf]\n"spark.hadoop.fs.s3a.access.key" = "other"\n'
        '[mirror]\ncheckpoint_location = "s3a://warehouse/ck"\n'
    )
    conf = session_conf(load_config(environ={}, cwd=tmp_path), "app")
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://s3:7070"
    assert conf["spark.hadoop.fs.s3a.secret.key"] == "s"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.access.key"] == "other"
    plain = session_conf(load_config(environ={}, cwd=tmp_path / "none"), "app")
    assert not [k for k in plain if k.startswith("spark.hadoop.fs.s3a.")]


def _with_local_fs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    jar = tmp_path / "cdcmirror-local-fs.jar"
    monkeypatch.setattr(local_fs, "built_jar", lambda root=None: jar)
    return jar


def test_a_local_session_uses_the_built_local_file_system(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    jar = _with_local_fs(monkeypatch, tmp_path)
    (tmp_path / "cdcmirror.toml").write_text(
        '[spark.conf]\n"spark.driver.extraClassPath" = "/u/mine.jar"\n'
    )
    conf = session_conf(load_config(environ={}, cwd=tmp_path), "app")
    assert conf["spark.hadoop.fs.file.impl"] == local_fs.FILE_IMPL
    assert conf["spark.hadoop.fs.AbstractFileSystem.file.impl"] == local_fs.CONTEXT_IMPL
    # on the JVM's class path (spark-submit reads spark.jars through it), the user's kept
    assert conf["spark.driver.extraClassPath"] == f"{jar}{os.pathsep}/u/mine.jar"


def test_the_local_file_system_is_left_out_where_it_does_not_apply(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _with_local_fs(monkeypatch, tmp_path)
    cluster = {"CDCMIRROR_SPARK__MASTER": "spark://h:7077"}
    own = {"CDCMIRROR_SPARK__CONF__SPARK.HADOOP.FS.FILE.IMPL": "x.Mine"}
    for env, under_submit in ((cluster, False), ({}, True)):
        conf = session_conf(load_config(environ=env, cwd=tmp_path), "app", under_submit)
        assert not {k for k in conf if ".file.impl" in k or "extraClassPath" in k}, conf
    conf = session_conf(load_config(environ=own, cwd=tmp_path), "app")
    assert conf["spark.hadoop.fs.file.impl"] == "x.Mine"  # the user's setting wins
    monkeypatch.setattr(local_fs, "built_jar", lambda root=None: None)  # no JDK: not built
    conf = session_conf(load_config(environ={}, cwd=tmp_path), "app")
    assert not {k for k in conf if ".file.impl" in k}, conf


def test_a_local_session_maps_the_class_archive_made_for_its_jars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver JVM maps the class-data archive install made (``jvm/class_archive.py``)
    only when one was made for exactly its jars; never under spark-submit, or when the
    configuration sets the driver's Java options itself."""
    from cdcmirror import paths
    from cdcmirror.jvm import class_archive

    monkeypatch.setattr(paths, "jvm_dir", lambda: tmp_path / "jvm")
    config = load_config(environ={}, cwd=tmp_path)
    key = class_archive.JAVA_OPTIONS
    assert "SharedArchiveFile" not in session_conf(config, "app")[key]  # none made
    path = class_archive.archive_path(session_conf(config, "app"))
    assert path is not None and path.parent == tmp_path / "jvm"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    options = session_conf(config, "app")[key]
    assert f"-XX:SharedArchiveFile={path} -Xshare:auto" in options
    assert options.startswith("-Dderby.system.home=")  # the session's own option stays
    other = load_config(environ={"CDCMIRROR_SPARK__JARS": "/j/a.jar"}, cwd=tmp_path)
    assert "SharedArchiveFile" not in session_conf(other, "app")[key]  # made for other jars
    assert key not in session_conf(config, "app", under_submit=True)
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "cdcmirror.toml").write_text(
        '[spark.conf]\n"spark.driver.extraJavaOptions" = "-Dx=1"\n'
    )
    assert session_conf(load_config(environ={}, cwd=tmp_path / "own"), "app")[key] == "-Dx=1"
