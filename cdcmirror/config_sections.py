"""The configuration's sections as typed, frozen values: ``config.kafka.format``, not a
lookup by two strings. Built once from the validated table (``config.load_config``); the
keys, defaults and choices are ``config_schema``'s (a unit test keeps the two in step).
Their ``repr`` leaves out what may hold a secret (URLs, the catalog's and Spark's settings,
the password).

What a value means for the code that reads it lives beside the value (``Kafka.avro``), so
no module interprets the raw words on its own."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from cdcmirror.stack_login import secrets_dir, stack_password


@dataclass(frozen=True)
class _Section:
    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Self:
        """The section from its validated values (lists become tuples: frozen all through)."""
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


@dataclass(frozen=True)
class Source(_Section):
    dialect: str  # "postgresql" | "mysql" (MySQL and MariaDB)
    url: str = field(repr=False)  # may hold a password
    include: tuple[str, ...]
    name: str
    password: str = field(repr=False)
    keyless_tables: str  # "append" | "skip"
    unknown_types: str  # "error" | "string"
    tinyint1_as_boolean: bool
    signal_table: str


@dataclass(frozen=True)
class Kafka(_Section):
    bootstrap_servers: str
    format: str  # "json" | "json-schemaless" | "avro"
    schema_registry_url: str
    security_protocol: str = "PLAINTEXT"  # | "SSL" | "SASL_PLAINTEXT" | "SASL_SSL"
    sasl_mechanism: str = "SCRAM-SHA-512"  # | "PLAIN" | "SCRAM-SHA-256"
    sasl_username: str = ""
    sasl_password: str = field(default="", repr=False)
    ssl_ca_location: str = ""
    schema_registry_username: str = ""
    schema_registry_password: str = field(default="", repr=False)

    @property
    def registry_auth(self) -> tuple[str, str] | None:
        """The schema registry's basic-auth login, None without a user name."""
        user = self.schema_registry_username
        return (user, self.schema_registry_password) if user else None

    @property
    def sasl(self) -> bool:
        """Clients log in with a user name and password."""
        return self.security_protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.security_protocol.endswith("SSL")

    @property
    def avro(self) -> bool:
        """Avro in the Confluent wire format: the events need the schema registry."""
        return self.format == "avro"

    @property
    def with_schemas(self) -> bool:
        """JSON whose every event carries its Connect schema (the default format)."""
        return self.format == "json"


@dataclass(frozen=True)
class Connect(_Section):
    url: str = field(repr=False)
    secrets: str  # "file" | "env"
    username: str = ""
    password: str = field(default="", repr=False)
    secrets_dir: str = ""

    @property
    def auth(self) -> tuple[str, str] | None:
        """The REST API's basic-auth login, None without a user name; without a password,
        the local stack's own (made by `cdcmirror stack up`)."""
        if not self.username:
            return None
        return (self.username, self.password or stack_password() or "")

    @property
    def secrets_path(self) -> Path:
        """The directory of the connectors' secret files (the local stack's by default)."""
        return Path(self.secrets_dir).expanduser() if self.secrets_dir else secrets_dir()


@dataclass(frozen=True)
class Bootstrap(_Section):
    initial_load: str  # "auto" | "spark" | "debezium"
    initial_load_min_rows: int
    rows_per_partition: int


@dataclass(frozen=True)
class Iceberg(_Section):
    namespace: str
    catalog: Mapping[str, Any] = field(repr=False)  # credentials of the catalog and store
    table_name: str
    partition: str
    format_version: int


@dataclass(frozen=True)
class Mirror(_Section):
    trigger: str
    checkpoint_location: str
    deletes: str  # "hard" | "soft"
    max_events_per_batch: int
    events_per_task: int
    dead_letter: str  # "table" | "fail"
    parallelism: int
    connector_check_seconds: int
    restart_failed_tasks: bool
    metrics_port: int
    metrics_host: str


@dataclass(frozen=True)
class Reconcile(_Section):
    settle_seconds: int
    buckets: int
    max_keys: int


@dataclass(frozen=True)
class Maintain(_Section):
    every_batches: int
    max_snapshots: int
    target_file_size_mb: int
    min_input_files: int
    snapshot_retention_hours: int
    retain_last: int
    orphan_age_hours: int
    tombstone_retention_hours: int


@dataclass(frozen=True)
class Spark(_Section):
    master: str
    jars: tuple[str, ...]
    conf: Mapping[str, Any] = field(repr=False)  # may hold the store's keys


SECTIONS: dict[str, type[_Section]] = {
    "source": Source,
    "kafka": Kafka,
    "connect": Connect,
    "bootstrap": Bootstrap,
    "iceberg": Iceberg,
    "mirror": Mirror,
    "reconcile": Reconcile,
    "maintain": Maintain,
    "spark": Spark,
}
