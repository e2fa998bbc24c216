"""`cdcmirror bootstrap` against real PostgreSQL, Kafka Connect with Debezium, and Iceberg."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cdcmirror.bootstrap.connector import connector_name
from cdcmirror.catalog import load_catalog
from cdcmirror.catalog.types import to_spec
from cdcmirror.config import load_config
from cdcmirror.stack.control import Stack
from support import FIXTURES_DIR, services
from support.bootstrap_env import (
    assert_schemas,
    assert_snapshot_carriers,
    run_cli,
    write_config,
)

FIXTURE = FIXTURES_DIR / "pg_types.sql"

# The Iceberg type of every column of fixtures/pg_types.sql: docs/reference/type-mapping.md,
# by hand.
EXPECTED = {
    "numbers": {
        "id": "long", "c_smallint": "int", "c_integer": "int", "c_bigint": "long",
        "c_serial": "int", "c_boolean": "boolean", "c_bit1": "boolean", "c_bit8": "binary",
        "c_varbit": "binary", "c_numeric": "decimal(12,3)", "c_numeric_unbounded": "string",
        "c_money": "decimal(19,2)", "c_real": "float", "c_double": "double",
        "c_domain": "int", "c_oid": "long",
    },
    "texts": {
        "tenant": "int", "code": "string", "c_char": "string", "c_varchar": "string",
        "c_text": "string", "c_citext": "string", "c_enum": "string", "c_json": "string",
        "c_jsonb": "string", "c_uuid": "string", "c_bytea": "binary", "c_xml": "string",
        "c_tsvector": "string", "c_ltree": "string", "c_hstore": "map<string,string>",
        "c_inet": "string", "c_cidr": "string", "c_macaddr": "string",
        "c_domain_text": "string", "c_int_array": "list<int>", "c_text_array": "list<string>",
        "c_numeric_array": "list<decimal(8,2)>", "c_int4range": "string",
    },
    "times": {
        "id": "int", "c_date": "date", "c_time": "long", "c_time3": "long",
        "c_timetz": "string", "c_timestamp": "timestamp", "c_timestamp3": "timestamp",
        "c_timestamptz": "timestamptz", "c_interval": "string", "c_point": "binary",
    },
    "events_log": {"happened_at": "timestamptz", "message": "string"},
    "by_email": {"email": "string", "note": "string"},
    "measurements": {"city_id": "int", "logdate": "date", "peaktemp": "int"},
}  # fmt: skip
KEYS = {
    "numbers": ("id",),
    "texts": ("tenant", "code"),
    "times": ("id",),
    "events_log": (),
    "by_email": ("email",),
    "measurements": ("city_id", "logdate"),
}


IDENTITIES = (
    "ALTER TABLE {schema}.events_log REPLICA IDENTITY FULL",
    "ALTER TABLE {schema}.by_email REPLICA IDENTITY USING INDEX by_email_email_key",
)


@dataclass
class PgSource:
    schema: str
    name: str
    namespace: str
    config: Path


@pytest.fixture(scope="module")
def pg_source(
    stack: Stack, postgres: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PgSource]:
    """A schema of 40+ column types, readable by cdc and in the cdcmirror publication."""
    schema = services.unique("bs_pg")
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(FIXTURE.read_text("utf-8").replace("{schema}", schema))
        for statement in IDENTITIES:  # published without them, UPDATE and DELETE fail
            conn.execute(statement.format(schema=schema))
        services.publish_schema(conn, schema)
    work = tmp_path_factory.mktemp("bootstrap-pg")
    config = _config(work, schema)
    try:
        yield PgSource(schema, schema, f"{schema}_mirror", config)
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")


def _config(directory: Path, schema: str) -> Path:
    """The config of a source of the schema's tables, mirrored into ``<schema>_mirror``."""
    return write_config(
        directory,
        source={
            "dialect": "postgresql",
            "url": f"postgresql://cdc@127.0.0.1:5432/{services.TEST_DATABASE}",
            "include": [f"{schema}.*"],
            "name": schema,
        },
        iceberg={"namespace": f"{schema}_mirror"},
    )


def _tables(src: PgSource) -> dict[str, object]:
    catalog = load_catalog(load_config(src.config, environ={}))
    return {name: catalog.load_table(f"{src.namespace}.{name}") for name in EXPECTED}


@pytest.mark.serial  # the shared publication holds tables no bootstrap accepts meanwhile
def test_tables_without_replica_identity_stop_bootstrap_before_anything(
    stack: Stack, postgres: None, tmp_path: Path
) -> None:
    """A published schema with a keyless table and one keyed by a unique index: PostgreSQL
    refuses UPDATE and DELETE on them. bootstrap (and its dry run) stops with exit 2 before
    anything is created, naming each table and the statement that fixes it."""
    schema = services.unique("bs_ri")
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.numbers (id bigint PRIMARY KEY, n integer)")
        conn.execute(f"CREATE TABLE {schema}.events_log (happened_at timestamptz NOT NULL)")
        conn.execute(
            f"CREATE TABLE {schema}.by_email (email varchar(100) NOT NULL, "
            "CONSTRAINT by_email_email_key UNIQUE (email))"
        )
        conn.execute(  # keyed, so its partitions are fine
            f"CREATE TABLE {schema}.measurements (logdate date PRIMARY KEY) "
            "PARTITION BY RANGE (logdate)"
        )
        conn.execute(
            f"CREATE TABLE {schema}.measurements_2025 PARTITION OF {schema}.measurements "
            "FOR VALUES FROM ('2025-01-01') TO ('2026-01-01')"
        )
        services.publish_schema(conn, schema)
    config = _config(tmp_path, schema)
    try:
        _refused_until_fixed(schema, config)
    finally:
        services.drop_published_schema(schema)


