"""Run by ``test_local_fs.py`` in a process of its own (its PATH logs every ``chmod``,
``readlink``, ``ls`` and ``stat`` the JVM starts): a Spark session as cdcmirror builds it,
an Iceberg table written, MERGEd into and read, a file written and renamed through
FileContext (as Spark's streaming checkpoint does), a symbolic link looked at. Prints JSON.

    python -m support.local_fs_probe DIR own|hadoop
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

from cdcmirror.config import load_config
from cdcmirror.config.catalog import ensure_embedded_catalog_dirs
from cdcmirror.spark.session import session_conf

HADOOP_OWN = {  # Hadoop's classes, as without cdcmirror's jar
    "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.LocalFileSystem",
    "spark.hadoop.fs.AbstractFileSystem.file.impl": "org.apache.hadoop.fs.local.LocalFs",
}


def _file_context(spark: Any, work: Path) -> dict[str, Any]:
    """A file created and renamed through FileContext; the link status of a link and a file."""
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    fc = jvm.org.apache.hadoop.fs.FileContext.getFileContext(jvm.java.net.URI("file:///"), conf)
    path = jvm.org.apache.hadoop.fs.Path
    flags = jvm.java.util.EnumSet.of(jvm.org.apache.hadoop.fs.CreateFlag.CREATE)
    create_opts = jvm.org.apache.hadoop.fs.Options.CreateOpts
    no_opts = spark.sparkContext._gateway.new_array(create_opts, 0)
    (work / "ck").mkdir()
    out = fc.create(path(f"file://{work}/ck/tmp-0"), flags, no_opts)
    out.write(b"offsets")
    out.close()
    rename = jvm.org.apache.hadoop.fs.Options.Rename
    none = spark.sparkContext._gateway.new_array(rename, 0)
    fc.rename(path(f"file://{work}/ck/tmp-0"), path(f"file://{work}/ck/0"), none)
    os.symlink(work / "ck" / "0", work / "ck" / "link")
    link = fc.getFileLinkStatus(path(f"file://{work}/ck/link"))
    plain = fc.getFileLinkStatus(path(f"file://{work}/ck/0"))
    return {
        "context_impl": fc.getDefaultFileSystem().getClass().getName(),
        "renamed": (work / "ck" / "0").read_text(),
        "link": [bool(link.isSymlink()), bool(link.isFile()), int(link.getLen())],
        "plain": [bool(plain.isSymlink()), bool(plain.isFile()), int(plain.getLen())],
    }


def main(work: Path, mode: str) -> None:
    from pyspark.sql import SparkSession

    config = load_config(environ={}, cwd=work)
    ensure_embedded_catalog_dirs(config)
    conf = session_conf(config, "local-fs-probe")
    if mode == "hadoop":
        conf.update(HADOOP_OWN)
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sql("CREATE NAMESPACE IF NOT EXISTS probe")
    spark.sql("CREATE TABLE probe.t (id bigint, v string) USING iceberg")
    spark.sql("INSERT INTO probe.t SELECT id, CAST(id AS string) FROM range(100)")
    spark.sql("CREATE TEMPORARY VIEW s AS SELECT id, 'new' AS v FROM range(50, 150)")
    spark.sql(
        "MERGE INTO probe.t t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    rows: Any = spark.sql("SELECT count(*) AS n, count_if(v = 'new') AS new FROM probe.t").first()
    jvm: Any = spark._jvm
    fs = jvm.org.apache.hadoop.fs.Path(f"file://{work}").getFileSystem(
        spark._jsc.hadoopConfiguration()
    )
    warehouse = [p for p in (work / ".cdcmirror").rglob("*") if p.is_file()]
    modes = sorted({oct(stat.S_IMODE(p.stat().st_mode)) for p in warehouse})
    print(
        json.dumps(
            {
                "file_impl": fs.getClass().getName(),
                "rows": [rows.n, rows.new],
                "files": len(warehouse),
                "modes": modes,
                **_file_context(spark, work),
            }
        ),
        flush=True,
    )
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
