"""The initial load writes exactly what the stream writes, for every type of the mapping:
the type-zoo tables of ``fixtures/`` (plus rows of edge values and of NULLs) are mirrored
twice from one source, once with their rows *streamed* by Debezium (inserted after the
connector started) and once *loaded* by Spark over JDBC, and the two Iceberg copies are
compared value by value, column by column."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cdcmirror.commands.mirror import mirror
from cdcmirror.config import load_config
from cdcmirror.stack.control import Stack
from support import FIXTURES_DIR, services
from support import mirror_scenarios as sc
from support.bootstrap_env import run_cli, run_script
from support.mirror_fixture import make_config
from support.spark import SparkWorld

FIXTURES = FIXTURES_DIR

PG_MORE = """
INSERT INTO {schema}.numbers VALUES (2, 32767, -2147483648, 9223372036854775807, DEFAULT,
  false, B'0', B'00000001', B'0000000000000000', -0.001, -123.456000, -5.5, -3.4e38, 1e-300,
  1, 0);
INSERT INTO {schema}.numbers (id, c_integer) VALUES (3, 0);
INSERT INTO {schema}.texts VALUES (2, 'b', 'a', '', 'Ünïcødé 😀 ''q''', 'cItExT', 'sad',
  '[1, {"x": null}]', '{"z": 1, "a": [true]}', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '\\x',
  '<r a="1"/>', 'a:1 b:2 fat', 'a.b_c.d', 'a=>NULL, "b c"=>"d,e"', '::1', '2001:db8::/32',
  '08-00-2b-01-02-ff', 'y@example.com', '{1,NULL,-3}', '{"a,b","","q\\"uote"}', '{}',
  'empty');
INSERT INTO {schema}.texts (tenant, code) VALUES (3, 'c');
INSERT INTO {schema}.times VALUES (2, '1500-03-01', '00:00:00', '23:59:59.999',
  '23:30:00.5-05', '1500-01-01 00:00:00', '1969-12-31 23:59:59.999', '0001-01-01 00:00:00+00',
  '-1 year -2 mons +3 days -04:05:06.25', '(-1.5,0)');
INSERT INTO {schema}.times VALUES (3, '9999-12-31', '23:59:59.999999', '00:00:00.001',
  '00:00:00+00', '9999-12-31 23:59:59.999999', '2024-02-29 00:00:00', now(), '25 hours',
  '(0,0)');
INSERT INTO {schema}.times VALUES (4, '1970-01-01', '12:00:00', '12:00:00', '12:00:00+14',
  '1970-01-01 00:00:00', '1970-01-01 00:00:00', '1970-01-01 00:00:00+00', '0',
  '(1e300,-1e-300)');
INSERT INTO {schema}.times (id) VALUES (5);
INSERT INTO {schema}.measurements VALUES (2, '2025-12-31', NULL);
"""

MARIA_MORE = """
INSERT INTO numbers VALUES (2, 127, 0, false, 32767, 0, 8388607, 0, -2147483648, 0,
  9223372036854775807, 0, b'0', b'0000000001', -0.001, 0, -1.5e-10, 1e-300, 1901);
INSERT INTO numbers (id, c_int) VALUES (3, 0);
INSERT INTO numbers (id, c_int, c_boolean) VALUES (4, 0, 2);
INSERT INTO texts VALUES (2, 'b', 'a', '', 'Ünïcødé 😀', '', 'x', 'y', 'sad', '', '[]',
  '00000000-0000-0000-0000-000000000001', 0x01000000, X'', 0x00, X'', 0xff00);
INSERT INTO texts (tenant, code) VALUES (3, 'c');
INSERT INTO times VALUES (2, '1000-01-01', '-838:59:59', '838:59:59.999',
  '1000-01-01 00:00:00', '9999-12-31 23:59:59.999999', '1970-01-01 00:00:01',
  '2038-01-19 03:14:07.999', ST_GeomFromText('MULTIPOINT(0 0, 1 1)'),
  ST_GeomFromText('POINT(-1.5 0)'), ST_GeomFromText('LINESTRING(0 0, 1 1, 2 0)'),
  ST_GeomFromText('POLYGON((0 0, 2 0, 2 2, 0 0))'));
