"""Any config value read from a file instead (secrets above all), one rule for the TOML file
and the environment:

- in the TOML file, ``<key>_file = "PATH"`` beside any string key, inside tables too
  (``[kafka] sasl_password_file``, ``[iceberg.catalog] "s3.secret-access-key_file"``);
- in the environment, the key's variable with ``_FILE`` appended (Docker secrets'
  convention: ``CDCMIRROR_SOURCE__PASSWORD_FILE``).

The value is the file's content, stripped. A relative path is relative to the config file's
directory (the working directory without a config file). Giving a key and its file in the
same place is an error; the environment overrides the TOML file as for any key. Pure apart
from reading the file.
"""

from __future__ import annotations

from collections.abc import Container
from pathlib import Path
from typing import Any

from cdcmirror.exceptions import ConfigError

FILE_SUFFIX = "_file"


def file_stem(key: str, known: Container[str] | None) -> str | None:
    """The key that ``key`` reads from a file, or None when ``key`` is no such key.

    >>> file_stem("password_file", {"password"}), file_stem("password", {"password"})
    ('password', None)
    >>> file_stem("s3.secret-access-key_file", None)
    's3.secret-access-key'
    """
    if not key.lower().endswith(FILE_SUFFIX) or (known is not None and key in known):
        return None
    stem = key[: -len(FILE_SUFFIX)]
    if not stem or (known is not None and stem not in known):
        return None
    return stem


def file_value(origin: str, raw: Any, base_dir: Path) -> str:
    """The content, stripped, of the file ``raw`` names (``origin`` names the setting)."""
    if not isinstance(raw, str) or not raw:
        raise ConfigError(f"{origin} must be the path of a file, got {raw!r}")
    path = Path(raw).expanduser()
    path = path if path.is_absolute() else base_dir / path
    try:
        return path.read_text("utf-8").strip()
    except OSError as exc:
        raise ConfigError(
            f"{origin}: the file {path} cannot be read ({exc.strerror}); fix the path or its "
            "permissions"
        ) from exc


def table_with_files(table: dict[str, Any], origin: str, base_dir: Path) -> dict[str, Any]:
    """A TOML table (``[iceberg.catalog]``, ``[spark.conf]``) with its ``<key>_file`` entries
    read into ``<key>``."""
    out = dict(table)
    for key, raw in table.items():
        stem = file_stem(key, None)
        if stem is None:
            continue
        if stem in table:
            raise ConfigError(f"{origin}: {stem} and {key} are both set; keep one")
        out[stem] = file_value(f"{origin}: {key}", raw, base_dir)
        del out[key]
    return out
