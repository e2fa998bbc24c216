"""The configuration loaded: the declared defaults (``settings.py``), then the TOML file, then
the ``CDCMIRROR_<SECTION>__<KEY>`` variables (nested tables add more ``__<KEY>`` parts),
any string key read from a file instead (``files.py``). Pure apart from reading.

A key that is not declared, in the file or in a ``CDCMIRROR_`` variable, stops with exit 2
naming it, as does a value of the wrong type or outside its choices: the message names the
file or the variable it came from. pydantic-settings is not used for this: it ignores a
misspelled ``CDCMIRROR_`` variable (even with ``extra="forbid"``), reads a secret file per
field from one directory rather than ``<KEY>_FILE``, and reports a value without where it
came from."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin

from pydantic import ValidationError

from cdcmirror.config.files import FILE_SUFFIX, file_stem, file_value, table_with_files
from cdcmirror.config.s3a import is_url
from cdcmirror.config.settings import (
    BY_NAME,
    STREAMS,
    Bootstrap,
    Connect,
    Iceberg,
    Kafka,
    Maintain,
    Mirror,
    Reconcile,
    Section,
    Source,
    Spark,
)
from cdcmirror.exceptions import ConfigError
from cdcmirror.streams.spec import StreamSpec, parse_streams

ENV_PREFIX = "CDCMIRROR_"
DEFAULT_CONFIG_FILE = "cdcmirror.toml"

TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")

Kind = Literal["str", "choice", "bool", "int", "list", "table"]


@dataclass(frozen=True)
class Config:
    """The validated configuration, a typed section per TOML table (``config.kafka.format``);
    ``base_dir`` anchors relative paths."""

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

    def sections(self) -> tuple[Section, ...]:
        return (
            self.source,
            self.kafka,
            self.connect,
            self.bootstrap,
            self.iceberg,
            self.mirror,
            self.reconcile,
            self.maintain,
            self.spark,
        )

    @property
    def values(self) -> dict[str, dict[str, Any]]:
        """The sections as plain tables (lists as lists), secrets included: print them only
        through ``masking.redacted``."""
        return {s.NAME: _plain(s) for s in self.sections()}

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


def _plain(section: Section) -> dict[str, Any]:
    out = {}
    for key in type(section).model_fields:
        value = getattr(section, key)
        out[key] = list(value) if isinstance(value, tuple) else value
    return out


def kind_of(section: type[Section], key: str) -> Kind:
    """What a declared key takes, from its annotation."""
    annotation = section.model_fields[key].annotation
    origin = get_origin(annotation)
    if origin is Literal:
        return "choice"
    if origin is tuple:
        return "list"
    if annotation is bool:
        return "bool"
    if annotation is int:
        return "int"
    if annotation is str:
        return "str"
    return "table"


def choices_of(section: type[Section], key: str) -> tuple[str, ...]:
    """The words a choice takes (empty for any other key)."""
    annotation = section.model_fields[key].annotation
    return tuple(get_args(annotation)) if get_origin(annotation) is Literal else ()


def _coerce(section: type[Section], key: str, value: Any, origin: str) -> Any:
    """A value from the file or the environment as its key's type, or exit 2 naming it."""
    kind, name = kind_of(section, key), f"{section.NAME}.{key}"
    if kind in ("str", "choice"):
        if not isinstance(value, str):
            raise ConfigError(f"{origin}: {name} must be a string, got {value!r}")
        choices = choices_of(section, key)
        if choices and value not in choices:
            raise ConfigError(f"{origin}: {name} = {value!r} is not one of {', '.join(choices)}")
        return value
    if kind == "bool":
        if isinstance(value, str) and value.lower() in TRUE_WORDS + FALSE_WORDS:
            return value.lower() in TRUE_WORDS
        if not isinstance(value, bool):
            raise ConfigError(f"{origin}: {name} must be true or false, got {value!r}")
        return value
    if kind == "int":
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"{origin}: {name} must be an integer, got {value!r}")
        return value
    if kind == "list":
        if isinstance(value, str):  # from the environment: comma-separated
            return [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{origin}: {name} must be a list of strings")
        return list(value)
    if not isinstance(value, dict):
        raise ConfigError(f"{origin}: [{name}] must be a table")
    return {str(k): v for k, v in value.items()}


Values = dict[str, dict[str, Any]]  # section -> key -> value, as the file and variables set them


def _merge_file(values: Values, data: Mapping[str, Any], origin: str, base_dir: Path) -> None:
    for name, body in data.items():
        if name == STREAMS:
            continue  # an array of tables: _raw_streams
        section = BY_NAME.get(name)
        if section is None:
            raise ConfigError(
                f"{origin}: unknown section [{name}]; known sections: {', '.join(sorted(BY_NAME))}"
            )
        if not isinstance(body, dict):
            raise ConfigError(f"{origin}: {name} must be a table ([{name}])")
        keys = section.model_fields
        for key, value in body.items():
            stem = file_stem(key, keys)
            if key not in keys and stem is not None and kind_of(section, stem) in ("str", "choice"):
                if stem in body:
                    raise ConfigError(
                        f"{origin}: {name}.{stem} and {name}.{key} are both set; keep one"
                    )
                content = file_value(f"{origin}: {name}.{key}", value, base_dir)
                values[name][stem] = _coerce(section, stem, content, origin)
                continue
            if key not in keys:
                raise ConfigError(
                    f"{origin}: unknown key {name}.{key}; keys of [{name}]: "
                    f"{', '.join(sorted(keys))}"
                )
            value = _coerce(section, key, value, origin)
            if kind_of(section, key) == "table":
                value = table_with_files(value, f"{origin}: [{name}.{key}]", base_dir)
            values[name][key] = value


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
    """``CDCMIRROR_<SECTION>__<KEY>_FILE`` (``files.py``): the value it reads and the key it
    sets; any other variable as it is."""
    section, last, rest = BY_NAME.get(parts[0]), parts[-1], parts[2:]
    stem = file_stem(last, None if rest else (section.model_fields if section else {}))
    raw = environ[name]
    if stem is None:
        return raw, last  # not a file's variable (an unknown key is reported by the caller)
    if name[: -len(FILE_SUFFIX)] in environ:
        raise ConfigError(f"{name[: -len(FILE_SUFFIX)]} and {name} are both set; keep one")
    return file_value(name, raw, base_dir), stem


def _merge_env(values: Values, environ: Mapping[str, str], base_dir: Path) -> list[str]:
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
        key, rest = parts[1] if len(parts) > 1 else "", parts[2:]
        section = BY_NAME.get(parts[0])
        if section is None or key not in section.model_fields:
            raise ConfigError(
                f"environment variable {name} names unknown config key {parts[0]}.{key}; "
                "unset it or fix its name (CDCMIRROR_<SECTION>__<KEY>)"
            )
        if kind_of(section, key) == "table":
            if not rest:
                raise ConfigError(f"{name}: {section.NAME}.{key} is a table; name a key inside it")
            target = values[section.NAME].setdefault(key, {})
            for part in rest[:-1]:
                target = target.setdefault(part, {})
            target[rest[-1]] = raw
        else:
            if rest:
                raise ConfigError(f"{name}: {section.NAME}.{key} has no sub-keys")
            values[section.NAME][key] = _coerce(section, key, raw, name)
        applied.append(name)
    return applied


S = TypeVar("S", bound=Section)


def _section(section: type[S], values: Values) -> S:
    """The section built from the values set over its defaults; a rule of the declaration
    that a value breaks (a range, a setting another needs) is exit 2 with its reason."""
    try:
        return section.model_validate(values[section.NAME])
    except ValidationError as exc:
        reason = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise ConfigError(reason) from None


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
    values: Values = {name: {} for name in BY_NAME}
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
    iceberg = _section(Iceberg, values)
    raw = _raw_streams(data, environ, str(source_file or "config"))
    return Config(
        base_dir=base_dir,
        source=_section(Source, values),
        kafka=_section(Kafka, values),
        connect=_section(Connect, values),
        bootstrap=_section(Bootstrap, values),
        iceberg=iceberg,
        mirror=_section(Mirror, values),
        reconcile=_section(Reconcile, values),
        maintain=_section(Maintain, values),
        spark=_section(Spark, values),
        source_file=source_file,
        overrides=tuple(applied),
        streams=parse_streams(raw, iceberg.namespace),
    )
