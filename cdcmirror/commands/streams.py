"""Plain event streams (``[[streams]]``) in bootstrap and in the mirror job: plan and make
their tables, load them for the job, evolve them, and where a job with a lost checkpoint
resumes them."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cdcmirror.cdc_columns import IcebergColumn
from cdcmirror.commands.kafka_access import client_conf
from cdcmirror.config import Config
from cdcmirror.config.masking import mask_url_password
from cdcmirror.exceptions import ConfigError
from cdcmirror.spark.streams.apply import StreamTable
from cdcmirror.streams.schema import (
    KAFKA_NAMES,
    columns_of_avro,
    columns_of_json_schema,
    infer_columns,
)
from cdcmirror.streams.spec import StreamSpec

logger = logging.getLogger(__name__)
SAMPLE = 1000  # events sampled to infer a stream's schema


@dataclass
class StreamPlan:
    spec: StreamSpec
    identifier: str
    action: str  # "create", "add columns" or "unchanged"
    columns: list[IcebergColumn]  # the event's columns, as the table will have them
    origin: str  # where the columns come from
    added: list[IcebergColumn] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "stream": self.spec.topic or self.spec.topic_pattern,
            "iceberg": self.identifier,
            "action": self.action,
            "schema": self.origin,
            "columns": [{"name": c.name, "type": c.type} for c in self.columns],
            "key": list(self.spec.key_columns),
            "partition": self.spec.partition.sql() if self.spec.partition else None,
            "drift": self.drift,
        }

    def lines(self, dry_run: bool) -> list[str]:
        """The report's lines; a dry run lists the columns (what ``infer`` found)."""
        key = ", ".join(self.spec.key_columns) or "none: append"
        out = [
            f"  {self.action:<9} stream {self.spec.topic or self.spec.topic_pattern} -> "
            f"{self.identifier}  ({len(self.columns)} columns from the {self.origin}, key {key})"
        ]
        shown = self.columns if dry_run or self.action == "create" else self.added
        out += [f"      {c.name} {c.type}" for c in shown]
        out += [f"      DRIFT: {d}" for d in self.drift]
        return out


def stream_topics(config: Config, spec: StreamSpec) -> list[str]:
    """The existing topics of a stream."""
    from cdcmirror.stack.health import topics_named

    if spec.topic:
        return [spec.topic]
    names = topics_named(client_conf(config), "", [])
    return [t for t in names if spec.matches(t)]


def _wanted_columns(config: Config, spec: StreamSpec) -> tuple[list[IcebergColumn], str]:
    if spec.format == "avro":
        from cdcmirror.clients.registry import SchemaRegistry

        url = config.kafka.schema_registry_url
        registry = SchemaRegistry(url, retries=(), auth=config.kafka.registry_auth)
        text = registry.latest(spec.schema)
        if text is None:
            raise ConfigError(
                f"{spec.where}: the schema registry at {mask_url_password(url)} has no subject "
                f"{spec.schema}; "
                "register the events' schema (a producer with the Avro serializer does) or "
                "set schema to its subject"
            )
        return columns_of_avro(text, spec.where), f"registry subject {spec.schema}"
    if not spec.infer:
        path = Path(spec.schema).expanduser()
        path = path if path.is_absolute() else config.base_dir / path
        if not path.is_file():
            raise ConfigError(f"{spec.where}: schema file {path} does not exist")
        return columns_of_json_schema(path.read_text("utf-8"), spec.where), f"schema file {path}"
    from cdcmirror.stack.health import sample_values

    values = sample_values(client_conf(config), stream_topics(config, spec), SAMPLE)
    events = []
    for v in values:
        try:
            events.append(json.loads(v))
        except ValueError:
            continue  # the mirror dead-letters it
    return infer_columns(events, spec.where), f"inferred from {len(events)} sampled event(s)"


def _check(spec: StreamSpec, columns: list[IcebergColumn]) -> None:
    names = {c.name for c in columns}
    missing = [k for k in spec.key_columns if k not in names]
    if missing:
        raise ConfigError(f"{spec.where}: key_columns {', '.join(missing)} are not fields")
    if spec.partition and spec.partition.column not in names | set(KAFKA_NAMES):
        raise ConfigError(
            f"{spec.where}: partition column {spec.partition.column} is not a field (nor a "
            f"Kafka column: {', '.join(KAFKA_NAMES)})"
        )


