"""Source names Spark SQL could misread are mirrored. A single quote or a backslash (legal
when quoted): every place that writes a name into Spark SQL as a string literal quotes it as
Spark reads it. A name like one of the mirror's own working columns (``_rn``, ``_offset``,
``_error``, ``_t_<column>``, Kafka's ``value`` ...), loaded by Debezium's snapshot or by
Spark: the working columns live under the reserved ``_cdc_`` prefix."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cdcmirror.commands.mirror import mirror
from cdcmirror.config import load_config
from cdcmirror.stack.control import Stack
from support import services
from support.bootstrap_env import run_cli
from support.mirror_fixture import bootstrap, make_config
from support.spark import SparkWorld

LONG = "x" * 20_000  # stored out of line (TOAST): an update of another column leaves it out


def _source_rows(table: str) -> list[tuple[object, ...]]:
    with services.pg_connect() as conn:
        sql = f"""SELECT "o'k", "it's", "a\\b" FROM {table} ORDER BY 1"""
        return [tuple(r) for r in conn.execute(sql).fetchall()]


def _mirror_and_compare(
    config: Path, spark_world: SparkWorld, schema: str, columns: str, source: list[Any]
) -> None:
    """Mirror what the source published; the table's ``columns`` equal the ``source`` rows
    (read at the source after the writes) and ``reconcile --deep`` finds no drift."""
    services.wait_published(schema)
    mirror(load_config(config), available_now=True)
    got = spark_world.spark.sql(f"SELECT {columns} FROM {schema}_mirror.items ORDER BY 1")
    assert [tuple(r) for r in got.collect()] == source
    deep = run_cli(config, "reconcile", "--deep")
    assert deep.exit_code == 0, deep.output


def test_columns_named_with_a_quote_or_a_backslash_are_mirrored(
    stack: Stack, postgres: None, spark_world: SparkWorld
) -> None:
    schema = services.unique("mir_quote")
    table = f"{schema}.items"
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(
            f"""CREATE TABLE {table} ("o'k" bigint PRIMARY KEY, "it's" text, "a\\b" integer)"""
        )
        conn.execute(f"""ALTER TABLE {table} ALTER COLUMN "it's" SET STORAGE EXTERNAL""")
        for i in range(1, 7):
            conn.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (i, f"{i}{LONG}", i))
        services.publish_schema(conn, schema)
    config = make_config(
        spark_world.config.base_dir, schema, "postgresql", f"{schema}.*", services.TEST_DATABASE
    )
    bootstrap(config)
    os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
    try:
        with services.pg_connect() as conn:
            conn.execute(f"""UPDATE {table} SET "a\\b" = 10 WHERE "o'k" IN (1, 2)""")  # TOAST
            conn.execute(f"""UPDATE {table} SET "o'k" = 100 WHERE "o'k" = 3""")  # key change
            conn.execute(f"""UPDATE {table} SET "a\\b" = 11, "o'k" = 101 WHERE "o'k" = 4""")
            conn.execute(f"""DELETE FROM {table} WHERE "o'k" = 5""")
        _mirror_and_compare(
            config, spark_world, schema, "`o'k`, `it's`, `a\\b`", _source_rows(table)
        )
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")


NAMES = (
    "_rn", "_kc", "_okpos", "_offset", "_error", "_action", "_backwards",
    "_entombed", "_stored_position", "_t_note", "_f_note", "_w_note", "value", "key",
    "topic", "headers", "_decode_error", "_no_after", "_ok_id", "_load_error", "_p", "_o",
    "env", "_utf8", "timestamp", "_raw", "_schema_id", "_json", "_new",
)  # fmt: skip
COLUMNS = ("id", "note", *NAMES)


def _working_rows(table: str) -> list[tuple[object, ...]]:
    cols = ", ".join(f'"{c}"' for c in COLUMNS)
    with services.pg_connect() as conn:
        return [tuple(r) for r in conn.execute(f"SELECT {cols} FROM {table} ORDER BY 1")]


@pytest.mark.parametrize("load", ["debezium", "spark"])
def test_columns_named_like_the_working_columns_are_mirrored(
    stack: Stack, postgres: None, spark_world: SparkWorld, load: str
) -> None:
    schema = services.unique("mir_names")
    table = f"{schema}.items"
    others = ", ".join(f'"{c}" integer' for c in NAMES)
    with services.pg_connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, note text, {others})")
        conn.execute(f"ALTER TABLE {table} ALTER COLUMN note SET STORAGE EXTERNAL")
        marks = ", ".join(["%s"] * len(COLUMNS))
        for i in range(1, 9):
            values = (i, f"{i}{LONG}", *(i * 100 + j for j in range(len(NAMES))))
            conn.execute(f"INSERT INTO {table} VALUES ({marks})", values)
        services.publish_schema(conn, schema)
    config = make_config(
        spark_world.config.base_dir,
        schema,
        "postgresql",
        f"{schema}.*",
        services.TEST_DATABASE,
        bootstrap={"initial_load": load},
    )
    bootstrap(config)
    os.environ["CDCMIRROR_SOURCE__PASSWORD"] = services.CDC_PASSWORD
    try:
        with services.pg_connect() as conn:
            conn.execute(f'UPDATE {table} SET "_rn" = -1, "_offset" = -2 WHERE id IN (1, 2)')
            conn.execute(f'UPDATE {table} SET "_t_note" = -3 WHERE id = 1')  # TOAST twice
            conn.execute(f"UPDATE {table} SET id = 100 WHERE id = 3")  # key change
            conn.execute(f'UPDATE {table} SET "_kc" = -4, id = 101 WHERE id = 4')
            conn.execute(f"DELETE FROM {table} WHERE id = 5")
            conn.execute(f'INSERT INTO {table} (id, note, "_error") VALUES (9, NULL, 9)')
            conn.execute(f'UPDATE {table} SET "value" = -5 WHERE id = 9')
        cols = ", ".join(f"`{c}`" for c in COLUMNS)
        _mirror_and_compare(config, spark_world, schema, cols, _working_rows(table))
    finally:
        services.drop_published_schema(schema, f"cdcmirror-{schema}")
