"""``cdcmirror mirror`` as a spark-submit application: the arguments ``cdcmirror jars
submit`` prints, the master from spark-submit, the table equal to the source."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support import services
from support.mirror_fixture import Mirrored
from support.mirror_scenarios import settle


def spark_submit() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-submit"


def submitted_mirror_is_the_same(m: Mirrored) -> None:
    m.workload.run(300)
    settle(m)
    env = {
        **os.environ,
        "CDCMIRROR_SOURCE__PASSWORD": services.CDC_PASSWORD,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    cdcmirror = [sys.executable, "-m", "cdcmirror.cli", "--config", str(m.config_path)]
    printed = subprocess.run(
        [*cdcmirror, "jars", "submit"], env=env, capture_output=True, text=True, check=True
    )
    args = printed.stdout.split()
    assert args[0] == "--jars" and args[2].endswith("submit.py"), printed.stdout
    assert "iceberg-spark-runtime" in args[1], args[1]
    job = subprocess.run(
        [
            str(spark_submit()),
            "--master",
            "local[1]",  # spark-submit's, not [spark] master (local[2])
            "--driver-memory",
            "2g",
            "--conf",
            "spark.ui.enabled=false",
            *args,
            "--config",
            str(m.config_path),
            "--log-level",
            "INFO",
            "mirror",
            "--available-now",
        ],
        env=env,
        cwd=m.config_path.parent,
        capture_output=True,
        text=True,
        timeout=900,
    )
    # spark-submit passes the Python driver's stderr (its log) on to its own stdout
    log = job.stdout + job.stderr
    assert job.returncode == 0, log[-4000:]
    assert "started by spark-submit" in job.stdout, log[-4000:]
    assert "mirror batch {" in job.stdout, log[-4000:]
    m.assert_same()
