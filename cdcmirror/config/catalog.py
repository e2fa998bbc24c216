"""Which Iceberg catalog cdcmirror uses, as plain properties for pyiceberg and for Spark. Pure.

No ``[iceberg.catalog]`` means the embedded default: Iceberg's SQL catalog on a SQLite file
plus a local warehouse, both under ``./.cdcmirror/``. pyiceberg reads it as its ``sql``
catalog and Spark as Iceberg's JDBC catalog: the two implementations share the same tables
(``iceberg_tables``, ``iceberg_namespace_properties``) keyed by the catalog name, so both
see the same namespaces, tables and snapshots.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cdcmirror.config import Config
from cdcmirror.exceptions import ConfigError

CATALOG_NAME = "cdcmirror"


def embedded_catalog_paths(state_dir: Path) -> tuple[Path, Path]:
    """(SQLite catalog file, warehouse directory) of the embedded default."""
    return state_dir / "catalog.db", state_dir / "warehouse"


def ensure_embedded_catalog_dirs(config: Config) -> None:
    """Create the embedded default's directories; nothing for a configured catalog."""
    if config.iceberg.catalog:
        return
    db, warehouse = embedded_catalog_paths(config.state_dir)
    db.parent.mkdir(parents=True, exist_ok=True)
    warehouse.mkdir(parents=True, exist_ok=True)


def pyiceberg_properties(config: Config) -> dict[str, str]:
    """Properties for ``pyiceberg.catalog.load_catalog(CATALOG_NAME, **props)``."""
    custom: dict[str, Any] = dict(config.iceberg.catalog)
    if custom:
        return {str(k): str(v) for k, v in custom.items()}
    db, warehouse = embedded_catalog_paths(config.state_dir)
    # schema v1 (the iceberg_type column, with view support) on both sides, so whichever of
    # pyiceberg or Spark touches the catalog first creates the same tables.
    return {
        "type": "sql",
        "uri": f"sqlite:///{db}",
        "warehouse": warehouse.as_uri(),
        "schema_version": "v1",
    }


def spark_catalog_conf(config: Config, name: str = CATALOG_NAME) -> dict[str, str]:
    """``spark.sql.catalog.<name>.*`` settings for the same catalog in Spark.

    >>> from cdcmirror.config import load_config
    >>> conf = spark_catalog_conf(load_config(environ={}, cwd=Path("/w")))
    >>> conf["spark.sql.catalog.cdcmirror.uri"]
    'jdbc:sqlite:/w/.cdcmirror/catalog.db'
    """
    props = pyiceberg_properties(config)
    prefix = f"spark.sql.catalog.{name}"
    conf = {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        # pyiceberg (bootstrap, schema evolution) commits to the same tables; Spark's table
        # cache would keep serving the old metadata, so every read goes to the catalog.
        f"{prefix}.cache-enabled": "false",
    }
    kind = props.pop("type", "rest")
    uri = props.pop("uri", "")
    if kind == "sql":
        if uri.startswith("sqlite:///"):
            # SQLAlchemy: sqlite:///relative.db, sqlite:////absolute.db
            jdbc_uri = "jdbc:sqlite:" + uri[len("sqlite:///") :]
        elif uri.startswith(("postgresql://", "postgresql+psycopg://")):
            rest = uri.split("://", 1)[1]
            creds, _, hostpart = rest.rpartition("@")
            jdbc_uri = f"jdbc:postgresql://{hostpart}"
            if creds:
                user, _, password = creds.partition(":")
                conf[f"{prefix}.jdbc.user"] = user
                if password:
                    conf[f"{prefix}.jdbc.password"] = password
        else:
            raise ConfigError(
                f"iceberg.catalog.uri {uri!r}: the sql catalog is supported on SQLite "
                "(sqlite:///PATH) or PostgreSQL (postgresql://...)"
            )
        conf[f"{prefix}.type"] = "jdbc"
        conf[f"{prefix}.uri"] = jdbc_uri
    else:
        conf[f"{prefix}.type"] = kind
        if uri:
            conf[f"{prefix}.uri"] = uri
    schema_version = props.pop("schema_version", None)
    if schema_version and kind == "sql":
        conf[f"{prefix}.jdbc.schema-version"] = schema_version.upper()
    for key, value in props.items():
        conf[f"{prefix}.{key}"] = value
    warehouse = conf.get(f"{prefix}.warehouse")
    if warehouse and warehouse.startswith("file:///"):
        conf[f"{prefix}.warehouse"] = "file:" + warehouse[len("file://") :]
    return conf
