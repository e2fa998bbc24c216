"""The Debezium connector bootstrap registers: its config from the ``connectors/`` template
and the discovered tables (pure), and its registration through Kafka Connect's REST API."""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdcmirror import dialects
from cdcmirror.config import Config
from cdcmirror.config.kafka_security import history_client_settings
from cdcmirror.config.settings import Kafka
from cdcmirror.connectors import (
    REGISTRY_PASSWORD,
    SASL_PASSWORD,
    password_reference,
    render_connector,
)
from cdcmirror.dialects.postgresql import PUBLICATION
from cdcmirror.exceptions import ConfigError, SourceError
from cdcmirror.mirror.spec import MirrorTable
from cdcmirror.source_model import SourceCatalog


def connector_name(source_name: str) -> str:
    """The Kafka Connect name of the source's connector.

    >>> connector_name("shop")
    'cdcmirror-shop'
    """
    return f"cdcmirror-{source_name}"


def slot_name(source_name: str) -> str:
    """A valid PostgreSQL replication slot name for the source.

    >>> slot_name("Shop-EU")
    'cdcmirror_shop_eu'
    """
    return "cdcmirror_" + re.sub(r"[^a-z0-9_]", "_", source_name.lower())[:50]


def server_id(source_name: str) -> int:
    """A stable MySQL replica server id for the source (any id unique among replicas works).

    >>> server_id("shop") == server_id("shop") != server_id("crm")
    True
    """
    return 100_000 + zlib.crc32(f"cdcmirror:{source_name}".encode()) % 4_000_000_000


def include_list(tables: list[str]) -> str:
    """Debezium's ``table.include.list``: anchored regular expressions, so dots are escaped.

    >>> include_list(["public.orders", "public.order_items"])
    'public\\\\.order_items,public\\\\.orders'
    """
    return ",".join(sorted(re.escape(t) for t in tables))


def secret_file(config: Config, source_name: str) -> Path:
    """The connector's secret file, in the directory Connect's file provider may read."""
    return config.connect.secrets_path / f"{connector_name(source_name)}.properties"


def template_name(catalog: SourceCatalog) -> str:
    return catalog.flavor  # postgresql, mysql or mariadb: one template each


def publication_problems(catalog: SourceCatalog) -> list[str]:
    """PostgreSQL tables the connector could not stream because the publication lacks them."""
    if not dialects.of(catalog.dialect).slot or catalog.published is None:
        return []
    names = [t.qualified for t in catalog.tables]
    if catalog.signal_table:
        names.append(catalog.signal_table)
    return sorted(n for n in names if n not in catalog.published)


@dataclass(frozen=True)
class ConnectorPlan:
    name: str
    config: dict[str, str]
    password: str = field(repr=False)
    kafka_password: str = field(default="", repr=False)  # the schema history's login
    registry_password: str = field(default="", repr=False)  # the Avro converter's login

    @property
    def secrets(self) -> tuple[str, str, str]:
        """What the secret file holds: the source's password, Kafka's, the registry's."""
        return self.password, self.kafka_password, self.registry_password


APICURIO_CCOMPAT = "/apis/ccompat/v7"


