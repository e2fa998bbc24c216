"""The keys of the TOML configuration: each key's type, default and allowed values."""

from __future__ import annotations

from typing import Any

from cdcmirror import dialects

# section -> key -> type; "table" keys take free-form sub-tables.
SCHEMA: dict[str, dict[str, str]] = {
    "source": {
        "dialect": "str",
        "url": "str",
        "include": "list",
        "name": "str",
        "password": "str",
        "keyless_tables": "str",
        "unknown_types": "str",
        "tinyint1_as_boolean": "bool",
        "signal_table": "str",
    },
    "kafka": {
        "bootstrap_servers": "str",
        "format": "str",
        "schema_registry_url": "str",
        "security_protocol": "str",
        "sasl_mechanism": "str",
        "sasl_username": "str",
        "sasl_password": "str",
        "ssl_ca_location": "str",
        "schema_registry_username": "str",
        "schema_registry_password": "str",
    },
    "connect": {
        "url": "str",
        "secrets": "str",
        "username": "str",
        "password": "str",
        "secrets_dir": "str",
    },
    "bootstrap": {
        "initial_load": "str",
        "initial_load_min_rows": "int",
        "rows_per_partition": "int",
    },
    "iceberg": {
        "namespace": "str",
        "catalog": "table",
        "table_name": "str",
        "partition": "str",
        "format_version": "int",
    },
    "mirror": {
        "trigger": "str",
        "checkpoint_location": "str",
        "deletes": "str",
        "max_events_per_batch": "int",
        "events_per_task": "int",
        "dead_letter": "str",
        "parallelism": "int",
        "connector_check_seconds": "int",
        "restart_failed_tasks": "bool",
        "metrics_port": "int",
        "metrics_host": "str",
    },
    "reconcile": {"settle_seconds": "int", "buckets": "int", "max_keys": "int"},
    "maintain": {
        "every_batches": "int",
        "max_snapshots": "int",
        "target_file_size_mb": "int",
        "min_input_files": "int",
        "snapshot_retention_hours": "int",
        "retain_last": "int",
        "orphan_age_hours": "int",
        "tombstone_retention_hours": "int",
    },
    "spark": {"master": "str", "jars": "list", "conf": "table"},
}

DEFAULTS: dict[str, dict[str, Any]] = {
    "source": {
        "dialect": "postgresql",
        "url": "postgresql://cdc@127.0.0.1:5432/shop",
        "include": ["public.*"],
        "name": "shop",
        "password": "",
        "keyless_tables": "append",
        "unknown_types": "error",
        "tinyint1_as_boolean": True,
        "signal_table": "",
    },
    "kafka": {
        "bootstrap_servers": "127.0.0.1:9092",
        "format": "json",
        # Confluent-compatible API of the schema registry (Avro): the one `cdcmirror stack` runs
        "schema_registry_url": "http://127.0.0.1:8081/apis/ccompat/v7",
        # how every client logs in to the brokers (kafka_security.py); SASL needs the two
        # below, the password given directly, by CDCMIRROR_KAFKA__SASL_PASSWORD or in a file
        "security_protocol": "PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_username": "",
        "sasl_password": "",
        "ssl_ca_location": "",  # a PEM file of the CA to trust; empty: the system's
        # the schema registry's basic auth; "" sends none
        "schema_registry_username": "",
        "schema_registry_password": "",
    },
    "connect": {
        "url": "http://127.0.0.1:8083",
        "secrets": "file",
        # the REST API's basic auth: the local stack's own login by default (its password
        # made once per stack, stack_login.py); username "" sends none
        "username": "cdcmirror",
        "password": "",
        # where bootstrap writes the connectors' secret files (connect.secrets = "file"):
        # a directory the Connect worker may read; "": the local stack's
        "secrets_dir": "",
    },
    "bootstrap": {
        # how a new connector's tables get their rows: "spark" reads them over JDBC in
        # parallel, "debezium" snapshots them through Kafka, "auto" picks Spark from
        # initial_load_min_rows rows (all tables together) on
        "initial_load": "auto",
        "initial_load_min_rows": 200000,
        "rows_per_partition": 500000,
    },
    "iceberg": {
        "namespace": "shop_mirror",
        "catalog": {},
        "table_name": "{table}",
        "partition": "",
        "format_version": 2,
    },
    "mirror": {
        "trigger": "10 seconds",
        "checkpoint_location": ".cdcmirror/checkpoints/shop",
        "deletes": "hard",
        "max_events_per_batch": 200000,
        "events_per_task": 25000,
        "dead_letter": "table",
        "parallelism": 4,
        "connector_check_seconds": 30,
        "restart_failed_tasks": True,
        "metrics_port": 0,  # 0: no metrics endpoint
        "metrics_host": "127.0.0.1",
    },
    "reconcile": {"settle_seconds": 60, "buckets": 1024, "max_keys": 100},
    "maintain": {
        "every_batches": 0,
        "max_snapshots": 1000,
        "target_file_size_mb": 128,
        "min_input_files": 2,
        "snapshot_retention_hours": 24,
        "retain_last": 5,
        "orphan_age_hours": 72,
        "tombstone_retention_hours": 168,  # 0: tombstones kept for ever
    },
    "spark": {"master": "local[2]", "jars": [], "conf": {}},
}

CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("source", "dialect"): dialects.NAMES,
    ("connect", "secrets"): ("file", "env"),
    ("bootstrap", "initial_load"): ("auto", "spark", "debezium"),
    ("mirror", "deletes"): ("hard", "soft"),
    ("mirror", "dead_letter"): ("table", "fail"),
    ("kafka", "format"): ("json", "json-schemaless", "avro"),
    ("kafka", "security_protocol"): ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
    ("kafka", "sasl_mechanism"): ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
    ("source", "keyless_tables"): ("append", "skip"),
    ("source", "unknown_types"): ("error", "string"),
}
