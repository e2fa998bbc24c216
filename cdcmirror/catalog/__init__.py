"""The Iceberg catalog through pyiceberg (this package is the only place that imports it)."""

from __future__ import annotations

from typing import Any

from cdcmirror.config import Config
from cdcmirror.config.catalog import (
    CATALOG_NAME,
    ensure_embedded_catalog_dirs,
    pyiceberg_properties,
)


def load_catalog(config: Config) -> Any:
    """The configured pyiceberg catalog; creates the embedded default's directories."""
    from pyiceberg.catalog import load_catalog as _load

    ensure_embedded_catalog_dirs(config)
    return _load(CATALOG_NAME, **pyiceberg_properties(config))
