"""What the local stack runs: its parts, their config files and command lines. Pure."""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from pathlib import Path

from cdcmirror.connectors import SECRET_VARIABLES

BROKER_PORT = 9092
CONTROLLER_PORT = 9093
SECURE_PORT = 9094  # SASL_SSL: TLS, SCRAM-SHA-512 logins (stack/tls.py)
CONNECT_PORT = 8083
REGISTRY_PORT = 8081
HOST = "127.0.0.1"

DEBEZIUM_PLUGINS = (
    "io.debezium.connector.postgresql.PostgresConnector",
    "io.debezium.connector.mysql.MySqlConnector",
    "io.debezium.connector.mariadb.MariaDbConnector",
)

PROVIDERS = "org.apache.kafka.common.config.provider"
BASIC_AUTH = "org.apache.kafka.connect.rest.basic.auth.extension"

CONNECT_TOPICS = {
    "config.storage.topic": "_cdcmirror_connect_configs",
    "offset.storage.topic": "_cdcmirror_connect_offsets",
    "status.storage.topic": "_cdcmirror_connect_status",
}


@dataclass(frozen=True)
class StackPart:
    """One JVM process of the stack."""

    name: str
    main_class: str
    ports: tuple[int, ...]
    heap: str

    def address(self) -> str:
        if self.name in ("connect", "registry"):
            return f"http://{HOST}:{self.ports[0]}"
        return f"{HOST}:{self.ports[0]}"


KAFKA = StackPart("kafka", "kafka.Kafka", (BROKER_PORT, CONTROLLER_PORT, SECURE_PORT), "768m")
CONNECT = StackPart(
    "connect", "org.apache.kafka.connect.cli.ConnectDistributed", (CONNECT_PORT,), "1g"
)
# Apicurio Registry (Avro schemas); a Quarkus application started with `java -jar`
REGISTRY = StackPart("registry", "", (REGISTRY_PORT,), "384m")
# start order; the registry is up before Connect, whose Avro connectors register schemas
PARTS = (KAFKA, REGISTRY, CONNECT)
REGISTRY_CCOMPAT_PATH = "/apis/ccompat/v7"


