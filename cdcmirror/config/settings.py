"""Every setting of cdcmirror, declared once: its section, its type (a ``Literal`` for a
choice), its default, whether it is a secret, and one line saying what it does.

Everything else is derived from these classes: the TOML file's keys and the
``CDCMIRROR_<SECTION>__<KEY>`` variables (``load.py``), reading any string key from a file
(``files.py``), the secrets ``config show`` masks (``masking.py``) and the reference of
every setting (``reference.py``, written to ``docs/reference/configuration.md``). A test
fails when the written reference and this declaration differ.

What a value means for the code that reads it lives beside it (``Kafka.avro``), so no module
interprets the raw words on its own. The ``repr`` of a section leaves out what may hold a
secret (URLs, the catalog's and Spark's settings, passwords)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from cdcmirror.stack_login import secrets_dir, stack_password

SECRET = "secret"  # a field's mark: masked wherever the configuration is printed


def setting(default: Any, doc: str, *, secret: bool = False, hidden: bool = False) -> Any:
    """A setting's default and its one line of documentation; ``secret``: masked when the
    configuration is printed (and left out of ``repr``); ``hidden``: left out of ``repr``
    only (a URL or a table that may carry a credential)."""
    extra: dict[str, JsonValue] | None = {SECRET: True} if secret else None
    return Field(default, description=doc, repr=not (secret or hidden), json_schema_extra=extra)


class Section(BaseModel):
    """One TOML table of the configuration (``[kafka]``): frozen, every key declared."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    NAME: ClassVar[str]
    DOC: ClassVar[str]


Dialect = Literal["postgresql", "mysql"]  # dialects.NAMES
KafkaFormat = Literal["json", "json-schemaless", "avro"]


class Source(Section):
    NAME = "source"
    DOC = "The source database."

    dialect: Dialect = setting("postgresql", "The source engine: `mysql` for MySQL and MariaDB.")
    url: str = setting(
        "postgresql://cdc@127.0.0.1:5432/shop",
        "SQLAlchemy URL of the source (a password in it is masked when printed).",
        hidden=True,
    )
    include: tuple[str, ...] = setting(
        ("public.*",), "`schema.table` globs of the tables mirrored."
    )
    name: str = setting("shop", "The mirror's name: the connector's, its topics' prefix.")
    password: str = setting("", "The source user's password, if not in `url`.", secret=True)
    keyless_tables: Literal["append", "skip"] = setting(
        "append", "A table without a primary key or unique index: appended, or left out."
    )
    unknown_types: Literal["error", "string"] = setting(
        "error", "A column of a type cdcmirror does not map: stop, or mirror its text."
    )
    tinyint1_as_boolean: bool = setting(True, "MySQL `tinyint(1)` as an Iceberg boolean.")
    signal_table: str = setting(
        "",
        "Debezium's signal table; empty: `public.cdcmirror_signal` (MySQL: "
        "`<database>.cdcmirror_signal`).",
    )


class Kafka(Section):
    NAME = "kafka"
    DOC = "The Kafka brokers, the events' format and the schema registry."

    bootstrap_servers: str = setting("127.0.0.1:9092", "The brokers.")
    format: KafkaFormat = setting(
        "json",
        "How Connect writes the events: JSON with schemas, JSON without them, or Avro in "
        "the Confluent wire format.",
    )
    schema_registry_url: str = setting(
        "http://127.0.0.1:8081/apis/ccompat/v7",
        "A Confluent-compatible schema registry API, for `avro`.",
        hidden=True,
    )
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = setting(
        "PLAINTEXT", "How every client connects to the brokers."
    )
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = setting(
        "SCRAM-SHA-512", "The SASL login's mechanism."
    )
    sasl_username: str = setting("", "The Kafka user of a SASL login.")
    sasl_password: str = setting("", "The Kafka password of a SASL login.", secret=True)
    ssl_ca_location: str = setting(
        "", "A PEM file of the CA that signed the brokers' certificate; empty: the system's."
    )
    schema_registry_username: str = setting(
        "", "The schema registry's basic-auth user; empty: no login."
    )
    schema_registry_password: str = setting(
        "", "The schema registry's basic-auth password.", secret=True
    )

    @model_validator(mode="after")
    def _sasl_login(self) -> Kafka:
        if self.sasl and not (self.sasl_username and self.sasl_password):
            raise ValueError(
                f"kafka.security_protocol = {self.security_protocol!r} logs in with "
                "kafka.sasl_username and kafka.sasl_password (or kafka.sasl_password_file, or "
                "the environment variable CDCMIRROR_KAFKA__SASL_PASSWORD): set both"
            )
        return self

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