def converter_settings(kafka: Kafka, password_ref: str = "") -> dict[str, str]:
    """Converter overrides for the ``[kafka]`` format (the templates carry JSON with
    schemas).

    Avro is written in the Confluent wire format (magic byte, 4-byte schema id, Avro body).
    When ``kafka.schema_registry_url`` is an Apicurio Registry's Confluent-compatible API
    (``.../apis/ccompat/v7``, what ``cdcmirror stack`` runs), Apicurio's converter writes it,
    registering schemas through Apicurio's own API under ids the compatible API serves;
    otherwise Confluent's converter (which the Connect worker must have) is used.

    >>> def kafka(fmt: str, registry: str = "") -> Kafka:
    ...     return Kafka(bootstrap_servers="k:9092", format=fmt, schema_registry_url=registry)
    >>> converter_settings(kafka("json-schemaless"))["value.converter.schemas.enable"]
    'false'
    >>> s = converter_settings(kafka("avro", "http://r:8081/apis/ccompat/v7"))
    >>> s["value.converter.apicurio.registry.url"], s["value.converter.apicurio.registry.use-id"]
    ('http://r:8081/apis/registry/v2', 'contentId')
    >>> converter_settings(kafka("avro", "http://sr:8081"))["key.converter.schema.registry.url"]
    'http://sr:8081'
    """
    if kafka.with_schemas:
        return {}
    if not kafka.avro:  # schemaless JSON
        return {"key.converter.schemas.enable": "false", "value.converter.schemas.enable": "false"}
    base = kafka.schema_registry_url.rstrip("/")
    out: dict[str, str] = {"schema.name.adjustment.mode": "avro"}
    for side in ("key", "value"):
        if base.endswith(APICURIO_CCOMPAT):
            apicurio = base[: -len(APICURIO_CCOMPAT)] + "/apis/registry/v2"
            settings = {
                "": "io.apicurio.registry.utils.converter.AvroConverter",
                ".apicurio.registry.url": apicurio,
                ".apicurio.registry.auto-register": "true",
                ".apicurio.registry.find-latest": "true",
                # Confluent wire format: the schema id in the body, 4 bytes, content ids
                ".apicurio.registry.as-confluent": "true",
                ".apicurio.registry.use-id": "contentId",
                ".apicurio.registry.headers.enabled": "false",
            }
            if kafka.registry_auth:  # basic auth (Apicurio 2.x's serde keys)
                settings[".apicurio.auth.username"] = kafka.schema_registry_username
                settings[".apicurio.auth.password"] = password_ref
        else:
            settings = {
                "": "io.confluent.connect.avro.AvroConverter",
                ".schema.registry.url": base,
            }
            if kafka.registry_auth:
                settings[".basic.auth.credentials.source"] = "USER_INFO"
                settings[".basic.auth.user.info"] = (
                    f"{kafka.schema_registry_username}:{password_ref}"
                )
        out.update({f"{side}.converter{k}": v for k, v in settings.items()})
    return out


def plan_connector(
    config: Config, catalog: SourceCatalog, secret_path: Path, url: Any
) -> ConnectorPlan:
    """The connector config for the discovered tables; the password is a provider reference.
    ``url``: the source's parsed URL (``source/connection.source_url``)."""
    missing = publication_problems(catalog)
    if missing:
        raise SourceError(
            f"publication {PUBLICATION!r} does not include {', '.join(missing)}, so Debezium "
            "would never see their changes. A superuser adds them: ALTER PUBLICATION "
            f"{PUBLICATION} ADD TABLES IN SCHEMA {missing[0].split('.')[0]} (or ADD TABLE "
            f"{missing[0]}); sql/postgresql/publication.sql creates the publication"
        )
    source_name = config.source.name
    if not re.fullmatch(r"[A-Za-z0-9._-]+", source_name):
        raise ConfigError(
            f"source.name {source_name!r} is the Kafka topic prefix: use letters, digits, '.', "
            "'_' or '-' only"
        )
    mode = config.connect.secrets
    d = dialects.of(catalog.dialect)
    params = {
        "host": str(url.host or "127.0.0.1"),
        "port": str(url.port or d.default_port),
        "user": str(url.username or ""),
        "password_ref": password_reference(mode, secret_path),
        "database": d.connector_database(catalog.database, [t.schema for t in catalog.tables]),
        "topic_prefix": source_name,
        "table_include_list": include_list([t.qualified for t in catalog.tables]),
        "slot_name": slot_name(source_name),
        "server_id": str(server_id(source_name)),
        "kafka_bootstrap_servers": config.kafka.bootstrap_servers,
    }
    rendered = render_connector(template_name(catalog), params)
    if config.source.unknown_types == "string":
        rendered["include.unknown.datatypes"] = "true"
    registry_ref = password_reference(mode, secret_path, "registry_password", REGISTRY_PASSWORD)
    rendered.update(converter_settings(config.kafka, registry_ref))
    if config.kafka.avro:  # the JSON converter's setting, not Avro's
        for side in ("key", "value"):
            rendered.pop(f"{side}.converter.schemas.enable", None)
    rendered.update(uuid_converter_settings(catalog))
    if config.mirror.consistent_tag:
        # BEGIN and END of every transaction, and each change's place in it: what the
        # consistent point is proven from (mirror/consistent_point.py)
        rendered["provide.transaction.metadata"] = "true"
    if catalog.signal_table:
        # incremental snapshots (`cdcmirror repair`) are requested through this table
        rendered["signal.data.collection"] = catalog.signal_table
    kafka_password = ""
    if "schema.history.internal.kafka.bootstrap.servers" in rendered:
        # the history topic is read and written by the connector's own clients
        ref = password_reference(mode, secret_path, "kafka_password", SASL_PASSWORD)
        rendered.update(history_client_settings(config.kafka, ref))
        kafka_password = config.kafka.sasl_password if config.kafka.sasl else ""
    name = connector_name(source_name)
    registry = config.kafka.schema_registry_password if config.kafka.avro else ""
    return ConnectorPlan(name, rendered, str(url.password or ""), kafka_password, registry)


