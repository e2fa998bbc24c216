"""The stack's cluster profile (`cdcmirror stack up --cluster`): a Spark standalone master
and two workers from the installed pyspark (its ``bin/spark-class``), so the mirror runs
with ``[spark] master = "spark://127.0.0.1:7077"`` as on a real cluster, and an Iceberg REST
catalog server (``[iceberg.catalog] type = "rest"``, ``uri = "http://127.0.0.1:8181"``).

Each daemon is a process of the stack like Kafka: a pid file, a log under the stack's
``logs/``, the ``-Dcdcmirror.stack=NAME`` mark on its command line, and a health check (the
master's JSON status, where each worker must be ALIVE).
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path
from typing import Any

from cdcmirror.exceptions import StackError
from cdcmirror.jvm.java_parts import REST_LAUNCHER_CLASS
from cdcmirror.jvm.pyspark_jars import pyspark_jars_dir
from cdcmirror.stack import s3
from cdcmirror.stack.layout import HOST, StackPart

MASTER_PORT = 7077
MASTER_UI_PORT = 8090
MASTER_URL = f"spark://{HOST}:{MASTER_PORT}"
WORKER_CORES = 1
WORKER_MEMORY = "3g"  # what the executors of one worker may take together

MASTER = StackPart(
    "spark-master", "org.apache.spark.deploy.master.Master", (MASTER_PORT, MASTER_UI_PORT), "512m"
)
WORKERS = tuple(
    StackPart(f"spark-worker-{i}", "org.apache.spark.deploy.worker.Worker", (8090 + i,), "512m")
    for i in (1, 2)
)
# Apache Iceberg's own REST catalog server (manifest group rest-catalog): a JDBC catalog on a
# SQLite file behind the REST protocol; configured through CATALOG_* environment variables
REST_PORT = 8181
REST_URL = f"http://{HOST}:{REST_PORT}"
# cdcmirror's launcher of it (``jvm/java_parts.py``): bound to loopback, not every interface
REST_CATALOG = StackPart("rest-catalog", REST_LAUNCHER_CLASS, (REST_PORT,), "384m")
# the S3 store first: the REST catalog writes table metadata into it
CLUSTER_PARTS = (s3.S3, MASTER, *WORKERS, REST_CATALOG)
REST_WAREHOUSE = f"s3://{s3.BUCKET}/rest"


def spark_home() -> Path:
    """The installed pyspark: it carries ``bin/spark-class`` and ``jars/``."""
    jars = pyspark_jars_dir()
    if jars is None:
        raise StackError("pyspark is not installed: run `make install`")
    return jars.parent


def rest_catalog_command(java: str, classpath: list[Path]) -> list[str]:
    return [
        java,
        f"-Xmx{REST_CATALOG.heap}",
        f"-Dcdcmirror.stack={REST_CATALOG.name}",
        f"-Dcdcmirror.rest.host={HOST}",
        "-cp",
        ":".join(str(p) for p in classpath),
        REST_CATALOG.main_class,
    ]


def rest_catalog_env(data_dir: Path) -> dict[str, str]:
    """The server's catalog: ``CATALOG_X_Y`` is its property ``x.y`` (``__`` is ``-``); its
    tables live on the profile's S3 store.

    >>> env = rest_catalog_env(Path("/d"))
    >>> env["CATALOG_URI"], env["CATALOG_S3_PATH__STYLE__ACCESS"]
    ('jdbc:sqlite:/d/catalog.db', 'true')
    """
    props = {
        "uri": f"jdbc:sqlite:{data_dir / 'catalog.db'}",
        "jdbc.schema-version": "V1",
        "warehouse": REST_WAREHOUSE,
        "rest.port": str(REST_PORT),
        "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        **s3.catalog_properties(),
    }
    names = {
        "CATALOG_" + k.replace("-", "__").replace(".", "_").upper(): v for k, v in props.items()
    }
    return {**os.environ, **names, "AWS_REGION": s3.REGION}


def daemon_command(home: Path, part: StackPart, work_dir: Path) -> list[str]:
    """The command line of a master or a worker.

    >>> daemon_command(Path("/s"), WORKERS[0], Path("/w"))[-1]
    'spark://127.0.0.1:7077'
    """
    cmd = [str(home / "bin" / "spark-class"), part.main_class, "--host", HOST]
    if part is MASTER:
        return [*cmd, "--port", str(MASTER_PORT), "--webui-port", str(MASTER_UI_PORT)]
    return [
        *cmd,
        "--webui-port",
        str(part.ports[0]),
        "--cores",
        str(WORKER_CORES),
        "--memory",
        WORKER_MEMORY,
        "--work-dir",
        str(work_dir / part.name),
        MASTER_URL,
    ]


def daemon_env(home: Path, part: StackPart) -> dict[str, str]:
    """spark-class reads the daemon's JVM options from ``SPARK_DAEMON_*``; the mark makes the
    process ours (``processes.running_pid``)."""
    return {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": HOST,
        "SPARK_DAEMON_MEMORY": part.heap,
        "SPARK_DAEMON_JAVA_OPTS": f"-Dcdcmirror.stack={part.name}",
    }


def master_state(timeout: float = 3.0) -> dict[str, Any] | None:
    """The master's JSON status, or None when it does not answer."""
    try:
        url = f"http://{HOST}:{MASTER_UI_PORT}/json/"
        with urllib.request.urlopen(url, timeout=timeout) as r:
            state: dict[str, Any] = json.load(r)
            return state
    except (OSError, ValueError):
        return None


def alive_worker_ports(state: dict[str, Any]) -> set[int]:
    """The web UI ports of the workers the master counts as ALIVE.

    >>> alive_worker_ports({"workers": [
    ...     {"state": "ALIVE", "webuiaddress": "http://127.0.0.1:8091"},
    ...     {"state": "DEAD", "webuiaddress": "http://127.0.0.1:8092"}]})
    {8091}
    """
    return {
        int(str(w.get("webuiaddress", "")).rsplit(":", 1)[-1] or 0)
        for w in state.get("workers", [])
        if w.get("state") == "ALIVE"
    }


def address(part: StackPart) -> str:
    return MASTER_URL if part is MASTER else f"http://{HOST}:{part.ports[0]}"


def marker(part: StackPart, data_dir: Path) -> str:
    """What the part's command line carries that makes it ours (``processes.running_pid``):
    the S3 store's data directory, the others' ``-Dcdcmirror.stack=NAME``."""
    return str(data_dir / "s3") if part is s3.S3 else f"-Dcdcmirror.stack={part.name}"


def rest_catalog_answers(timeout: float = 3.0) -> bool:
    try:
        with urllib.request.urlopen(f"{REST_URL}/v1/config", timeout=timeout) as r:
            return "defaults" in json.load(r)
    except (OSError, ValueError):
        return False


def healthy(part: StackPart) -> bool:
    if part is REST_CATALOG:
        return rest_catalog_answers()
    if part is s3.S3:
        return s3.answers()
    state = master_state()
    if state is None or state.get("status") != "ALIVE":
        return False
    return part is MASTER or part.ports[0] in alive_worker_ports(state)