class Connect(Section):
    NAME = "connect"
    DOC = "Kafka Connect's REST API, where bootstrap registers the Debezium connector."

    url: str = setting("http://127.0.0.1:8083", "The REST API.", hidden=True)
    secrets: Literal["file", "env"] = setting(
        "file", "How the connector's config names the source password: a file, or a variable."
    )
    username: str = setting(
        "cdcmirror", "The REST API's basic-auth user (the local stack's); empty: no login."
    )
    password: str = setting(
        "", "The REST API's password; empty: the one the local stack made.", secret=True
    )
    secrets_dir: str = setting(
        "",
        'Where bootstrap writes the connector\'s secret file (`secrets = "file"`), a '
        "directory the Connect worker may read; empty: the local stack's.",
    )

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


class Bootstrap(Section):
    NAME = "bootstrap"
    DOC = "How `cdcmirror bootstrap` gives a new connector's tables their rows."

    initial_load: Literal["auto", "spark", "debezium"] = setting(
        "auto",
        "Spark reads the tables over JDBC in parallel, Debezium snapshots them through "
        "Kafka; `auto` takes Spark from `initial_load_min_rows` on.",
    )
    initial_load_min_rows: int = setting(
        200_000, "Rows of all included tables (the source's estimate) from which `auto` loads."
    )
    rows_per_partition: int = setting(500_000, "Rows per parallel JDBC read of the Spark load.")


class Iceberg(Section):
    NAME = "iceberg"
    DOC = "The Iceberg catalog and the mirrored tables' names."

    namespace: str = setting("shop_mirror", "The namespace of the mirrored tables.")
    catalog: Mapping[str, Any] = setting(
        {},
        "`[iceberg.catalog]`: pyiceberg catalog properties; empty: the embedded catalog "
        "under `.cdcmirror/`.",
        hidden=True,
    )
    table_name: str = setting("{table}", "Each table's name: `{table}` or `{schema}__{table}`.")
    partition: str = setting(
        "", "Empty, `bucket(N)` on the first key column, or `bucket(N, column)`."
    )
    format_version: int = setting(
        2,
        "The Iceberg format; only 2: format 1 has no row-level deletes, and pyiceberg cannot "
        "write format 3's metadata.",
    )

    @field_validator("format_version")
    @classmethod
    def _format(cls, version: int) -> int:
        if version != 2:
            reason = _FORMAT_REASONS.get(version, "is not an Iceberg format cdcmirror writes")
            raise ValueError(f"iceberg.format_version = {version} {reason}; use 2")
        return version


# why each Iceberg format version but 2 is refused
_FORMAT_REASONS = {
    1: "has no row-level deletes, which every mirrored table's MERGE writes",
    3: (
        "(deletion vectors) is not supported yet: cdcmirror creates and evolves tables with "
        "pyiceberg 0.12, which cannot write format-3 metadata (apache/iceberg-python#1551)"
    ),
}


