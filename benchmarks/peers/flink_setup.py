"""Build the peer pipeline from packages: PyFlink in a virtualenv of its own, the Kafka
connector, Iceberg's Flink runtime and a Hadoop client from Maven Central, and the Java
functions that decode Connect's carriers (``java/``). Idempotent; prints what it made.

Versions: PyFlink 2.1.3 (Java 17), ``flink-connector-kafka`` 5.0.0-2.1 (the connector line
built for Flink 2.1; its shaded ``flink-sql-connector-kafka`` is not served), Iceberg 1.11.0's
``iceberg-flink-runtime-2.1`` (1.12.0 has no Flink 2.x runtime on Maven Central), the shaded
Hadoop 3.4.1 client Iceberg 1.11 is built against.

    .venv/bin/python benchmarks/peers/flink_setup.py
"""

from __future__ import annotations

import subprocess
import tempfile
import venv
from dataclasses import dataclass
from pathlib import Path

from cdcmirror.jvm.manifest import ArtifactGroup, Coordinate
from cdcmirror.jvm.resolve import group_jars, resolve_group
from cdcmirror.paths import cache_dir

FLINK = "2.1.3"
ARTIFACTS = (
    "org.apache.flink:flink-connector-kafka:5.0.0-2.1",
    "org.apache.iceberg:iceberg-flink-runtime-2.1:1.11.0",
    "org.apache.hadoop:hadoop-client-api:3.4.1",
    "org.apache.hadoop:hadoop-client-runtime:3.4.1",
)
# what PyFlink's own lib/ already holds
EXCLUDE = ("slf4j-api",)
HADOOP = ("hadoop-client-", "commons-logging-")
JAVA = Path(__file__).parent / "java"


@dataclass(frozen=True)
class FlinkPeer:
    python: Path  # the virtualenv's interpreter, which has pyflink
    jars: tuple[Path, ...]  # pipeline.jars: the connector, the sink, the functions
    # the JVM's own classpath (HADOOP_CLASSPATH): Flink loads org.apache.hadoop classes from
    # its parent class loader first, so Hadoop cannot come through pipeline.jars
    hadoop: tuple[Path, ...]


def root() -> Path:
    return cache_dir() / "peers"


def setup() -> FlinkPeer:
    home = root() / f"flink-{FLINK}"
    python = home / "bin" / "python"
    if not (home / ".installed").exists():
        print(f"flink peer: virtualenv with apache-flink=={FLINK} in {home}", flush=True)
        venv.create(home, with_pip=True, clear=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"apache-flink=={FLINK}"], check=True
        )
        (home / ".installed").write_text(FLINK + "\n")
    group = ArtifactGroup(
        name="flink-peer",
        path=f"flink-peer-{FLINK}",
        artifacts=tuple(Coordinate.parse(a) for a in ARTIFACTS),
        exclude=EXCLUDE,
    )
    resolve_group(group, root())
    jars = group_jars(group, root())
    hadoop = tuple(j for j in jars if j.name.startswith(HADOOP))
    rest = tuple(j for j in jars if j not in hadoop)
    return FlinkPeer(python, (*rest, functions_jar(python)), hadoop)


def functions_jar(python: Path) -> Path:
    """The Java functions compiled against PyFlink's own jars (made again when a source
    is newer than the jar)."""
    sources = sorted(JAVA.rglob("*.java"))
    jar = root() / f"cdcmirror-peer-functions-{FLINK}.jar"
    if jar.exists() and all(s.stat().st_mtime <= jar.stat().st_mtime for s in sources):
        return jar
    lib = pyflink_lib(python)
    classpath = ":".join(str(p) for p in sorted(lib.glob("*.jar")))
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            ["javac", "--release", "11", "-cp", classpath, "-d", out, *map(str, sources)],
            check=True,
        )
        subprocess.run(["jar", "cf", str(jar), "-C", out, "."], check=True)
    return jar


def pyflink_lib(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import pyflink, os; print(os.path.dirname(pyflink.__file__))"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(out.stdout.strip()) / "lib"


if __name__ == "__main__":
    peer = setup()
    print(f"python: {peer.python}", *(f"jar: {j}" for j in peer.jars + peer.hadoop), sep="\n")
