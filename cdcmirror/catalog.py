"""The Iceberg catalog through pyiceberg (the only module that imports it)."""

from __future__ import annotations

from typing import Any

from cdcmirror.catalog_properties import CATALOG_NAME, embedded_catalog_paths, pyiceberg_properties
from cdcmirror.config import Config


def load_catalog(config: Config) -> Any:
    """The configured pyiceberg catalog; creates the embedded default's directories."""
    from pyiceberg.catalog import load_catalog as _load

    if not config.get("iceberg", "catalog"):
        db, warehouse = embedded_catalog_paths(config.state_dir)
        db.parent.mkdir(parents=True, exist_ok=True)
        warehouse.mkdir(parents=True, exist_ok=True)
    return _load(CATALOG_NAME, **pyiceberg_properties(config))