def plan_streams(config: Config, catalog: Any) -> list[StreamPlan]:
    """What bootstrap makes of each stream: a new table, columns to add, or nothing; a
    column whose type changed is drift (reported, not changed)."""
    from cdcmirror.catalog.streams import read_stream_table

    namespace = config.iceberg.namespace
    plans = []
    for spec in config.streams:
        identifier = spec.identifier(namespace)
        have = read_stream_table(catalog, identifier) if catalog is not None else None
        try:
            wanted, origin = _wanted_columns(config, spec)
        except ConfigError:
            if have is None or not spec.infer:
                raise
            wanted, origin = have, "the table (no event to sample)"
        _check(spec, wanted)
        if have is None:
            plans.append(StreamPlan(spec, identifier, "create", wanted, origin))
            continue
        known = {c.name: c.type for c in have}
        added = [c for c in wanted if c.name not in known]
        drift = [
            f"field {c.name}: {known[c.name]} in the table, {c.type} in the {origin}"
            for c in wanted
            if c.name in known and known[c.name] != c.type
        ]
        action = "add columns" if added else "unchanged"
        plans.append(StreamPlan(spec, identifier, action, [*have, *added], origin, added, drift))
    return plans


def apply_stream_plans(config: Config, catalog: Any, plans: list[StreamPlan]) -> None:
    from cdcmirror.catalog.streams import (
        add_stream_columns,
        create_stream_table,
        keep_write_defaults,
    )
    from cdcmirror.catalog.tables import ensure_namespace

    version = config.iceberg.format_version
    for p in plans:
        if p.action == "create":
            ensure_namespace(catalog, p.identifier.rsplit(".", 1)[0])
            create_stream_table(catalog, p.identifier, p.spec, p.columns, version)
            continue
        if p.action == "add columns":
            add_stream_columns(catalog, p.identifier, p.added)
        keep_write_defaults(catalog, p.identifier)


def stream_tables(config: Config, catalog: Any) -> list[StreamTable]:
    """The job's streams, each with its table's columns and the last batch it committed."""
    from cdcmirror.catalog.mirrored import snapshot_summaries
    from cdcmirror.catalog.streams import read_stream_table
    from cdcmirror.mirror.resume import recorded_held

    namespace = config.iceberg.namespace
    out = []
    for spec in config.streams:
        identifier = spec.identifier(namespace)
        columns = read_stream_table(catalog, identifier)
        if columns is None:
            raise ConfigError(f"{spec.where}: no table {identifier}; run `cdcmirror bootstrap`")
        held = recorded_held(snapshot_summaries(catalog, identifier))
        out.append(StreamTable(spec, identifier, tuple(columns), held))
    return out


class StreamAccess:
    """The applier's hook that adds an inferred stream's new fields (pyiceberg)."""

    def __init__(self, catalog: Any) -> None:
        self.catalog = catalog

    def reload(self, table: StreamTable) -> StreamTable:
        """``table`` holding what its snapshots record (``mirror/resume.recorded_held``)."""
        from cdcmirror.catalog.mirrored import snapshot_summaries
        from cdcmirror.mirror.resume import recorded_held

        held = recorded_held(snapshot_summaries(self.catalog, table.identifier))
        return replace(table, held=held)

    def evolve(self, table: StreamTable, added: list[IcebergColumn]) -> StreamTable:
        from cdcmirror.catalog.streams import add_stream_columns

        add_stream_columns(self.catalog, table.identifier, added)
        return replace(table, columns=(*table.columns, *added))


def stream_resume(catalog: Any, streams: list[StreamTable]) -> dict[str, dict[int, int]]:
    """Per topic and partition, where the streams resume when the checkpoint holds no batch
    (``mirror/resume.stream_starts``)."""
    from cdcmirror.catalog.mirrored import snapshot_summaries
    from cdcmirror.mirror.resume import stream_starts

    out: dict[str, dict[int, int]] = {}
    for s in streams:
        for topic, parts in stream_starts(snapshot_summaries(catalog, s.identifier)).items():
            out.setdefault(topic, {}).update(parts)
    return out


@dataclass
class JobStreams:
    """The streams of a mirror job: their tables, the topic patterns they add to the query,
    where they resume, and the hook that evolves them."""

    tables: list[StreamTable]
    access: StreamAccess

    @property
    def identifiers(self) -> list[str]:
        return [t.identifier for t in self.tables]

    def patterns(self) -> list[str]:
        """Java regexes of their topics (a pattern as configured, a topic escaped)."""
        return [
            re.escape(t.spec.topic) if t.spec.topic else t.spec.topic_pattern for t in self.tables
        ]

    def topics(self, config: Config) -> list[str]:
        """Their topics that exist now."""
        return sorted({name for t in self.tables for name in stream_topics(config, t.spec)})

    def resume(self, catalog: Any) -> dict[str, dict[int, int]]:
        return stream_resume(catalog, self.tables)


def job_streams(config: Config, catalog: Any, only: list[str] | None) -> JobStreams:
    """The streams a job runs: all, or those ``only`` names (by table or namespace.table)."""
    tables = stream_tables(config, catalog)
    if only:
        tables = [t for t in tables if t.identifier in only or t.identifier.split(".")[-1] in only]
    return JobStreams(tables, StreamAccess(catalog))
