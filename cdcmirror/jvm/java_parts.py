"""cdcmirror's own JVM parts, compiled from the sources in ``java/<part>/`` with the JDK's
``javac`` into the jar cache, each against the jars it needs:

- ``local-fs``: Hadoop's local file system without a process per file (``local_fs.py``);
- ``rest-launcher``: the cluster profile's Iceberg REST catalog server bound to loopback
  (Iceberg's own ``RESTCatalogServer`` binds every interface of the host);
- ``mariadb-uuid``: a Debezium custom converter for MariaDB ``UUID`` columns, which reads
  the binlog's bytes (MariaDB drops their trailing zero bytes; Debezium's own converter
  reads the shorter value as a number and puts the zeros in front), placed in the MariaDB
  connector's plugin directory.

A jar is rebuilt when its sources or the jars it compiled against change (a fingerprint
beside it)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SOURCES = Path(__file__).parent / "java"


@dataclass(frozen=True)
class JavaPart:
    name: str
    jar_name: str
    # the jars the sources compile against (None: not there, e.g. a group not resolved)
    classpath: Callable[[], list[Path] | None]
    # the directory the jar goes into (a jar group's own, when Connect or Java loads it
    # with that group's jars)
    target: Callable[[], Path]
    why: str  # said when it cannot be built

    def sources(self) -> list[Path]:
        return sorted((SOURCES / self.name).rglob("*.java"))

    def fingerprint(self, classpath: list[Path]) -> str:
        """What the built jar depends on: the sources and the names of the jars compiled
        against."""
        digest = hashlib.sha256("\0".join(sorted(p.name for p in classpath)).encode())
        for source in self.sources():
            digest.update(source.name.encode() + b"\0" + source.read_bytes())
        return digest.hexdigest()

    @property
    def marker_name(self) -> str:
        return f".built-{self.name}"

    def built(self) -> Path | None:
        """The jar, when it was built from these sources against these jars."""
        classpath = self.classpath()
        directory = self.target()
        marker, jar = directory / self.marker_name, directory / self.jar_name
        if classpath is None or not (jar.is_file() and marker.is_file()):
            return None
        return jar if marker.read_text().strip() == self.fingerprint(classpath) else None

    def build(self, progress: Callable[[str], None] | None = None) -> Path | None:
        """Compile the sources into the jar unless built already; None (and a line to
        ``progress`` saying why) without a JDK or the jars to compile against."""
        say = progress or (lambda _line: None)
        classpath, javac = self.classpath(), _javac()
        if classpath is None or javac is None:
            missing = "javac (a JDK: openjdk-17-jdk-headless)" if classpath else "its jars"
            say(f"{self.name}: not built, no {missing}; {self.why}")
            return None
        jar = self.built()
        if jar is not None:
            say(f"{self.name}: cached {jar}")
            return jar
        directory = self.target()
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            classes = Path(tmp) / "classes"
            path = os.pathsep.join(str(p) for p in classpath)
            command = [javac, "--release", "17", "-nowarn", "-cp", path, "-d", str(classes)]
            done = subprocess.run(
                [*command, *map(str, self.sources())], capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                say(f"{self.name}: not built, javac failed: {done.stderr.strip()[-500:]}")
                return None
            staged = Path(tmp) / self.jar_name
            with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as out:
                for found in sorted(classes.rglob("*.class")):
                    out.write(found, found.relative_to(classes).as_posix())
            os.replace(staged, directory / self.jar_name)
        (directory / self.marker_name).write_text(self.fingerprint(classpath) + "\n")
        say(f"{self.name}: built {directory / self.jar_name}")
        return directory / self.jar_name


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def _group_jars(name: str) -> list[Path] | None:
    """The cached jars of a manifest group; None when it is not resolved."""
    from cdcmirror.jvm.manifest import load_manifest
    from cdcmirror.jvm.resolve import group_dir, is_resolved

    group = load_manifest().groups[name]
    if not is_resolved(group):
        return None
    return sorted(p for p in group_dir(group).glob("*.jar") if not p.name.startswith("cdcmirror-"))


def _group_dir(name: str) -> Path:
    from cdcmirror.jvm.manifest import load_manifest
    from cdcmirror.jvm.resolve import group_dir

    return group_dir(load_manifest().groups[name])


REST_LAUNCHER = JavaPart(
    "rest-launcher",
    "cdcmirror-rest-launcher.jar",
    lambda: _group_jars("rest-catalog"),
    lambda: _group_dir("rest-catalog"),
    "the cluster profile's REST catalog cannot start bound to loopback",
)
REST_LAUNCHER_CLASS = "org.apache.iceberg.rest.LoopbackRESTCatalogServer"


def _uuid_classpath() -> list[Path] | None:
    mariadb, kafka = _group_jars("debezium-mariadb"), _group_jars("kafka")
    if mariadb is None or kafka is None:
        return None
    return mariadb + [p for p in kafka if p.name.startswith("connect-api-")]


MARIADB_UUID = JavaPart(
    "mariadb-uuid",
    "cdcmirror-mariadb-uuid.jar",
    _uuid_classpath,
    lambda: _group_dir("debezium-mariadb"),
    "MariaDB UUID columns cannot be mirrored exactly",
)

PARTS = (REST_LAUNCHER, MARIADB_UUID)  # beside local_fs.part(): built by `jars resolve`
