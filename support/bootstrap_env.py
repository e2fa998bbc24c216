"""Helpers for the bootstrap tests: a config file per test, the CLI run in-process, and the
carrier of each field of a real Debezium event."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from cdcmirror.catalog.types import to_spec
from cdcmirror.cli import cli
from support import services


def write_config(
    directory: Path, filename: str = "cdcmirror.toml", **sections: dict[str, Any]
) -> Path:
    """A config file in ``directory``; values are TOML-encoded by hand (strings, lists, and
    tables such as ``iceberg.catalog``, whose keys are quoted: ``"s3.endpoint" = ...``)."""
    lines = []
    for section, values in sections.items():
        lines.append(f"[{section}]")
        tables = {k: v for k, v in values.items() if isinstance(v, dict)}
        for key, value in values.items():
            if key not in tables:
                lines.append(f"{key} = {json.dumps(value)}")
        for key, table in tables.items():
            lines.append(f"[{section}.{key}]")
            lines += [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in table.items()]
    path = directory / filename
    path.write_text("\n".join(lines) + "\n", "utf-8")
    tomllib.loads(path.read_text("utf-8"))  # a test config that is not TOML is a test bug
    return path


def run_cli(
    config: Path,
    *args: str,
    password: str = services.CDC_PASSWORD,
    env: dict[str, str] | None = None,
) -> Result:
    environ = {"CDCMIRROR_SOURCE__PASSWORD": password, **(env or {})}
    return CliRunner().invoke(cli, ["--config", str(config), *args], env=environ)


def field_carrier(field: dict[str, Any]) -> str:
    """How typemap.py writes a carrier, from a Connect JSON schema field."""
    kind = field["type"]
    if kind == "array":
        return f"array<{field_carrier(field['items'])}>"
    if kind == "map":
        return f"map<{field_carrier(field['keys'])},{field_carrier(field['values'])}>"
    return f"{kind} {field['name']}" if field.get("name") else kind


def event_carriers(value: bytes) -> dict[str, str]:
    """Column -> carrier of the ``after`` struct of a Debezium JSON event with schema."""
    envelope = json.loads(value)
    after = next(f for f in envelope["schema"]["fields"] if f["field"] == "after")
    return {f["field"]: field_carrier(f) for f in after["fields"]}


CDC_COLUMN_TYPES = {
    "_cdc_op": "string",
    "_cdc_position": "list<long>",
    "_cdc_source_ts": "timestamptz",
    "_cdc_deleted": "boolean",
}


def assert_schemas(
    tables: dict[str, Any], expected: dict[str, dict[str, str]], keys: dict[str, tuple[str, ...]]
) -> None:
    """Each Iceberg table has exactly the expected columns, in source order, then the _cdc_
    columns; its identifier fields and required columns are the key."""

    for name, table in tables.items():
        schema = table.schema()
        got = {f.name: to_spec(f.field_type) for f in schema.fields}
        assert got == {**expected[name], **CDC_COLUMN_TYPES}, name
        assert [f.name for f in schema.fields][: len(expected[name])] == list(expected[name])
        assert tuple(sorted(schema.identifier_field_names())) == tuple(sorted(keys[name]))
        assert {f.name for f in schema.fields if f.required} == set(keys[name])
        assert table.properties["write.merge.mode"] == "merge-on-read"
        assert table.metadata.format_version >= 2


def assert_snapshot_carriers(report: dict[str, Any], topic_prefix: str) -> None:
    """A snapshot event arrived for every table of the report, and each of its fields is
    carried as the report (the type mapping) says."""
    for table in report["tables"]:
        topic = f"{topic_prefix}.{table['source']}"
        records = services.consume(topic, 1)
        assert records, f"no snapshot event in {topic}"
        value = records[0][1]
        assert value is not None
        expected = {c["source"]: c["carrier"] for c in table["columns"]}
        assert event_carriers(value) == expected, table["source"]


def run_script(database: str, sql: str) -> None:
    conn = services.maria_connect(database)
    try:
        with conn.cursor() as cur:
            for statement in sql.split(";\n"):
                body = "\n".join(
                    line for line in statement.splitlines() if not line.strip().startswith("--")
                )
                if body.strip():
                    cur.execute(body)
    finally:
        conn.close()