def new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding (22 chars), not
    starting with ``-`` (1 in 64 would: ``kafka-storage format --cluster-id -x…`` then reads
    it as an option and fails; Kafka's own ``Uuid.randomUuid`` draws again the same way)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def _properties(entries: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in entries.items())


def broker_properties(data_dir: Path, keystore: Path) -> str:
    """A single-node KRaft broker+controller bound to loopback: a plaintext listener and a
    SASL_SSL one (TLS with the PEM ``keystore``, SCRAM-SHA-512 logins), as production
    brokers have."""
    plain, secure = f"PLAINTEXT://{HOST}:{BROKER_PORT}", f"SASL_SSL://{HOST}:{SECURE_PORT}"
    return _properties(
        {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{HOST}:{CONTROLLER_PORT}",
            "listeners": f"{plain},{secure},CONTROLLER://{HOST}:{CONTROLLER_PORT}",
            "advertised.listeners": f"{plain},{secure}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": (
                "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL"
            ),
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(keystore),
            "log.dirs": str(data_dir),
            "num.partitions": "1",
            "auto.create.topics.enable": "true",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "log.retention.hours": "168",
            # after a crash every partition is recovered before the broker listens
            "num.recovery.threads.per.data.dir": "4",
        }
    )


def connect_properties(plugin_path: Path, secrets_dir: Path) -> str:
    """A distributed-mode Connect worker with exactly-once source support and config providers.

    Connector configs reference secrets as ``${file:PATH:KEY}`` or ``${env:NAME}``; the
    worker resolves them, so passwords never sit in clear in a connector config. The file
    provider reads only ``secrets_dir`` and the environment provider only the variables
    cdcmirror's connectors name (``connectors.SECRET_VARIABLES``): anyone who may register or
    validate a connector could otherwise read any file or variable of the worker's process
    back through an error message.

    ``scheduled.rebalance.max.delay.ms=0``: a worker that misses the rebalance timeout (its
    herder blocked while the broker was down a minute) leaves the group and joins again as a
    new member; by default the group then keeps the tasks it held unassigned for 5 minutes,
    waiting for a worker that will never come back, and nothing is captured meanwhile. With one
    worker, the one that came back is the only one there is: its tasks are reassigned at once.
    """
    return _properties(
        {
            "bootstrap.servers": f"{HOST}:{BROKER_PORT}",
            "group.id": "cdcmirror-connect",
            "listeners": f"http://{HOST}:{CONNECT_PORT}",
            "rest.advertised.host.name": HOST,
            "rest.advertised.port": str(CONNECT_PORT),
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "true",
            "value.converter.schemas.enable": "true",
            **CONNECT_TOPICS,
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "offset.flush.interval.ms": "1000",
            "scheduled.rebalance.max.delay.ms": "0",
            "exactly.once.source.support": "enabled",
            # basic auth on the REST API (users in connect_users(), JAAS: connect_jaas())
            "rest.extension.classes": f"{BASIC_AUTH}.BasicAuthSecurityRestExtension",
            "plugin.path": str(plugin_path),
            "plugin.discovery": "service_load",
            "config.providers": "file,env",
            "config.providers.file.class": f"{PROVIDERS}.FileConfigProvider",
            "config.providers.env.class": f"{PROVIDERS}.EnvVarConfigProvider",
            "config.providers.file.param.allowed.paths": str(secrets_dir),
            "config.providers.env.param.allowlist.pattern": secret_variables_pattern(),
        }
    )


def secret_variables_pattern() -> str:
    """The environment provider's allowlist: exactly the variables of
    ``connectors.SECRET_VARIABLES`` (a Java regex matched against the whole name).

    >>> secret_variables_pattern()
    'CDCMIRROR_SOURCE__PASSWORD|CDCMIRROR_KAFKA__SASL_PASSWORD|CDCMIRROR_KAFKA__SCHEMA_REGISTRY_PASSWORD'
    """
    return "|".join(SECRET_VARIABLES)


def connect_jaas(users_file: Path) -> str:
    """The JAAS file of the Connect worker: its REST logins checked against ``users_file``."""
    return (
        "KafkaConnect {\n"
        f'  {BASIC_AUTH}.PropertyFileLoginModule required file="{users_file}";\n'
        "};\n"
    )


def connect_users(user: str, password: str) -> str:
    """The users file of ``connect_jaas``: ``user=password`` lines."""
    return _properties({user: password})


def log4j2_properties() -> str:
    """Log to stdout (redirected by the launcher into the part's log file)."""
    return _properties(
        {
            "status": "warn",
            "appender.out.type": "Console",
            "appender.out.name": "STDOUT",
            "appender.out.layout.type": "PatternLayout",
            "appender.out.layout.pattern": "[%d] %p %m (%c)%n",
            "rootLogger.level": "INFO",
            "rootLogger.appenderRef.out.ref": "STDOUT",
            "logger.reflections.name": "org.reflections",
            "logger.reflections.level": "ERROR",
        }
    )


def java_command(
    java: str,
    part: StackPart,
    classpath: list[Path],
    config_file: Path,
    log4j_file: Path,
    jaas_file: Path | None = None,
) -> list[str]:
    """The command line of one part; ``-Dcdcmirror.stack=NAME`` marks it as ours."""
    return [
        java,
        f"-Xmx{part.heap}",
        "-XX:+UseG1GC",
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={log4j_file}",
        *([f"-Djava.security.auth.login.config={jaas_file}"] if jaas_file else []),
        f"-Dcdcmirror.stack={part.name}",
        "-cp",
        ":".join(str(p) for p in classpath),
        part.main_class,
        str(config_file),
    ]


def registry_command(java: str, runner_jar: Path, data_dir: Path) -> list[str]:
    """Apicurio Registry on loopback, its schemas in an H2 database file under ``data_dir``
    (they outlive restarts, like the Kafka topics whose events name them)."""
    return [
        java,
        f"-Xmx{REGISTRY.heap}",
        "-XX:+UseG1GC",
        f"-Dcdcmirror.stack={REGISTRY.name}",
        f"-Dquarkus.http.host={HOST}",
        f"-Dquarkus.http.port={REGISTRY_PORT}",
        # WRITE_DELAY=0: a schema is on disk when the converter gets its id (H2 delays
        # writes by default; a crash then loses ids that events in Kafka already name)
        f"-DREGISTRY_DATASOURCE_URL=jdbc:h2:file:{data_dir / 'registry'};WRITE_DELAY=0",
        "-Dquarkus.datasource.jdbc.initial-size=2",
        "-Dquarkus.datasource.jdbc.min-size=2",
        "-Dquarkus.datasource.jdbc.max-size=20",
        "-jar",
        str(runner_jar),
    ]


def storage_format_command(
    java: str, classpath: list[Path], config_file: Path, cluster_id: str, log4j_file: Path
) -> list[str]:
    """Format the KRaft metadata log once, before the broker's first start."""
    return [
        java,
        f"-Dlog4j2.configurationFile={log4j_file}",
        "-cp",
        ":".join(str(p) for p in classpath),
        "kafka.tools.StorageTool",
        "format",
        "--cluster-id",
        cluster_id,
        "--config",
        str(config_file),
        "--ignore-formatted",
    ]
