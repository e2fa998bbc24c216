"""The TOML configuration: defaults, environment overrides, validation. Pure apart from reading.

Every key can be overridden by ``CDCMIRROR_<SECTION>__<KEY>`` (nested tables add more
``__<KEY>`` parts), and read from a file instead (``config_files.py``). Secrets
(``source.password``) should come from the environment or a file; they are never included
in what :func:`cdcmirror.redaction.redacted` returns.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdcmirror.config_files import FILE_SUFFIX, file_stem, file_value, table_with_files
from cdcmirror.config_schema import CHOICES, DEFAULTS, SCHEMA
from cdcmirror.config_sections import (
    Bootstrap,
    Connect,
    Iceberg,
    Kafka,
    Maintain,
    Mirror,
    Reconcile,
    Source,
    Spark,
)
from cdcmirror.exceptions import ConfigError
from cdcmirror.s3a_settings import is_url
from cdcmirror.streams.spec import StreamSpec, parse_streams

ENV_PREFIX = "CDCMIRROR_"
STREAMS = "streams"  # [[streams]]: an array of tables, not a section
DEFAULT_CONFIG_FILE = "cdcmirror.toml"

TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")


@dataclass(frozen=True)
class Config:
    """The validated configuration, a typed section per TOML table (``config.kafka.format``;
    ``config_sections``); ``values`` is the same as plain tables (for printing, redacted);
    ``base_dir`` anchors relative paths."""

    values: Mapping[str, Mapping[str, Any]] = field(repr=False)  # holds the secrets too
    base_dir: Path
    source: Source
    kafka: Kafka
    connect: Connect
    bootstrap: Bootstrap
    iceberg: Iceberg
    mirror: Mirror
    reconcile: Reconcile
    maintain: Maintain
    spark: Spark
    source_file: Path | None = None
    overrides: tuple[str, ...] = field(default=())
    streams: tuple[StreamSpec, ...] = ()  # [[streams]]: plain event topics

    def path(self, section: str, key: str) -> Path:
        """A path-valued key, relative to ``base_dir`` unless absolute."""
        p = Path(str(self.values[section][key])).expanduser()
        return p if p.is_absolute() else self.base_dir / p

    def location(self, section: str, key: str) -> str:
        """A path-or-URL key (``s3a://bucket/dir``): a URL as written, a path as ``path``."""
        value = str(self.values[section][key])
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


def _merge_file(
    values: dict[str, dict[str, Any]], data: Mapping[str, Any], origin: str, base_dir: Path
) -> None:
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
            stem = file_stem(key, SCHEMA[section])
            if kind is None and stem is not None and SCHEMA[section][stem] == "str":
                if stem in body:
                    raise ConfigError(
                        f"{origin}: {section}.{stem} and {section}.{key} are both set; keep one"
                    )
                content = file_value(f"{origin}: {section}.{key}", value, base_dir)
                values[section][stem] = _coerce(section, stem, "str", content, origin)
                continue
            if kind is None:
                raise ConfigError(
                    f"{origin}: unknown key {section}.{key}; keys of [{section}]: "
                    f"{', '.join(sorted(SCHEMA[section]))}"
                )
            value = _coerce(section, key, kind, value, origin)
            if kind == "table":
                value = table_with_files(value, f"{origin}: [{section}.{key}]", base_dir)
            values[section][key] = value


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


def _from_file(
    environ: Mapping[str, str], name: str, parts: list[str], base_dir: Path
) -> tuple[str, str]:
    """``CDCMIRROR_<SECTION>__<KEY>_FILE`` (``config_files.py``): the value it reads and the
    key it sets; any other variable as it is."""
    section, last, rest = parts[0], parts[-1], parts[2:]
    stem = file_stem(last, None if rest else SCHEMA.get(section, {}))
    raw = environ[name]
    if stem is None:
        return raw, last  # not a file's variable (an unknown key is reported by the caller)
    if name[: -len(FILE_SUFFIX)] in environ:
        raise ConfigError(f"{name[: -len(FILE_SUFFIX)]} and {name} are both set; keep one")
    return file_value(name, raw, base_dir), stem


def _merge_env(
    values: dict[str, dict[str, Any]], environ: Mapping[str, str], base_dir: Path
) -> list[str]:
    applied = []
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        if name.startswith(f"{ENV_PREFIX}{STREAMS.upper()}__"):
            applied.append(name)  # _raw_streams
            continue
        parts = [p.lower() for p in name[len(ENV_PREFIX) :].split("__")]
        if len(parts) > 1:
            raw, parts[-1] = _from_file(environ, name, parts, base_dir)
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
    retention = values["maintain"]["tombstone_retention_hours"]
    if retention < 0:
        raise ConfigError(
            f"maintain.tombstone_retention_hours = {retention} is negative; use the hours a "
            "replay can reach back (at least the Kafka topics' retention), or 0 to keep "
            "tombstones for ever"
        )
    version = values["iceberg"]["format_version"]
    if version != 2:
        reason = _FORMAT_REASONS.get(version, "is not an Iceberg format cdcmirror writes")
        raise ConfigError(f"iceberg.format_version = {version} {reason}; use 2")


# why each Iceberg format version but 2 is refused (``iceberg.format_version``)
_FORMAT_REASONS = {
    1: "has no row-level deletes, which every mirrored table's MERGE writes",
    3: (
        "(deletion vectors) is not supported yet: cdcmirror creates and evolves tables with "
        "pyiceberg 0.12, which cannot write format-3 metadata (apache/iceberg-python#1551)"
    ),
}


def _check_sasl(values: dict[str, dict[str, Any]]) -> None:
    """SASL needs a Kafka user name and password."""
    kafka = values["kafka"]
    protocol = kafka["security_protocol"]
    if protocol.startswith("SASL_") and not (kafka["sasl_username"] and kafka["sasl_password"]):
        raise ConfigError(
            f"kafka.security_protocol = {protocol!r} logs in with kafka.sasl_username and "
            "kafka.sasl_password (or kafka.sasl_password_file, or the environment variable "
            "CDCMIRROR_KAFKA__SASL_PASSWORD): set both"
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
    source_file, data = None, {}
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
        _merge_file(values, data, str(source_file), source_file.parent)
    base_dir = source_file.parent if source_file is not None else cwd
    applied = _merge_env(values, environ, base_dir)
    _check_ranges(values)
    _check_sasl(values)
    raw = _raw_streams(data, environ, str(source_file or "config"))
    streams = parse_streams(raw, values["iceberg"]["namespace"])
    return Config(
        values=values,
        base_dir=base_dir,
        source=Source.of(values["source"]),
        kafka=Kafka.of(values["kafka"]),
        connect=Connect.of(values["connect"]),
        bootstrap=Bootstrap.of(values["bootstrap"]),
        iceberg=Iceberg.of(values["iceberg"]),
        mirror=Mirror.of(values["mirror"]),
        reconcile=Reconcile.of(values["reconcile"]),
        maintain=Maintain.of(values["maintain"]),
        spark=Spark.of(values["spark"]),
        source_file=source_file,
        overrides=tuple(applied),
        streams=streams,
    )