INSERT INTO times (id) VALUES (3);
"""

PG_TABLES = ["numbers", "texts", "times", "measurements"]  # keyed, replica identity default
MARIA_TABLES = ["numbers", "texts", "times"]


def _split(sql: str) -> tuple[str, str]:
    """A fixture's DDL and its INSERTs."""
    at = sql.index("\nINSERT INTO")
    return sql[:at], sql[at:]


def _rows(spark: Any, identifier: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Every row of the table without the ``_cdc_`` columns, keyed by all its values'
    text (maps sorted), so two copies compare whatever their order."""
    frame = spark.table(identifier)
    cols = [c for c in frame.columns if not c.startswith("_cdc_")]
    exprs = []
    for field in frame.schema.fields:  # as numbers: Python has no year 0 or before
        kind = field.dataType.typeName()
        if kind.startswith("timestamp"):
            exprs.append(f"unix_micros(CAST(`{field.name}` AS TIMESTAMP)) AS `{field.name}`")
        elif kind == "date":
            exprs.append(f"unix_date(`{field.name}`) AS `{field.name}`")
        elif field.name in cols:
            exprs.append(f"`{field.name}`")
    out = {}
    for row in frame.selectExpr(*exprs).collect():
        values = {c: _plain(row[c]) for c in cols}
        out[(values[cols[0]], values[cols[1]])] = values
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return sorted(value.items(), key=lambda kv: kv[0])
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def _compare(spark: Any, streamed: str, loaded: str) -> int:
    a, b = _rows(spark, streamed), _rows(spark, loaded)
    assert a.keys() == b.keys(), f"{loaded}: rows {sorted(b, key=str)} != {sorted(a, key=str)}"
    differ = [
        (key, col, a[key][col], b[key][col])
        for key in a
        for col in a[key]
        if a[key][col] != b[key][col]
    ]
    assert not differ, f"{loaded} (key, column, streamed, loaded): {differ[:6]}"
    return sum(len(row) for row in a.values())


@dataclass(frozen=True)
class Twice:
    """The type zoo mirrored twice: rows streamed (``streamed``) and loaded (``loaded``)."""

    streamed: str  # namespace
    loaded: str
    streamed_config: Path
    run: Callable[[str], None]  # SQL at the source


def _twice(
    world: SparkWorld,
    name: str,
    dialect: str,
    url_db: str,
    include: list[str],
    run: Callable[[str], None],
    ddl_inserts: tuple[str, str],
) -> Iterator[Twice]:
    """Mirror the same tables as ``<name>_s`` (rows streamed) and ``<name>_l`` (rows
    loaded); yields their namespaces, both mirrored."""
    ddl, inserts = ddl_inserts
    run(ddl)
    configs = {
        kind: make_config(
            world.config.base_dir,
            f"{name}_{kind}",
            dialect,
            include[0],
            url_db,
            source={"include": include},
            bootstrap={"initial_load": "spark" if kind == "l" else "debezium"},
        )
        for kind in ("s", "l")
    }
    result = run_cli(configs["s"], "bootstrap")
    assert result.exit_code == 0, result.output
    run(inserts)  # after the connector started: streamed
    if dialect == "postgresql":
        services.wait_published(f"{name}_s")
    else:
        sc.settle()
    result = run_cli(configs["l"], "bootstrap")
    assert "initial load (spark)" in result.output, result.output
    if dialect == "mysql":  # a tinyint(1) holding 2: no boolean, dead-lettered when streamed
        assert result.exit_code == 1, result.output
        assert "NOT LOADED: 1 row(s)" in result.output and "4: c_boolean" in result.output
    else:
        assert result.exit_code == 0, result.output
    os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
    for path in configs.values():
        mirror(load_config(path), available_now=True)
    yield Twice(f"{name}_s_mirror", f"{name}_l_mirror", configs["s"], run)


@pytest.fixture(scope="module")
def pg_twice(stack: Stack, postgres: None, spark_world: SparkWorld) -> Iterator[Twice]:
    schema = services.unique("lt_pg")
    ddl, inserts = _split((FIXTURES / "pg_types.sql").read_text("utf-8"))

    def run(sql: str) -> None:
        with services.pg_connect() as conn:
            conn.execute(sql.replace("{schema}", schema))

    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        run(ddl)
        run(  # published with the schema: PostgreSQL refuses changes without these
            "ALTER TABLE {schema}.by_email REPLICA IDENTITY USING INDEX by_email_email_key;"
            "ALTER TABLE {schema}.events_log REPLICA IDENTITY FULL"
        )
        services_publish(schema)
        yield from _twice(
            spark_world,
            schema,
            "postgresql",
            services.TEST_DATABASE,
            [f"{schema}.{t}" for t in PG_TABLES],
            run,
            ("SELECT 1", inserts + PG_MORE),
        )
    finally:
        for kind in ("s", "l"):
            services.connect_client().delete(f"cdcmirror-{schema}_{kind}")
            services.drop_slot(f"cdcmirror_{schema}_{kind}")
        services.drop_published_schema(schema)


def services_publish(schema: str) -> None:
    with services.pg_connect() as conn:
        services.publish_schema(conn, schema)


@pytest.fixture(scope="module")
def maria_twice(stack: Stack, mariadb: None, spark_world: SparkWorld) -> Iterator[Twice]:
    database = services.unique("lt_maria")
    ddl, inserts = _split((FIXTURES / "mariadb_types.sql").read_text("utf-8"))
    admin = services.maria_connect()
    with admin.cursor() as cur:
        services.maria_database(cur, database)
    try:
        yield from _twice(
            spark_world,
            database,
            "mysql",
            database,
            [f"{database}.{t}" for t in MARIA_TABLES],
            lambda sql: run_script(database, sql),
            (ddl, inserts + MARIA_MORE),
        )
    finally:
        for kind in ("s", "l"):
            services.connect_client().delete(f"cdcmirror-{database}_{kind}")
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE {database}")
        admin.close()


@pytest.mark.parametrize("table", PG_TABLES)
def test_postgresql_loaded_values_are_the_streamed_ones(
    pg_twice: Twice, spark_world: SparkWorld, table: str
) -> None:
    streamed, loaded = pg_twice.streamed, pg_twice.loaded
    values = _compare(spark_world.spark, f"{streamed}.{table}", f"{loaded}.{table}")
    assert values >= 8


@pytest.mark.parametrize("table", MARIA_TABLES)
def test_mariadb_loaded_values_are_the_streamed_ones(
    maria_twice: Twice, spark_world: SparkWorld, table: str
) -> None:
    streamed, loaded = maria_twice.streamed, maria_twice.loaded
    values = _compare(spark_world.spark, f"{streamed}.{table}", f"{loaded}.{table}")
    assert values >= 8


# A value of each Iceberg type changed so that a reader could miss it: a double by one part
# in 10^15 (invisible in its 15-digit text), a float by one part in 10^6, a timestamp by a
# microsecond, bytes by one byte in front (a bit string's value changes), an array by its
# last element, a map by one pair.
MUTATIONS = {
    "int": "{c} + 1",
    "long": "{c} + 1",
    "float": "CAST(CAST({c} AS DOUBLE) * 1.000001D AS FLOAT)",
    "double": "{c} * (1 + 1e-15D)",
    "boolean": "NOT {c}",
    "string": "concat({c}, 'x')",
    "binary": "concat(X'01', {c})",
    "date": "date_add({c}, 1)",
    "timestamp": "{c} + INTERVAL 1 MICROSECOND",
    "timestamptz": "{c} + INTERVAL 1 MICROSECOND",
}


def _mutation(iceberg: str, column: str) -> str:
    c = f"`{column}`"
    if iceberg.startswith("decimal("):
        return f"CAST({c} - 1 AS {iceberg.upper()})"
    if iceberg.startswith("list<"):
        return f"slice({c}, 1, size({c}) - 1)"
    if iceberg.startswith("map<"):
        return f"map_concat({c}, map('cdcmirror_x', 'y'))"
    return MUTATIONS[iceberg].format(c=c)


def _each_column_changed_in_a_row_of_its_own(
    twice: Twice, spark: Any, dialect: str, tables: dict[str, str], missing: dict[str, Any]
) -> None:
    """Issue 67, item 8: every column of every type the mirror maps is compared by
    ``reconcile --deep``. The source gets a copy of one row per column (keys from 1000 on,
    streamed); then, behind the mirror's back, each copy's own column is changed in Iceberg;
    reconcile must name exactly the changed copies' keys, and leave no column out.
    ``tables``: each table's condition that picks the row to copy."""
    from cdcmirror.catalog import load_catalog
    from cdcmirror.commands.job_tables import load_tables

    config = load_config(twice.streamed_config)
    mirrored = {t.identifier: t for t in load_tables(config, load_catalog(config))}
    changed: dict[str, list[str]] = {}  # the first key column's values
    updates = []
    for table, first in tables.items():
        t = mirrored[f"{twice.streamed}.{table}"]
        columns = [c for c in t.columns if c.name not in t.key]
        key0 = t.key[0]
        names = [c.name for c in t.columns]
        source = f"{t.source.split('.')[0]}.{table}"
        picked = ", ".join(f"{n} + 1000 + g" if n == key0 else n for n in names)
        if dialect == "postgresql":
            series = f"generate_series(1, {len(columns)}) AS s(g)"
        else:  # MariaDB's sequence engine
            picked = picked.replace(" + g", " + s.seq")
            series = f"seq_1_to_{len(columns)} AS s"
        twice.run(
            f"INSERT INTO {source} ({', '.join(names)}) SELECT {picked} FROM {source}, {series} "
            f"WHERE {first}"
        )
        base = spark.sql(f"SELECT * FROM {t.identifier} WHERE {first}").first()
        sets = []
        for i, col in enumerate(columns, 1):
            key = str(int(base[key0]) + 1000 + i)
            changed.setdefault(t.identifier, []).append(key)
            mutated = _mutation(col.iceberg, col.name)
            sets.append(f"`{col.name}` = IF(`{key0}` = {key}, {mutated}, `{col.name}`)")
        updates.append((t.identifier, key0, sets))
    if dialect == "postgresql":
        services.wait_published(twice.streamed.removesuffix("_mirror"))
    else:
        sc.settle()
    mirror(config, available_now=True)
    for identifier, key0, sets in updates:
        spark.sql(f"UPDATE {identifier} SET {', '.join(sets)} WHERE `{key0}` > 1000")
    result = run_cli(
        twice.streamed_config, "--output", "json", "reconcile", "--deep", "--settle", "0"
    )
    report = {t["table"]: t for t in json.loads(result.stdout)["tables"]}
    for (identifier, keys), (_, key0, _) in zip(changed.items(), updates, strict=True):
        deep = report[identifier]["deep"]
        assert deep["columns_not_compared"] == [], deep
        found = sorted(k[key0] for k in deep["changed_keys"])
        assert found == sorted(keys), (identifier, found, keys)
        assert deep["missing_keys"] == missing.get(identifier, []), deep
        assert deep["extra_keys"] == [], deep


def test_postgresql_reconcile_deep_compares_every_type(
    pg_twice: Twice, spark_world: SparkWorld
) -> None:
    _each_column_changed_in_a_row_of_its_own(
        pg_twice,
        spark_world.spark,
        "postgresql",
        {
            "numbers": "id = 1",
            "texts": "tenant = 1 AND code = 'a'",
            "times": "id = 1",
            "measurements": "city_id = 1 AND logdate = DATE '2025-06-01'",
        },
        {},
    )


def test_mariadb_reconcile_deep_compares_every_type(
    maria_twice: Twice, spark_world: SparkWorld
) -> None:
    _each_column_changed_in_a_row_of_its_own(
        maria_twice,
        spark_world.spark,
        "mysql",
        {"numbers": "id = 1", "texts": "tenant = 1 AND code = 'a'", "times": "id = 1"},
        # a tinyint(1) holding 2 is no boolean: its event was dead-lettered
        {f"{maria_twice.streamed}.numbers": [{"id": "4"}]},
    )