def _refused_until_fixed(schema: str, config: Path) -> None:
    table = f"{schema}.events_log"
    with services.pg_connect() as conn, pytest.raises(Exception, match="replica identity"):
        conn.execute(f"DELETE FROM {table}")
    for args in (["--dry-run"], []):
        result = run_cli(config, "bootstrap", *args)
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output
        assert f"ALTER TABLE {table} REPLICA IDENTITY FULL;" in result.output
        assert f"ALTER TABLE {schema}.by_email REPLICA IDENTITY USING INDEX " in result.output
        assert "measurements" not in result.output and ".numbers" not in result.output
    catalog = load_catalog(load_config(config, environ={}))
    assert (f"{schema}_mirror",) not in catalog.list_namespaces(), "nothing may be created"
    statements = [
        line.strip() for line in result.output.splitlines() if line.strip().startswith("ALTER")
    ]
    assert len(statements) == 2, result.output
    with services.pg_connect() as conn:
        for statement in statements:
            conn.execute(statement)
        conn.execute(f"DELETE FROM {table} WHERE false")  # allowed again


def test_bootstrap_creates_mapped_tables_and_a_running_connector(pg_source: PgSource) -> None:
    result = run_cli(pg_source.config, "bootstrap", "--output", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert sorted(t["source"] for t in report["tables"]) == sorted(
        f"{pg_source.schema}.{t}" for t in EXPECTED
    ), "the view and the partitions must not be mirrored; the partitioned parent must"
    assert {t["action"] for t in report["tables"]} == {"create"}
    assert report["connector"]["state"] == "RUNNING"
    assert "cdc_dev_secret" not in result.output

    assert_schemas(_tables(pg_source), EXPECTED, KEYS)
    assert_snapshot_carriers(report, pg_source.name)


def test_second_run_is_a_no_op(pg_source: PgSource) -> None:
    before = {n: t.metadata_location for n, t in _tables(pg_source).items()}  # type: ignore[attr-defined]
    result = run_cli(pg_source.config, "bootstrap", "--output", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {t["action"] for t in report["tables"]} == {"unchanged"}
    assert report["connector"]["action"] == "unchanged"
    after = {n: t.metadata_location for n, t in _tables(pg_source).items()}  # type: ignore[attr-defined]
    assert after == before, "a second bootstrap must not commit anything"


def _wait_failed(name: str, timeout: float = 90.0) -> None:
    client = services.connect_client()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.status(name)
        if "FAILED" in [t["state"] for t in status["tasks"]]:
            return
        time.sleep(0.5)
    raise AssertionError(f"connector {name} did not fail: {client.status(name)}")


def test_bootstrap_brings_a_failed_connector_back(pg_source: PgSource) -> None:
    """A connector whose task FAILED (its config was changed by hand to a publication that
    does not exist) is RUNNING after bootstrap puts its config back."""
    name = connector_name(load_config(pg_source.config, environ={}).source.name)
    client = services.connect_client()
    wrong = {**client.config(name), "publication.name": "no_such_publication"}
    client.put(name, {**wrong, "publication.autocreate.mode": "disabled"}, validate=False)
    _wait_failed(name)
    result = run_cli(pg_source.config, "bootstrap", "--output", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["connector"]["action"], report["connector"]["state"]) == ("update", "RUNNING")


def test_add_column_then_bootstrap_adds_it(pg_source: PgSource) -> None:
    with services.pg_connect() as conn:
        conn.execute(f"ALTER TABLE {pg_source.schema}.numbers ADD COLUMN c_added numeric(7,2)")
    dry = run_cli(pg_source.config, "bootstrap", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "add column c_added decimal(7,2)" in dry.stdout
    assert "c_added" not in {f.name for f in _tables(pg_source)["numbers"].schema().fields}  # type: ignore[attr-defined]

    result = run_cli(pg_source.config, "bootstrap")
    assert result.exit_code == 0, result.output
    fields = {f.name: f for f in _tables(pg_source)["numbers"].schema().fields}  # type: ignore[attr-defined]
    assert to_spec(fields["c_added"].field_type) == "decimal(7,2)"
    assert not fields["c_added"].required


def test_incompatible_change_is_drift_exit_1_and_nothing_dropped(pg_source: PgSource) -> None:
    with services.pg_connect() as conn:
        conn.execute(f"ALTER TABLE {pg_source.schema}.times ALTER COLUMN c_date TYPE text")
    try:
        result = run_cli(pg_source.config, "bootstrap", "--no-connector")
        assert result.exit_code == 1, result.output
        assert "DRIFT: column c_date" in result.stdout
        fields = {f.name: f for f in _tables(pg_source)["times"].schema().fields}  # type: ignore[attr-defined]
        assert to_spec(fields["c_date"].field_type) == "date"
    finally:
        with services.pg_connect() as conn:
            conn.execute(
                f"ALTER TABLE {pg_source.schema}.times ALTER COLUMN c_date TYPE date "
                "USING c_date::date"
            )
