"""The TOML configuration: defaults, environment overrides, validation. Pure apart from reading.

Every key can be overridden by ``CDCMIRROR_<SECTION>__<KEY>`` (nested tables add more
``__<KEY>`` parts). Secrets (``source.password``) should come from the environment; they are
never included in what :func:`redacted` returns.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdcmirror.exceptions import ConfigError
from cdcmirror.s3a_settings import is_url
from cdcmirror.streams.spec import StreamSpec, parse_streams, stream_dict

ENV_PREFIX = "CDCMIRROR_"
STREAMS = "streams"  # [[streams]]: an array of tables, not a section
DEFAULT_CONFIG_FILE = "cdcmirror.toml"
SECRET_KEYS = frozenset({("source", "password")})
MASK = "***"

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
    "kafka": {"bootstrap_servers": "str", "format": "str", "schema_registry_url": "str"},
    "connect": {"url": "str", "secrets": "str"},
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
        "target_file_size_mb": "int",
        "min_input_files": "int",
        "snapshot_retention_hours": "int",
        "retain_last": "int",
        "orphan_age_hours": "int",
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
    },
    "connect": {"url": "http://127.0.0.1:8083", "secrets": "file"},
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
        "target_file_size_mb": 128,
        "min_input_files": 2,
        "snapshot_retention_hours": 24,
        "retain_last": 5,
        "orphan_age_hours": 72,
    },
    "spark": {"master": "local[2]", "jars": [], "conf": {}},
}

CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("source", "dialect"): ("postgresql", "mysql"),
    ("connect", "secrets"): ("file", "env"),
    ("bootstrap", "initial_load"): ("auto", "spark", "debezium"),
    ("mirror", "deletes"): ("hard", "soft"),
    ("mirror", "dead_letter"): ("table", "fail"),
    ("kafka", "format"): ("json", "json-schemaless", "avro"),
    ("source", "keyless_tables"): ("append", "skip"),
    ("source", "unknown_types"): ("error", "string"),
}
TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")


@dataclass(frozen=True)
class Config:
    """The validated configuration; ``base_dir`` anchors relative paths."""

    values: Mapping[str, Mapping[str, Any]]
    base_dir: Path
    source_file: Path | None = None
    overrides: tuple[str, ...] = field(default=())
    streams: tuple[StreamSpec, ...] = ()  # [[streams]]: plain event topics

    def get(self, section: str, key: str) -> Any:
        return self.values[section][key]

    def path(self, section: str, key: str) -> Path:
        """A path-valued key, relative to ``base_dir`` unless absolute."""
        p = Path(str(self.get(section, key))).expanduser()
        return p if p.is_absolute() else self.base_dir / p

    def location(self, section: str, key: str) -> str:
        """A path-or-URL key (``s3a://bucket/dir``): a URL as written, a path as ``path``."""
        value = str(self.get(section, key))
        return value if is_url(value) else str(self.path(section, key))

    @property
    def state_dir(self) -> Path:
        """``./.cdcmirror``: the embedded catalog, warehouse and checkpoints live here."""
        return self.base_dir / ".cdcmirror"


def _coerce(section: str, key: str, kind: str, value: Any, origin: str) -> Any:
    if kind == "str":
        if not isinstance(value, str):
            raise ConfigError(f"{origin}: {section}.{key} must be a string, got {value!r}")
        choices = CHOICES.get((section, key))
        if choices and value not in choices:
            raise ConfigError(
                f"{origin}: {section}.{key} = {value!r} is not one of {', '.join(choices)}"
            )
        return value
    if kind == "bool":
        if isinstance(value, str) and value.lower() in TRUE_WORDS + FALSE_WORDS:
            return value.lower() in TRUE_WORDS
        if not isinstance(value, bool):
            raise ConfigError(f"{origin}: {section}.{key} must be true or false, got {value!r}")
        return value
    if kind == "int":
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"{origin}: {section}.{key} must be an integer, got {value!r}")
        return value
    if kind == "list":
        if isinstance(value, str):  # from the environment: comma-separated
            return [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{origin}: {section}.{key} must be a list of strings")
        return list(value)
    if kind == "table":
        if not isinstance(value, dict):
            raise ConfigError(f"{origin}: [{section}.{key}] must be a table")
        return {str(k): v for k, v in value.items()}
    raise AssertionError(kind)


def _merge_file(values: dict[str, dict[str, Any]], data: Mapping[str, Any], origin: str) -> None:
    for section, body in data.items():
        if section == STREAMS:
            continue  # an array of tables: _raw_streams
        if section not in SCHEMA:
            raise ConfigError(
                f"{origin}: unknown section [{section}]; known sections: "
                f"{', '.join(sorted(SCHEMA))}"
            )
        if not isinstance(body, dict):
            raise ConfigError(f"{origin}: {section} must be a table ([{section}])")
        for key, value in body.items():
            kind = SCHEMA[section].get(key)
            if kind is None:
                raise ConfigError(
                    f"{origin}: unknown key {section}.{key}; keys of [{section}]: "
                    f"{', '.join(sorted(SCHEMA[section]))}"
                )
            values[section][key] = _coerce(section, key, kind, value, origin)


def _raw_streams(data: Mapping[str, Any], environ: Mapping[str, str], origin: str) -> list[Any]:
    """The ``[[streams]]`` entries of the file with ``CDCMIRROR_STREAMS__<N>__<KEY>``
    overrides (an override past the last entry adds one)."""
    raw = data.get(STREAMS, [])
    if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
        raise ConfigError(f"{origin}: streams must be an array of tables ([[streams]])")
    out: list[dict[str, Any]] = [dict(r) for r in raw]
    prefix = f"{ENV_PREFIX}{STREAMS.upper()}__"
    for name, value in sorted(environ.items()):
        if not name.startswith(prefix):
            continue
        index, _, key = name[len(prefix) :].partition("__")
        if not index.isdigit() or not key:
            raise ConfigError(f"{name}: write {prefix}<N>__<KEY>, N counting from 0")
        while len(out) <= int(index):
            out.append({})
        key = key.lower()
        out[int(index)][key] = value.split(",") if key == "key_columns" else value
    return out


def _merge_env(values: dict[str, dict[str, Any]], environ: Mapping[str, str]) -> list[str]:
    applied = []
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        if name.startswith(f"{ENV_PREFIX}{STREAMS.upper()}__"):
            applied.append(name)  # _raw_streams
            continue
        parts = [p.lower() for p in name[len(ENV_PREFIX) :].split("__")]
        section, key, rest = parts[0], parts[1] if len(parts) > 1 else "", parts[2:]
        kind = SCHEMA.get(section, {}).get(key)
        if kind is None:
            raise ConfigError(
                f"environment variable {name} names unknown config key {section}.{key}; "
                "unset it or fix its name (CDCMIRROR_<SECTION>__<KEY>)"
            )
        if kind == "table":
            if not rest:
                raise ConfigError(f"{name}: {section}.{key} is a table; name a key inside it")
            target = values[section][key]
            for part in rest[:-1]:
                target = target.setdefault(part, {})
            target[rest[-1]] = raw
        else:
            if rest:
                raise ConfigError(f"{name}: {section}.{key} has no sub-keys")
            values[section][key] = _coerce(section, key, kind, raw, name)
        applied.append(name)
    return applied


def _check_ranges(values: Mapping[str, Mapping[str, Any]]) -> None:
    port = values["mirror"]["metrics_port"]
    if not 0 <= port <= 65535:
        raise ConfigError(
            f"mirror.metrics_port = {port} is not a TCP port; use 1-65535, or 0 for no "
            "metrics endpoint"
        )


def load_config(
    path: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Config:
    """Defaults, then the TOML file, then ``CDCMIRROR_<SECTION>__<KEY>`` overrides.

    ``path=None`` reads ``./cdcmirror.toml`` when it exists and runs on defaults otherwise;
    an explicit path that does not exist is an error.
    """
    environ = os.environ if environ is None else environ
    cwd = cwd or Path.cwd()
    values: dict[str, dict[str, Any]] = {
        s: {
            k: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v)
            for k, v in body.items()
        }
        for s, body in DEFAULTS.items()
    }
    source_file: Path | None = None
    data: dict[str, Any] = {}
    if path is None:
        candidate = cwd / DEFAULT_CONFIG_FILE
        source_file = candidate if candidate.is_file() else None
    else:
        source_file = Path(path).expanduser()
        if not source_file.is_absolute():
            source_file = cwd / source_file
        if not source_file.is_file():
            raise ConfigError(
                f"config file {source_file} does not exist; pass an existing file to "
                "--config, or run without it to use the local defaults"
            )
    if source_file is not None:
        try:
            data = tomllib.loads(source_file.read_text("utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{source_file}: not valid TOML: {exc}") from exc
        _merge_file(values, data, str(source_file))
    applied = _merge_env(values, environ)
    _check_ranges(values)
    streams = parse_streams(_raw_streams(data, environ, str(source_file or "config")))
    base_dir = source_file.parent if source_file is not None else cwd
    return Config(
        values=values,
        base_dir=base_dir,
        source_file=source_file,
        overrides=tuple(applied),
        streams=streams,
    )


def redacted(config: Config) -> dict[str, Any]:
    """The configuration as plain data with every secret masked, safe to print."""
    out: dict[str, Any] = {}
    for section, body in config.values.items():
        out[section] = {}
        for key, value in body.items():
            if (section, key) in SECRET_KEYS:
                value = MASK if value else ""
            elif section == "source" and key == "url":
                value = mask_url_password(str(value))
            elif isinstance(value, dict):
                value = _masked_table(value)
            out[section][key] = value
    if config.streams:
        out[STREAMS] = [stream_dict(s) for s in config.streams]
    return out


SECRET_WORDS = ("secret", "password", "token", "credential")
"""A key of a free-form table (``[iceberg.catalog]``, ``[spark.conf]``) naming one of these
holds a secret: ``s3.secret-access-key``, ``credential``, ``spark.hadoop.fs.s3a.secret.key``."""


def _masked_table(table: Mapping[str, Any]) -> dict[str, Any]:
    """
    >>> _masked_table({"uri": "http://r", "s3.secret-access-key": "k", "io": {"token": "t"}})
    {'uri': 'http://r', 's3.secret-access-key': '***', 'io': {'token': '***'}}
    """
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            out[key] = _masked_table(value)
        elif any(word in key.lower() for word in SECRET_WORDS):
            out[key] = MASK if value else ""
        else:
            out[key] = value
    return out


def mask_url_password(url: str) -> str:
    """Hide the password of a URL.

    >>> mask_url_password("postgresql://cdc:s3cret@127.0.0.1:5432/shop")
    'postgresql://cdc:***@127.0.0.1:5432/shop'
    """
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    creds, _, host = rest.rpartition("@")
    if ":" not in creds:
        return url
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}:{MASK}@{host}"
