"""`cdcmirror stack up | down | status`: bring the local Kafka + Connect stack up and down."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cdcmirror import paths
from cdcmirror.exceptions import PortInUseError, StackError
from cdcmirror.jvm.java_parts import MARIADB_UUID, REST_LAUNCHER, JavaPart
from cdcmirror.jvm.manifest import load_manifest
from cdcmirror.jvm.resolve import group_dir, group_jars, resolve_all
from cdcmirror.stack import cluster, health, layout, processes, s3, tls
from cdcmirror.stack.layout import CONNECT, KAFKA, REGISTRY, StackPart
from cdcmirror.stack_login import ensure_login, secrets_dir

logger = logging.getLogger(__name__)

STACK_GROUPS = (
    "kafka",
    "debezium-postgres",
    "debezium-mysql",
    "debezium-mariadb",
    "apicurio-converter",
    "apicurio-registry",
)
# seconds without a new line in the part's log before its start-up counts as stuck, and the
# most it may take while it keeps logging (a killed broker recovers every partition first)
START_QUIET = {"kafka": 90.0, "connect": 150.0, "registry": 120.0}
START_CAP = {"kafka": 900.0, "connect": 300.0, "registry": 240.0}
for _part in cluster.CLUSTER_PARTS:
    START_QUIET[_part.name], START_CAP[_part.name] = 60.0, 180.0
Progress = Callable[[str], None]


@dataclass(frozen=True)
class PartStatus:
    name: str
    address: str
    pid: int | None
    state: str  # healthy | unhealthy | stopped
    log: str

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "address": self.address,
            "pid": self.pid,
            "state": self.state,
            "log": self.log,
        }


class Stack:
    """The files of the local stack under one directory: config, data, logs, pids."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or paths.stack_dir()

    def pid_file(self, part: StackPart) -> Path:
        return self.root / "run" / f"{part.name}.pid"

    def log_file(self, part: StackPart) -> Path:
        return self.root / "logs" / f"{part.name}.log"

    def config_file(self, part: StackPart) -> Path:
        return self.root / "config" / f"{part.name}.properties"

    @property
    def log4j_file(self) -> Path:
        return self.root / "config" / "log4j2.properties"

    @property
    def kafka_data(self) -> Path:
        return self.root / "data" / "kafka"

    @property
    def connect_jaas(self) -> Path:
        return self.root / "config" / "connect-jaas.conf"

    @property
    def tls_dir(self) -> Path:
        """The secured listener's CA and key store (``tls.py``)."""
        return self.root / "tls"

    @property
    def registry_data(self) -> Path:
        return self.root / "data" / "registry"

    def pid(self, part: StackPart) -> int | None:
        return processes.running_pid(self.pid_file(part), cluster.marker(part, self.data_dir))

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    # -- health -----------------------------------------------------------------------------
    def healthy(self, part: StackPart) -> bool:
        if part in cluster.CLUSTER_PARTS:
            return cluster.healthy(part)
        if part is KAFKA:
            return health.broker_answers_metadata(KAFKA.address())
        if part is REGISTRY:
            return health.registry_answers(REGISTRY.address() + layout.REGISTRY_CCOMPAT_PATH)
        plugins = health.connect_plugins(CONNECT.address(), auth=ensure_login(self.root))
        return plugins is not None and all(p in plugins for p in layout.DEBEZIUM_PLUGINS)

    def status(self, with_cluster: bool | None = None) -> list[PartStatus]:
        """Every part; the cluster profile's too when ``with_cluster`` (None: when one of
        them runs)."""
        if with_cluster is None:
            with_cluster = any(self.pid(p) is not None for p in cluster.CLUSTER_PARTS)
        parts = layout.PARTS + (cluster.CLUSTER_PARTS if with_cluster else ())
        result = []
        for part in parts:
            pid = self.pid(part)
            if pid is None:
                state = "stopped"
            else:
                state = "healthy" if self.healthy(part) else "unhealthy"
            result.append(
                PartStatus(part.name, self._address(part), pid, state, str(self.log_file(part)))
            )
        return result

    # -- up ---------------------------------------------------------------------------------
    def up(self, progress: Progress | None = None, with_cluster: bool = False) -> list[PartStatus]:
        """Start what is not running and wait until all is healthy; ``with_cluster``: the
        cluster profile too (``cluster.py``)."""
        say = progress or (lambda _msg: None)
        java = _java()
        resolve_all(names=STACK_GROUPS, progress=say)
        _built(MARIADB_UUID, say)  # in the MariaDB plugin's directory before Connect starts
        manifest = load_manifest()
        classpath = group_jars(manifest.groups["kafka"])
        plugin_path = group_dir(manifest.groups["debezium-postgres"]).parent
        self._write_configs(plugin_path)
        registry_dir = group_dir(manifest.groups["apicurio-registry"])
        registry_jars = sorted(registry_dir.glob("*-runner.jar"))
        if not registry_jars:
            raise StackError(
                f"no Apicurio Registry runner jar in {registry_dir}; "
                "run `cdcmirror jars resolve apicurio-registry` again"
            )
        self._format_storage(java, classpath)  # once, before the broker's first start
        for part in layout.PARTS:
            if part is REGISTRY:
                cmd = layout.registry_command(java, registry_jars[0], self.registry_data)
            else:
                jaas = self.connect_jaas if part is CONNECT else None
                cmd = layout.java_command(
                    java, part, classpath, self.config_file(part), self.log4j_file, jaas
                )
            self._ensure_running(part, cmd, say)
            if part is KAFKA:  # before Connect, whose clients may log in with it
                health.ensure_scram_user(
                    KAFKA.address(),
                    tls.SCRAM_USER,
                    tls.SCRAM_PASSWORD,
                    tls.SCRAM_MECHANISM,
                    tls.SCRAM_ITERATIONS,
                )
        if with_cluster:
            self.up_cluster(say)
        return self.status(with_cluster)

    def up_cluster(self, progress: Progress | None = None) -> None:
        """The cluster profile alone: the S3 store, a Spark master and its workers, the
        REST catalog."""
        say = progress or (lambda _msg: None)
        java = _java()  # spark-class needs one too
        resolve_all(names=["rest-catalog"], progress=say)
        _built(REST_LAUNCHER, say)
        rest_jars = group_jars(load_manifest().groups["rest-catalog"])
        gateway = s3.ensure_installed(say)
        data = self.data_dir
        work, rest_data, s3_data = data / "spark-work", data / "rest-catalog", data / "s3"
        for d in (work, rest_data, s3_data / s3.BUCKET, self.root / "run"):
            d.mkdir(parents=True, exist_ok=True)
        home = cluster.spark_home()

        def command(part: StackPart) -> tuple[list[str], dict[str, str]]:
            if part is s3.S3:
                return s3.command(gateway, s3_data), s3.env()
            if part is cluster.REST_CATALOG:
                return cluster.rest_catalog_command(java, rest_jars), cluster.rest_catalog_env(
                    rest_data
                )
            return cluster.daemon_command(home, part, work), cluster.daemon_env(home, part)

        for part in cluster.CLUSTER_PARTS:
            cmd, env = command(part)
            self._ensure_running(part, cmd, say, env)

    def down_cluster(self, progress: Progress | None = None) -> None:
        self._stop(tuple(reversed(cluster.CLUSTER_PARTS)), progress)

    def _write_configs(self, plugin_path: Path) -> None:
        (self.root / "config").mkdir(parents=True, exist_ok=True)
        (self.root / "run").mkdir(parents=True, exist_ok=True)
        self.kafka_data.mkdir(parents=True, exist_ok=True)
        self.registry_data.mkdir(parents=True, exist_ok=True)
        self.log4j_file.write_text(layout.log4j2_properties())
        keystore = tls.ensure_certificates(self.tls_dir)
        self.config_file(KAFKA).write_text(layout.broker_properties(self.kafka_data, keystore))
        secrets = secrets_dir(self.root)
        secrets.mkdir(parents=True, exist_ok=True)
        secrets.chmod(0o700)
        self.config_file(CONNECT).write_text(layout.connect_properties(plugin_path, secrets))
        users = self.root / "config" / "connect-users.properties"
        paths.write_private(users, layout.connect_users(*ensure_login(self.root)))
        self.connect_jaas.write_text(layout.connect_jaas(users))

    def _ensure_running(
        self, part: StackPart, cmd: list[str], say: Progress, env: dict[str, str] | None = None
    ) -> None:
        """Start ``part`` (``env``: its environment, else this process's) unless it runs,
        then wait until it is healthy."""
        pid = self.pid(part)
        if pid is not None:
            say(f"{part.name}: already running (pid {pid}), waiting until healthy")
            self._wait_healthy(part, pid)
            return
        for port in part.ports:
            # a process killed a moment ago may still be releasing its sockets
            if processes.port_open(port) and not processes.wait_port_closed(port, 10.0):
                raise PortInUseError(
                    f"port {port} on 127.0.0.1 (needed by {part.name}) is taken by a process "
                    "that cdcmirror did not start; stop it (`ss -ltnp 'sport = :"
                    f"{port}'` shows which) or run `cdcmirror stack down` if it is an old stack"
                )
        pid = processes.start(
            cmd, self.pid_file(part), self.log_file(part), env=env or dict(os.environ)
        )
        say(f"{part.name}: started (pid {pid}), log {self.log_file(part)}")
        self._wait_healthy(part, pid)
        say(f"{part.name}: healthy at {self._address(part)}")

    @staticmethod
    def _address(part: StackPart) -> str:
        return cluster.address(part) if part in cluster.CLUSTER_PARTS else part.address()

    def _format_storage(self, java: str, classpath: list[Path]) -> None:
        if (self.kafka_data / "meta.properties").exists():
            return
        cmd = layout.storage_format_command(
            java, classpath, self.config_file(KAFKA), layout.new_cluster_id(), self.log4j_file
        )
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise StackError(
                f"formatting the Kafka storage in {self.kafka_data} failed:\n"
                f"{(proc.stdout + proc.stderr)[-2000:]}"
            )

    def _wait_healthy(self, part: StackPart, pid: int) -> None:
        quiet, cap = START_QUIET[part.name], START_CAP[part.name]
        log_file = self.log_file(part)
        outcome = processes.wait_ready(pid, log_file, lambda: self.healthy(part), quiet, cap)
        if outcome == "ready":
            return
        if outcome == "exited":
            raise StackError(
                f"{part.name} exited during start-up; log {log_file}, last "
                f"lines:\n{processes.tail(log_file)}"
            )
        why = (
            f"wrote nothing to its log for {quiet:.0f}s"
            if outcome == "quiet"
            else f"was still starting after {cap:.0f}s"
        )
        raise StackError(
            f"{part.name} (pid {pid}) did not become healthy: it {why}; log {log_file}, "
            f"last lines:\n{processes.tail(log_file)}"
        )

    # -- down -------------------------------------------------------------------------------
    def down(self, progress: Progress | None = None) -> None:
        """Stop every part that runs, the cluster profile's first."""
        running = tuple(p for p in cluster.CLUSTER_PARTS if self.pid(p) is not None)
        self._stop(tuple(reversed(layout.PARTS + running)), progress)

    def _stop(self, parts: tuple[StackPart, ...], progress: Progress | None) -> None:
        say = progress or (lambda _msg: None)
        for part in parts:
            pid = self.pid(part)
            if pid is None:
                say(f"{part.name}: not running")
            else:
                killed = processes.stop(pid)
                say(f"{part.name}: stopped (pid {pid}{', killed' if killed else ''})")
            self.pid_file(part).unlink(missing_ok=True)


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home) / "bin" / "java" if home else None
    java = str(candidate) if candidate and candidate.exists() else shutil.which("java")
    if java is None:
        raise StackError(
            "no Java runtime found: install a JDK 17 or newer (Debian: apt-get install "
            "openjdk-17-jre-headless) or set JAVA_HOME"
        )
    return java


def _built(part: JavaPart, say: Progress) -> Path:
    """``part``'s jar, built now if needed; a part the stack cannot run without stops it."""
    jar = part.build(say)
    if jar is None:
        raise StackError(
            f"cdcmirror's {part.name} jar cannot be built ({part.why}); install a JDK "
            "(`make system-deps` installs openjdk-17-jdk-headless), then run "
            "`cdcmirror stack up` again"
        )
    return jar