class Mirror(Section):
    NAME = "mirror"
    DOC = "The continuous `cdcmirror mirror` job."

    trigger: str = setting("10 seconds", "How often a micro-batch starts.")
    checkpoint_location: str = setting(
        ".cdcmirror/checkpoints/shop", "The streaming checkpoint: a path, or `s3a://bucket/dir`."
    )
    deletes: Literal["hard", "soft"] = setting(
        "hard", "A source delete removes the row, or marks it `_cdc_deleted`."
    )
    max_events_per_batch: int = setting(200_000, "Events read per batch at most; 0: no limit.")
    events_per_task: int = setting(
        25_000,
        "A Kafka partition's events of a batch are read and decoded by tasks of at most this "
        "many; 0: one task per Kafka partition.",
    )
    dead_letter: Literal["table", "fail"] = setting(
        "table", "An event that cannot be applied: into the dead-letter table, or stop."
    )
    parallelism: int = setting(
        4,
        "Tables merged at once (with a consistent tag, every table of a batch: each waits "
        "for the others' decode).",
    )
    connector_check_seconds: int = setting(
        30, "How often the job reads its connector's state; 0: never."
    )
    restart_failed_tasks: bool = setting(
        True, "The job restarts a FAILED connector or task, with a backoff."
    )
    metrics_port: int = setting(0, "The port of the job's Prometheus metrics; 0: none.")
    metrics_host: str = setting("127.0.0.1", "The address the metrics endpoint listens on.")
    consistent_tag: str = setting(
        "cdc_consistent",
        "The Iceberg tag that marks, on every mirrored table, one source transaction boundary "
        "(the consistent point); empty: off.",
    )

    history: tuple[str, ...] = setting(
        (),
        "`schema.table` globs (as `source.include`) of the keyed tables that keep every version "
        "of every row in a history table beside the mirrored one.",
    )
    history_suffix: str = setting(
        "__history", "The history table's name: the mirrored table's, then this."
    )

    @property
    def soft_deletes(self) -> bool:
        """A source delete marks the row ``_cdc_deleted`` instead of removing it."""
        return self.deletes == "soft"

    @property
    def fail_on_dead_letter(self) -> bool:
        """An event that cannot be applied stops the job instead of waiting as a dead letter."""
        return self.dead_letter == "fail"

    @field_validator("consistent_tag")
    @classmethod
    def _tag(cls, tag: str) -> str:
        if tag and not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", tag):
            raise ValueError(
                f"mirror.consistent_tag = {tag!r} is not a tag name cdcmirror uses; use "
                "letters, digits, '_', '.' or '-' (e.g. cdc_consistent), or '' for none"
            )
        return tag

    @field_validator("history_suffix")
    @classmethod
    def _suffix(cls, suffix: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_]+", suffix):
            raise ValueError(
                f"mirror.history_suffix = {suffix!r} cannot end a table name; use letters, "
                "digits or '_' (e.g. __history)"
            )
        return suffix

    @field_validator("metrics_port")
    @classmethod
    def _port(cls, port: int) -> int:
        if not 0 <= port <= 65535:
            raise ValueError(
                f"mirror.metrics_port = {port} is not a TCP port; use 1-65535, or 0 for no "
                "metrics endpoint"
            )
        return port


class Reconcile(Section):
    NAME = "reconcile"
    DOC = "`cdcmirror reconcile`."

    settle_seconds: int = setting(60, "How long the source's newest changes may take to land.")
    buckets: int = setting(1024, "`--deep` checksum buckets.")
    max_keys: int = setting(100, "Differing keys listed per table.")


class Maintain(Section):
    NAME = "maintain"
    DOC = "Compaction and expiry: `cdcmirror maintain`, and the mirror job's own."

    every_batches: int = setting(
        0, "The mirror job compacts the tables it wrote every N batches; 0: off."
    )
    max_snapshots: int = setting(
        1000,
        "The mirror job expires each table's oldest snapshots beyond this many (and a tenth "
        "more); 0: no bound.",
    )
    target_file_size_mb: int = setting(128, "The size compaction writes files of.")
    min_input_files: int = setting(2, "Files of a partition compaction rewrites at least.")
    snapshot_retention_hours: int = setting(24, "Snapshots older than this are expired.")
    retain_last: int = setting(5, "Snapshots kept whatever their age.")
    orphan_age_hours: int = setting(72, "Unreferenced files older than this (at least 24) go.")
    tombstone_retention_hours: int = setting(
        168,
        "Hard-delete tombstones committed longer ago than this are pruned; 0: kept for ever.",
    )

    @field_validator("tombstone_retention_hours")
    @classmethod
    def _retention(cls, hours: int) -> int:
        if hours < 0:
            raise ValueError(
                f"maintain.tombstone_retention_hours = {hours} is negative; use the hours a "
                "replay can reach back (at least the Kafka topics' retention), or 0 to keep "
                "tombstones for ever"
            )
        return hours


class Spark(Section):
    NAME = "spark"
    DOC = "The Spark session of every Spark command."

    master: str = setting("local[2]", "The Spark master.")
    jars: tuple[str, ...] = setting((), "Jars of your own, added to the session.")
    conf: Mapping[str, Any] = setting(
        {}, "`[spark.conf]`: Spark settings, as `spark-submit --conf` takes them.", hidden=True
    )


SECTIONS: tuple[type[Section], ...] = (
    Source,
    Kafka,
    Connect,
    Bootstrap,
    Iceberg,
    Mirror,
    Reconcile,
    Maintain,
    Spark,
)
BY_NAME: dict[str, type[Section]] = {s.NAME: s for s in SECTIONS}
STREAMS = "streams"  # [[streams]]: plain event topics, an array of tables (``streams/spec.py``)
