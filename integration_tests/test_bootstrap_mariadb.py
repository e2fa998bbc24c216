"""`cdcmirror bootstrap` against real MariaDB, Kafka Connect with Debezium, and Iceberg."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cdcmirror.catalog import load_catalog
from cdcmirror.catalog.types import to_spec
from cdcmirror.config import load_config
from cdcmirror.stack.control import Stack
from support import FIXTURES_DIR, services
from support.bootstrap_env import (
    assert_schemas,
    assert_snapshot_carriers,
    run_cli,
    run_script,
    write_config,
)

FIXTURE = FIXTURES_DIR / "mariadb_types.sql"

# The Iceberg type of every column of fixtures/mariadb_types.sql: docs/reference/type-mapping.md.
EXPECTED = {
    "numbers": {
        "id": "long", "c_tinyint": "int", "c_tinyint_unsigned": "int", "c_boolean": "boolean",
        "c_smallint": "int", "c_smallint_unsigned": "int", "c_mediumint": "int",
        "c_mediumint_unsigned": "int", "c_int": "int", "c_int_unsigned": "long",
        "c_bigint": "long", "c_bigint_unsigned": "decimal(20,0)", "c_bit1": "boolean",
        "c_bit10": "binary", "c_decimal": "decimal(12,3)",
        "c_decimal_unsigned": "decimal(30,10)", "c_float": "float", "c_double": "double",
        "c_year": "int",
    },
    "texts": {
        "tenant": "int", "code": "string", "c_char": "string", "c_varchar": "string",
        "c_tinytext": "string", "c_text": "string", "c_mediumtext": "string",
        "c_longtext": "string", "c_enum": "string", "c_set": "string", "c_json": "string",
        "c_uuid": "string", "c_binary": "binary", "c_varbinary": "binary",
        "c_tinyblob": "binary", "c_blob": "binary", "c_longblob": "binary",
    },
    "times": {
        "id": "int", "c_date": "date", "c_time": "long", "c_time3": "long",
        "c_datetime": "timestamp", "c_datetime6": "timestamp", "c_timestamp": "timestamptz",
        "c_timestamp3": "timestamptz", "c_geometry": "binary", "c_point": "binary",
        "c_linestring": "binary", "c_polygon": "binary",
    },
    "events_log": {"happened_at": "timestamp", "message": "string"},
    "by_email": {"email": "string", "note": "string"},
}  # fmt: skip
KEYS = {
    "numbers": ("id",),
    "texts": ("tenant", "code"),
    "times": ("id",),
    "events_log": (),
    "by_email": ("email",),
}


@dataclass
class MariaSource:
    database: str
    namespace: str
    config: Path


@pytest.fixture(scope="module")
def maria_source(
    stack: Stack, mariadb: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MariaSource]:
    database = services.unique("bs_maria")
    admin = services.maria_connect()
    with admin.cursor() as cur:
        services.maria_database(cur, database)
    run_script(database, FIXTURE.read_text("utf-8"))
    work = tmp_path_factory.mktemp("bootstrap-maria")
    config = write_config(
        work,
        source={
            "dialect": "mysql",
            "url": f"mysql://cdc@127.0.0.1:3306/{database}",
            "include": [f"{database}.*"],
            "name": database,
        },
        iceberg={"namespace": f"{database}_mirror"},
    )
    try:
        yield MariaSource(database, f"{database}_mirror", config)
    finally:
        services.connect_client().delete(f"cdcmirror-{database}")
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE {database}")
        admin.close()


def _tables(src: MariaSource) -> dict[str, object]:
    catalog = load_catalog(load_config(src.config, environ={}))
    return {name: catalog.load_table(f"{src.namespace}.{name}") for name in EXPECTED}


def test_bootstrap_creates_mapped_tables_and_a_running_connector(
    maria_source: MariaSource,
) -> None:
    result = run_cli(maria_source.config, "bootstrap", "--output", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["source"]["flavor"] == "mariadb"
    assert sorted(t["source"] for t in report["tables"]) == sorted(
        f"{maria_source.database}.{t}" for t in EXPECTED
    ), "the view must not be mirrored"
    assert report["connector"]["state"] == "RUNNING"
    assert report["connector"]["config"]["connector.class"].endswith("MariaDbConnector")
    # which estimate chose Debezium for the rows, and the estimate of each table
    load = report["initial_load"]
    assert load["mode"] == "debezium" and load["asked"] == "auto", load
    assert load["min_rows"] == 200000 and "TABLE_ROWS" in load["estimate"], load
    assert sorted(load["estimates"]) == sorted(t["source"] for t in report["tables"]), load
    assert load["start"] is None and load["tables"] == [], load

    assert_schemas(_tables(maria_source), EXPECTED, KEYS)
    assert_snapshot_carriers(report, maria_source.database)


def test_second_run_is_a_no_op_and_add_column_is_applied(maria_source: MariaSource) -> None:
    before = {n: t.metadata_location for n, t in _tables(maria_source).items()}  # type: ignore[attr-defined]
    again = run_cli(maria_source.config, "bootstrap", "--output", "json")
    assert again.exit_code == 0, again.output
    assert {t["action"] for t in json.loads(again.stdout)["tables"]} == {"unchanged"}
    assert json.loads(again.stdout)["connector"]["action"] == "unchanged"
    after = {n: t.metadata_location for n, t in _tables(maria_source).items()}  # type: ignore[attr-defined]
    assert after == before

    run_script(maria_source.database, "ALTER TABLE texts ADD COLUMN c_added bigint unsigned")
    result = run_cli(maria_source.config, "bootstrap")
    assert result.exit_code == 0, result.output
    assert "add column c_added decimal(20,0)" in result.stdout
    fields = {f.name: f for f in _tables(maria_source)["texts"].schema().fields}  # type: ignore[attr-defined]
    assert to_spec(fields["c_added"].field_type) == "decimal(20,0)"


def test_widening_is_applied(maria_source: MariaSource) -> None:
    run_script(maria_source.database, "ALTER TABLE numbers MODIFY c_int bigint NOT NULL")
    result = run_cli(maria_source.config, "bootstrap", "--no-connector")
    assert result.exit_code == 0, result.output
    assert "widen c_int int -> long" in result.stdout
    fields = {f.name: f for f in _tables(maria_source)["numbers"].schema().fields}  # type: ignore[attr-defined]
    assert to_spec(fields["c_int"].field_type) == "long"