UUID_CONVERTER = "cdcmirror_uuid"
# the converter of MariaDB UUID columns that `jars resolve` builds (``jvm/java_parts.py``)
MARIADB_UUID_CLASS = "io.cdcmirror.debezium.MariaDbUuidConverter"


def uuid_converter_settings(catalog: SourceCatalog) -> dict[str, str]:
    """cdcmirror's converter of MariaDB ``UUID`` columns (``jvm/java_parts.py``), when a
    captured table has one: Debezium's own reads a binlog value whose trailing zero bytes
    MariaDB dropped as a shifted UUID."""
    if not dialects.of(catalog.dialect).uuid_converter:
        return {}
    if not any(c.type.name == "uuid" for t in catalog.tables for c in t.columns):
        return {}
    return {"converters": UUID_CONVERTER, f"{UUID_CONVERTER}.type": MARIADB_UUID_CLASS}


def missing_uuid_converter(
    tables: Sequence[MirrorTable], connector: Mapping[str, Any]
) -> list[str]:
    """The tables with a UUID column that the registered connector (its ``connector``
    config) reads without cdcmirror's converter (``uuid_converter_settings``)."""
    if connector.get(f"{UUID_CONVERTER}.type") == MARIADB_UUID_CLASS:
        return []
    return [
        t.identifier
        for t in tables
        if dialects.of(t.dialect).uuid_converter
        and any(c.carrier == "string io.debezium.data.Uuid" for c in t.columns)
    ]


def same_config(current: dict[str, Any] | None, wanted: dict[str, str], name: str) -> bool:
    """Whether Connect already runs the wanted config (Connect adds ``name``)."""
    if current is None:
        return False
    return {k: str(v) for k, v in current.items()} == {**wanted, "name": name}


CAPTURED_DDL_ONLY = "schema.history.internal.store.only.captured.tables.ddl"
SNAPSHOT_KEYS = ("snapshot.mode", "heartbeat.interval.ms", CAPTURED_DDL_ONLY)


def keep_snapshot_settings(current: dict[str, Any], wanted: dict[str, str]) -> dict[str, str]:
    """The wanted config with the registered connector's snapshot settings: how its tables
    got their rows, and which tables' DDL its schema history holds since its snapshot, were
    decided when it was created; changing them now would only restart it.

    >>> keep_snapshot_settings({"snapshot.mode": "no_data"}, {"snapshot.mode": "initial"})
    {'snapshot.mode': 'no_data'}
    >>> keep_snapshot_settings({}, {"snapshot.mode": "initial", "heartbeat.interval.ms": "1"})
    {'snapshot.mode': 'initial'}
    """
    out = dict(wanted)
    for key in SNAPSHOT_KEYS:
        if key in current:
            out[key] = str(current[key])
        elif key != "snapshot.mode":
            out.pop(key, None)
    return out


def added_tables(current: Mapping[str, Any], wanted: Mapping[str, str]) -> list[str]:
    """The tables ``wanted``'s include list captures beyond the registered ``current`` one.

    >>> added_tables({"table.include.list": include_list(["db.a"])},
    ...              {"table.include.list": include_list(["db.a", "db.c"])})
    ['db.c']
    """

    def tables(config: Mapping[str, Any]) -> set[str]:
        listed = str(config.get("table.include.list", ""))
        return {re.sub(r"\\(.)", r"\1", t) for t in listed.split(",") if t}

    return sorted(tables(wanted) - tables(current))


def tables_without_history(current: Mapping[str, Any], wanted: Mapping[str, str]) -> list[str]:
    """The :func:`added_tables` of a MySQL/MariaDB connector whose schema history holds no
    DDL for them: one registered keeping only its captured tables' DDL fails at their first
    row event ("schema isn't known to this connector"). Connectors bootstrap registers now
    keep the DDL of every table of their databases, so any of them can be added later.

    >>> old = {CAPTURED_DDL_ONLY: "true", "table.include.list": include_list(["db.a"])}
    >>> tables_without_history(old, {"table.include.list": include_list(["db.a", "db.c"])})
    ['db.c']
    >>> tables_without_history({**old, CAPTURED_DDL_ONLY: "false"},
    ...                        {"table.include.list": include_list(["db.a", "db.c"])})
    []
    """
    if str(current.get(CAPTURED_DDL_ONLY, "false")).lower() != "true":
        return []
    return added_tables(current, wanted)
